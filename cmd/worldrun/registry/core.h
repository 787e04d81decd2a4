/* SPDX-License-Identifier: MIT */
/*
 * core: the job's registry, with no wire format and no clock: a key/value
 * space with TCPStore's operations, the lookup table (group, key) -> owner
 * rank for values and for services, barriers and group rendezvous as
 * counters with waiters, and the liveness of every rank. Front ends
 * (JSON frames now, PMI-1 later) translate requests into these calls and
 * arm the timers; a waiting request ends exactly once, through its
 * callback: done, failed (a rank it depends on died) or cancelled.
 */
#ifndef WR_REG_CORE_H
#define WR_REG_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Functions that return int return 0 or a negative code. Besides the codes
 * each one names, most return -EINVAL for a NULL registry, name, key,
 * output or callback, NULL bytes with a length, a rank out of range or an
 * unknown table, and those that store or wait return -ENOMEM when memory
 * runs out. While wr_reg_destroy() ends the pending waits (that is, from
 * their callbacks), every call that would start a wait returns -ECANCELED
 * and starts nothing.
 */
struct wr_reg;
struct wr_reg_wait;

enum wr_reg_table {
	WR_REG_VALUES,   /* pair / unpair / get_paired */
	WR_REG_SERVICES, /* register / deregister / calls */
};

enum wr_rank_life {
	WR_RANK_UP,   /* started, not known dead */
	WR_RANK_DONE, /* said goodbye, or exited 0 after doing so */
	WR_RANK_DEAD, /* reaped, dropped its connection, or its lease lapsed */
};

/* What the deaths watches learn of a rank. */
enum wr_loss {
	WR_LOSS_DIED,
	WR_LOSS_LEFT,     /* said goodbye */
	WR_LOSS_STOPPING, /* entered the stop barrier: still up, but it will
			   * start nothing more (its note says what it did) */
};

/*
 * How a waiting request ended: @err 0 (done), the code given to
 * wr_reg_cancel() (e.g. -ETIMEDOUT), -ECANCELED (wr_reg_destroy(), or a
 * join ended by its rank's own wr_reg_group_leave()), or WORLD_EPEERDEAD
 * with @dead_rank the rank that died or said goodbye. @dead_rank is -1
 * for every ending but WORLD_EPEERDEAD. The callback runs once, maybe
 * inside the call that started the wait; the wait handle is freed right
 * after it returns.
 */
typedef void wr_reg_wait_cb(void *arg, int err, int dead_rank);

/* A registry for ranks 0..@size-1, all UP. NULL if @size <= 0 or on ENOMEM. */
struct wr_reg *wr_reg_create(int size);

/*
 * Frees everything; pending waits end with -ECANCELED first, and their
 * callbacks cannot start new waits (those calls return -ECANCELED).
 * Accepts NULL.
 */
void wr_reg_destroy(struct wr_reg *reg);

/* The number of ranks the job started with (those "every rank" means);
 * 0 for a NULL registry. */
int wr_reg_size(const struct wr_reg *reg);

/* The ranks it knows: the job's, then those spawns added (wr_reg_grow);
 * 0 for a NULL registry. */
int wr_reg_nranks(const struct wr_reg *reg);

/*
 * Ranks wr_reg_nranks() to @nranks - 1 join, all UP (MPI_Comm_spawn's):
 * they may be members of barriers and waits, but "every rank" stays the
 * job's first wr_reg_size(). 0, -EINVAL (fewer than now) or -ENOMEM
 * (nothing changed that matters: the arrays only grew).
 */
int wr_reg_grow(struct wr_reg *reg, int nranks);

/*
 * Bound what the key/value space holds: no value longer than @value_max
 * bytes (a store past it fails with -EMSGSIZE), and all keys and values
 * together, each counted with its capacity and a little for itself, at
 * most @kv_max bytes (-ENOSPC). Unbounded until called.
 */
void wr_reg_limit(struct wr_reg *reg, size_t value_max, size_t kv_max);

/* What the keys and values cost now, as counted against @kv_max. */
size_t wr_reg_kv_bytes(const struct wr_reg *reg);

/* ---- key/value (values are bytes; keys are strings) ---- */

/*
 * Store @len bytes under @key, replacing any value; wakes waits on @key.
 * -EMSGSIZE or -ENOSPC past the limits of wr_reg_limit(); the same for
 * every call that stores.
 */
int wr_reg_kv_set(struct wr_reg *reg, const char *key, const void *val,
		  size_t len);

/*
 * The value of @key, borrowed until the next change of the registry:
 * 0 and *val and *len, or -ENOENT.
 */
int wr_reg_kv_get(struct wr_reg *reg, const char *key, const void **val,
		  size_t *len);

/* The name rank @rank gave itself (WR_NAME_KEY), borrowed as
 * wr_reg_kv_get()'s value: 0, or -ENOENT when it gave none or its name
 * is its number (digits only). */
int wr_reg_rank_name(struct wr_reg *reg, int rank, const void **val, size_t *len);

/*
 * The same, and the value's bytes held: *val stays valid, whatever
 * happens to @key, until wr_reg_hold_release(*hold), from any thread, so
 * an answer can send them without a copy. *hold is NULL on error.
 */
int wr_reg_kv_hold(struct wr_reg *reg, const char *key, const void **val,
		   size_t *len, void **hold);
void wr_reg_hold_release(void *hold);

/*
 * Add @delta to the integer in @key (decimal text; a missing key counts
 * as 0) and store the sum in *out. -EINVAL if the value is not an
 * integer, -ERANGE on overflow.
 */
int wr_reg_kv_add(struct wr_reg *reg, const char *key, int64_t delta,
		  int64_t *out);

/*
 * TCPStore's compare_set: if @key is missing and @expected is empty, or
 * its value equals @expected, store @desired. Either way *cur and *cur_len
 * (borrowed, as for get) is the value stored after the call. *cur may
 * instead be one of the caller's own pointers, valid only as long as the
 * caller keeps that buffer: @expected when @key is missing and @expected
 * is not empty (nothing is stored: TCPStore's answer), or @desired when a
 * callback woken by the store deleted @key again. Returns 0 whether or
 * not it stored (nothing tells which); -EINVAL or -ENOMEM.
 */
int wr_reg_kv_cas(struct wr_reg *reg, const char *key, const void *expected,
		  size_t exp_len, const void *desired, size_t des_len,
		  const void **cur, size_t *cur_len);

/* 0, or -ENOENT if there was no such key. */
int wr_reg_kv_del(struct wr_reg *reg, const char *key);

/* Append @len bytes to @key, creating it; wakes waits on @key. */
int wr_reg_kv_append(struct wr_reg *reg, const char *key, const void *val,
		     size_t len);

/* Keys in the space (user keys only: nothing internal is counted). */
size_t wr_reg_kv_count(const struct wr_reg *reg);

/* Whether every one of @n keys exists now. */
bool wr_reg_kv_check(const struct wr_reg *reg, const char *const *keys,
		     size_t n);

/*
 * Wait until every one of @n keys exists (at once if they do). The wait
 * fails with WORLD_EPEERDEAD when a rank other than @rank that was UP is
 * declared dead while it waits (@rank: who waits; -1 if no rank). Only
 * deaths while it waits count: not deaths before the call, goodbyes, nor
 * the exit of a rank that said goodbye. Returns 0 and a handle in *w
 * (NULL if it ended at once, its callback having run), -EINVAL, -ENOMEM,
 * or -ECANCELED during wr_reg_destroy(). *w is NULL on any error.
 */
int wr_reg_kv_wait(struct wr_reg *reg, const char *const *keys, size_t n,
		   int rank, wr_reg_wait_cb *cb, void *arg,
		   struct wr_reg_wait **w);

/* ---- the lookup table: (group, key) -> owner ---- */

/*
 * First writer wins: 0, or -EEXIST. -EINVAL for a rank out of range;
 * WORLD_EPEERDEAD if wr_reg_rank_dead() was called for @rank (even after
 * its goodbye), whose entries were purged then; -ENOMEM. Wakes the waits
 * on (group, key) in @t.
 */
int wr_reg_lut_claim(struct wr_reg *reg, enum wr_reg_table t,
		     const char *group, const char *key, int rank);

/* 0, -ENOENT (no such entry) or -EPERM (@rank is not the owner). */
int wr_reg_lut_release(struct wr_reg *reg, enum wr_reg_table t,
		       const char *group, const char *key, int rank);

/* 0 and *owner, or -ENOENT. */
int wr_reg_lut_lookup(const struct wr_reg *reg, enum wr_reg_table t,
		      const char *group, const char *key, int *owner);

/*
 * Wait until (group, key) has an owner in @t (at once if it has). Like
 * wr_reg_kv_wait(), it fails only when a rank other than @rank is
 * declared dead while it waits, and returns the same codes.
 */
int wr_reg_lut_wait(struct wr_reg *reg, enum wr_reg_table t,
		    const char *group, const char *key, int rank,
		    wr_reg_wait_cb *cb, void *arg, struct wr_reg_wait **w);

/* Entries owned by @rank in both tables (for stats and tests). */
size_t wr_reg_lut_count(const struct wr_reg *reg, int rank);

/* ---- barriers and group rendezvous ---- */

/*
 * @rank enters barrier @name among @members (@n ranks; NULL: every rank
 * of the job). A barrier is (name, member set): the same name with other
 * members is another barrier, and members listing every rank are the
 * same as NULL. Each (name, member set, rank) counts its entries: this is
 * entry g, and it ends once every member has entered at least g times.
 * So back-to-back barriers are safe, and a one-shot process (worldctl)
 * acting for a rank just counts as that rank's next entry; a cancelled
 * wait still counts its entry. Fails with WORLD_EPEERDEAD as soon as a
 * member that has not entered g times is dead or said goodbye (at once if
 * one is already, or if @rank itself is not UP). -EINVAL if @rank is not
 * a member or @members has a rank out of range or twice, or is empty;
 * -ENOMEM; -ECANCELED during wr_reg_destroy(). *gen (may be NULL)
 * receives g.
 */
int wr_reg_barrier(struct wr_reg *reg, const char *name, const int *members,
		   size_t n, int rank, uint64_t *gen, wr_reg_wait_cb *cb,
		   void *arg, struct wr_reg_wait **w);

/*
 * Group rendezvous: @rank joins group @group whose members are @members
 * (sorted by the caller or not: the core sorts a copy). Ends when every
 * member has joined. Fails with WORLD_EPEERDEAD, naming the rank, when a
 * member dies before the group completes or a member that has not joined
 * is not UP (at once if one is already). A join that ends otherwise than
 * done before the group completes (cancelled, failed, or ended
 * -ECANCELED by its rank's wr_reg_group_leave()) is undone: its rank is
 * out again and may join anew, and the group goes away once nobody is in
 * it. -EINVAL if @rank is not in @members or @members has a rank out of
 * range or twice; -EEXIST if the group exists with other members or
 * @rank joined it already; -ENOMEM; -ECANCELED during wr_reg_destroy().
 * While the group exists, wr_reg_group_members() answers for non-members.
 * A complete group has an id, unique in the job (wr_reg_group_id()).
 *
 * With @coll (a collective group: members create such groups in the same
 * order, and the name is theirs to derive from the member list), members
 * that disagree on the list fail at once with WORLD_EPROTO rather than
 * wait for each other forever: this join, and the pending join of another
 * collective group that @rank is a member of and some member of @members
 * has joined already; and a name taken with other members is WORLD_EPROTO.
 */
int wr_reg_group_join(struct wr_reg *reg, const char *group,
		      const int *members, size_t n, int rank, bool coll,
		      wr_reg_wait_cb *cb, void *arg, struct wr_reg_wait **w);

/* The id of complete group @group (1, 2, ... in the order groups
 * completed): 0, or -ENOENT while it is not complete or not there. */
int wr_reg_group_id(const struct wr_reg *reg, const char *group, uint32_t *id);

/*
 * @rank leaves @group: its LUT entries in that group are released; the
 * group goes away (and its name can be used again) when the last member
 * has left. Before the group completes, leaving undoes the rank's pending
 * join, which ends -ECANCELED. 0, -ENOENT (no group), -EPERM (not a
 * member, not joined, or left already), -EINVAL.
 */
int wr_reg_group_leave(struct wr_reg *reg, const char *group, int rank);

/* The members of @group, borrowed until it changes: 0 or -ENOENT. */
int wr_reg_group_members(const struct wr_reg *reg, const char *group,
			 const int **members, size_t *n);

/* ---- liveness ---- */

/*
 * @rank is dead: its LUT entries are purged, later claims by it fail, and
 * every wait that depends on it fails at once with WORLD_EPEERDEAD naming
 * it. For a rank that said goodbye, its goodbye already failed the
 * barriers that needed it and its exit fails no kv, lut or barrier wait;
 * it still purges its entries and takes it out of its groups, which fails
 * the joins of a group it had joined that has not completed. Idempotent;
 * ignores a rank out of range.
 */
void wr_reg_rank_dead(struct wr_reg *reg, int rank);

/*
 * @rank said goodbye: it no longer counts as dying when it goes away, but
 * barriers and joins still waiting for it fail with WORLD_EPEERDEAD now.
 * Only an UP rank can say goodbye; otherwise nothing happens.
 */
void wr_reg_rank_done(struct wr_reg *reg, int rank);

/*
 * @rank stops: it waits in barrier @stop of every rank (libworld's
 * world_stop(): WR_STOP_BARRIER) and will enter no other barrier and
 * join no group, so the barriers and joins that need it fail now with
 * WORLD_EPEERDEAD naming it, and so do later ones, rather than wait for
 * their timeout. The deaths watches learn it, with @note (or NULL): what
 * the rank says of itself as it stops (libworld: how many operations it
 * started in each collective group). Only the first @stop given counts;
 * nothing for a rank not UP; idempotent.
 */
void wr_reg_rank_stopping(struct wr_reg *reg, int rank, const char *stop,
			  const char *note);
bool wr_reg_rank_is_stopping(const struct wr_reg *reg, int rank);
/* The @note @rank gave as it began to stop (its peers read it from their
 * deaths watch), or NULL. */
const char *wr_reg_stop_note(const struct wr_reg *reg, int rank);

/* @rank's life; a rank out of range (or a NULL registry) reads as dead. */
enum wr_rank_life wr_reg_rank_life(const struct wr_reg *reg, int rank);

/*
 * Wait until more than @seen losses are known (at once if they are): a
 * rank died, said goodbye or began to stop. This is how a rank learns
 * that a peer is gone while it waits for nothing in the registry (a
 * collective needs the peer whether it died or left), or that it will
 * start nothing more. Each rank is gone at most once (the exit of a rank
 * that said goodbye is no second loss) and stopping at most once before
 * that. The callback gets err 0 and the rank of the last loss;
 * wr_reg_losses() tells them all. Returns as wr_reg_kv_wait().
 */
int wr_reg_deaths_wait(struct wr_reg *reg, int seen, int rank,
		       wr_reg_wait_cb *cb, void *arg, struct wr_reg_wait **w);

/* How many losses are known; *@order their ranks in that order, and
 * *@kind what each was. */
int wr_reg_losses(const struct wr_reg *reg, const int **order, const enum wr_loss **kind);

/* ---- waits ---- */

/* What a wait waits for. */
enum wr_reg_wait_kind {
	WR_REG_WAIT_KV,      /* keys to be set (kv wait, get with a wait) */
	WR_REG_WAIT_LUT,     /* an owner for (group, key) */
	WR_REG_WAIT_BARRIER, /* members to enter a barrier */
	WR_REG_WAIT_JOIN,    /* members to join a group */
	WR_REG_WAIT_DEATHS,  /* the next death */
};

/* A pending wait, described for diagnosis (a hang report). */
struct wr_reg_wait_info {
	enum wr_reg_wait_kind kind;
	int rank;              /* who waits; -1: no rank */
	wr_reg_wait_cb *cb;    /* its callback */
	void *arg;             /* and the callback's argument */
	const char *name;      /* BARRIER: its name; JOIN, LUT: the group */
	const char **keys;     /* KV: the keys still missing; LUT: the key */
	size_t nkeys;
	int *missing;          /* BARRIER, JOIN: members not arrived, sorted */
	size_t nmissing;
	uint64_t gen;          /* BARRIER: the entry it waits to complete */
	char *own;             /* what the strings above may point into */
};

/*
 * The pending wait after @prev (NULL: the oldest), oldest first, or
 * NULL after the last. Valid until the registry changes.
 */
const struct wr_reg_wait *wr_reg_wait_next(const struct wr_reg *reg,
					   const struct wr_reg_wait *prev);

/*
 * Describe pending @w into @out, whose strings are borrowed until the
 * registry changes. 0 or -ENOMEM; wr_reg_wait_info_finish() frees what
 * @out holds either way.
 */
int wr_reg_wait_describe(const struct wr_reg_wait *w,
			 struct wr_reg_wait_info *out);
void wr_reg_wait_info_finish(struct wr_reg_wait_info *info);

/*
 * End a pending wait with @err (e.g. -ETIMEDOUT; 0 or a positive @err
 * means -ECANCELED): its callback runs now. A no-op for NULL and for a
 * wait inside its own callback.
 */
void wr_reg_cancel(struct wr_reg_wait *w, int err);

/* Pending waits (for stats and tests). */
size_t wr_reg_pending(const struct wr_reg *reg);

#endif
