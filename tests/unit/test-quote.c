/* SPDX-License-Identifier: MIT */
/*
 * quote: names that need nothing stay as they are; spaces and shell
 * characters get single quotes, a quote inside them is escaped; control
 * characters (a newline) get $'...' with escapes; a long name is cut with
 * "..." and never overruns the buffer.
 */
#include "quote.h"

#include <string.h>

#include "tap.h"

static void
check(const char *in, const char *want, const char *what)
{
	char buf[WR_QUOTE_MAX];

	is_str(wr_quote(buf, sizeof(buf), in), want, what);
}

int
main(void)
{
	char small[16], big[4000];
	const char *q;

	plan(11);
	check("./a.out", "./a.out", "quote: a plain path stays as it is");
	check("/opt/π/bin", "/opt/π/bin", "quote: so do UTF-8 names");
	check("my prog", "'my prog'", "quote: a space gets single quotes");
	check("it's", "'it'\\''s'", "quote: a quote inside them is escaped");
	check("", "''", "quote: the empty name is ''");
	check("a\nb", "$'a\\nb'", "quote: a newline gets $'...' and \\n");
	check("t\tab\x01'\\", "$'t\\tab\\x01\\'\\\\'", "quote: tabs, other controls, quotes and backslashes");
	check("$(rm -rf /)", "'$(rm -rf /)'", "quote: shell syntax is quoted");
	q = wr_quote(small, sizeof(small), "a b c d e f g h i j k");
	is_str(q, "'a b c d e ...'", "quote: a long name is cut with ...");
	ok(strlen(q) < sizeof(small), "quote: within its buffer");
	memset(big, '\n', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	q = wr_quote(small, sizeof(small), big);
	ok(strlen(q) < sizeof(small) && strncmp(q, "$'\\n", 4) == 0,
	   "quote: escapes are cut whole");
	return done_testing();
}
