/* SPDX-License-Identifier: MIT */
#include "jsonout.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define MAX_DEPTH 512

/* Where the text goes: what fits is written, all of it is counted. */
struct out {
	char *buf;
	size_t size, len;
};

static void
put(struct out *o, const char *s, size_t n)
{
	if (o->len < o->size) {
		size_t room = o->size - o->len;

		memcpy(o->buf + o->len, s, n < room ? n : room);
	}
	o->len += n;
}

static void
put_char(struct out *o, char c)
{
	put(o, &c, 1);
}

static void
put_integer(struct out *o, json_int_t v)
{
	char digits[24], *p = digits + sizeof(digits);
	/* In unsigned arithmetic, so that the most negative value works too. */
	uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;

	do {
		*--p = (char)('0' + u % 10);
		u /= 10;
	} while (u != 0);
	if (v < 0) {
		*--p = '-';
	}
	put(o, p, (size_t)(digits + sizeof(digits) - p));
}

/*
 * As jansson escapes: the two that must be, the short forms of five
 * controls, \u00XX for the other controls; UTF-8 passes as it is (jansson
 * checked it when the string was made; json_string_nocheck is not used).
 */
static void
put_string(struct out *o, const char *s, size_t n)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t run = 0;

	put_char(o, '"');
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		char esc[6] = { '\\', 0 };
		size_t elen = 2;

		if (c >= 0x20 && c != '"' && c != '\\') {
			continue;
		}
		put(o, s + run, i - run);
		run = i + 1;
		switch (c) {
		case '"': esc[1] = '"'; break;
		case '\\': esc[1] = '\\'; break;
		case '\b': esc[1] = 'b'; break;
		case '\f': esc[1] = 'f'; break;
		case '\n': esc[1] = 'n'; break;
		case '\r': esc[1] = 'r'; break;
		case '\t': esc[1] = 't'; break;
		default:
			memcpy(esc + 1, "u00", 3);
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 15];
			elen = 6;
		}
		put(o, esc, elen);
	}
	put(o, s + run, n - run);
	put_char(o, '"');
}

static bool dump(struct out *o, const json_t *j, int depth);

static bool
dump_object(struct out *o, const json_t *j, int depth)
{
	const char *key;
	size_t key_len;
	json_t *v;
	bool first = true;

	put_char(o, '{');
	json_object_keylen_foreach((json_t *)j, key, key_len, v) {
		if (!first) {
			put_char(o, ',');
		}
		first = false;
		put_string(o, key, key_len);
		put_char(o, ':');
		if (!dump(o, v, depth + 1)) {
			return false;
		}
	}
	put_char(o, '}');
	return true;
}

static bool
dump_array(struct out *o, const json_t *j, int depth)
{
	size_t i;
	json_t *v;

	put_char(o, '[');
	json_array_foreach(j, i, v) {
		if (i > 0) {
			put_char(o, ',');
		}
		if (!dump(o, v, depth + 1)) {
			return false;
		}
	}
	put_char(o, ']');
	return true;
}

static bool
dump(struct out *o, const json_t *j, int depth)
{
	if (depth > MAX_DEPTH) {
		return false;
	}
	switch (json_typeof(j)) {
	case JSON_OBJECT:
		return dump_object(o, j, depth);
	case JSON_ARRAY:
		return dump_array(o, j, depth);
	case JSON_STRING:
		put_string(o, json_string_value(j), json_string_length(j));
		return true;
	case JSON_INTEGER:
		put_integer(o, json_integer_value(j));
		return true;
	case JSON_REAL:
		return false;
	case JSON_TRUE:
		put(o, "true", 4);
		return true;
	case JSON_FALSE:
		put(o, "false", 5);
		return true;
	case JSON_NULL:
		put(o, "null", 4);
		return true;
	}
	return false;
}

size_t
wr_jsonout_dump(const json_t *j, char *buf, size_t size)
{
	struct out o = { .buf = buf, .size = size };

	return j != NULL && dump(&o, j, 0) ? o.len : 0;
}
