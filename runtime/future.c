/* SPDX-License-Identifier: MIT */
/*
 * future: calls that do not wait (world_call_async and its direct form).
 * A future holds the call in flight, or its answer once in; waiting hands
 * out copies, so a future may be waited on more than once.
 */
#include "worldint.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "failure.h"
#include "peerproto.h"

struct world_future {
	struct world *w;
	struct wr_call *call; /* in flight; NULL once answered */
	struct wr_result res; /* the answer, once done */
	bool done;
	long long deadline;   /* -1: none */
	int peer;             /* whom the call went to, */
	const char *kind;     /* what it asked ("service", "direct"), */
	char *key;            /* and of what, for the wait's record */
};

/* The record of a thread that waits for @f. */
static struct wr_wait
future_rec(const struct world_future *f)
{
	return (struct wr_wait){ .kind = WR_WAIT_FUTURE, .peer = f->peer,
				 .detail = f->kind, .name = f->key };
}

static int
future_new(struct world *w, int timeout_ms, struct world_future **out)
{
	struct world_future *f = calloc(1, sizeof(*f));
	int wait_ms = wr_world_timeout(w, timeout_ms);

	*out = NULL;
	if (wait_ms == -EINVAL) {
		free(f);
		return -EINVAL;
	}
	if (f == NULL) {
		return -ENOMEM;
	}
	f->w = w;
	f->res.dead_rank = -1;
	f->deadline = wait_ms < 0 ? -1 : wr_clock_ms() + wait_ms;
	*out = f;
	return 0;
}

/* A future that is answered already (an error, or a local call). */
static void
settle(struct world_future *f, struct wr_result *r)
{
	f->res = *r;
	f->done = true;
}

/* Send @a, or answer it here: @here is the handler kind of a local call. */
static int
submit(struct world_group *g, const struct wr_ask *a, enum wr_hkind here,
       struct world_future **out)
{
	struct world_future *f;
	struct wr_result r = { .dead_rank = -1 };
	int rc = future_new(wr_group_world(g), a->timeout_ms, &f);

	if (rc < 0) {
		return rc;
	}
	if (a->rank < 0) {
		r.rc = a->rank;
		settle(f, &r);
	} else if (a->rank == wr_group_world(g)->rank) {
		wr_group_run_ask(f->w, here, here == WR_H_DIRECT ? NULL : wr_group_name(g),
				 a, &r);
		settle(f, &r);
	} else {
		rc = wr_group_submit(g, a, &f->call);
		f->peer = a->rank;
		f->kind = a->kind;
		f->key = strdup(a->key);
		if (rc < 0) {
			r.rc = rc;
			r.dead_rank = rc == WORLD_EPEERDEAD ? a->rank : -1;
			settle(f, &r);
		}
	}
	*out = f;
	return 0;
}

int
world_call_async(struct world_group *g, const char *key, const json_t *args,
		 const void *blob, size_t len, int timeout_ms,
		 struct world_future **out)
{
	/* As in Machin, the lookup is synchronous; cached, it costs nothing. */
	struct wr_ask a = { .rank = wr_group_owner(g, 's', key), .kind = WR_PEER_SERVICE,
			    .key = key, .args = args, .blob = blob, .len = len,
			    .timeout_ms = timeout_ms };

	return submit(g, &a, WR_H_SERVICE, out);
}

int
world_call_direct_async(struct world_group *g, const char *member,
			const char *name, const json_t *args, const void *blob,
			size_t len, int timeout_ms, struct world_future **out)
{
	int rank = wr_group_member_rank(g, member);
	struct wr_ask a = { .rank = rank < 0 ? WORLD_ENOTMEMBER : rank,
			    .kind = WR_PEER_DIRECT, .key = name, .args = args,
			    .blob = blob, .len = len, .timeout_ms = timeout_ms };

	return submit(g, &a, WR_H_DIRECT, out);
}

int
world_callv_async(struct world_group *g, const struct world_call_spec *s,
		  struct world_future **out)
{
	struct wr_payload pl = { s->iov, s->iovcnt, s->release, s->release_arg };
	int rank = s->member != NULL ? wr_group_member_rank(g, s->member)
				     : wr_group_owner(g, 's', s->key);
	struct wr_ask a = { .rank = rank < 0 && s->member != NULL ? WORLD_ENOTMEMBER : rank,
			    .kind = s->member != NULL ? WR_PEER_DIRECT : WR_PEER_SERVICE,
			    .key = s->key, .args = s->args, .pl = &pl,
			    .timeout_ms = s->timeout_ms };
	int rc = submit(g, &a, s->member != NULL ? WR_H_DIRECT : WR_H_SERVICE, out);

	wr_payload_release(&pl);
	return rc;
}

/* Wait at most @timeout_ms, and the future's own deadline, for the answer. */
static int
await(struct world_future *f, int timeout_ms)
{
	long long now = wr_clock_ms(), until = -1;
	struct wr_wait rec;
	int rc;

	if (f->done) {
		return 0;
	}
	timeout_ms = wr_world_timeout(f->w, timeout_ms);
	if (timeout_ms == -EINVAL) {
		return -EINVAL;
	}
	if (timeout_ms >= 0) {
		until = now + timeout_ms;
	}
	if (f->deadline >= 0 && (until < 0 || f->deadline < until)) {
		until = f->deadline;
	}
	rec = future_rec(f);
	wr_waits_enter(&f->w->waits, &rec);
	rc = wr_prog_wait(f->w->prog, f->call, until < 0 ? -1 : (int)(until > now ? until - now : 0));
	wr_waits_leave(&f->w->waits, &rec);
	if (rc < 0 && f->deadline >= 0 && wr_clock_ms() >= f->deadline) {
		/* Its own time is up: it is over, with that verdict. */
		wr_prog_drop(f->w->prog, f->call);
		f->call = NULL;
		f->res.rc = -ETIMEDOUT;
		f->done = true;
		return 0;
	}
	if (rc < 0) {
		return rc;
	}
	wr_prog_take(f->w->prog, f->call, &f->res);
	f->call = NULL;
	wr_result_unwrap(&f->res);
	f->done = true;
	return 0;
}

int
world_future_wait(struct world_future *f, int timeout_ms, json_t **result,
		  void **blob, size_t *len)
{
	int rc = await(f, timeout_ms);

	if (rc < 0) {
		return rc;
	}
	wr_failure_note(&f->res);
	if (f->res.rc == 0 && result != NULL) {
		*result = json_incref(f->res.result);
	}
	if (f->res.rc == 0 && blob != NULL) {
		*blob = f->res.len > 0 ? malloc(f->res.len) : NULL;
		*len = f->res.len;
		if (f->res.len > 0 && *blob == NULL) {
			return -ENOMEM;
		}
		if (f->res.len > 0) {
			memcpy(*blob, f->res.blob, f->res.len);
		}
	}
	return f->res.rc;
}

int
world_future_test(struct world_future *f)
{
	return f->done || wr_prog_answered(f->w->prog, f->call);
}

int
world_future_wait_all(struct world_future *const *fs, size_t n, int timeout_ms)
{
	long long until;

	timeout_ms = n > 0 ? wr_world_timeout(fs[0]->w, timeout_ms) : 0;
	if (timeout_ms == -EINVAL) {
		return -EINVAL;
	}
	until = timeout_ms < 0 ? -1 : wr_clock_ms() + timeout_ms;

	for (size_t i = 0; i < n; i++) {
		long long left = until < 0 ? -1 : until - wr_clock_ms();
		int rc = await(fs[i], until < 0 ? -1 : (int)(left > 0 ? left : 0));

		if (rc < 0) {
			return rc;
		}
	}
	return 0;
}

int
world_future_wait_any(struct world_future *const *fs, size_t n, int timeout_ms,
		      size_t *index)
{
	struct wr_call **calls = calloc(n ? n : 1, sizeof(*calls));
	size_t i;
	int rc;

	if (calls == NULL) {
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		if (fs[i]->done) {
			*index = i;
			free(calls);
			return 0;
		}
		calls[i] = fs[i]->call;
	}
	timeout_ms = n > 0 ? wr_world_timeout(fs[0]->w, timeout_ms) : -EINVAL;
	if (timeout_ms == -EINVAL) {
		rc = -EINVAL;
	} else {
		struct wr_wait rec = future_rec(fs[0]);

		wr_waits_enter(&fs[0]->w->waits, &rec);
		rc = wr_prog_wait_any(fs[0]->w->prog, calls, n, timeout_ms, &i);
		wr_waits_leave(&fs[0]->w->waits, &rec);
	}
	free(calls);
	if (rc == 0) {
		*index = i;
		rc = await(fs[i], 0);
	}
	return rc;
}

int
world_future_remote_code(const struct world_future *f)
{
	return f->done ? f->res.remote_code : 0;
}

void
world_future_free(struct world_future *f)
{
	if (f == NULL) {
		return;
	}
	if (f->call != NULL) {
		wr_prog_drop(f->w->prog, f->call);
	}
	wr_result_finish(&f->res);
	free(f->key);
	free(f);
}
