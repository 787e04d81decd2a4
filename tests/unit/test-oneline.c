/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for oneline: control characters become visible escapes,
 * everything else (UTF-8 included) stays, and a cut never splits an
 * escape.
 */
#include "oneline.h"
#include "tap.h"

#include <string.h>

static const char *
clean(const char *in, size_t size)
{
	static char out[64];

	wr_oneline(out, size, in, strlen(in));
	return out;
}

int
main(void)
{
	char out[8];

	plan(6);
	is_str(clean("step \"b\" é", 64), "step \"b\" é", "plain text and UTF-8 stay");
	is_str(clean("b\x1b[31m\nx\r", 64), "b\\x1b[31m\\nx\\r",
	       "ESC, newline and carriage return become escapes");
	is_str(clean("a\tb\x7f", 64), "a\\tb\\x7f", "tab and DEL too");
	is_str(clean("back\\slash", 64), "back\\slash", "a backslash stays as it is");
	is_int((long long)wr_oneline(out, sizeof(out), "abcd\x01zz", 7), 4,
	       "a cut never splits an escape");
	is_str(out, "abcd", "and the text is terminated where it was cut");
	return done_testing();
}
