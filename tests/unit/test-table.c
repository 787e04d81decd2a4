/* SPDX-License-Identifier: MIT */
/*
 * table: keys are copied, values are dropped through the destructor
 * exactly once (replaced, deleted or left at destroy), growth keeps every
 * key, deleting while iterating is safe, tombstones do not pile up.
 */
#include "table.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "tap.h"

#define MANY 100000

struct val {
	int *freed;
	int n;
};

static void
drop_val(void *p)
{
	struct val *v = p;

	(*v->freed)++;
	free(v);
}

static struct val *
val_new(int *freed, int n)
{
	struct val *v = malloc(sizeof(*v));

	if (v == NULL) {
		abort();
	}
	v->freed = freed;
	v->n = n;
	return v;
}

static void
test_basics(void)
{
	struct wr_table *t = wr_table_create(drop_val);
	char key[] = "alpha";
	int freed = 0;
	struct val *v;

	ok(t != NULL, "table: creates");
	is_int((long long)wr_table_count(t), 0, "table: starts empty");
	ok(wr_table_get(t, "alpha") == NULL, "table: a missing key is NULL");
	is_int(wr_table_put(t, key, val_new(&freed, 1)), 0, "table: put");
	key[0] = 'A';
	v = wr_table_get(t, "alpha");
	ok(v != NULL && v->n == 1, "table: the key was copied");
	ok(wr_table_get(t, "Alpha") == NULL, "table: keys are case-sensitive");
	is_int(wr_table_put(t, "alpha", val_new(&freed, 2)), 0,
	       "table: put replaces");
	is_int(freed, 1, "table: the replaced value is dropped");
	v = wr_table_get(t, "alpha");
	is_int(v->n, 2, "table: get sees the new value");
	is_int(wr_table_put(t, "alpha", v), 0, "table: putting the same value");
	is_int(freed, 1, "table: ... does not drop it");
	is_int((long long)wr_table_count(t), 1, "table: one key");
	is_int(wr_table_put(t, "", val_new(&freed, 3)), 0,
	       "table: the empty string is a key");
	v = wr_table_get(t, "");
	ok(v != NULL && v->n == 3, "table: get of the empty key");
	is_int(wr_table_put(t, NULL, v), -EINVAL, "table: put of a NULL key");
	is_int(wr_table_put(t, "x", NULL), -EINVAL, "table: put of NULL");
	is_int(wr_table_del(t, "nope"), -ENOENT, "table: del of a missing key");
	is_int(wr_table_del(t, NULL), -ENOENT, "table: del of NULL");
	ok(wr_table_get(t, NULL) == NULL, "table: get of NULL");
	is_int(wr_table_del(t, "alpha"), 0, "table: del");
	is_int(freed, 2, "table: del drops the value");
	ok(wr_table_get(t, "alpha") == NULL, "table: a deleted key is gone");
	wr_table_destroy(t);
	is_int(freed, 3, "table: destroy drops what is left");
	wr_table_destroy(NULL);
}

static void
test_borrowed(void)
{
	struct wr_table *t = wr_table_create(NULL);
	int a = 1, b = 2;

	is_int(wr_table_put(t, "a", &a), 0, "borrowed: put without destructor");
	is_int(wr_table_put(t, "a", &b), 0, "borrowed: replace");
	ok(wr_table_get(t, "a") == &b, "borrowed: the same pointer comes back");
	is_int(wr_table_del(t, "a"), 0, "borrowed: del leaves the value alone");
	wr_table_destroy(t);
}

static void
test_many(void)
{
	struct wr_table *t = wr_table_create(drop_val);
	bool all = true, none = true, odd = true;
	int freed = 0;
	char key[32];

	for (int i = 0; i < MANY && all; i++) {
		snprintf(key, sizeof(key), "key-%d", i);
		all = wr_table_put(t, key, val_new(&freed, i)) == 0;
	}
	ok(all, "many: %d puts", MANY);
	is_int((long long)wr_table_count(t), MANY, "many: count");
	for (int i = 0; i < MANY; i++) {
		struct val *v;

		snprintf(key, sizeof(key), "key-%d", i);
		v = wr_table_get(t, key);
		all = all && v != NULL && v->n == i;
	}
	ok(all, "many: every key is found after growing");
	for (int i = 0; i < MANY; i += 2) {
		snprintf(key, sizeof(key), "key-%d", i);
		none = none && wr_table_del(t, key) == 0;
	}
	ok(none, "many: delete the even keys");
	is_int(freed, MANY / 2, "many: each deleted value dropped once");
	for (int i = 0; i < MANY; i++) {
		snprintf(key, sizeof(key), "key-%d", i);
		odd = odd && (wr_table_get(t, key) != NULL) == (i % 2 == 1);
	}
	ok(odd, "many: odd keys stay, even keys are gone");
	wr_table_destroy(t);
	is_int(freed, MANY, "many: destroy drops the rest");
}

/* Every key once, and deleting the current one does not disturb the walk. */
static void
test_iterate(void)
{
	struct wr_table *t = wr_table_create(drop_val);
	static unsigned char seen[1000];
	bool once = true;
	const char *key;
	size_t pos = 0;
	int freed = 0, walked = 0;
	void *v;
	char k[16];

	for (int i = 0; i < 1000; i++) {
		snprintf(k, sizeof(k), "%d", i);
		wr_table_put(t, k, val_new(&freed, i));
	}
	while (wr_table_next(t, &pos, &key, &v)) {
		struct val *val = v;

		seen[val->n]++;
		walked++;
		once = once && atoi(key) == val->n;
		if (val->n % 3 == 0) {
			wr_table_del(t, key);
		}
	}
	for (int i = 0; i < 1000; i++) {
		once = once && seen[i] == 1;
	}
	ok(once && walked == 1000, "iterate: each key once, with its value");
	is_int((long long)wr_table_count(t), 1000 - 334,
	       "iterate: deleting during the walk took effect");
	pos = 0;
	walked = 0;
	while (wr_table_next(t, &pos, &key, &v)) {
		walked++;
	}
	is_int(walked, 1000 - 334, "iterate: a second walk sees the rest");
	wr_table_destroy(t);
	is_int(freed, 1000, "iterate: every value dropped once");
}

/* Put and delete in a loop on a small table: tombstones are recycled. */
static void
test_churn(void)
{
	struct wr_table *t = wr_table_create(drop_val);
	bool fine = true;
	int freed = 0;
	char key[32];

	for (int i = 0; i < 200000 && fine; i++) {
		snprintf(key, sizeof(key), "churn-%d", i);
		fine = wr_table_put(t, key, val_new(&freed, i)) == 0;
		if (fine && i >= 5) {
			snprintf(key, sizeof(key), "churn-%d", i - 5);
			fine = wr_table_del(t, key) == 0;
		}
	}
	ok(fine, "churn: 200000 puts and deletes");
	is_int((long long)wr_table_count(t), 5, "churn: five keys live");
	wr_table_destroy(t);
	is_int(freed, 200000, "churn: everything dropped once");
}

static void
test_key(void)
{
	const char *parts[] = { "v", "group", "", "key" };
	char *k = wr_table_key(parts, 4), *one = wr_table_key(parts, 1),
	     *none = wr_table_key(parts, 0);

	ok(k != NULL && strcmp(k, "v\ngroup\n\nkey") == 0, "key: parts joined by newlines");
	ok(one != NULL && strcmp(one, "v") == 0, "key: one part is itself");
	ok(none != NULL && none[0] == '\0', "key: no part is empty");
	free(k);
	free(one);
	free(none);
}

int
main(void)
{
	plan(44);
	test_basics();
	test_borrowed();
	test_many();
	test_iterate();
	test_churn();
	test_key();
	return done_testing();
}
