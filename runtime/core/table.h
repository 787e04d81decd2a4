/* SPDX-License-Identifier: MIT */
/*
 * table: a hash map from C strings to pointers, for the registry core
 * and for libworld's handler tables.
 * Keys are copied; values belong to the caller, or to the table when it
 * was created with a destructor. It grows as needed and never rehashes on
 * a delete, so deleting while iterating is safe; adding a new key is not.
 */
#ifndef WR_TABLE_H
#define WR_TABLE_H

#include <stdbool.h>
#include <stddef.h>

struct wr_table;

typedef void wr_table_free_fn(void *val);

/*
 * An empty table. @free_val (may be NULL) is called on every value the
 * table drops: replaced, deleted, or left at destroy. NULL on ENOMEM.
 */
struct wr_table *wr_table_create(wr_table_free_fn *free_val);

/* Frees the keys, and the values through the destructor. Accepts NULL. */
void wr_table_destroy(struct wr_table *t);

/* Number of keys. */
size_t wr_table_count(const struct wr_table *t);

/* The value of @key (borrowed), or NULL if there is none. */
void *wr_table_get(const struct wr_table *t, const char *key);

/*
 * Set @key to @val (not NULL), dropping the old value if there was one.
 * 0, -EINVAL (NULL key or value) or -ENOMEM; on failure the table is
 * unchanged and @val still belongs to the caller.
 */
int wr_table_put(struct wr_table *t, const char *key, void *val);

/* Remove @key, dropping its value: 0 or -ENOENT. */
int wr_table_del(struct wr_table *t, const char *key);

/*
 * Iteration: start with *@pos = 0; each call gives the next key and value
 * (both borrowed) and returns false after the last. Between calls the
 * caller may replace or delete any key, but not add one.
 */
bool wr_table_next(const struct wr_table *t, size_t *pos, const char **key,
		   void **val);

/*
 * A key made of @n parts joined by newlines (malloc'd: free() it), for
 * tables whose keys have several parts; NULL on ENOMEM. Cheaper than
 * asprintf, which a call's lookups paid for twice.
 */
char *wr_table_key(const char *const *parts, size_t n);

#endif
