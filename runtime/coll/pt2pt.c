/* SPDX-License-Identifier: MIT */
/*
 * pt2pt: a collective group's point-to-point messages (Machin's send,
 * recv, isend, irecv) over the fabric, with user tags that never match a
 * collective's, receive from any source that reports the sender, and the
 * requests that started operations (these, and collops.c's) return.
 */
#include "cgroup.h"
#include "creq.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "reduce.h"

/* A lost peer's last messages may still be queued here: take them first. */
#define DRAIN_MS 50

/* @count elements of @dtype in bytes, or -EINVAL. */
static int
message_bytes(size_t count, enum world_dtype dtype, size_t *out)
{
	size_t esize = wr_dtype_size(dtype);

	if (esize == 0 || count > SIZE_MAX / esize) {
		return -EINVAL;
	}
	*out = count * esize;
	return 0;
}

static int
check_peer(const struct world_coll *c, int peer, bool any_ok, int tag)
{
	if (tag < 0 || tag > WORLD_TAG_MAX) {
		return -EINVAL;
	}
	if (peer == WORLD_ANY_SOURCE && any_ok) {
		return 0;
	}
	/* A group of one has no one to talk to; nor has a rank with itself. */
	return peer >= 0 && peer < c->size && peer != c->rank ? 0 : -EINVAL;
}

/*
 * Deferred sends. A send the fabric cannot take yet (tcp;ofi_rxm while
 * it connects to the peer, an shm peer that never read its queue) waits
 * on the group's list, and every wait on a message of the group posts
 * what it can of the list, in order, not only the send's own wait: a
 * rank that waits for a receive first (irecv and isend to each peer,
 * then the waits in that order) would otherwise never send what its
 * peer waits for. A later send to the same peer queues behind, so that
 * messages of one sender and tag stay in order. Called with c->mu held.
 */
static bool
deferred_to(const struct world_coll *c, int peer, const struct world_coll_req *before)
{
	for (const struct world_coll_req *d = c->deferred; d != NULL && d != before; d = d->dnext) {
		if (d->peer == peer) {
			return true;
		}
	}
	return false;
}

static void
defer(struct world_coll_req *r)
{
	struct world_coll_req **at = &r->c->deferred;

	while (*at != NULL) {
		at = &(*at)->dnext;
	}
	r->dnext = NULL;
	*at = r;
	__atomic_store_n(&r->deferred, true, __ATOMIC_RELEASE);
	__atomic_add_fetch(&r->c->ndeferred, 1, __ATOMIC_RELEASE);
}

static void
undefer(struct world_coll_req *r)
{
	struct world_coll_req **at = &r->c->deferred;

	if (!__atomic_load_n(&r->deferred, __ATOMIC_ACQUIRE)) {
		return;
	}
	while (*at != NULL && *at != r) {
		at = &(*at)->dnext;
	}
	if (*at == r) {
		*at = r->dnext;
	}
	__atomic_store_n(&r->deferred, false, __ATOMIC_RELEASE);
	__atomic_sub_fetch(&r->c->ndeferred, 1, __ATOMIC_RELEASE);
}

/* One try at each deferred send whose peer has none before it still
 * deferred; c->mu held. */
static void
retry_deferred(struct world_coll *c)
{
	struct world_coll_req *r = c->deferred, *next;
	int rc;

	for (; r != NULL; r = next) {
		next = r->dnext;
		if (deferred_to(c, r->peer, r)) {
			continue;
		}
		rc = wr_fab_isend(c->fab, c->world[r->peer], r->tag, r->sbuf, r->slen, &r->fr);
		if (rc != -EAGAIN) {
			r->posted = rc == 0;
			r->post_err = rc;
			undefer(r);
		}
	}
}

/* What a wait on the group does first: post the deferred sends it can. */
static void
post_deferred(struct world_coll *c)
{
	if (__atomic_load_n(&c->ndeferred, __ATOMIC_ACQUIRE) > 0) {
		pthread_mutex_lock(&c->mu);
		retry_deferred(c);
		pthread_mutex_unlock(&c->mu);
	}
}

/* Post send @r, or put it on the deferred list; 0 or the error. */
static int
post_send(struct world_coll_req *r, const void *buf, size_t len, uint64_t t)
{
	struct world_coll *c = r->c;
	int rc = -EAGAIN;

	r->sbuf = buf;
	r->slen = len;
	r->tag = t;
	if (__atomic_load_n(&c->ndeferred, __ATOMIC_ACQUIRE) == 0) {
		rc = wr_fab_isend(c->fab, c->world[r->peer], t, buf, len, &r->fr);
		if (rc != -EAGAIN) {
			r->posted = rc == 0;
			return rc;
		}
	}
	/* Behind a deferred send to the same peer, it is not tried. */
	pthread_mutex_lock(&c->mu);
	if (!deferred_to(c, r->peer, NULL)) {
		rc = wr_fab_isend(c->fab, c->world[r->peer], t, buf, len, &r->fr);
	}
	if (rc == -EAGAIN) {
		defer(r);
		rc = 0;
	} else {
		r->posted = rc == 0;
	}
	pthread_mutex_unlock(&c->mu);
	return rc;
}

static int
post(struct world_coll_req *r, bool send, const void *buf, size_t count,
     enum world_dtype dtype, int peer, int tag)
{
	struct world_coll *c = r->c;
	uint64_t t = wr_coll_tag(WR_TAG_USER, c->id, (uint32_t)tag);
	size_t len;
	int rc = message_bytes(count, dtype, &len);

	if (rc == 0) {
		rc = check_peer(c, peer, !send, tag);
	}
	if (rc == 0 && c->poison != 0) {
		return wr_coll_poisoned(c);
	}
	r->peer = peer;
	if (rc == 0 && send) {
		return wr_coll_note(post_send(r, buf, len, t), -1);
	}
	if (rc == 0) {
		rc = wr_fab_irecv(c->fab, peer < 0 ? -1 : c->world[peer], t, 0, (void *)buf,
				  len, &r->fr);
	}
	r->posted = rc == 0;
	return wr_coll_note(rc, -1);
}

/* The fabric's check for one message: its peer (any member, for a
 * receive from any source) is lost. */
static int
peer_lost(void *arg)
{
	struct world_coll_req *r = arg;
	struct world_coll *c = r->c;

	if (r->peer >= 0 ? wr_prog_is_gone(c->w->prog, c->world[r->peer])
			 : __atomic_load_n(&c->lost, __ATOMIC_ACQUIRE) >= 0) {
		return WORLD_EPEERDEAD;
	}
	return wr_prog_interrupted(c->w->prog);
}

/* A message wait's check: the deferred sends of the group first. */
static int
wait_check(void *arg)
{
	struct world_coll_req *r = arg;

	post_deferred(r->c);
	return peer_lost(r);
}

static int
lost_rank(const struct world_coll_req *r)
{
	return r->peer >= 0 ? r->c->world[r->peer] : __atomic_load_n(&r->c->lost, __ATOMIC_ACQUIRE);
}

/*
 * A deferred send: post what can be of the group's deferred sends,
 * sleeping between tries (wr_coll_backoff()), until this one is posted,
 * its peer is lost, or @deadline passes (it stays deferred then).
 */
static int
post_later(struct world_coll_req *r, long long deadline)
{
	struct world_coll *c = r->c;
	int retry = WR_COLL_RETRY_MS, rc;

	for (;;) {
		pthread_mutex_lock(&c->mu);
		retry_deferred(c);
		rc = __atomic_load_n(&r->deferred, __ATOMIC_ACQUIRE) ? -EAGAIN : r->post_err;
		if (rc == -EAGAIN) {
			rc = peer_lost(r);
			rc = rc == 0 ? -EAGAIN : rc;
		}
		/* A peer gone takes its sends with it; an interrupt leaves
		 * this one deferred. */
		if (rc == WORLD_EPEERDEAD && __atomic_load_n(&r->deferred, __ATOMIC_ACQUIRE)) {
			undefer(r);
			r->post_err = rc;
		}
		pthread_mutex_unlock(&c->mu);
		if (rc != -EAGAIN) {
			return rc;
		}
		if (deadline >= 0 && wr_clock_ms() >= deadline) {
			return -ETIMEDOUT;
		}
		wr_coll_backoff(&retry, true);
	}
}

/* Wait for a posted message; 0 and the sender in *@source, or the error. */
static int
wait_message(struct world_coll_req *r, long long deadline, int *source)
{
	struct world_coll *c = r->c;
	struct wr_fab_req *one = &r->fr;
	struct wr_wait rec = { .kind = WR_WAIT_COLL, .group = c->label,
			       .name = r->send ? "send" : "recv", .peer = -1 };
	bool deferred = __atomic_load_n(&r->deferred, __ATOMIC_ACQUIRE);
	int rc;

	if (r->peer >= 0) {
		rec.peer = c->world[r->peer];
	}
	/* Another wait posted it, and the post failed: that is its end. */
	if (r->send && !deferred && !r->posted && !r->done) {
		return wr_coll_note(r->post_err < 0 ? r->post_err : -EIO, -1);
	}
	if (deferred || !wr_fab_done(one)) {
		/* Only a wait that may block goes in the hang report. */
		wr_waits_enter(&c->w->waits, &rec);
		rc = deferred ? post_later(r, deadline) : 0;
		if (rc == 0) {
			rc = wr_fab_wait(c->fab, &one, 1, deadline, wait_check, r);
		}
		wr_waits_leave(&c->w->waits, &rec);
	} else {
		rc = 0;
	}
	if (rc < 0 && rc != WORLD_EPEERDEAD) {
		return wr_coll_note(rc, -1);
	}
	for (long long until = wr_clock_ms() + DRAIN_MS; rc == WORLD_EPEERDEAD && r->posted &&
	     !wr_fab_done(one) && wr_clock_ms() < until;) {
		wr_fab_progress(c->fab);
	}
	if (rc == WORLD_EPEERDEAD && r->posted && wr_fab_done(one)) {
		rc = 0;
	}
	if (rc == WORLD_EPEERDEAD) {
		/* The peer is gone with the message: the group is broken. */
		wr_fab_cancel(c->fab, one);
		pthread_mutex_lock(&c->mu);
		wr_coll_poison(c, rc, lost_rank(r));
		pthread_mutex_unlock(&c->mu);
		return wr_coll_note(rc, lost_rank(r));
	}
	if (rc < 0) {
		return wr_coll_note(rc, -1);
	}
	r->done = true;
	r->rc = r->fr.err;
	r->source = r->fr.err == 0 && !r->send ? world_coll_group_rank(c, r->fr.source) : -1;
	if (source != NULL) {
		*source = r->source;
	}
	return wr_coll_note(r->rc, -1);
}

/* Deadline of a wait of @timeout_ms (world.h), or -EINVAL. */
static int
deadline_of(const struct world_coll *c, int timeout_ms, long long *out)
{
	int ms = wr_world_timeout(c->w, timeout_ms);

	if (ms == -EINVAL) {
		return -EINVAL;
	}
	*out = ms < 0 ? -1 : wr_clock_ms() + ms;
	return 0;
}

/* A blocking message: post, wait, and take it back if the wait fails.
 * The clock is read only when there is a wait (an inject send is done
 * at once): it costs more than the rest of a small send here. */
static int
blocking(struct world_coll *c, bool send, const void *buf, size_t count,
	 enum world_dtype dtype, int peer, int tag, int timeout_ms, int *source)
{
	struct world_coll_req r = { .c = c, .kind = WR_CREQ_MESSAGE, .send = send };
	long long deadline = -1;
	int rc = wr_world_timeout(c->w, timeout_ms) == -EINVAL ? -EINVAL : 0;

	if (source != NULL) {
		*source = -1;
	}
	if (rc == 0) {
		rc = post(&r, send, buf, count, dtype, peer, tag);
	}
	if (rc == 0 && (r.deferred || !wr_fab_done(&r.fr))) {
		rc = deadline_of(c, timeout_ms, &deadline);
	}
	if (rc == 0) {
		rc = wait_message(&r, deadline, source);
	}
	if (__atomic_load_n(&r.deferred, __ATOMIC_ACQUIRE)) {
		pthread_mutex_lock(&c->mu);
		undefer(&r);
		pthread_mutex_unlock(&c->mu);
	}
	if (r.posted && !wr_fab_done(&r.fr)) {
		wr_fab_cancel(c->fab, &r.fr);
	}
	return rc;
}

int
world_coll_send(struct world_coll *c, const void *buf, size_t count,
		enum world_dtype dtype, int dst, int tag, int timeout_ms)
{
	return blocking(c, true, buf, count, dtype, dst, tag, timeout_ms, NULL);
}

int
world_coll_recv(struct world_coll *c, void *buf, size_t count,
		enum world_dtype dtype, int src, int tag, int timeout_ms,
		int *source)
{
	return blocking(c, false, buf, count, dtype, src, tag, timeout_ms, source);
}

static int
start(struct world_coll *c, bool send, const void *buf, size_t count,
      enum world_dtype dtype, int peer, int tag, struct world_coll_req **out)
{
	struct world_coll_req *r = calloc(1, sizeof(*r));
	int rc;

	*out = NULL;
	if (r == NULL) {
		return -ENOMEM;
	}
	*r = (struct world_coll_req){ .c = c, .kind = WR_CREQ_MESSAGE, .send = send };
	rc = post(r, send, buf, count, dtype, peer, tag);
	if (rc < 0) {
		free(r);
		return rc;
	}
	*out = r;
	return 0;
}

int
world_coll_isend(struct world_coll *c, const void *buf, size_t count,
		 enum world_dtype dtype, int dst, int tag,
		 struct world_coll_req **out)
{
	return start(c, true, buf, count, dtype, dst, tag, out);
}

int
world_coll_irecv(struct world_coll *c, void *buf, size_t count,
		 enum world_dtype dtype, int src, int tag,
		 struct world_coll_req **out)
{
	return start(c, false, buf, count, dtype, src, tag, out);
}

int
world_coll_wait(struct world_coll_req *r, int timeout_ms, int *source)
{
	long long deadline;
	int rc;

	if (source != NULL) {
		*source = -1;
	}
	if (r->kind == WR_CREQ_COLLECTIVE) {
		return wr_creq_wait(r, timeout_ms);
	}
	if (r->done) {
		if (source != NULL) {
			*source = r->source;
		}
		return wr_coll_note(r->rc, -1);
	}
	rc = deadline_of(r->c, timeout_ms, &deadline);
	return rc < 0 ? rc : wait_message(r, deadline, source);
}

int
world_coll_test(struct world_coll_req *r)
{
	if (r->kind == WR_CREQ_COLLECTIVE) {
		return wr_creq_test(r);
	}
	if (__atomic_load_n(&r->deferred, __ATOMIC_ACQUIRE) && post_later(r, 0) == -ETIMEDOUT) {
		/* One more try to post it, never a wait. */
		return 0;
	}
	if (!r->done) {
		wr_fab_progress(r->c->fab);
	}
	return r->done || wr_fab_done(&r->fr) ? 1 : 0;
}

void
world_coll_req_free(struct world_coll_req *r)
{
	if (r == NULL) {
		return;
	}
	if (r->kind == WR_CREQ_COLLECTIVE) {
		wr_creq_free(r);
		return;
	}
	if (__atomic_load_n(&r->deferred, __ATOMIC_ACQUIRE)) {
		pthread_mutex_lock(&r->c->mu);
		undefer(r);
		pthread_mutex_unlock(&r->c->mu);
	}
	/* Not waited for: its buffer must be free when this returns. */
	if (r->posted && !wr_fab_done(&r->fr)) {
		wr_fab_cancel(r->c->fab, &r->fr);
	}
	free(r);
}
