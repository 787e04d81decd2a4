/* SPDX-License-Identifier: MIT */
/*
 * cq: an endpoint's posted requests and its completion queue. Posts are
 * listed (so that close can cancel them), completions fill the requests
 * in, and requests that wr_fab_cancel() could not take back become
 * orphans whose late completions are swallowed. It does not post or
 * wait, and takes no lock: its owner holds the endpoint's lock. Also the
 * one mapping of libfabric's error codes.
 */
#ifndef WR_CQ_H
#define WR_CQ_H

#include <stdbool.h>
#include <stddef.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

#include "bell.h"
#include "fabric.h"
#include "peers.h"
#include "wait.h"

enum { WR_CQ_SEND = 1, WR_CQ_RECV };

/* Caller storage, in the endpoint. */
struct wr_cq {
	struct fid_cq *cq;       /* borrowed, as the rest */
	struct wr_peers *peers;  /* a receive rings its sender's bell */
	struct wr_bell *bell;    /* the own bell: wakes our sleepers; or NULL */
	struct wr_wait *wait;    /* counts large operations */
	int size;                /* world size: sources beyond are unknown (-1) */
	bool src_in_data;        /* the source rank is CQ data, not tag bits */
	bool eio_is_overflow;    /* receives post a sink (sink.h) */
	struct wr_fab_req posted; /* list head */
	int nposted;             /* atomic */
	struct wr_fab_req **orphans;
	size_t norphans, orphan_cap;
};

/* An empty list; the fields above are the caller's to set. */
void wr_cq_init(struct wr_cq *q);

/* Free the orphan table. Accepts NULL. */
void wr_cq_finish(struct wr_cq *q);

/* libfabric's @ret (negative) as our code: errno values stay, FI_ETRUNC
 * is -EMSGSIZE, FI_ENODATA -ENOENT, the rest WORLD_EFABRIC (logged
 * under WORLD_DEBUG, with @what). 0 for @ret >= 0. */
int wr_cq_error(const char *what, ssize_t ret);

/* A debug line on stderr, only when WORLD_DEBUG is set. */
void wr_cq_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* @r (set up by the caller: kind, len) is about to be posted: it is
 * listed, posted, and large above @large_len. */
void wr_cq_start(struct wr_cq *q, struct wr_fab_req *r, size_t large_len);

/* End a listed request with @err. */
void wr_cq_end(struct wr_cq *q, struct wr_fab_req *r, int err);

/* Read the CQ empty (bounded): the number of completions, or an error. */
int wr_cq_drain(struct wr_cq *q);

/* What fi_cq_sread returned: @ret, and @e if @ret is 1. */
void wr_cq_sread_done(struct wr_cq *q, ssize_t ret,
		      const struct fi_cq_tagged_entry *e);

/* Give up on listed @r: it ends with -EBUSY and its completion, if one
 * comes, is swallowed. -ENOMEM leaves it listed. */
int wr_cq_orphan(struct wr_cq *q, struct wr_fab_req *r);
bool wr_cq_is_orphan(const struct wr_cq *q, const struct wr_fab_req *r);

/* fi_cancel every listed request; end those still listed with
 * -ECANCELED (after the endpoint is closed). */
void wr_cq_cancel_all(struct wr_cq *q, struct fid_ep *ep);
void wr_cq_drop_all(struct wr_cq *q);

/* Whether @r has ended or was never posted; any thread. */
bool wr_cq_done(const struct wr_fab_req *r);

/* Whether nothing is listed; any thread. */
bool wr_cq_idle(const struct wr_cq *q);

#endif
