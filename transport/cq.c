/* SPDX-License-Identifier: MIT */
#include "cq.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include "dl.h"
#include "world_errors.h"

enum { ST_DONE = 1, ST_POSTED = 0x50535444 };

void
wr_cq_debug(const char *fmt, ...)
{
	va_list ap;

	if (getenv("WORLD_DEBUG") == NULL) {
		return;
	}
	fputs("libworld: fabric: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* libfabric's codes below FI_ERRNO_OFFSET are errno values. */
int
wr_cq_error(const char *what, ssize_t ret)
{
	int e = (int)-ret;

	if (ret >= 0) {
		return 0;
	}
	if (e == FI_ENODATA) {
		return -ENOENT;
	}
	if (e == FI_ETRUNC) {
		return -EMSGSIZE;
	}
	if (e < FI_ERRNO_OFFSET) {
		return -e;
	}
	wr_cq_debug("%s: %s", what, wr_fi_strerror(e));
	return WORLD_EFABRIC;
}

void
wr_cq_init(struct wr_cq *q)
{
	q->posted.next = q->posted.prev = &q->posted;
	q->nposted = 0;
}

void
wr_cq_finish(struct wr_cq *q)
{
	if (q == NULL) {
		return;
	}
	free(q->orphans);
	q->orphans = NULL;
	q->norphans = q->orphan_cap = 0;
}

bool
wr_cq_is_orphan(const struct wr_cq *q, const struct wr_fab_req *r)
{
	for (size_t i = 0; i < q->norphans; i++) {
		if (q->orphans[i] == r) {
			return true;
		}
	}
	return false;
}

/* A completion for an orphan only says the provider is done with it: the
 * storage may be the caller's for something else by now, so it is not
 * touched. */
static bool
orphan_take(struct wr_cq *q, const struct wr_fab_req *r)
{
	for (size_t i = 0; i < q->norphans; i++) {
		if (q->orphans[i] == r) {
			q->orphans[i] = q->orphans[--q->norphans];
			return true;
		}
	}
	return false;
}

void
wr_cq_start(struct wr_cq *q, struct wr_fab_req *r, size_t large_len)
{
	r->large = r->len > large_len;
	if (r->large) {
		wr_wait_large(q->wait, 1);
	}
	r->next = q->posted.next;
	r->prev = &q->posted;
	q->posted.next->prev = r;
	q->posted.next = r;
	__atomic_fetch_add(&q->nposted, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&r->state, ST_POSTED, __ATOMIC_RELEASE);
}

/* The public fields first, the state last, so that a thread that sees
 * the request done without the lock sees them filled. */
void
wr_cq_end(struct wr_cq *q, struct wr_fab_req *r, int err)
{
	r->prev->next = r->next;
	r->next->prev = r->prev;
	r->prev = r->next = NULL;
	if (r->large) {
		wr_wait_large(q->wait, -1);
	}
	r->err = err;
	__atomic_fetch_sub(&q->nposted, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&r->state, ST_DONE, __ATOMIC_RELEASE);
}

/* On shm the source comes as CQ data (see fabric.c); the request's tag
 * says it in the source bits either way. */
static void
complete(struct wr_cq *q, struct wr_fab_req *r, int err, size_t len,
	 uint64_t tag, uint64_t data)
{
	uint64_t src;

	if (q->src_in_data) {
		tag = (tag & ~WR_FAB_SRC_MASK) |
		      (data << WR_FAB_SRC_SHIFT & WR_FAB_SRC_MASK);
	}
	src = (tag & WR_FAB_SRC_MASK) >> WR_FAB_SRC_SHIFT;
	if (r == NULL || orphan_take(q, r) || r->state != ST_POSTED) {
		return;
	}
	if (r->kind == WR_CQ_RECV && err != -ECANCELED) {
		/* With the sink (sink.h), an overflow is a success longer
		 * than the buffer, or a CMA copy that hit the guard. */
		if ((err == 0 && len > r->len) || (err == -EIO && q->eio_is_overflow)) {
			err = -EMSGSIZE;
			len = r->len;
		}
		r->len = len;
		r->tag = tag;
		r->source = src < (uint64_t)q->size ? (int)src : -1;
		/* A rendezvous sender completes only once we have matched:
		 * wake it. */
		wr_peers_ring(q->peers, r->source);
	}
	wr_cq_end(q, r, err);
}

static void
read_error(struct wr_cq *q)
{
	struct fi_cq_err_entry e;
	int err;

	memset(&e, 0, sizeof(e));
	if (fi_cq_readerr(q->cq, &e, 0) != 1) {
		return;
	}
	if (e.err == FI_ECANCELED) {
		err = -ECANCELED;
	} else {
		err = wr_cq_error("completion", -(ssize_t)e.err);
	}
	complete(q, e.op_context, err, e.len, e.tag, e.data);
}

/* Our own sleepers are woken too: their requests may be among these. */
int
wr_cq_drain(struct wr_cq *q)
{
	struct fi_cq_tagged_entry ent[16];
	int done = 0;

	for (int round = 0; round < 64; round++) {
		ssize_t n = fi_cq_read(q->cq, ent, 16);

		if (n == -FI_EAGAIN) {
			break;
		}
		if (n == -FI_EAVAIL) {
			read_error(q);
			done++;
			continue;
		}
		if (n < 0) {
			return wr_cq_error("fi_cq_read", n);
		}
		for (ssize_t i = 0; i < n; i++) {
			complete(q, ent[i].op_context, 0, ent[i].len, ent[i].tag,
				 ent[i].data);
		}
		done += (int)n;
	}
	if (done > 0 && q->bell && wr_bell_waiters(q->bell) > 0) {
		wr_bell_ring(q->bell);
	}
	return done;
}

void
wr_cq_sread_done(struct wr_cq *q, ssize_t ret,
		 const struct fi_cq_tagged_entry *e)
{
	if (ret == 1) {
		complete(q, e->op_context, 0, e->len, e->tag, e->data);
	} else if (ret == -FI_EAVAIL) {
		read_error(q);
	}
}

int
wr_cq_orphan(struct wr_cq *q, struct wr_fab_req *r)
{
	if (q->norphans == q->orphan_cap) {
		size_t cap = q->orphan_cap ? 2 * q->orphan_cap : 8;
		void *p = realloc(q->orphans, cap * sizeof(*q->orphans));

		if (p == NULL) {
			return -ENOMEM;
		}
		q->orphans = p;
		q->orphan_cap = cap;
	}
	q->orphans[q->norphans++] = r;
	wr_cq_end(q, r, -EBUSY);
	return 0;
}

void
wr_cq_cancel_all(struct wr_cq *q, struct fid_ep *ep)
{
	for (struct wr_fab_req *r = q->posted.next; r != &q->posted; r = r->next) {
		fi_cancel(&ep->fid, r->ctx);
	}
}

void
wr_cq_drop_all(struct wr_cq *q)
{
	while (q->posted.next != &q->posted) {
		wr_cq_end(q, q->posted.next, -ECANCELED);
	}
}

bool
wr_cq_idle(const struct wr_cq *q)
{
	return __atomic_load_n(&q->nposted, __ATOMIC_ACQUIRE) == 0;
}

bool
wr_cq_done(const struct wr_fab_req *r)
{
	return r == NULL || __atomic_load_n(&r->state, __ATOMIC_ACQUIRE) != ST_POSTED;
}
