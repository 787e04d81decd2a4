/* SPDX-License-Identifier: MIT */
/*
 * fabric: one libfabric RDM endpoint with tagged messages for one rank:
 * provider and domain, a lazily filled address vector, nonblocking tagged
 * send and receive into caller-owned requests, progress, and waiting that
 * spins, yields, then sleeps (a futex doorbell on shm, a bounded
 * fi_cq_sread elsewhere). It knows nothing of groups, RPC or the
 * registry: addresses come and go as hex strings the caller carries.
 */
#ifndef WR_FABRIC_H
#define WR_FABRIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct wr_fab;

struct wr_fab_cfg {
	const char *provider;  /* "shm", "net", "tcp;ofi_rxm", "tcp", "sockets", "udp;ofi_rxd" */
	const char *prefix;    /* names every /dev/shm entry: "wr-<jobid>" -> /dev/shm/wr-<jobid>_r<rank>:... and /dev/shm/wr-<jobid>_bell_<rank>; required on shm */
	int rank;              /* this process's world rank; 0 <= rank < size, size <= 2^20 */
	int size;
	bool loopback;         /* TCP-based providers bind to 127.0.0.1 (hints node / FI_SOURCE), never eth0 */
	const char *bind_addr; /* else to this address (the one other hosts
				* reach this one at); NULL: the provider's choice */
	bool oversubscribed;   /* more local ranks than cores: no tight spin, go to yield at once */
	int spin_us;           /* tight-poll budget before yielding (e.g. 20); 0 = none; at most 10000 */
};

/*
 * Open the RDM tagged endpoint. 0, -EINVAL (bad cfg), -ENOENT (provider
 * not available), -EEXIST (this rank's doorbell exists: a duplicate rank
 * or a leftover), WORLD_EFABRIC (a libfabric error with no errno
 * equivalent; the detail goes to stderr under WORLD_DEBUG) or -errno.
 * On shm, posted and unexpected receives share one pool of rx_size
 * entries (1024 unless FI_SHM_RX_SIZE says otherwise, libfabric 1.17):
 * past it wr_fab_irecv() fails with -ENOMEM and senders stall, so keep
 * fewer outstanding. An shm endpoint reaches at most 256 peers.
 */
int wr_fab_open(const struct wr_fab_cfg *cfg, struct wr_fab **out);

/* Cancel what is posted (those requests end with -ECANCELED), close the
 * endpoint (shm unlinks its region) and unlink the own doorbell. Accepts
 * NULL. No other thread may be inside a wr_fab_* call on @f. */
void wr_fab_close(struct wr_fab *f);

/* The own address, printable (hex of fi_getname), borrowed from @f. */
const char *wr_fab_addr(const struct wr_fab *f);

/* The provider name actually opened ("shm", "tcp;ofi_rxm"), borrowed. */
const char *wr_fab_provider(const struct wr_fab *f);

/* The longest send that shm copies at once (its inject size), above which
 * the sender waits for the receiver to pull the message; 0 on other
 * providers, whose eager protocol reaches further by itself. */
size_t wr_fab_eager_len(const struct wr_fab *f);

/*
 * Remember @rank's address (a peer's wr_fab_addr()); fi_av_insert
 * happens on the first send to it. -EINVAL for a bad rank or hex or an
 * address of the wrong form, -EBUSY if @rank was sent to with another
 * address already.
 */
int wr_fab_set_peer(struct wr_fab *f, int rank, const char *addr);
bool wr_fab_has_peer(const struct wr_fab *f, int rank);

/* A request lives in the caller's storage; context space first for
 * FI_CONTEXT|FI_CONTEXT2. The caller reads the public fields once
 * wr_fab_done() is true. */
struct wr_fab_req {
	void *ctx[8];      /* struct fi_context2 space */
	int state;         /* private */
	int err;           /* 0, or -EMSGSIZE (truncated), -ECANCELED, -EBUSY (see wr_fab_cancel), WORLD_EFABRIC */
	int source;        /* receives: the sender's world rank (-1: unknown) */
	uint64_t tag;      /* receives: the full tag that matched (source bits included) */
	size_t len;        /* receives: bytes received; sends: bytes sent */
	/* private */
	int kind;
	bool large;
	struct wr_fab_req *prev, *next; /* the endpoint's list of posted requests */
};

/*
 * Tags: 64 bits. Bits 39..20 are the transport's: the SOURCE world rank.
 * The caller passes tags (and ignore bits) with those bits zero, else
 * -EINVAL; isend ORs in its own rank; irecv with @peer >= 0 matches only
 * that source, with @peer < 0 (any source) ignores bits 39..20 and
 * reports the sender in req->source. @ignore are further ignore bits;
 * on shm they must be 0 (-EOPNOTSUPP): libfabric 1.17's shm matches
 * unexpected messages with stale ignore bits, so there the source goes
 * as CQ data, a directed receive matches by address (peers are inserted
 * at wr_fab_set_peer) and every tag matches exactly.
 */
#define WR_FAB_SRC_SHIFT 20
#define WR_FAB_SRC_MASK  (((uint64_t)0xFFFFF) << WR_FAB_SRC_SHIFT)

/*
 * Post a send or a receive into @r. 0, -EINVAL, -EDESTADDRREQ (no
 * address for @peer), -EBUSY (@r holds a send that wr_fab_cancel()
 * could not take back), -ENOMEM (shm: receive pool full), -EAGAIN (the
 * provider kept refusing the post for a few quick tries: a peer that does
 * not progress now, such as an shm peer that has never read its queue
 * yet; post again later, until a deadline of the caller's)
 * or a fabric error. A small send (<= the provider's inject size) is
 * complete on return. Sends above it may complete only once the receiver
 * has posted its receive: post receives first. On net a large message
 * whose receive is not posted holds up later messages of the same pair.
 * A send whose message the receiver truncated may end with an error
 * (-EIO on shm). On net and tcp;ofi_rxm (1.17) a truncation loses the
 * pair's later messages; on shm the endpoint goes on. On shm without CMA
 * (FI_SHM_DISABLE_CMA, or a yama ptrace_scope above 0) 1.17 reports no
 * truncation: a truncated inject completes as 0 bytes received, and a
 * truncated larger message never completes.
 */
int wr_fab_isend(struct wr_fab *f, int peer, uint64_t tag, const void *buf,
		 size_t len, struct wr_fab_req *r);
int wr_fab_irecv(struct wr_fab *f, int peer, uint64_t tag, uint64_t ignore,
		 void *buf, size_t len, struct wr_fab_req *r);

/* Whether @r has ended (or was never posted); any thread, no lock. */
bool wr_fab_done(const struct wr_fab_req *r);

/* Drain the CQ once, never blocks: 0 or a fabric error. */
int wr_fab_progress(struct wr_fab *f);

/*
 * Block until all @n requests are complete (NULL entries count as
 * complete). Returns 0 (each req's own ->err says how it ended),
 * -ETIMEDOUT at @deadline_ms (CLOCK_MONOTONIC milliseconds; < 0: none),
 * or the nonzero code @check returned: @check(@arg) is called at start,
 * after every wake-up and at least every ~100 ms; a nonzero result ends
 * the wait. On -ETIMEDOUT/check failure the requests stay posted (the
 * caller may wr_fab_cancel them). @check may be NULL.
 */
typedef int wr_fab_check_fn(void *arg);
int wr_fab_wait(struct wr_fab *f, struct wr_fab_req *const *reqs, size_t n,
		long long deadline_ms, wr_fab_check_fn *check, void *arg);

/* As wr_fab_wait(), until one of them is complete: its index in *@index
 * (the lowest, if several are). -EINVAL for @n == 0. */
int wr_fab_wait_any(struct wr_fab *f, struct wr_fab_req *const *reqs,
		    size_t n, long long deadline_ms, wr_fab_check_fn *check,
		    void *arg, size_t *index);

/*
 * As wr_fab_wait(), until @ready(@rarg) is true: for a condition that
 * other processes make true in memory they share with this one and then
 * announce with wr_fab_ring(). @ready is called without the endpoint's
 * lock, so it must read atomically. The CQ is read meanwhile, as in every
 * wait: a peer's large message to this rank moves only while it does.
 * For shm, whose doorbells the rings reach; elsewhere a ring does
 * nothing, and a sleeping waiter sees the condition only at its next
 * timed look.
 */
int wr_fab_wait_shared(struct wr_fab *f, bool (*ready)(void *), void *rarg,
		       long long deadline_ms, wr_fab_check_fn *check, void *carg);

/* Ring the doorbells of the @n world ranks @ranks (this rank's own among
 * them is skipped): a system call only for a rank that sleeps in a wait. */
void wr_fab_ring(struct wr_fab *f, const int *ranks, size_t n);

/*
 * Take back a posted request that has not completed (fi_cancel, then
 * progress until it ends, for at most about a second); afterwards its
 * buffer is the caller's again and it is done, normally or with
 * -ECANCELED. A send that the provider will not give back in that time
 * (the receiver never matches it) ends with -EBUSY: its completion will
 * be ignored, but its buffer must stay readable until wr_fab_close(), and
 * @r cannot be used for a send again before then. No-op on a completed
 * request.
 */
void wr_fab_cancel(struct wr_fab *f, struct wr_fab_req *r);

/*
 * From any thread (e.g. a death notification on another thread): wake
 * every thread blocked in wr_fab_wait* so that it calls its check now.
 */
void wr_fab_interrupt(struct wr_fab *f);

#endif
