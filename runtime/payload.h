/* SPDX-License-Identifier: MIT */
/*
 * payload: a call's blob as pieces, lent by the caller or copied by
 * libworld, gathered into one buffer where a socket needs it; and the
 * pull, by which a callee on the same host copies a large blob straight
 * out of the caller's memory (process_vm_readv) instead of through a
 * socket. It knows memory and the pull's descriptor, not links or calls.
 */
#ifndef WR_PAYLOAD_H
#define WR_PAYLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <jansson.h>

/*
 * @n pieces, in order. With @release NULL they are the caller's again
 * when the function that took them returns (libworld copied them);
 * otherwise they are lent until release(@arg), which is called once,
 * from any thread, perhaps with libworld's locks held.
 */
struct wr_payload {
	const struct iovec *iov;
	size_t n;
	void (*release)(void *arg);
	void *arg;
};

/* A blob smaller than this travels through the socket: a pull costs
 * more system calls than such a copy. */
#define WR_PULL_MIN ((size_t)256 << 10)
/* One process_vm_readv takes this many remote pieces (IOV_MAX); a blob
 * in more pieces is gathered and sent. */
#define WR_PULL_PIECES_MAX 1024

size_t wr_payload_len(const struct wr_payload *pl);

/* Call @pl's release, once; @pl may be NULL, or released already. */
void wr_payload_release(struct wr_payload *pl);

/* Room for a blob (malloc'd: free() it); a large one from those kept,
 * or aligned and advised for transparent huge pages. NULL on ENOMEM. */
void *wr_payload_alloc(size_t len);

/* Free @p, a malloc'd buffer of at least @len bytes, or keep a large one
 * for wr_payload_alloc() (world_blob_free()). Accepts NULL. */
void wr_payload_keep(void *p, size_t len);

/* Free every buffer kept (world_stop). */
void wr_payload_drop_kept(void);

/* How many bytes the kept buffers hold. */
size_t wr_payload_kept_len(void);

/* Free what was kept for longer than its time (payload.c: 10 s); the
 * progress thread calls it at each lease. */
void wr_payload_drop_stale(void);

/* The pieces of @pl in one new buffer (*out NULL for an empty one):
 * 0 or -ENOMEM. */
int wr_payload_gather(const struct wr_payload *pl, void **out, size_t *len);

/* The descriptor a pull reads: [[address, length], ...] of @n pieces. */
json_t *wr_payload_pull_desc(const struct iovec *iov, size_t n);

/*
 * A descriptor from the wire, checked: *iov (malloc'd) its pieces, *total
 * their sum, at most @max. -EPROTO for a malformed one, -EMSGSIZE for one
 * over @max, -ENOMEM.
 */
int wr_payload_pull_parse(const json_t *desc, size_t max, struct iovec **iov,
			  size_t *n, size_t *total);

/*
 * Copy @total bytes of the @n pieces at @iov in process @pid into a new
 * buffer, *out (free() it). -EFAULT if a piece cannot be read whole,
 * else what process_vm_readv says: -EPERM (not allowed to), -ESRCH (no
 * such process), -ENOMEM.
 */
int wr_payload_pull(pid_t pid, const struct iovec *iov, size_t n, size_t total,
		    void **out);

/*
 * Whether the other end of socket @fd has closed it: after a pull, a
 * caller that has not hung up has not taken its pieces back either, so
 * what was read is what it sent.
 */
bool wr_payload_hung_up(int fd);

#endif
