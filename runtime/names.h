/* SPDX-License-Identifier: MIT */
/*
 * names: the names of the world's ranks (names.c says how they are
 * known). Internal to libworld; world.h has world_rank_name() and
 * world_name_rank().
 */
#ifndef WR_NAMES_H
#define WR_NAMES_H

struct world;

/* A name is shorter than this, in bytes. */
#define WR_NAME_MAX 256

/* 0 if rank @rank may call itself @name: 1 to 255 bytes, no control
 * characters, and digits only if they are its own rank; else -EINVAL. */
int wr_names_check(const char *name, int rank);

/* Tell the others this rank's name (at open). */
int wr_names_publish(struct world *w);

/*
 * Fetch every rank's name, once, waiting (at most @timeout_ms) until
 * every rank has published its own: 0, -EEXIST if two ranks share a
 * name (world_last_failure() says which), or the registry's error.
 */
int wr_names_load(struct world *w, int timeout_ms);

/* Rank @rank's name if the table is here, else NULL; never waits. */
const char *wr_names_known(struct world *w, int rank);

/* The rank named @name (digits: that rank), loading the table if
 * needed: the rank, -ENOENT, -EINVAL, or the load's error. */
int wr_names_rank(struct world *w, const char *name);

/* Free the table (world_free()). */
void wr_names_finish(struct world *w);

#endif
