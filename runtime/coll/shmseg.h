/* SPDX-License-Identifier: MIT */
/*
 * shmseg: a collective group's shared area (shmcoll.h) as a /dev/shm
 * segment, /dev/shm/wr-<jobid>_coll_<id>: made by group rank 0, mapped by
 * every member or by none (they agree over the fabric at creation), and
 * unlinked as soon as all have it, so that only a job killed at that
 * moment leaves it to the guardian. Only on the shm provider, whose ranks
 * are all on one node. Not installed.
 */
#ifndef WR_SHMSEG_H
#define WR_SHMSEG_H

struct world_coll;

/*
 * After the members have met (their fabric addresses known): map the
 * area on every member, or on none. 0, with c->shm set or, where the
 * group cannot have one (another provider, no room in /dev/shm), NULL;
 * else the agreement's error (a lost member, the deadline), after which
 * the group is not to be used.
 */
int wr_shmseg_attach(struct world_coll *c, long long deadline_ms);

/* Unmap the area and free c->shm. Accepts a group without one. */
void wr_shmseg_detach(struct world_coll *c);

#endif
