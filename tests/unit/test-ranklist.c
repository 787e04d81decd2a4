/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for ranklist: runs of ranks compressed to ranges, single
 * ranks kept, and a list too long for its room cut with "...".
 */
#include "ranklist.h"
#include "tap.h"

int
main(void)
{
	const int a[] = { 0, 2, 3, 4, 5, 6, 7 }, b[] = { 1 }, c[] = { 1, 2, 4, 6, 7 };
	char buf[64];

	plan(5);
	wr_ranklist_text(a, 7, buf, sizeof(buf));
	is_str(buf, "0,2-7", "a run of ranks is one range");
	wr_ranklist_text(b, 1, buf, sizeof(buf));
	is_str(buf, "1", "one rank is itself");
	wr_ranklist_text(c, 5, buf, sizeof(buf));
	is_str(buf, "1-2,4,6-7", "ranges and single ranks mix");
	wr_ranklist_text(c, 5, buf, 10);
	is_str(buf, "1-2,4...", "a list too long for its room ends with ...");
	is_int((long long)wr_ranklist_text(c, 5, buf, sizeof(buf)), 9,
	       "the length it needed");
	return done_testing();
}
