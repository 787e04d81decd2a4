/* SPDX-License-Identifier: MIT */
/*
 * core: the registry's waits, the watches that wake them, the liveness of
 * ranks, and the registry's life (see core.h); no clock and no I/O. The
 * operations themselves live in kv.c, lut.c, barrier.c and group.c.
 */
#include "core.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "coreint.h"
#include "table.h"
#include "world_errors.h"

/*
 * Choices core.h leaves open (those about barriers and groups sit in
 * barrier.c and group.c):
 * - Keys, group names and barrier names may be empty strings; NULL ones
 *   are -EINVAL, like a rank out of range or a NULL callback.
 * - A rank that is not UP cannot enter a barrier or join a group (the wait
 *   fails at once, naming that rank), nor claim after its death
 *   (WORLD_EPEERDEAD). kv and lut waits fail on deaths while they wait,
 *   not on earlier ones, or one death would make the KV space useless.
 * - rank_dead() on a DONE rank purges its entries and takes it out of its
 *   groups, but fails no kv, lut or barrier wait: its goodbye already
 *   failed what needed it. Only a join it made before its goodbye, in a
 *   group not yet complete, fails then (the group has lost a member).
 * - While wr_reg_destroy() ends the waits, new waits get -ECANCELED.
 * Every wait sits on one ring at a time through its node (its key watches
 * aside); ending it takes it off everything before its callback runs, so
 * nothing can end it twice, whatever the callbacks do meanwhile.
 */

/* A key a wait still misses: one link in that key's watch. */
struct watch_link {
	struct ring node;
	struct watch *watch; /* NULL once fired or cut */
	struct wr_reg_wait *w;
};

/* The waits on one missing key, in a table of watches. */
struct watch {
	struct ring links;
	struct wr_table *home;
	char *key;
};

/* ---- members ---- */

static int
cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* The index of @rank in sorted @members (NULL: every rank), or SIZE_MAX. */
size_t
wr_reg_member_index(const int *members, size_t n, int rank)
{
	const int *p;

	if (members == NULL) {
		return rank >= 0 && (size_t)rank < n ? (size_t)rank : SIZE_MAX;
	}
	p = bsearch(&rank, members, n, sizeof(*members), cmp_int);
	return p == NULL ? SIZE_MAX : (size_t)(p - members);
}

/* A sorted copy of @members, checked: in range, no twice, @rank in it. */
int
wr_reg_sorted_members(const struct wr_reg *reg, const int *members,
		      size_t n, int rank, int **out)
{
	int *s;

	*out = NULL;
	/* n > nranks cannot be valid: refuse it before allocating. */
	if (members == NULL || n == 0 || n > (size_t)reg->nranks) {
		return -EINVAL;
	}
	s = malloc(n * sizeof(*s));
	if (s == NULL) {
		return -ENOMEM;
	}
	memcpy(s, members, n * sizeof(*s));
	qsort(s, n, sizeof(*s), cmp_int);
	for (size_t i = 0; i < n; i++) {
		if (!rank_ok(reg, s[i]) || (i > 0 && s[i] == s[i - 1])) {
			free(s);
			return -EINVAL;
		}
	}
	if (wr_reg_member_index(s, n, rank) == SIZE_MAX) {
		free(s);
		return -EINVAL;
	}
	*out = s;
	return 0;
}

/* ---- waits ---- */

struct wr_reg_wait *
wr_reg_wait_new(struct wr_reg *reg, const struct req *rq)
{
	struct wr_reg_wait *w = calloc(1, sizeof(*w));

	if (w == NULL) {
		return NULL;
	}
	w->reg = reg;
	w->kind = rq->kind;
	w->rank = rq->rank;
	w->cb = rq->cb;
	w->arg = rq->arg;
	ring_init(&w->node);
	ring_init(&w->all);
	return w;
}

void
wr_reg_wait_free(struct wr_reg_wait *w)
{
	if (w != NULL) {
		free(w->links);
		free(w);
	}
}

/* The wait is on its ring already: make it pending. */
int
wr_reg_wait_arm(struct wr_reg_wait *w, const struct req *rq)
{
	ring_insert(&w->reg->all, &w->all);
	w->reg->pending++;
	if (rq->out != NULL) {
		*rq->out = w;
	}
	return 0;
}

/* A request that ends in the call that made it: no handle. */
int
wr_reg_end_now(const struct req *rq, int err, int dead)
{
	if (rq->out != NULL) {
		*rq->out = NULL;
	}
	rq->cb(rq->arg, err, dead);
	return 0;
}

static void
link_cut(struct watch_link *l)
{
	struct watch *wt = l->watch;

	ring_cut(&l->node);
	l->watch = NULL;
	if (wt != NULL && ring_empty(&wt->links)) {
		wr_table_del(wt->home, wt->key);
	}
}

/* Take @w off everything, then tell its owner: after this, it is gone. */
void
wr_reg_wait_end(struct wr_reg_wait *w, int err, int dead)
{
	ring_cut(&w->node);
	ring_cut(&w->all);
	for (size_t i = 0; i < w->nlinks; i++) {
		link_cut(&w->links[i]);
	}
	if (w->group != NULL) {
		wr_reg_unjoin(w->reg, w->group, w->rank);
		w->group = NULL;
	}
	w->reg->pending--;
	w->ended = true;
	w->cb(w->arg, err, dead);
	wr_reg_wait_free(w);
}

/* End every wait on @r; callbacks may end or add others meanwhile. */
void
wr_reg_wait_end_all(struct ring *r, int err, int dead)
{
	while (!ring_empty(r)) {
		wr_reg_wait_end(WAIT_OF(r->next, node), err, dead);
	}
}

void
wr_reg_cancel(struct wr_reg_wait *w, int err)
{
	/* Inside its own callback the wait has ended already. */
	if (w == NULL || w->ended) {
		return;
	}
	wr_reg_wait_end(w, err < 0 ? err : -ECANCELED, -1);
}

size_t
wr_reg_pending(const struct wr_reg *reg)
{
	return reg == NULL ? 0 : reg->pending;
}

const struct wr_reg_wait *
wr_reg_wait_next(const struct wr_reg *reg, const struct wr_reg_wait *prev)
{
	const struct ring *at = prev == NULL ? reg->all.next : prev->all.next;

	return at == &reg->all ? NULL : WAIT_OF(at, all);
}

/*
 * The keys a KV or LUT wait still misses: its links not fired yet. A LUT
 * watch's key is "<length of group>:<group><key>" (lut.c): the group is
 * copied out, the key borrowed.
 */
static int
keys_missing(const struct wr_reg_wait *w, struct wr_reg_wait_info *out)
{
	out->keys = calloc(w->nlinks + 1, sizeof(*out->keys));
	if (out->keys == NULL) {
		return -ENOMEM;
	}
	for (size_t i = 0; i < w->nlinks; i++) {
		const char *key = w->links[i].watch != NULL
			? w->links[i].watch->key : NULL;
		char *end;
		size_t glen;

		if (key == NULL) {
			continue;
		}
		if (w->kind == WR_REG_WAIT_LUT) {
			glen = strtoul(key, &end, 10);
			free(out->own);
			out->own = strndup(end + 1, glen);
			out->name = out->own;
			key = end + 1 + glen;
		}
		out->keys[out->nkeys++] = key;
	}
	return w->kind == WR_REG_WAIT_LUT && out->own == NULL ? -ENOMEM : 0;
}

int
wr_reg_wait_describe(const struct wr_reg_wait *w, struct wr_reg_wait_info *out)
{
	*out = (struct wr_reg_wait_info){ .kind = w->kind, .rank = w->rank,
					  .cb = w->cb, .arg = w->arg };
	switch (w->kind) {
	case WR_REG_WAIT_KV:
	case WR_REG_WAIT_LUT:
		return keys_missing(w, out);
	case WR_REG_WAIT_BARRIER:
		return wr_reg_barrier_missing(w, out);
	case WR_REG_WAIT_JOIN:
		return wr_reg_join_missing(w, out);
	case WR_REG_WAIT_DEATHS:
		return 0;
	}
	return 0;
}

void
wr_reg_wait_info_finish(struct wr_reg_wait_info *info)
{
	if (info != NULL) {
		free(info->keys);
		free(info->missing);
		free(info->own);
		*info = (struct wr_reg_wait_info){ .rank = -1 };
	}
}

/* ---- watches: waits on keys that do not exist yet ---- */

static void
drop_watch(void *p)
{
	struct watch *wt = p;

	free(wt->key);
	free(wt);
}

static int
watch_add(struct wr_table *tab, const char *key, struct watch_link *l)
{
	struct watch *wt = wr_table_get(tab, key);

	if (wt == NULL) {
		wt = calloc(1, sizeof(*wt));
		if (wt == NULL) {
			return -ENOMEM;
		}
		ring_init(&wt->links);
		wt->home = tab;
		wt->key = strdup(key);
		if (wt->key == NULL || wr_table_put(tab, key, wt) < 0) {
			drop_watch(wt);
			return -ENOMEM;
		}
	}
	ring_insert(&wt->links, &l->node);
	l->watch = wt;
	return 0;
}

/*
 * @key now exists: every wait linked to it misses one key less. The links
 * move to a local ring first and the watch goes away, so callbacks can
 * wait on @key afresh or end waits whose links are still to come.
 */
void
wr_reg_watch_fire(struct wr_table *tab, const char *key)
{
	struct watch *wt = wr_table_get(tab, key);
	struct ring fired;

	if (wt == NULL) {
		return;
	}
	ring_init(&fired);
	while (!ring_empty(&wt->links)) {
		struct watch_link *l = (struct watch_link *)wt->links.next;

		l->watch = NULL;
		ring_move(&fired, &l->node);
	}
	wr_table_del(tab, key);
	while (!ring_empty(&fired)) {
		struct watch_link *l = (struct watch_link *)fired.next;

		ring_cut(&l->node);
		if (--l->w->missing == 0) {
			wr_reg_wait_end(l->w, 0, -1);
		}
	}
}

/*
 * Wait for @keys, those of them not in @have (NULL: all of them) being
 * watched in @watch.
 */
int
wr_reg_keys_wait(struct wr_reg *reg, struct wr_table *watch,
		 const struct wr_table *have, const char *const *keys,
		 size_t n, const struct req *rq)
{
	struct wr_reg_wait *w;
	size_t missing = 0;

	for (size_t i = 0; i < n; i++) {
		missing += have == NULL || wr_table_get(have, keys[i]) == NULL;
	}
	if (missing == 0) {
		return wr_reg_end_now(rq, 0, -1);
	}
	w = wr_reg_wait_new(reg, rq);
	if (w != NULL) {
		w->links = calloc(missing, sizeof(*w->links));
	}
	if (w == NULL || w->links == NULL) {
		wr_reg_wait_free(w);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		struct watch_link *l = &w->links[w->nlinks];

		if (have != NULL && wr_table_get(have, keys[i]) != NULL) {
			continue;
		}
		ring_init(&l->node);
		l->w = w;
		w->nlinks++;
		if (watch_add(watch, keys[i], l) < 0) {
			for (size_t j = 0; j < w->nlinks; j++) {
				link_cut(&w->links[j]);
			}
			wr_reg_wait_free(w);
			return -ENOMEM;
		}
	}
	w->missing = w->nlinks;
	ring_insert(&reg->keywaits, &w->node);
	return wr_reg_wait_arm(w, rq);
}

/* ---- liveness ---- */

/* The kv and lut waits of every rank but @rank. */
static void
keywaits_lose(struct wr_reg *reg, int rank, struct ring *doomed)
{
	struct ring *r = reg->keywaits.next;

	while (r != &reg->keywaits) {
		struct ring *next = r->next;

		if (WAIT_OF(r, node)->rank != rank) {
			ring_move(doomed, r);
		}
		r = next;
	}
}

/*
 * The doomed waits are gathered before any callback runs: callbacks may
 * add table entries, which no walk over a table survives.
 */
/* @rank died, said goodbye or began to stop: the deaths watches learn it. */
static void
note_loss(struct wr_reg *reg, int rank, enum wr_loss kind)
{
	struct ring doomed;

	reg->lost_kind[reg->nlost] = kind;
	reg->lost_order[reg->nlost++] = rank;
	/* Set aside first: an answer may arm a new watch at once. */
	ring_init(&doomed);
	while (!ring_empty(&reg->deathwaits)) {
		ring_move(&doomed, reg->deathwaits.next);
	}
	wr_reg_wait_end_all(&doomed, 0, rank);
}

void
wr_reg_rank_dead(struct wr_reg *reg, int rank)
{
	struct ring doomed;
	bool was_up;

	if (reg == NULL || !rank_ok(reg, rank) || reg->gone[rank]) {
		return;
	}
	reg->gone[rank] = true;
	was_up = reg->life[rank] == WR_RANK_UP;
	if (was_up) {
		reg->life[rank] = WR_RANK_DEAD;
	}
	ring_init(&doomed);
	wr_reg_lut_drop(reg, NULL, rank);
	wr_reg_groups_lose(reg, rank, true, &doomed);
	/* A DONE rank's barriers failed at goodbye; its exit is no death. */
	if (was_up) {
		wr_reg_barriers_lose(reg, rank, NULL, &doomed);
		keywaits_lose(reg, rank, &doomed);
	}
	wr_reg_wait_end_all(&doomed, WORLD_EPEERDEAD, rank);
	if (was_up) {
		note_loss(reg, rank, WR_LOSS_DIED);
	}
}

int
wr_reg_deaths_wait(struct wr_reg *reg, int seen, int rank, wr_reg_wait_cb *cb,
		   void *arg, struct wr_reg_wait **w)
{
	const struct req rq = {.kind = WR_REG_WAIT_DEATHS, .rank = rank, .cb = cb,
			       .arg = arg, .out = w};
	struct wr_reg_wait *wt;

	if (w != NULL) {
		*w = NULL;
	}
	if (reg == NULL || cb == NULL || seen < 0 || rank < -1 || rank >= reg->nranks) {
		return -EINVAL;
	}
	if (reg->closing) {
		return -ECANCELED;
	}
	if (reg->nlost > seen) {
		return wr_reg_end_now(&rq, 0, reg->lost_order[reg->nlost - 1]);
	}
	wt = wr_reg_wait_new(reg, &rq);
	if (wt == NULL) {
		return -ENOMEM;
	}
	ring_insert(&reg->deathwaits, &wt->node);
	return wr_reg_wait_arm(wt, &rq);
}

int
wr_reg_losses(const struct wr_reg *reg, const int **order, const enum wr_loss **kind)
{
	*order = reg != NULL ? reg->lost_order : NULL;
	*kind = reg != NULL ? reg->lost_kind : NULL;
	return reg != NULL ? reg->nlost : 0;
}

void
wr_reg_rank_done(struct wr_reg *reg, int rank)
{
	struct ring doomed;

	if (reg == NULL || !rank_ok(reg, rank) ||
	    reg->life[rank] != WR_RANK_UP) {
		return;
	}
	reg->life[rank] = WR_RANK_DONE;
	ring_init(&doomed);
	wr_reg_groups_lose(reg, rank, false, &doomed);
	wr_reg_barriers_lose(reg, rank, NULL, &doomed);
	wr_reg_wait_end_all(&doomed, WORLD_EPEERDEAD, rank);
	note_loss(reg, rank, WR_LOSS_LEFT);
}

void
wr_reg_rank_stopping(struct wr_reg *reg, int rank, const char *stop, const char *note)
{
	struct ring doomed;

	if (reg == NULL || stop == NULL || !rank_ok(reg, rank) ||
	    reg->life[rank] != WR_RANK_UP || reg->stopping[rank]) {
		return;
	}
	if (reg->stop_name == NULL) {
		reg->stop_name = strdup(stop);
	}
	if (reg->stop_name == NULL || strcmp(reg->stop_name, stop) != 0) {
		return;
	}
	reg->stopping[rank] = true;
	/* Without room for it the note is lost, not the stop: a peer then
	 * waits for what the rank did not say, until its timeout. */
	reg->stop_note[rank] = note != NULL ? strdup(note) : NULL;
	ring_init(&doomed);
	wr_reg_groups_lose(reg, rank, false, &doomed);
	wr_reg_barriers_lose(reg, rank, stop, &doomed);
	wr_reg_wait_end_all(&doomed, WORLD_EPEERDEAD, rank);
	note_loss(reg, rank, WR_LOSS_STOPPING);
}

const char *
wr_reg_stop_note(const struct wr_reg *reg, int rank)
{
	return reg != NULL && rank_ok(reg, rank) ? reg->stop_note[rank] : NULL;
}

bool
wr_reg_rank_is_stopping(const struct wr_reg *reg, int rank)
{
	return reg != NULL && rank_ok(reg, rank) && reg->stopping[rank] &&
	       reg->life[rank] == WR_RANK_UP;
}

bool
wr_reg_absent(const struct wr_reg *reg, int rank, const char *barrier)
{
	return reg->life[rank] != WR_RANK_UP ||
	       (reg->stopping[rank] &&
		(barrier == NULL || strcmp(barrier, reg->stop_name) != 0));
}

enum wr_rank_life
wr_reg_rank_life(const struct wr_reg *reg, int rank)
{
	/* Out of range: no such rank is alive. */
	if (reg == NULL || !rank_ok(reg, rank)) {
		return WR_RANK_DEAD;
	}
	return reg->life[rank];
}

/* ---- the registry ---- */

static void
drop_table(void *p)
{
	wr_table_destroy(p);
}

struct wr_reg *
wr_reg_create(int size)
{
	struct wr_reg *reg;
	bool ok;

	if (size <= 0) {
		return NULL;
	}
	reg = calloc(1, sizeof(*reg));
	if (reg == NULL) {
		return NULL;
	}
	reg->size = reg->nranks = size;
	reg->value_max = SIZE_MAX / 2;
	reg->kv_max = SIZE_MAX;
	ring_init(&reg->all);
	ring_init(&reg->keywaits);
	ring_init(&reg->deathwaits);
	reg->lost_order = calloc(2 * (size_t)size, sizeof(*reg->lost_order));
	reg->lost_kind = calloc(2 * (size_t)size, sizeof(*reg->lost_kind));
	reg->life = calloc((size_t)size, sizeof(*reg->life));
	reg->gone = calloc((size_t)size, sizeof(*reg->gone));
	reg->stopping = calloc((size_t)size, sizeof(*reg->stopping));
	reg->stop_note = calloc((size_t)size, sizeof(*reg->stop_note));
	reg->owned = calloc((size_t)size, sizeof(*reg->owned));
	reg->kv = wr_table_create(wr_reg_drop_kv);
	reg->kv_watch = wr_table_create(drop_watch);
	reg->barriers = wr_table_create(wr_reg_drop_barrier);
	reg->groups = wr_table_create(wr_reg_drop_group);
	ok = reg->lost_order && reg->lost_kind && reg->life && reg->gone && reg->stopping &&
	     reg->stop_note &&
	     reg->owned && reg->kv &&
	     reg->kv_watch &&
	     reg->barriers && reg->groups;
	for (int t = 0; t < 2; t++) {
		reg->lut[t] = wr_table_create(drop_table);
		reg->lut_watch[t] = wr_table_create(drop_watch);
		ok = ok && reg->lut[t] && reg->lut_watch[t];
	}
	if (!ok) {
		wr_reg_destroy(reg);
		return NULL;
	}
	for (int r = 0; r < size; r++) {
		reg->life[r] = WR_RANK_UP;
	}
	return reg;
}

void
wr_reg_destroy(struct wr_reg *reg)
{
	if (reg == NULL) {
		return;
	}
	reg->closing = true;
	/* Callbacks still see a whole registry; they cannot add waits. */
	while (!ring_empty(&reg->all)) {
		wr_reg_wait_end(WAIT_OF(reg->all.next, all), -ECANCELED, -1);
	}
	for (int t = 0; t < 2; t++) {
		wr_table_destroy(reg->lut[t]);
		wr_table_destroy(reg->lut_watch[t]);
	}
	wr_table_destroy(reg->kv);
	wr_table_destroy(reg->kv_watch);
	wr_table_destroy(reg->barriers);
	wr_table_destroy(reg->groups);
	free(reg->lost_order);
	free(reg->lost_kind);
	free(reg->life);
	free(reg->gone);
	free(reg->stopping);
	for (int r = 0; reg->stop_note != NULL && r < reg->nranks; r++) {
		free(reg->stop_note[r]);
	}
	free(reg->stop_note);
	free(reg->stop_name);
	free(reg->owned);
	free(reg);
}

int
wr_reg_size(const struct wr_reg *reg)
{
	return reg == NULL ? 0 : reg->size;
}

int
wr_reg_nranks(const struct wr_reg *reg)
{
	return reg == NULL ? 0 : reg->nranks;
}

/* *@p, of @n items of @each bytes, made @more items longer, zeroed. */
static int
grow_array(void *p, size_t each, size_t n, size_t more)
{
	void **at = p;
	char *q = realloc(*at, (n + more) * each);

	if (q == NULL) {
		return -ENOMEM;
	}
	memset(q + n * each, 0, more * each);
	*at = q;
	return 0;
}

int
wr_reg_grow(struct wr_reg *reg, int nranks)
{
	size_t n, more;
	int rc;

	if (reg == NULL || nranks < reg->nranks) {
		return -EINVAL;
	}
	n = (size_t)reg->nranks;
	more = (size_t)nranks - n;
	rc = grow_array(&reg->life, sizeof(*reg->life), n, more);
	rc = rc ? rc : grow_array(&reg->gone, sizeof(*reg->gone), n, more);
	rc = rc ? rc : grow_array(&reg->stopping, sizeof(*reg->stopping), n, more);
	rc = rc ? rc : grow_array(&reg->stop_note, sizeof(*reg->stop_note), n, more);
	rc = rc ? rc : grow_array(&reg->owned, sizeof(*reg->owned), n, more);
	rc = rc ? rc : grow_array(&reg->lost_order, sizeof(*reg->lost_order), 2 * n, 2 * more);
	rc = rc ? rc : grow_array(&reg->lost_kind, sizeof(*reg->lost_kind), 2 * n, 2 * more);
	if (rc < 0) {
		return rc;
	}
	for (int r = reg->nranks; r < nranks; r++) {
		reg->life[r] = WR_RANK_UP;
	}
	reg->nranks = nranks;
	return 0;
}
