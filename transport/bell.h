/* SPDX-License-Identifier: MIT */
/*
 * bell: a futex doorbell in a shared page, /dev/shm/<prefix>_bell_<rank>,
 * so that a rank waiting for shm traffic sleeps instead of polling (the
 * shm provider has no wait object that blocks). A sender rings the
 * receiver's bell; the owner sleeps on its own. It knows nothing of
 * libfabric; a bell carries no data, only "look again".
 */
#ifndef WR_BELL_H
#define WR_BELL_H

#include <stdint.h>

struct wr_bell;

/* The longest name wr_bell_create()/wr_bell_open() accept for @prefix. */
#define WR_BELL_PREFIX_MAX 200

/*
 * Create this rank's own bell, mode 0600, failing with -EEXIST if it is
 * there already (a duplicate rank, or a leftover of a killed job that the
 * launcher did not clean). 0, -EINVAL (bad prefix or rank) or -errno.
 */
int wr_bell_create(const char *prefix, int rank, struct wr_bell **out);

/* Unmap and unlink the own bell. Accepts NULL. */
void wr_bell_destroy(struct wr_bell *b);

/* Map a peer's bell, which its owner created: 0, -ENOENT, -EINVAL (not a
 * bell: too small) or -errno. */
int wr_bell_open(const char *prefix, int rank, struct wr_bell **out);

/* Unmap a peer's bell. Accepts NULL. */
void wr_bell_close(struct wr_bell *b);

/* Tell the owner to look again: bump the sequence, and wake the owner's
 * sleeping threads if there are any (a system call only then). */
void wr_bell_ring(struct wr_bell *b);

/* Whether a thread of the owner sleeps (or is about to) on @b. */
int wr_bell_waiters(const struct wr_bell *b);

/*
 * The owner's side, in this order: seq = wr_bell_enter(), look for work
 * once more, wr_bell_sleep(seq) if there was none, wr_bell_leave(). A
 * ring after wr_bell_enter() makes the sleep return at once, so no wake
 * is lost. @timeout_ns bounds the sleep.
 */
uint32_t wr_bell_enter(struct wr_bell *b);
void wr_bell_sleep(struct wr_bell *b, uint32_t seq, int64_t timeout_ns);
void wr_bell_leave(struct wr_bell *b);

#endif
