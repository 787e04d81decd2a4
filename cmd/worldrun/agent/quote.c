/* SPDX-License-Identifier: MIT */
#include "quote.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Bytes a shell reads as themselves, outside quotes (and UTF-8's). */
static bool
plain(unsigned char c)
{
	return c >= 0x80 || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || strchr("_./:=@%+,-~", c) != NULL;
}

static bool
control(unsigned char c)
{
	return c < 0x20 || c == 0x7f;
}

/* The escape of @c inside $'...', into @out (at most 5 bytes). */
static int
escape(unsigned char c, char *out)
{
	static const char names[] = { ['\a'] = 'a', ['\b'] = 'b', ['\t'] = 't',
				      ['\n'] = 'n', ['\v'] = 'v', ['\f'] = 'f',
				      ['\r'] = 'r' };

	if (c == '\\' || c == '\'') {
		return snprintf(out, 5, "\\%c", c);
	}
	if (c < sizeof(names) && names[c] != 0) {
		return snprintf(out, 5, "\\%c", names[c]);
	}
	if (control(c)) {
		return snprintf(out, 5, "\\x%02x", c);
	}
	out[0] = (char)c;
	return 1;
}

/* One byte in single quotes: a quote ends them, is escaped, and restarts them. */
static int
piece_of(unsigned char c, bool ctl, char *out)
{
	if (ctl) {
		return escape(c, out);
	}
	if (c == '\'') {
		memcpy(out, "'\\''", 4);
		return 4;
	}
	out[0] = (char)c;
	return 1;
}

const char *
wr_quote(char *buf, size_t size, const char *s)
{
	bool ctl = false, needs = s[0] == '\0';
	size_t at;

	for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
		needs = needs || !plain(*p);
		ctl = ctl || control(*p);
	}
	if (!needs) {
		return s;
	}
	at = (size_t)snprintf(buf, size, ctl ? "$'" : "'");
	for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
		char piece[5];
		int n = piece_of(*p, ctl, piece);

		if (at + (size_t)n + 5 > size) {
			memcpy(buf + at, "...'", 5);
			return buf;
		}
		memcpy(buf + at, piece, (size_t)n);
		at += (size_t)n;
	}
	memcpy(buf + at, "'", 2);
	return buf;
}
