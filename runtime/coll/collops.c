/* SPDX-License-Identifier: MIT */
/*
 * collops: a collective group's collectives: their arguments checked
 * (each member's own here; whether the members agree, collcheck.c), their
 * turn taken (one at a time per group, in the order issued), the
 * algorithm picked and run over the fabric (backend.c); and their started
 * forms, which a worker thread of the group runs in the same turns.
 */
#include "cgroup.h"
#include "creq.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "collcheck.h"
#include "failure.h"
#include "reduce.h"

/* Whether the members' arguments are compared (collcheck.h): a build for
 * measuring what that costs leaves it out (meson -Dcoll-check=false). */
#ifdef WR_COLL_NOCHECK
#define CHECKED false
#else
#define CHECKED true
#endif

struct wr_cworker {
	pthread_t thread;
	pthread_cond_t work;
	struct world_coll_req *head, *tail;
	bool stop;
	bool deep;          /* asleep until signalled (else it polls) */
	long long last_ns;  /* when a collective was last started */
};

/* ---- checking ---- */

/* Whether @k's buffer of @count blocks (size blocks where @whole) is
 * there when it must be, and its bytes fit a size_t. */
static int
check_bytes(const struct world_coll *c, const struct wr_cop *o, size_t *bytes)
{
	size_t esize = wr_dtype_size(o->dtype);

	if (esize == 0 || o->count > SIZE_MAX / esize / (size_t)c->size) {
		return -EINVAL;
	}
	*bytes = o->count * esize;
	return 0;
}

static int
check(const struct world_coll *c, const struct wr_cop *o)
{
	bool root_here = o->root == c->rank;
	size_t bytes;
	int rc = check_bytes(c, o, &bytes);

	if (rc == 0 && wr_algo_has_root(o->kind) && (o->root < 0 || o->root >= c->size)) {
		rc = -EINVAL;
	}
	if (rc == 0 && wr_algo_reduces(o->kind)) {
		rc = wr_reduce_check(o->dtype, o->op);
	}
	if (rc < 0 || bytes == 0 || o->kind == WR_COLL_BARRIER) {
		return rc;
	}
	switch (o->kind) {
	case WR_COLL_GATHER:
		return o->in == NULL || (root_here && o->out == NULL) ? -EINVAL : 0;
	case WR_COLL_SCATTER:
		return o->out == NULL || (root_here && o->in == NULL) ? -EINVAL : 0;
	case WR_COLL_BROADCAST:
	case WR_COLL_ALL_REDUCE:
	case WR_COLL_REDUCE:
		return o->out == NULL ? -EINVAL : 0;
	default:
		return o->in == NULL || o->out == NULL ? -EINVAL : 0;
	}
}

/* ---- running ---- */

/* One collective as it runs: its arguments and their comparison. */
struct job {
	struct wr_cop op;
	struct wr_check check;
};

static int
run_algo(struct wr_coll_ctx *x, const struct wr_cop *o, size_t bytes)
{
	enum wr_algo a = o->algo;

	switch (o->kind) {
	case WR_COLL_BARRIER:
		return wr_algo_barrier(x, a);
	case WR_COLL_BROADCAST:
		return wr_algo_broadcast(x, o->out, bytes, o->root, a);
	case WR_COLL_ALL_REDUCE:
		return wr_algo_all_reduce(x, o->out, o->count, o->dtype, o->op, a);
	case WR_COLL_REDUCE:
		return wr_algo_reduce(x, o->out, o->count, o->dtype, o->op, o->root,
				      a);
	case WR_COLL_ALL_GATHER:
		return wr_algo_all_gather(x, o->in, o->out, bytes, a);
	case WR_COLL_GATHER:
		return wr_algo_gather(x, o->in, o->out, bytes, o->root, a);
	case WR_COLL_SCATTER:
		return wr_algo_scatter(x, o->in, o->out, bytes, o->root, a);
	case WR_COLL_REDUCE_SCATTER:
		return wr_algo_reduce_scatter(x, o->in, o->out, o->count, o->dtype, o->op,
					      a);
	case WR_COLL_ALL_TO_ALL:
		return wr_algo_all_to_all(x, o->in, o->out, bytes, a);
	default:
		return -EINVAL;
	}
}

/* Up to this many members, run_carried()'s blocks are on the stack. */
#define CARRY_STACK 64

/* What a carried operation leaves in the buffers, from every member's
 * block in @all: the lower rank's data on the left, as the algorithms
 * keep it. */
static void
finish_carried(const struct wr_coll_ctx *x, const struct wr_cop *o, size_t bytes,
	       const struct wr_check_block *all)
{
	unsigned char *out = o->out;
	bool here = (o->kind != WR_COLL_REDUCE && o->kind != WR_COLL_GATHER) ||
		    x->rank == o->root;

	switch (here ? o->kind : WR_COLL_BARRIER) {
	case WR_COLL_BROADCAST:
		memmove(out, all[o->root].data, bytes);
		break;
	case WR_COLL_ALL_REDUCE:
	case WR_COLL_REDUCE:
		memmove(out, all[0].data, bytes);
		for (int q = 1; q < x->size; q++) {
			wr_reduce(o->op, o->dtype, out, all[q].data, o->count);
		}
		wr_reduce_finish(o->op, o->dtype, out, o->count, x->size);
		break;
	case WR_COLL_ALL_GATHER:
	case WR_COLL_GATHER:
		for (int q = 0; q < x->size; q++) {
			memmove(out + (size_t)q * bytes, all[q].data, bytes);
		}
		break;
	default:
		break;
	}
}

/* A small operation whose data travels in the members' agreement. */
static int
run_carried(struct wr_coll_ctx *x, const struct wr_cop *o, size_t bytes)
{
	struct wr_check_block stack[CARRY_STACK];
	struct wr_check_block *all = x->size <= CARRY_STACK ? stack
		: malloc((size_t)x->size * sizeof(*all));
	bool gathers = o->kind == WR_COLL_ALL_GATHER || o->kind == WR_COLL_GATHER;
	int rc;

	if (all == NULL) {
		return -ENOMEM;
	}
	rc = wr_check_carry(x, gathers ? o->in : o->out, bytes, all);
	if (rc == 0) {
		finish_carried(x, o, bytes, all);
	}
	if (all != stack) {
		free(all);
	}
	return rc;
}

/* Whether @o's data travels in its agreement (collcheck.h): a small
 * operation of these kinds over messages, unless WORLD_COLL_ALGO chose
 * its algorithm. */
static bool
carried(const struct world_coll *c, const struct wr_cop *o, size_t bytes)
{
	switch (o->kind) {
	case WR_COLL_BROADCAST:
	case WR_COLL_ALL_REDUCE:
	case WR_COLL_REDUCE:
	case WR_COLL_ALL_GATHER:
	case WR_COLL_GATHER:
		return CHECKED && c->shm == NULL && c->size > 1 && bytes > 0 &&
		       bytes <= WR_CHECK_CARRY && c->forced[o->kind] == WR_ALGO_AUTO;
	default:
		return false;
	}
}

/*
 * The members' agreement, then the algorithm. The shared-area algorithms
 * compare the signatures at their first synchronisation; before any
 * other the members agree first, and an operation with nothing to move
 * (a barrier too) is its agreement alone, as is a small one whose data
 * travels in it (carried()).
 */
static int
dispatch(struct wr_coll_ctx *x, void *arg)
{
	struct job *j = arg;
	const struct wr_cop *o = &j->op;
	size_t bytes = o->count * wr_dtype_size(o->dtype);
	int rc;

	if (!CHECKED) {
		return run_algo(x, o, bytes);
	}
	x->check = &j->check;
	if (o->algo == WR_ALGO_SHM && bytes > 0) {
		return run_algo(x, o, bytes);
	}
	if (j->check.mine.carried) {
		rc = run_carried(x, o, bytes);
		x->check = NULL;
		return rc;
	}
	rc = wr_check_agree(x);
	x->check = NULL;
	return rc < 0 || bytes == 0 ? rc : run_algo(x, o, bytes);
}

enum wr_algo
wr_coll_pick(const struct world_coll *c, enum wr_coll_kind k, size_t bytes)
{
	return wr_algo_pick(k, c->size, bytes, wr_pick_flags(c->oversubscribed, c->shm != NULL),
			    c->forced);
}

/* Every member failed alike, each in step for the next operation: the
 * group stays usable. The message names the first member that differs;
 * a started collective's keeps it in @why (the worker's note is not the
 * caller's). */
static int
mismatch(const struct wr_check *k, char why[256])
{
	struct wr_result r = { .rc = WORLD_EMISMATCH, .dead_rank = -1 };

	wr_check_message(k, r.message, sizeof(r.message));
	if (why != NULL) {
		memcpy(why, r.message, sizeof(r.message));
	}
	wr_failure_note(&r);
	return WORLD_EMISMATCH;
}

/*
 * Run @o in its turn. A failure other than bad arguments (the caller's
 * own, or differing between members) leaves the members at different
 * steps of it, so the group is poisoned.
 */
static int
execute(struct world_coll *c, const struct wr_cop *o, long long deadline, char why[256])
{
	struct job j = { .op = *o };
	int rc, lost, stopper;

	if (c->poison != 0) {
		return wr_coll_poisoned(c);
	}
	j.op.algo = wr_coll_pick(c, o->kind, o->count * wr_dtype_size(o->dtype));
	wr_check_init(&j.check, o->kind, o->count, o->dtype, o->op, o->root);
	j.check.mine.carried = carried(c, o, o->count * wr_dtype_size(o->dtype));
	rc = wr_coll_run(c, wr_algo_kind_name(o->kind), ++c->seq, deadline, dispatch,
			 &j);
	if (rc == WORLD_EMISMATCH) {
		return mismatch(&j.check, why);
	}
	if (rc < 0 && rc != -EINVAL) {
		lost = __atomic_load_n(&c->lost, __ATOMIC_ACQUIRE);
		stopper = rc == WORLD_EPEERDEAD && lost < 0 ? wr_coll_stopper(c, c->seq) : -1;
		pthread_mutex_lock(&c->mu);
		wr_coll_poison(c, rc, stopper >= 0 ? stopper : lost);
		pthread_mutex_unlock(&c->mu);
		if (stopper >= 0) {
			return wr_coll_note_stopper(c, wr_algo_kind_name(o->kind), c->seq,
						    stopper, why);
		}
		return wr_coll_note(rc, rc == WORLD_EPEERDEAD ? lost : -1);
	}
	return wr_coll_note(rc, -1);
}

static int
blocking(struct world_coll *c, const struct wr_cop *o, int timeout_ms)
{
	int ms = wr_world_timeout(c->w, timeout_ms);
	long long deadline = ms < 0 ? -1 : wr_clock_ms() + ms;
	uint64_t t;
	int rc = ms == -EINVAL ? -EINVAL : check(c, o);

	if (rc < 0) {
		return wr_coll_note(rc, -1);
	}
	pthread_mutex_lock(&c->mu);
	t = c->next_ticket++;
	wr_coll_await_turn(c, t);
	pthread_mutex_unlock(&c->mu);
	rc = execute(c, o, deadline, NULL);
	pthread_mutex_lock(&c->mu);
	wr_coll_next_turn(c);
	pthread_mutex_unlock(&c->mu);
	return rc;
}

/* ---- the worker, for started collectives ---- */

/*
 * Run the next started collective on this thread if its turn has come;
 * called with c->mu held. The worker runs them so, and so does a thread
 * that waits for one, rather than wake the worker and sleep until it is
 * done: a collective started and waited for at once (torch's c10d does
 * that for every blocking call) then costs no thread switch.
 */
static bool
run_next_here(struct world_coll *c)
{
	struct wr_cworker *k = c->worker;
	struct world_coll_req *r = k != NULL ? k->head : NULL;
	int ms;

	if (r == NULL || r->ticket != c->serving) {
		return false;
	}
	k->head = r->next;
	k->tail = k->head != NULL ? k->tail : NULL;
	ms = wr_world_timeout(c->w, c->started_ms);
	pthread_mutex_unlock(&c->mu);
	r->rc = execute(c, &r->cop, ms < 0 ? -1 : wr_clock_ms() + ms, r->why);
	pthread_mutex_lock(&c->mu);
	r->finished = true;
	wr_coll_next_turn(c);
	return true;
}

/*
 * How long the worker leaves a collective just started to a thread that
 * waits for it at once (run_next_here): the worker running it instead
 * costs that thread two thread switches, and torch's c10d starts and
 * waits at once for every blocking call. Nor does a start wake the worker
 * while the group is busy: waking it costs more than the collective
 * (about 9 us of a 5 us all_reduce of 1 KiB on 2 ranks). It polls instead,
 * every POLL_NS until the group has been quiet for QUIET_NS, then sleeps
 * until a start wakes it. A collective nobody waits for starts at most
 * POLL_NS late.
 */
#define CLAIM_NS 30000
#define POLL_NS 500000
#define QUIET_NS 100000000LL

/* The realtime clock @ns from now, for pthread_cond_timedwait. */
static struct timespec
in_ns(long long ns)
{
	struct timespec at;

	clock_gettime(CLOCK_REALTIME, &at);
	at.tv_nsec += (long)ns;
	at.tv_sec += at.tv_nsec / 1000000000;
	at.tv_nsec %= 1000000000;
	return at;
}

/* The worker's wait while its queue is empty; called with c->mu held. */
static void
idle(struct world_coll *c, struct wr_cworker *k)
{
	struct timespec at;

	if (wr_clock_ns() - k->last_ns < QUIET_NS) {
		at = in_ns(POLL_NS);
		pthread_cond_timedwait(&k->work, &c->mu, &at);
		return;
	}
	k->deep = true;
	pthread_cond_wait(&k->work, &c->mu);
	k->deep = false;
}

static void *
work(void *arg)
{
	struct world_coll *c = arg;
	struct wr_cworker *k = c->worker;
	struct timespec at;
	long long left;

	pthread_mutex_lock(&c->mu);
	while (k->head != NULL || !k->stop) {
		if (k->head == NULL) {
			idle(c, k);
			continue;
		}
		left = k->head->started_ns + CLAIM_NS - wr_clock_ns();
		if (left > 0) {
			at = in_ns(left);
			pthread_cond_timedwait(&k->work, &c->mu, &at);
		} else if (!run_next_here(c)) {
			/* Not its turn yet: wait for the next. */
			pthread_cond_wait(&c->turn, &c->mu);
		}
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

/* The worker, started on first need; called with c->mu held. */
static int
worker(struct world_coll *c)
{
	struct wr_cworker *k;
	sigset_t all, old;
	int rc;

	if (c->worker != NULL) {
		return 0;
	}
	k = calloc(1, sizeof(*k));
	if (k == NULL) {
		return -ENOMEM;
	}
	pthread_cond_init(&k->work, NULL);
	c->worker = k;
	/* Signals belong to the program's own threads. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	rc = -pthread_create(&k->thread, NULL, work, c);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc < 0) {
		pthread_cond_destroy(&k->work);
		free(k);
		c->worker = NULL;
	}
	return rc;
}

void
wr_cworker_stop(struct world_coll *c)
{
	struct wr_cworker *k = c->worker;

	if (k == NULL) {
		return;
	}
	pthread_mutex_lock(&c->mu);
	k->stop = true;
	pthread_cond_signal(&k->work);
	pthread_mutex_unlock(&c->mu);
	pthread_join(k->thread, NULL);
	pthread_cond_destroy(&k->work);
	free(k);
	c->worker = NULL;
}

static int
started(struct world_coll *c, const struct wr_cop *o, struct world_coll_req **out)
{
	struct world_coll_req *r;
	int rc = check(c, o);

	*out = NULL;
	if (rc < 0) {
		return wr_coll_note(rc, -1);
	}
	r = calloc(1, sizeof(*r));
	if (r == NULL) {
		return wr_coll_note(-ENOMEM, -1);
	}
	*r = (struct world_coll_req){ .c = c, .kind = WR_CREQ_COLLECTIVE, .cop = *o,
				      .started_ns = wr_clock_ns() };
	pthread_mutex_lock(&c->mu);
	rc = c->nstarted >= WR_COLL_STARTED_MAX ? -EAGAIN : worker(c);
	if (rc == 0) {
		c->nstarted++;
		r->ticket = c->next_ticket++;
		if (c->worker->tail != NULL) {
			c->worker->tail->next = r;
		} else {
			c->worker->head = r;
		}
		c->worker->tail = r;
		c->worker->last_ns = r->started_ns;
		if (c->worker->deep) {
			pthread_cond_signal(&c->worker->work);
		}
	}
	pthread_mutex_unlock(&c->mu);
	if (rc < 0) {
		free(r);
		return wr_coll_note(rc, -1);
	}
	*out = r;
	return 0;
}

int
wr_creq_wait(struct world_coll_req *r, int timeout_ms)
{
	struct world_coll *c = r->c;
	int ms = wr_world_timeout(c->w, timeout_ms);
	struct wr_wait rec = { .kind = WR_WAIT_COLL, .group = c->label,
			       .name = wr_algo_kind_name(r->cop.kind), .peer = -1 };
	struct timespec at;
	bool here;
	int own, rc = 0;

	if (ms == -EINVAL) {
		return wr_coll_note(-EINVAL, -1);
	}
	clock_gettime(CLOCK_REALTIME, &at);
	at.tv_sec += ms / 1000;
	at.tv_nsec += (long)(ms % 1000) * 1000000;
	at.tv_sec += at.tv_nsec / 1000000000;
	at.tv_nsec %= 1000000000;
	wr_waits_enter(&c->w->waits, &rec);
	pthread_mutex_lock(&c->mu);
	/* Only a wait as long as the operation's own deadline runs it here:
	 * a shorter one must be able to return while it goes on, and then
	 * the worker is not to leave it to a waiter (CLAIM_NS). */
	own = wr_world_timeout(c->w, c->started_ms);
	here = ms < 0 || (own >= 0 && ms >= own);
	if (!here && r->started_ns != 0) {
		r->started_ns = 0;
		pthread_cond_signal(&c->worker->work);
	}
	while (!r->finished && rc == 0) {
		if (here && run_next_here(c)) {
			continue;
		}
		rc = ms < 0 ? pthread_cond_wait(&c->turn, &c->mu)
			: pthread_cond_timedwait(&c->turn, &c->mu, &at);
	}
	rc = r->finished ? r->rc : -ETIMEDOUT;
	pthread_mutex_unlock(&c->mu);
	wr_waits_leave(&c->w->waits, &rec);
	if (rc < 0 && r->why[0] != '\0') {
		struct wr_result res = { .rc = rc,
					 .dead_rank = rc == WORLD_EPEERDEAD ? c->poison_rank : -1 };

		memcpy(res.message, r->why, sizeof(res.message));
		wr_failure_note(&res);
		return rc;
	}
	return wr_coll_note(rc, rc == WORLD_EPEERDEAD ? c->poison_rank : -1);
}

int
wr_creq_test(struct world_coll_req *r)
{
	bool done;

	pthread_mutex_lock(&r->c->mu);
	done = r->finished;
	pthread_mutex_unlock(&r->c->mu);
	return done ? 1 : 0;
}

void
wr_creq_free(struct world_coll_req *r)
{
	wr_creq_wait(r, WORLD_TIMEOUT_FOREVER);
	pthread_mutex_lock(&r->c->mu);
	r->c->nstarted--;
	pthread_mutex_unlock(&r->c->mu);
	free(r);
}

/* ---- the calls ---- */

#define COP(k, ...) ((struct wr_cop){ .kind = (k), __VA_ARGS__ })

int
world_coll_broadcast(struct world_coll *c, void *buf, size_t count,
		     enum world_dtype dtype, int root, int timeout_ms)
{
	struct wr_cop o = COP(WR_COLL_BROADCAST, .out = buf, .count = count,
			      .dtype = dtype, .root = root);

	return blocking(c, &o, timeout_ms);
}

int
world_coll_all_reduce(struct world_coll *c, void *buf, size_t count,
		      enum world_dtype dtype, enum world_op op, int timeout_ms)
{
	struct wr_cop o = COP(WR_COLL_ALL_REDUCE, .out = buf, .count = count,
			      .dtype = dtype, .op = op);

	return blocking(c, &o, timeout_ms);
}

int
world_coll_reduce(struct world_coll *c, void *buf, size_t count,
		  enum world_dtype dtype, enum world_op op, int root, int timeout_ms)
{
	struct wr_cop o = COP(WR_COLL_REDUCE, .out = buf, .count = count,
			      .dtype = dtype, .op = op, .root = root);

	return blocking(c, &o, timeout_ms);
}

int
world_coll_all_gather(struct world_coll *c, const void *in, void *out,
		      size_t count, enum world_dtype dtype, int timeout_ms)
{
	struct wr_cop o = COP(WR_COLL_ALL_GATHER, .in = in, .out = out, .count = count,
			      .dtype = dtype);

	return blocking(c, &o, timeout_ms);
}

int
world_coll_gather(struct world_coll *c, const void *in, void *out, size_t count,
		  enum world_dtype dtype, int root, int timeout_ms)
{
	struct wr_cop o = COP(WR_COLL_GATHER, .in = in, .out = out, .count = count,
			      .dtype = dtype, .root = root);

	return blocking(c, &o, timeout_ms);
}

int
world_coll_scatter(struct world_coll *c, const void *in, void *out, size_t count,
		   enum world_dtype dtype, int root, int timeout_ms)
{
	struct wr_cop o = COP(WR_COLL_SCATTER, .in = in, .out = out, .count = count,
			      .dtype = dtype, .root = root);

	return blocking(c, &o, timeout_ms);
}

int
world_coll_reduce_scatter(struct world_coll *c, const void *in, void *out,
			  size_t count, enum world_dtype dtype, enum world_op op,
			  int timeout_ms)
{
	struct wr_cop o = COP(WR_COLL_REDUCE_SCATTER, .in = in, .out = out,
			      .count = count, .dtype = dtype, .op = op);

	return blocking(c, &o, timeout_ms);
}

int
world_coll_all_to_all(struct world_coll *c, const void *in, void *out,
		      size_t count, enum world_dtype dtype, int timeout_ms)
{
	struct wr_cop o = COP(WR_COLL_ALL_TO_ALL, .in = in, .out = out, .count = count,
			      .dtype = dtype);

	return blocking(c, &o, timeout_ms);
}

int
world_coll_barrier(struct world_coll *c, int timeout_ms)
{
	struct wr_cop o = COP(WR_COLL_BARRIER, .dtype = WORLD_UINT8);

	return blocking(c, &o, timeout_ms);
}

int
world_coll_ibroadcast(struct world_coll *c, void *buf, size_t count,
		      enum world_dtype dtype, int root, struct world_coll_req **out)
{
	struct wr_cop o = COP(WR_COLL_BROADCAST, .out = buf, .count = count,
			      .dtype = dtype, .root = root);

	return started(c, &o, out);
}

int
world_coll_iall_reduce(struct world_coll *c, void *buf, size_t count,
		       enum world_dtype dtype, enum world_op op,
		       struct world_coll_req **out)
{
	struct wr_cop o = COP(WR_COLL_ALL_REDUCE, .out = buf, .count = count,
			      .dtype = dtype, .op = op);

	return started(c, &o, out);
}

int
world_coll_ireduce(struct world_coll *c, void *buf, size_t count,
		   enum world_dtype dtype, enum world_op op, int root,
		   struct world_coll_req **out)
{
	struct wr_cop o = COP(WR_COLL_REDUCE, .out = buf, .count = count,
			      .dtype = dtype, .op = op, .root = root);

	return started(c, &o, out);
}

int
world_coll_iall_gather(struct world_coll *c, const void *in, void *out,
		       size_t count, enum world_dtype dtype,
		       struct world_coll_req **out_req)
{
	struct wr_cop o = COP(WR_COLL_ALL_GATHER, .in = in, .out = out, .count = count,
			      .dtype = dtype);

	return started(c, &o, out_req);
}

int
world_coll_igather(struct world_coll *c, const void *in, void *out, size_t count,
		   enum world_dtype dtype, int root, struct world_coll_req **out_req)
{
	struct wr_cop o = COP(WR_COLL_GATHER, .in = in, .out = out, .count = count,
			      .dtype = dtype, .root = root);

	return started(c, &o, out_req);
}

int
world_coll_iscatter(struct world_coll *c, const void *in, void *out, size_t count,
		    enum world_dtype dtype, int root, struct world_coll_req **out_req)
{
	struct wr_cop o = COP(WR_COLL_SCATTER, .in = in, .out = out, .count = count,
			      .dtype = dtype, .root = root);

	return started(c, &o, out_req);
}

int
world_coll_ireduce_scatter(struct world_coll *c, const void *in, void *out,
			   size_t count, enum world_dtype dtype, enum world_op op,
			   struct world_coll_req **out_req)
{
	struct wr_cop o = COP(WR_COLL_REDUCE_SCATTER, .in = in, .out = out,
			      .count = count, .dtype = dtype, .op = op);

	return started(c, &o, out_req);
}

int
world_coll_iall_to_all(struct world_coll *c, const void *in, void *out,
		       size_t count, enum world_dtype dtype,
		       struct world_coll_req **out_req)
{
	struct wr_cop o = COP(WR_COLL_ALL_TO_ALL, .in = in, .out = out, .count = count,
			      .dtype = dtype);

	return started(c, &o, out_req);
}

int
world_coll_ibarrier(struct world_coll *c, struct world_coll_req **out)
{
	struct wr_cop o = COP(WR_COLL_BARRIER, .dtype = WORLD_UINT8);

	return started(c, &o, out);
}
