/* SPDX-License-Identifier: MIT */
/*
 * cgroup: collective groups' lives: creation by the members only (the
 * registry's rendezvous gives the id; the members' fabric addresses come
 * from its key/value space in one round trip), the mapping between group
 * and world ranks, the turns that order a group's operations, and poisoning.
 * The fabric endpoint the groups share is the world's (endpoint.c).
 */
#include "cgroup.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "endpoint.h"
#include "failure.h"
#include "regcall.h"
#include "regproto.h"
#include "shmseg.h"
#include "table.h"

void
wr_coll_world_finish(struct world *w)
{
	for (;;) {
		struct world_coll *c;

		pthread_mutex_lock(&w->mu);
		c = w->colls;
		pthread_mutex_unlock(&w->mu);
		if (c == NULL) {
			break;
		}
		world_coll_destroy(c);
	}
	/* Before the progress thread stops: its deaths reach our waits. */
	wr_endpoint_close(w);
	wr_table_destroy(w->coll_names);
	w->coll_names = NULL;
}

/* At most this many groups in world_stop()'s word: its request must
 * fit in the smallest frame a registry takes (4 KiB). */
#define PROGRESS_MAX 128

static void
progress_add(json_t *colls, uint32_t id, uint32_t seq)
{
	char key[16];

	snprintf(key, sizeof(key), "%u", id);
	if (json_object_size(colls) < PROGRESS_MAX && json_object_get(colls, key) == NULL) {
		json_object_set_new(colls, key, json_integer(seq));
	}
}

json_t *
wr_coll_world_progress(struct world *w)
{
	json_t *colls = json_object();
	unsigned n;

	pthread_mutex_lock(&w->mu);
	for (struct world_coll *c = w->colls; c != NULL && colls != NULL; c = c->next) {
		if (c->fab != NULL) {
			progress_add(colls, c->id, __atomic_load_n(&c->seq, __ATOMIC_ACQUIRE));
		}
	}
	n = w->nended < WR_COLL_ENDED_MAX ? w->nended : WR_COLL_ENDED_MAX;
	for (unsigned i = 0; i < n && colls != NULL; i++) {
		uint64_t e = w->coll_ended[(w->nended - 1 - i) % WR_COLL_ENDED_MAX];

		progress_add(colls, (uint32_t)(e >> 32), (uint32_t)e);
	}
	pthread_mutex_unlock(&w->mu);
	return colls;
}

/* ---- turns and poison ---- */

void
wr_coll_await_turn(struct world_coll *c, uint64_t t)
{
	while (c->serving != t) {
		pthread_cond_wait(&c->turn, &c->mu);
	}
}

void
wr_coll_next_turn(struct world_coll *c)
{
	c->serving++;
	pthread_cond_broadcast(&c->turn);
}

void
wr_coll_poison(struct world_coll *c, int rc, int rank)
{
	if (c->poison == 0 && rc < 0) {
		c->poison = rc;
		c->poison_rank = rc == WORLD_EPEERDEAD ? rank : -1;
	}
}

void
wr_coll_backoff(int *retry_ms, bool sleep)
{
	struct timespec ts = { *retry_ms / 1000, (long)(*retry_ms % 1000) * 1000000 };

	if (sleep) {
		nanosleep(&ts, NULL);
	}
	*retry_ms = *retry_ms * 2 > 50 ? 50 : *retry_ms * 2;
}

int
wr_coll_note(int rc, int rank)
{
	if (rc < 0) {
		struct wr_result res = { .rc = rc, .dead_rank = rank };

		wr_failure_note(&res);
	}
	return rc;
}

int
wr_coll_poisoned(struct world_coll *c)
{
	struct wr_result r = { .rc = c->poison, .dead_rank = c->poison_rank };

	snprintf(r.message, sizeof(r.message), "the group failed before");
	wr_failure_note(&r);
	return c->poison;
}

int
wr_coll_stopper(const struct world_coll *c, uint32_t seq)
{
	uint64_t v = __atomic_load_n(&c->stopped, __ATOMIC_ACQUIRE);

	return v != UINT64_MAX && (uint32_t)(v >> 32) < seq ? (int)(v & 0xFFFFFFFF) : -1;
}

int
wr_coll_note_stopper(const struct world_coll *c, const char *op, uint32_t seq, int rank,
		     char why[256])
{
	struct wr_result r = { .rc = WORLD_EPEERDEAD, .dead_rank = rank };

	snprintf(r.message, sizeof(r.message),
		 "rank %d is stopping (world_stop); it will not join %s (operation %u of %s)",
		 rank, op, seq, c->label);
	if (why != NULL) {
		memcpy(why, r.message, 256);
	}
	wr_failure_note(&r);
	return WORLD_EPEERDEAD;
}

/* Member @rank began to stop having started @ops operations: keep the
 * fewest, and wake a blocked operation to see whether it is one. */
static void
stopped_at(struct world_coll *c, int rank, long long ops)
{
	uint64_t v = (uint64_t)ops << 32 | (uint32_t)rank;
	uint64_t old = __atomic_load_n(&c->stopped, __ATOMIC_ACQUIRE);

	if (ops < 0 || ops > UINT32_MAX) {
		return;
	}
	while (v >> 32 < old >> 32 &&
	       !__atomic_compare_exchange_n(&c->stopped, &old, v, false, __ATOMIC_ACQ_REL,
					    __ATOMIC_ACQUIRE)) {
	}
	if (c->fab != NULL) {
		wr_fab_interrupt(c->fab);
	}
}

/* A member begins to stop, on the progress thread (see stopped_at()). */
static void
on_stop(void *arg, int rank, json_t *colls)
{
	struct world_coll *c = arg;
	char key[16];
	json_t *n;

	snprintf(key, sizeof(key), "%u", c->id);
	n = json_object_get(colls, key);
	for (int i = 0; i < c->size; i++) {
		if (c->world[i] == rank && i != c->rank && json_is_integer(n)) {
			stopped_at(c, rank, json_integer_value(n));
			break;
		}
	}
}

/* A member's loss, on the progress thread: a blocked operation wakes. */
static void
on_loss(void *arg, int rank, bool left)
{
	struct world_coll *c = arg;

	for (int i = 0; i < c->size; i++) {
		if (c->world[i] == rank && i != c->rank) {
			int none = -1;

			/* The first member lost is the one every failure names. */
			__atomic_compare_exchange_n(&c->lost, &none, rank, false,
						    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
			if (c->fab != NULL) {
				wr_fab_interrupt(c->fab);
			}
			break;
		}
	}
}

/* ---- creation ---- */

/* @ranks as given: in range, each once, with the caller: its index. */
static int
check_ranks(const struct world *w, const int *ranks, size_t n)
{
	int self = WORLD_ENOTMEMBER;

	if (ranks == NULL || n == 0 || n > (size_t)w->size) {
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		if (ranks[i] < 0 || ranks[i] >= w->size) {
			return -EINVAL;
		}
		for (size_t j = 0; j < i; j++) {
			if (ranks[j] == ranks[i]) {
				return -EINVAL;
			}
		}
		self = ranks[i] == w->rank ? (int)i : self;
	}
	return self;
}

/*
 * The registry's name of the group: the member list (its order too) and
 * how many groups of that list this process created before, which every
 * member counts alike since they create in the same order.
 */
static int
group_name(struct world *w, const int *ranks, size_t n, char *out, size_t size)
{
	uint64_t h = 1469598103934665603ULL;
	char base[64];
	uintptr_t k;
	int rc = 0;

	for (size_t i = 0; i < n; i++) {
		h = (h ^ (uint32_t)ranks[i]) * 1099511628211ULL;
	}
	snprintf(base, sizeof(base), "world.coll.%zu.%016llx", n, (unsigned long long)h);
	pthread_mutex_lock(&w->mu);
	if (w->coll_names == NULL) {
		w->coll_names = wr_table_create(NULL);
	}
	k = w->coll_names != NULL ? (uintptr_t)wr_table_get(w->coll_names, base) : 0;
	if (w->coll_names == NULL || wr_table_put(w->coll_names, base, (void *)(k + 1)) < 0) {
		rc = -ENOMEM;
	}
	pthread_mutex_unlock(&w->mu);
	snprintf(out, size, "%s.%zu", base, (size_t)k);
	return rc;
}

static json_t *
members_json(const int *ranks, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; a != NULL && i < n; i++) {
		json_array_append_new(a, json_integer(ranks[i]));
	}
	return a;
}

/* The rendezvous: every member joined; the group's id in c->id. */
static int
join(struct world_coll *c, int timeout_ms)
{
	struct wr_wait rec = { .kind = WR_WAIT_GROUP_CREATE, .group = c->name, .peer = -1 };
	json_t *res = NULL;
	json_int_t id = 0;
	int rc;

	rc = wr_regcall_run_as(c->w, &rec,
			       wr_regproto_group_join(c->name, members_json(c->world,
									     (size_t)c->size), true),
			       timeout_ms, &res, NULL, NULL);
	if (rc == 0 && json_unpack(res, "{s:I}", "id", &id) < 0) {
		rc = WORLD_EPROTO;
	}
	json_decref(res);
	c->id = (uint32_t)id;
	/* For the hang report of what follows: the area's agreement. */
	snprintf(c->label, sizeof(c->label), "coll %u", c->id);
	return rc;
}

/* The addresses of the members this endpoint does not know yet. */
static int
learn_addresses(struct world_coll *c, int timeout_ms)
{
	json_t *keys = json_array(), *res = NULL, *lens;
	int *who = calloc((size_t)c->size, sizeof(*who));
	void *blob = NULL;
	size_t rlen = 0, n = 0, at = 0;
	int rc = keys == NULL || who == NULL ? -ENOMEM : 0;

	for (int i = 0; rc == 0 && i < c->size; i++) {
		char key[32];

		if (i == c->rank || wr_fab_has_peer(c->fab, c->world[i])) {
			continue;
		}
		snprintf(key, sizeof(key), WR_ENDPOINT_ADDR_KEY, c->world[i]);
		json_array_append_new(keys, json_string(key));
		who[n++] = c->world[i];
	}
	if (rc == 0 && n > 0) {
		/* Each member published before it joined: no key is missing. */
		rc = wr_regcall_run(c->w, wr_regproto_keys(WR_OP_KV_MGET, json_incref(keys)),
				    NULL, 0, timeout_ms, &res, &blob, &rlen);
	}
	lens = json_object_get(res, "lens");
	if (rc == 0 && n > 0 && (json_array_size(lens) != n || json_object_get(res, "next"))) {
		/* Addresses are short: one answer holds them all, or something is wrong. */
		rc = WORLD_EPROTO;
	}
	for (size_t i = 0; rc == 0 && i < n; i++) {
		json_int_t len = json_integer_value(json_array_get(lens, i));
		char *addr = len > 0 && (size_t)len <= rlen - at ? strndup((char *)blob + at, (size_t)len)
			: NULL;

		rc = addr == NULL ? WORLD_EPROTO : wr_fab_set_peer(c->fab, who[i], addr);
		at += (size_t)len;
		free(addr);
	}
	json_decref(keys);
	json_decref(res);
	free(blob);
	free(who);
	return rc;
}

static void
coll_free(struct world_coll *c)
{
	if (c == NULL) {
		return;
	}
	wr_shmseg_detach(c);
	pthread_mutex_destroy(&c->mu);
	pthread_cond_destroy(&c->turn);
	free(c->scratch);
	free(c->world);
	free(c->name);
	free(c);
}

static struct world_coll *
coll_new(struct world *w, const int *ranks, size_t n, int self)
{
	struct world_coll *c = calloc(1, sizeof(*c));

	if (c == NULL) {
		return NULL;
	}
	c->w = w;
	c->size = (int)n;
	c->rank = self;
	c->lost = -1;
	c->stopped = UINT64_MAX;
	c->poison_rank = -1;
	c->started_ms = WORLD_TIMEOUT_DEFAULT;
	c->oversubscribed = wr_endpoint_oversubscribed();
	c->world = malloc(n * sizeof(*c->world));
	c->name = malloc(80);
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->turn, NULL);
	if (c->world == NULL || c->name == NULL) {
		coll_free(c);
		return NULL;
	}
	memcpy(c->world, ranks, n * sizeof(*c->world));
	/* A group of one keeps id 0; the others' join names them again. */
	snprintf(c->label, sizeof(c->label), "coll %u", c->id);
	return c;
}

/* Watch the members; one lost already fails the operations at once. */
static void
watch_members(struct world_coll *c)
{
	c->watch = (struct wr_prog_watch){ .fn = on_loss, .stop = on_stop, .arg = c };
	wr_prog_watch_add(c->w->prog, &c->watch);
	for (int i = 0; i < c->size; i++) {
		if (i != c->rank && c->lost < 0 && wr_prog_is_gone(c->w->prog, c->world[i])) {
			__atomic_store_n(&c->lost, c->world[i], __ATOMIC_RELEASE);
		}
		if (i != c->rank) {
			stopped_at(c, c->world[i], wr_prog_stopped_at(c->w->prog, c->world[i], c->id));
		}
	}
}

/* Join, learn the others' addresses and watch them: a group of several. */
static int
connect_members(struct world_coll *c, int timeout_ms)
{
	int rc = wr_endpoint_get(c->w, &c->fab);

	if (rc == 0) {
		rc = join(c, timeout_ms);
	}
	if (rc == 0) {
		rc = learn_addresses(c, timeout_ms);
	}
	if (rc == 0) {
		watch_members(c);
	}
	if (rc == 0) {
		int ms = wr_world_timeout(c->w, timeout_ms);

		rc = wr_shmseg_attach(c, ms < 0 ? -1 : wr_clock_ms() + ms);
	}
	return rc;
}

int
world_coll_create(struct world *w, const int *ranks, size_t n, int timeout_ms,
		  struct world_coll **out)
{
	int self = w != NULL && out != NULL ? check_ranks(w, ranks, n) : -EINVAL;
	struct world_coll *c = NULL;
	int rc = self < 0 ? self : 0;

	if (out != NULL) {
		*out = NULL;
	}
	if (rc == 0 && wr_world_timeout(w, timeout_ms) == -EINVAL) {
		rc = -EINVAL;
	}
	if (rc == 0) {
		c = coll_new(w, ranks, n, self);
		rc = c == NULL ? -ENOMEM : 0;
	}
	if (rc == 0) {
		rc = wr_algo_parse(getenv("WORLD_COLL_ALGO"), c->forced);
	}
	if (rc == 0) {
		rc = group_name(w, ranks, n, c->name, 80);
	}
	/* A group of one needs no fabric and no one to meet. */
	if (rc == 0 && n > 1) {
		rc = connect_members(c, timeout_ms);
	}
	if (rc < 0) {
		struct wr_result r = { .rc = rc, .dead_rank = -1 };

		wr_failure_note(&r);
		coll_free(c);
		return rc;
	}
	pthread_mutex_lock(&w->mu);
	c->next = w->colls;
	w->colls = c;
	pthread_mutex_unlock(&w->mu);
	*out = c;
	return 0;
}

/* Out of the world's list; a group of several is remembered as ended. */
static void
unlink_from_world(struct world_coll *c)
{
	struct world *w = c->w;

	pthread_mutex_lock(&w->mu);
	if (c->fab != NULL) {
		w->coll_ended[w->nended++ % WR_COLL_ENDED_MAX] = (uint64_t)c->id << 32 | c->seq;
	}
	for (struct world_coll **at = &c->w->colls; *at != NULL; at = &(*at)->next) {
		if (*at == c) {
			*at = c->next;
			break;
		}
	}
	pthread_mutex_unlock(&c->w->mu);
}

void
world_coll_destroy(struct world_coll *c)
{
	uint64_t t;

	if (c == NULL) {
		return;
	}
	/* What was started runs to its end (or its timeout) first. */
	pthread_mutex_lock(&c->mu);
	t = c->next_ticket++;
	wr_coll_await_turn(c, t);
	pthread_mutex_unlock(&c->mu);
	wr_cworker_stop(c);
	if (c->w->prog != NULL && c->size > 1) {
		wr_prog_watch_remove(c->w->prog, &c->watch);
		wr_regcall_run(c->w, wr_regproto_group(WR_OP_GROUP_LEAVE, c->name),
			       NULL, 0, 5000, NULL, NULL, NULL);
	}
	unlink_from_world(c);
	coll_free(c);
}

int
world_coll_set_timeout(struct world_coll *c, int timeout_ms)
{
	if (wr_world_timeout(c->w, timeout_ms) == -EINVAL) {
		return -EINVAL;
	}
	pthread_mutex_lock(&c->mu);
	c->started_ms = timeout_ms;
	pthread_mutex_unlock(&c->mu);
	return 0;
}

/* ---- ranks ---- */

int
world_coll_rank(const struct world_coll *c)
{
	return c->rank;
}

int
world_coll_size(const struct world_coll *c)
{
	return c->size;
}

int
world_coll_world_rank(const struct world_coll *c, int rank)
{
	return rank >= 0 && rank < c->size ? c->world[rank] : -EINVAL;
}

int
world_coll_group_rank(const struct world_coll *c, int world_rank)
{
	for (int i = 0; i < c->size; i++) {
		if (c->world[i] == world_rank) {
			return i;
		}
	}
	return WORLD_ENOTMEMBER;
}
