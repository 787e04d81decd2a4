/* SPDX-License-Identifier: MIT */
/*
 * fabint: the endpoint as transport/'s two halves see it: fabric.c (open,
 * close, addresses, waiting, cancel) and post.c (sends, receives and the
 * provider's -FI_EAGAIN). Not installed.
 */
#ifndef WR_FABINT_H
#define WR_FABINT_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <rdma/fabric.h>

#include "cq.h"

/* Requests above this go by rendezvous on shm (its inject size), and,
 * without CMA, by the SAR protocol that needs both sides awake. With
 * CMA the receiver copies alone and rings the sender when it is done, so
 * nothing is large (struct wr_fab's large_len). */
#define LARGE_LEN 4096
/*
 * A post the provider keeps refusing with -FI_EAGAIN (after a few quick
 * tries, each draining the CQ and ringing the peer) gives up after this
 * longer while of yielding: none. The peer is not progressing (shm cannot
 * send to a rank before that rank has once read its queue, and a full
 * queue waits for the reader); the caller waits for it asleep, as it
 * waits for anything, until its own deadline.
 */
#define POST_NS 0LL
struct wr_fab {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	/* Holds the endpoint's lock (FI_THREAD_DOMAIN): every fi_* call on
	 * the domain, the peer table and the request list are under it. */
	struct wr_wait *wait;
	struct wr_cq reqs;
	struct wr_peers *peers;
	struct wr_bell *bell; /* own doorbell, shm only */
	char *addr;
	int rank, size;
	size_t inject;
	/* shm 1.17 matches a receive against unexpected messages with the
	 * stale ignore bits of a recycled entry (smr_match_tagged), so
	 * ignore bits there would match wrongly: the source goes as CQ
	 * data, directed receives match by address (FI_DIRECTED_RECV), and
	 * every tag is matched exactly. */
	bool shm;
	struct wr_sink *sink; /* shm with CMA: see sink.h */
	size_t large_len; /* longer requests keep sleeps short (wr_wait_large) */
};

/* One post, for the -FI_EAGAIN loop. */
struct post {
	int kind;
	void *buf;
	size_t len;
	int peer;       /* whose bell to ring while the provider refuses; -1 */
	fi_addr_t fa;
	uint64_t tag, ignore;
	struct wr_fab_req *r; /* NULL: an inject, which has no completion */
};

static inline int64_t
wr_fab_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

#endif
