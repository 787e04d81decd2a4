/* SPDX-License-Identifier: MIT */
/*
 * p2p: all the collective algorithms (algos.h) know of a group: its size,
 * their rank in it, and a backend that moves bytes between two of its
 * ranks. The backend (libfabric's, or a test's fake) lives elsewhere; this
 * header only says what it must do.
 */
#ifndef WR_P2P_H
#define WR_P2P_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A backend request, in the algorithm's storage until waitall returns. */
struct wr_coll_xfer {
	uint64_t space[24];
};

/* What a wait on the group's shared area (shmcoll.h) waits for:
 * @ready(@arg); @missing(@arg) names a group rank that has not come yet
 * (-1: none), for the hang report. */
struct wr_coll_cond {
	bool (*ready)(void *arg);
	int (*missing)(void *arg);
	void *arg;
};

/*
 * A send larger than a few KiB may complete only once the receiver has
 * posted the matching receive (rendezvous), so the algorithms post each
 * step's receives first, then its sends, then wait for all of them. @step
 * tells apart the messages of one collective between the same pair
 * (0..255, wrapping); matching per pair and step is in posting order. The
 * algorithms never post a message of 0 bytes.
 */
struct wr_coll_backend {
	/* Post a send to or a receive from group rank @peer: 0 or a
	 * negative code. After a failed post the algorithm still hands the
	 * requests it did post to waitall, which must then return promptly
	 * (with an error) and release them. */
	int (*isend)(void *impl, int peer, unsigned step, const void *buf,
		     size_t len, struct wr_coll_xfer *x);
	int (*irecv)(void *impl, int peer, unsigned step, void *buf,
		     size_t len, struct wr_coll_xfer *x);
	/* Wait for all @n: 0, or the first error, in which case the backend
	 * has cancelled what it could and poisoned the group, so that every
	 * rank's collective fails; the algorithm just returns the code. */
	int (*waitall)(void *impl, struct wr_coll_xfer *xs, size_t n);
	/* Where the context has a shared area (shm), else NULL: wait until
	 * @cond is ready, with the operation's deadline, ended by a
	 * member's loss as waitall is: 0 or the code; and wake group rank
	 * @rank (-1: every member) if it sleeps in such a wait, so that it
	 * looks again. */
	int (*wait)(void *impl, const struct wr_coll_cond *cond);
	void (*wake)(void *impl, int rank);
};

struct wr_shm;
struct wr_check;

/* The default length of a ring's segment, which bounds its scratch:
 * 256 KiB beat 128 KiB and 512 KiB for 8 ranks on 2 cores here. */
#define WR_COLL_SEGMENT (256 * 1024)

struct wr_coll_ctx {
	int rank, size; /* in the group */
	const struct wr_coll_backend *be;
	void *impl;
	bool oversubscribed; /* more local ranks than cores */
	/* Optional: a reusable scratch buffer of at least @len bytes owned
	 * by the group, valid until the next call; NULL (or no hook): the
	 * algorithm mallocs its own. */
	void *(*scratch)(void *impl, size_t len);
	size_t segment; /* bytes per ring segment; 0: WR_COLL_SEGMENT */
	/* The longest message the backend sends eagerly (no rendezvous), or
	 * 0; the same on every rank. See wr_xchg_sendrecv. */
	size_t eager;
	/* The group's shared area (shmcoll.h), or NULL: the members are not
	 * on one node, or could not all map it. */
	struct wr_shm *shm;
	/* This operation's signature, which the members compare before
	 * they trust each other's lengths (collcheck.h), or NULL: not
	 * compared (the check compiled out, the tests' contexts, a group's
	 * own agreements). */
	struct wr_check *check;
};

#endif
