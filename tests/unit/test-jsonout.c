/* SPDX-License-Identifier: MIT */
/*
 * jsonout: the same bytes as json_dumpb(JSON_COMPACT) for every kind of
 * value (escapes of every control, quotes, backslashes, UTF-8, keys with
 * a NUL, the extreme integers, empty and nested containers) and for 2000
 * random trees; the length of the whole text when the buffer is short; a
 * decline (0) for a real and for a cycle.
 */
#include "jsonout.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"

/* Ours and jansson's text of @j, compared; @j is stolen. */
static bool
same(json_t *j, const char *what)
{
	char ours[8192], theirs[8192];
	size_t n = wr_jsonout_dump(j, ours, sizeof(ours));
	size_t m = json_dumpb(j, theirs, sizeof(theirs), JSON_COMPACT);
	bool eq = n == m && n > 0 && n <= sizeof(ours) && memcmp(ours, theirs, n) == 0;

	if (!eq) {
		printf("# %s: ours %.*s\n#   jansson %.*s\n", what, (int)(n < 200 ? n : 200), ours,
		       (int)(m < 200 ? m : 200), theirs);
	}
	json_decref(j);
	return eq;
}

static void
test_kinds(void)
{
	char controls[40];
	json_t *keyed = json_object();

	for (int i = 0; i < 32; i++) {
		controls[i] = (char)(i + 1 == 32 ? '"' : i + 1);
	}
	controls[32] = '\\';
	controls[33] = '/';
	controls[34] = 0x7f;
	memcpy(controls + 35, "\xc3\xa9\xe2\x82", 4); /* é, then half of € */
	controls[39] = '\xac';
	json_object_setn_new(keyed, "a\0b", 3, json_true());
	ok(same(json_pack("{s:s, s:I, s:b, s:n}", "op", "kv.get", "id", (json_int_t)7,
			  "yes", 1, "none"), "flat"), "jsonout: a flat request");
	ok(same(json_pack("{s:s%}", "s", controls, sizeof(controls)), "controls"),
	   "jsonout: every control, quote, backslash, slash, DEL and UTF-8");
	ok(same(json_pack("{s:s#}", "nul", "a\0b", 3), "nul"), "jsonout: a NUL inside a string");
	ok(same(keyed, "key"), "jsonout: a key with a NUL in it");
	ok(same(json_pack("[I, I, I, i]", (json_int_t)INT64_MIN, (json_int_t)INT64_MAX,
			  (json_int_t)0, -1), "ints"), "jsonout: the extreme integers");
	ok(same(json_loads("{\"o\": {}, \"a\": [], \"m\": [{}, []], "
			   "\"n\": {\"x\": {\"y\": [1, [2, [3, \"\"]]]}}}", 0, NULL), "nested"),
	   "jsonout: empty and nested containers");
}

/* A random tree of at most @depth levels, without reals. */
static json_t *
random_value(unsigned *seed, int depth)
{
	int kind = depth > 0 ? rand_r(seed) % 7 : 2 + rand_r(seed) % 5;
	char s[12];
	json_t *j;

	for (size_t i = 0; i < sizeof(s); i++) {
		s[i] = (char)(rand_r(seed) % 2 ? 'a' + rand_r(seed) % 26 : rand_r(seed) % 128);
	}
	switch (kind) {
	case 0:
		j = json_object();
		for (int i = rand_r(seed) % 4; i > 0; i--) {
			json_object_setn_new(j, s, (size_t)(rand_r(seed) % 12),
					     random_value(seed, depth - 1));
		}
		return j;
	case 1:
		j = json_array();
		for (int i = rand_r(seed) % 4; i > 0; i--) {
			json_array_append_new(j, random_value(seed, depth - 1));
		}
		return j;
	case 2:
		return json_stringn(s, (size_t)(rand_r(seed) % 12));
	case 3:
		return json_integer((json_int_t)rand_r(seed) * (rand_r(seed) % 2 ? -997 : 1));
	case 4:
		return json_true();
	case 5:
		return json_false();
	default:
		return json_null();
	}
}

static void
test_random(void)
{
	unsigned seed = 4242;
	int bad = 0;

	for (int i = 0; i < 2000; i++) {
		json_t *v = json_object();

		json_object_set_new(v, "v", random_value(&seed, 5));
		bad += !same(v, "random");
	}
	is_int(bad, 0, "jsonout: 2000 random trees come out as jansson writes them");
}

static void
test_limits(void)
{
	json_t *j = json_pack("{s:s}", "key", "a value that is long enough");
	json_t *a = json_array(), *b = json_array();
	char buf[64];
	size_t whole = wr_jsonout_dump(j, buf, sizeof(buf));

	is_int(wr_jsonout_dump(j, buf, 10), whole, "jsonout: a short buffer gets the whole length");
	json_decref(j);
	j = json_pack("{s:f}", "real", 0.5);
	is_int(wr_jsonout_dump(j, buf, sizeof(buf)), 0, "jsonout: declines a real");
	json_decref(j);
	json_array_append(a, b);
	json_array_append(b, a);
	is_int(wr_jsonout_dump(a, buf, sizeof(buf)), 0, "jsonout: declines a cycle");
	json_array_clear(b);
	json_decref(a);
	json_decref(b);
}

int
main(void)
{
	plan(10);
	test_kinds();
	test_random();
	test_limits();
	return done_testing();
}
