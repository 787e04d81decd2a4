/* SPDX-License-Identifier: MIT */
#include "oneline.h"

#include <stdio.h>
#include <string.h>

/* The escape for byte @c, or NULL when it stands for itself. */
static const char *
escape(unsigned char c, char tmp[5])
{
	switch (c) {
	case '\n':
		return "\\n";
	case '\r':
		return "\\r";
	case '\t':
		return "\\t";
	default:
		break;
	}
	if (c < 0x20 || c == 0x7f) {
		snprintf(tmp, 5, "\\x%02x", c);
		return tmp;
	}
	return NULL;
}

size_t
wr_oneline(char *out, size_t size, const char *in, size_t len)
{
	size_t at = 0;
	char tmp[5];

	for (size_t i = 0; i < len; i++) {
		const char *e = escape((unsigned char)in[i], tmp);
		size_t n = e != NULL ? strlen(e) : 1;

		if (at + n >= size) {
			break;
		}
		if (e != NULL) {
			memcpy(out + at, e, n);
		} else {
			out[at] = in[i];
		}
		at += n;
	}
	out[at] = '\0';
	return at;
}
