/* SPDX-License-Identifier: MIT */
#include "table.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/*
 * Open addressing with linear probing over a power-of-two array. A delete
 * leaves a tombstone instead of moving entries back, which is what keeps
 * iteration valid across deletes; tombstones go away at the next rehash.
 */
enum slot_state {
	SLOT_EMPTY,
	SLOT_FULL,
	SLOT_GONE,
};

struct slot {
	char *key;
	void *val;
	uint64_t hash;
	enum slot_state state;
};

struct wr_table {
	struct slot *slots;
	size_t cap;   /* 0 or a power of two */
	size_t count; /* full slots */
	size_t used;  /* full and gone slots: what makes probes long */
	wr_table_free_fn *free_val;
};

enum {
	MIN_CAP = 16,
};

/* FNV-1a: keys come from ranks of the same job, not from an adversary. */
static uint64_t
hash_key(const char *key)
{
	uint64_t h = 14695981039346656037ull;

	for (const unsigned char *p = (const unsigned char *)key; *p; p++) {
		h ^= *p;
		h *= 1099511628211ull;
	}
	return h;
}

/* The slot holding @key, or SIZE_MAX. */
static size_t
find_slot(const struct wr_table *t, const char *key, uint64_t hash)
{
	size_t mask = t->cap - 1;

	if (t->cap == 0) {
		return SIZE_MAX;
	}
	/* The load limit guarantees an empty slot, so the probe ends. */
	for (size_t i = hash & mask;; i = (i + 1) & mask) {
		const struct slot *s = &t->slots[i];

		if (s->state == SLOT_EMPTY) {
			return SIZE_MAX;
		}
		if (s->state == SLOT_FULL && s->hash == hash &&
		    strcmp(s->key, key) == 0) {
			return i;
		}
	}
}

/* The first slot on @hash's probe that is not full. */
static struct slot *
free_slot(const struct wr_table *t, uint64_t hash)
{
	size_t mask = t->cap - 1;
	size_t i = hash & mask;

	while (t->slots[i].state == SLOT_FULL) {
		i = (i + 1) & mask;
	}
	return &t->slots[i];
}

static int
rehash(struct wr_table *t, size_t cap)
{
	struct slot *old = t->slots;
	size_t old_cap = t->cap;

	t->slots = calloc(cap, sizeof(*t->slots));
	if (t->slots == NULL) {
		t->slots = old;
		return -ENOMEM;
	}
	t->cap = cap;
	t->used = t->count;
	for (size_t i = 0; i < old_cap; i++) {
		if (old[i].state == SLOT_FULL) {
			*free_slot(t, old[i].hash) = old[i];
		}
	}
	free(old);
	return 0;
}

/* Room for one more key: keep full and gone slots at most 3/4 of cap. */
static int
make_room(struct wr_table *t)
{
	size_t cap = MIN_CAP;

	if ((t->used + 1) * 4 <= t->cap * 3) {
		return 0;
	}
	/* Sized from the live keys, so a table of tombstones shrinks back. */
	while (cap < (t->count + 1) * 2) {
		if (cap > SIZE_MAX / 2 / sizeof(struct slot)) {
			return -ENOMEM;
		}
		cap *= 2;
	}
	return rehash(t, cap);
}

struct wr_table *
wr_table_create(wr_table_free_fn *free_val)
{
	struct wr_table *t = calloc(1, sizeof(*t));

	if (t != NULL) {
		t->free_val = free_val;
	}
	return t;
}

static void
drop_value(const struct wr_table *t, void *val)
{
	if (t->free_val != NULL) {
		t->free_val(val);
	}
}

void
wr_table_destroy(struct wr_table *t)
{
	if (t == NULL) {
		return;
	}
	for (size_t i = 0; i < t->cap; i++) {
		if (t->slots[i].state == SLOT_FULL) {
			free(t->slots[i].key);
			drop_value(t, t->slots[i].val);
		}
	}
	free(t->slots);
	free(t);
}

size_t
wr_table_count(const struct wr_table *t)
{
	return t->count;
}

void *
wr_table_get(const struct wr_table *t, const char *key)
{
	size_t i;

	if (key == NULL) {
		return NULL;
	}
	i = find_slot(t, key, hash_key(key));
	return i == SIZE_MAX ? NULL : t->slots[i].val;
}

int
wr_table_put(struct wr_table *t, const char *key, void *val)
{
	uint64_t hash;
	struct slot *s;
	size_t i;
	char *copy;
	int rc;

	if (key == NULL || val == NULL) {
		return -EINVAL;
	}
	hash = hash_key(key);
	i = find_slot(t, key, hash);
	if (i != SIZE_MAX) {
		void *old = t->slots[i].val;

		t->slots[i].val = val;
		if (old != val) {
			drop_value(t, old);
		}
		return 0;
	}
	copy = strdup(key);
	if (copy == NULL) {
		return -ENOMEM;
	}
	rc = make_room(t);
	if (rc < 0) {
		free(copy);
		return rc;
	}
	s = free_slot(t, hash);
	t->used += s->state == SLOT_EMPTY;
	*s = (struct slot){.key = copy, .val = val, .hash = hash,
			   .state = SLOT_FULL};
	t->count++;
	return 0;
}

int
wr_table_del(struct wr_table *t, const char *key)
{
	struct slot *s;
	size_t i;
	void *val;

	if (key == NULL) {
		return -ENOENT;
	}
	i = find_slot(t, key, hash_key(key));
	if (i == SIZE_MAX) {
		return -ENOENT;
	}
	s = &t->slots[i];
	val = s->val;
	free(s->key);
	*s = (struct slot){.state = SLOT_GONE};
	t->count--;
	/* Drop last: the destructor may look at the table. */
	drop_value(t, val);
	return 0;
}

bool
wr_table_next(const struct wr_table *t, size_t *pos, const char **key,
	      void **val)
{
	for (; *pos < t->cap; (*pos)++) {
		const struct slot *s = &t->slots[*pos];

		if (s->state == SLOT_FULL) {
			*key = s->key;
			*val = s->val;
			(*pos)++;
			return true;
		}
	}
	return false;
}

char *
wr_table_key(const char *const *parts, size_t n)
{
	size_t len = 1, at = 0;
	char *key;

	for (size_t i = 0; i < n; i++) {
		len += strlen(parts[i]) + (i > 0);
	}
	key = malloc(len);
	for (size_t i = 0; key != NULL && i < n; i++) {
		size_t l = strlen(parts[i]);

		if (i > 0) {
			key[at++] = '\n';
		}
		memcpy(key + at, parts[i], l);
		at += l;
	}
	if (key != NULL) {
		key[at] = '\0';
	}
	return key;
}
