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
		rc = wr_fab_isend(c->fab, c->world[peer], t, buf, len, &r->fr);
		/* Not taken yet (an shm peer that never read its queue): the
		 * wait posts it again. */
		if (rc == -EAGAIN) {
			r->deferred = true;
			r->sbuf = buf;
			r->slen = len;
			r->tag = t;
			return 0;
		}
	} else if (rc == 0) {
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

static int
lost_rank(const struct world_coll_req *r)
{
	return r->peer >= 0 ? r->c->world[r->peer] : __atomic_load_n(&r->c->lost, __ATOMIC_ACQUIRE);
}

/*
 * A deferred send: post it again, sleeping between tries
 * (wr_coll_backoff()), until its peer takes it, is lost, or @deadline
 * passes.
 */
static int
post_later(struct world_coll_req *r, long long deadline)
{
	int rc = -EAGAIN, retry = WR_COLL_RETRY_MS;

	while (rc == -EAGAIN) {
		rc = wr_fab_isend(r->c->fab, r->c->world[r->peer], r->tag, r->sbuf, r->slen,
				  &r->fr);
		if (rc == -EAGAIN && peer_lost(r) != 0) {
			rc = WORLD_EPEERDEAD;
		} else if (rc == -EAGAIN && deadline >= 0 && wr_clock_ms() >= deadline) {
			return -ETIMEDOUT;
		} else if (rc == -EAGAIN) {
			wr_coll_backoff(&retry, true);
		}
	}
	r->deferred = false;
	r->posted = rc == 0;
	return rc;
}

/* Wait for a posted message; 0 and the sender in *@source, or the error. */
static int
wait_message(struct world_coll_req *r, long long deadline, int *source)
{
	struct world_coll *c = r->c;
	struct wr_fab_req *one = &r->fr;
	struct wr_wait rec = { .kind = WR_WAIT_COLL, .group = c->label,
			       .name = r->send ? "send" : "recv", .peer = -1 };
	int rc;

	if (r->peer >= 0) {
		rec.peer = c->world[r->peer];
	}
	if (r->deferred || !wr_fab_done(one)) {
		/* Only a wait that may block goes in the hang report. */
		wr_waits_enter(&c->w->waits, &rec);
		rc = r->deferred ? post_later(r, deadline) : 0;
		if (rc == 0) {
			rc = wr_fab_wait(c->fab, &one, 1, deadline, peer_lost, r);
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
	if (r->deferred) {
		/* One more try to post it, never a wait. */
		post_later(r, 0);
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
	/* Not waited for: its buffer must be free when this returns. */
	if (r->posted && !wr_fab_done(&r->fr)) {
		wr_fab_cancel(r->c->fab, &r->fr);
	}
	free(r);
}
