/* SPDX-License-Identifier: MIT */
/*
 * shmcoll: collectives through memory that the members of a group share
 * (a /dev/shm segment of one node's ranks, or plain memory between the
 * threads of the unit tests): a counter of arrivals, the number of the
 * last synchronisation completed, a result area and one slot per member.
 * A barrier, a small all_reduce or all_gather take one synchronisation,
 * where the message algorithms take lg p steps, each a wake-up on an
 * oversubscribed node; large ones take one or two per chunk (an
 * all_reduce's members each reducing their share of it). A small
 * broadcast takes none: its root posts it in a ring and goes on. It knows
 * nothing of files or of the fabric: the backend waits and wakes (p2p.h).
 */
#ifndef WR_SHMCOLL_H
#define WR_SHMCOLL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "p2p.h"
#include "world.h"

struct wr_shm {
	unsigned char *base; /* wr_shm_size() bytes, zeroed by its creator */
	size_t slot;         /* bytes of each slot and of the result area */
	/* This member's count of synchronisations, and of operations in
	 * half slots: the same on every member, since all run the same
	 * operations. */
	uint64_t syncs, halves;
	uint64_t bcasts; /* small broadcasts, counted alike too */
	/* Other members may still be reading this one's slot. */
	bool late;
	/* The operation's signature (the context's check) is still to be
	 * compared: at its first synchronisation. */
	bool pending;
};

/* The slot length for a group of @size (a multiple of the page size):
 * 1 MiB, less from 16 members on so that the area stays about 16 MiB,
 * but at least 64 KiB (past 256 members the area grows again). */
size_t wr_shm_slot(int size);

/* The bytes of the area of a group of @size with @slot-byte slots. */
size_t wr_shm_size(int size, size_t slot);

/*
 * The collectives, for a context whose shm is set and whose backend has
 * wait and wake; every member calls the same one with the same sizes,
 * or, where the context has a check (collcheck.h), any of them with any
 * arguments: the members' signatures are compared at the operation's
 * first synchronisation, before anything is read from another member,
 * and where they differ every member returns WORLD_EMISMATCH, the area
 * in step for the next operation. Otherwise 0, or the backend's code
 * (the group is then out of step: poisoned). With a check, a small
 * broadcast takes a synchronisation too instead of the ring: its root
 * must hear from every member before any may go on.
 * wr_shm_all_reduce combines in place, in group rank order (rank 0's
 * data on the left), each element by one member, so all get the same
 * bits; WORLD_AVG sums (wr_reduce_finish divides).
 */
int wr_shm_barrier(struct wr_coll_ctx *c);
/* A barrier that compares the context's signatures, before an algorithm
 * that does not (collcheck.h). */
int wr_shm_check(struct wr_coll_ctx *c);
int wr_shm_broadcast(struct wr_coll_ctx *c, void *buf, size_t bytes, int root);
int wr_shm_all_reduce(struct wr_coll_ctx *c, void *buf, size_t count,
		      enum world_dtype dt, enum world_op op);
/* @out: size * @bytes, block i from rank i; @in may be out + rank*bytes. */
int wr_shm_all_gather(struct wr_coll_ctx *c, const void *in, void *out,
		      size_t bytes);

#endif
