/* SPDX-License-Identifier: MIT */
/*
 * post: the endpoint's sends and receives: a tagged post into a caller's
 * request, the source's bits or CQ data, injects for small sends, and the
 * bounded retry while the provider says -FI_EAGAIN. Waiting for what was
 * posted is fabric.c's.
 */
#include "fabric.h"
#include "fabint.h"

#include <errno.h>
#include <sched.h>
#include <string.h>

#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "cq.h"
#include "peers.h"
#include "sink.h"
#include "wait.h"

static ssize_t
post_once(struct wr_fab *f, const struct post *p)
{
	uint64_t me = (uint64_t)f->rank;

	if (p->kind == WR_CQ_RECV && f->sink) {
		struct iovec iov[2] = {{p->buf, p->len}, wr_sink_iov(f->sink)};

		return fi_trecvv(f->ep, iov, NULL, 2, p->fa, p->tag, p->ignore,
				 p->r->ctx);
	}
	if (p->kind == WR_CQ_RECV) {
		return fi_trecv(f->ep, p->buf, p->len, NULL, p->fa, p->tag,
				p->ignore, p->r->ctx);
	}
	if (f->shm && p->r == NULL) {
		return fi_tinjectdata(f->ep, p->buf, p->len, me, p->fa, p->tag);
	}
	if (f->shm) {
		return fi_tsenddata(f->ep, p->buf, p->len, NULL, me, p->fa,
				    p->tag, p->r->ctx);
	}
	if (p->r == NULL) {
		return fi_tinject(f->ep, p->buf, p->len, p->fa, p->tag);
	}
	return fi_tsend(f->ep, p->buf, p->len, NULL, p->fa, p->tag, p->r->ctx);
}

/*
 * Post, progressing while the provider says -FI_EAGAIN (tcp;ofi_rxm while
 * it connects, shm with the peer's queue full): the peer is rung so that
 * it drains, and after a few rounds the lock is let go now and then so
 * other threads get in. Bounded: a peer that never progresses is -EAGAIN.
 */
static int
post_locked(struct wr_fab *f, const struct post *p)
{
	int64_t end = wr_fab_now_ns() + POST_NS;
	ssize_t ret;

	for (int i = 0;; i++) {
		ret = post_once(f, p);
		if (ret != -FI_EAGAIN) {
			return wr_cq_error("posting", ret);
		}
		wr_cq_drain(&f->reqs);
		wr_peers_ring(f->peers, p->peer);
		if (i < 16) {
			continue;
		}
		wr_wait_unlock(f->wait);
		sched_yield();
		wr_wait_lock(f->wait);
		if (wr_fab_now_ns() > end) {
			return -EAGAIN;
		}
	}
}

/* Post a request that completes through the CQ. It is listed before the
 * post, as posted, and ends with the error if the post fails. */
static int
post_request(struct wr_fab *f, const struct post *p)
{
	int rc;

	wr_cq_start(&f->reqs, p->r, f->large_len);
	rc = post_locked(f, p);
	if (rc < 0) {
		wr_cq_end(&f->reqs, p->r, rc);
	}
	return rc;
}

static void
req_init(struct wr_fab_req *r, int kind, size_t len)
{
	memset(r, 0, sizeof(*r));
	r->kind = kind;
	r->len = len;
	r->source = -1;
}

/* A send that fits the inject size is done at once; either way the
 * receiver's bell rings. */
static int
post_send(struct wr_fab *f, struct post *p)
{
	struct wr_fab_req *r = p->r;
	int rc;

	if (p->len <= f->inject) {
		p->r = NULL;
		rc = post_locked(f, p);
		r->err = rc;
	} else {
		rc = post_request(f, p);
	}
	if (rc == 0) {
		wr_peers_ring(f->peers, p->peer);
	}
	return rc;
}

int
wr_fab_isend(struct wr_fab *f, int peer, uint64_t tag, const void *buf,
	     size_t len, struct wr_fab_req *r)
{
	struct post p;
	int rc;

	if (f == NULL || r == NULL || peer < 0 || peer >= f->size ||
	    (tag & WR_FAB_SRC_MASK) != 0 || (buf == NULL && len > 0)) {
		return -EINVAL;
	}
	p = (struct post){
		.kind = WR_CQ_SEND, .buf = (void *)buf, .len = len, .peer = peer,
		.tag = f->shm ? tag : tag | (uint64_t)f->rank << WR_FAB_SRC_SHIFT,
		.r = r,
	};
	req_init(r, WR_CQ_SEND, len);
	wr_wait_lock(f->wait);
	rc = wr_cq_is_orphan(&f->reqs, r) ? -EBUSY :
		wr_peers_fi_addr(f->peers, f->av, peer, &p.fa);
	if (rc == 0) {
		rc = post_send(f, &p);
	}
	wr_wait_unlock(f->wait);
	return rc;
}

/*
 * Where the tag carries the source, a receive from one peer needs no
 * address: FI_ADDR_UNSPEC serves for every receive and nothing is
 * inserted. On shm (see struct wr_fab) a directed receive names the
 * peer's fi_addr, and ignore bits are refused.
 */
static int
recv_match(struct wr_fab *f, int peer, struct post *p)
{
	p->fa = FI_ADDR_UNSPEC;
	if (f->shm) {
		if (p->ignore != 0) {
			return -EOPNOTSUPP;
		}
		return peer < 0 ? 0 : wr_peers_fi_addr(f->peers, f->av, peer, &p->fa);
	}
	if (peer >= 0) {
		p->tag |= (uint64_t)peer << WR_FAB_SRC_SHIFT;
	} else {
		p->ignore |= WR_FAB_SRC_MASK;
	}
	return 0;
}

int
wr_fab_irecv(struct wr_fab *f, int peer, uint64_t tag, uint64_t ignore,
	     void *buf, size_t len, struct wr_fab_req *r)
{
	struct post p = {
		.kind = WR_CQ_RECV, .buf = buf, .len = len, .peer = -1,
		.tag = tag, .ignore = ignore, .r = r,
	};
	int rc;

	if (f == NULL || r == NULL || peer >= f->size ||
	    ((tag | ignore) & WR_FAB_SRC_MASK) != 0 ||
	    (buf == NULL && len > 0)) {
		return -EINVAL;
	}
	req_init(r, WR_CQ_RECV, len);
	wr_wait_lock(f->wait);
	rc = wr_cq_is_orphan(&f->reqs, r) ? -EBUSY : recv_match(f, peer, &p);
	if (rc == 0) {
		rc = post_request(f, &p);
	}
	wr_wait_unlock(f->wait);
	return rc;
}

bool
wr_fab_done(const struct wr_fab_req *r)
{
	return wr_cq_done(r);
}

int
wr_fab_progress(struct wr_fab *f)
{
	int rc;

	if (f == NULL) {
		return -EINVAL;
	}
	wr_wait_lock(f->wait);
	rc = wr_cq_drain(&f->reqs);
	wr_wait_unlock(f->wait);
	return rc < 0 ? rc : 0;
}
