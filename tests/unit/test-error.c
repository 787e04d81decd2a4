/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for libworld's error codes: world_strerror() and
 * world_err_name() for every WORLD_E* code that world_errors.h declares (read from
 * the header given as argv[1]), for errno values, 0 and unknown codes.
 */
#include "world.h"
#include "tap.h"

#include <errno.h>
#include <limits.h>
#include <regex.h>

struct code {
	int value;
	const char *name;
};

/* The codes as compiled; the header is checked against this list. */
static const struct code codes[] = {
	{ WORLD_EFRAME, "WORLD_EFRAME" },
	{ WORLD_EPROTO, "WORLD_EPROTO" },
	{ WORLD_ENOTMEMBER, "WORLD_ENOTMEMBER" },
	{ WORLD_EREMOTE, "WORLD_EREMOTE" },
	{ WORLD_EPEERDEAD, "WORLD_EPEERDEAD" },
	{ WORLD_EREGISTRY, "WORLD_EREGISTRY" },
	{ WORLD_EAUTH, "WORLD_EAUTH" },
	{ WORLD_EFABRIC, "WORLD_EFABRIC" },
	{ WORLD_EMISMATCH, "WORLD_EMISMATCH" },
};
#define NCODES (sizeof(codes) / sizeof(codes[0]))

/*
 * Count the "WORLD_E<NAME> = -<N>," lines of world_errors.h; every one must be in
 * codes[] with the same value. Returns the number found, or -1.
 */
static int
check_header(const char *path, bool *all_known)
{
	FILE *f = fopen(path, "r");
	char line[256];
	regex_t re;
	regmatch_t m[3];
	int n = 0;

	*all_known = true;
	if (f == NULL ||
	    regcomp(&re, "^[ \t]*(WORLD_E[A-Z0-9_]+)[ \t]*=[ \t]*(-[0-9]+)",
		    REG_EXTENDED) != 0) {
		if (f != NULL) {
			fclose(f);
		}
		return -1;
	}
	while (fgets(line, sizeof(line), f) != NULL) {
		bool known = false;

		if (regexec(&re, line, 3, m, 0) != 0) {
			continue;
		}
		line[m[1].rm_eo] = '\0';
		for (size_t i = 0; i < NCODES; i++) {
			known = known ||
				(strcmp(codes[i].name, line + m[1].rm_so) == 0 &&
				 codes[i].value == atoi(line + m[2].rm_so));
		}
		if (!known) {
			printf("#   %s in world_errors.h is not tested\n", line + m[1].rm_so);
		}
		*all_known = *all_known && known;
		n++;
	}
	regfree(&re);
	fclose(f);
	return n;
}

static void
test_codes(void)
{
	for (size_t i = 0; i < NCODES; i++) {
		const char *text = world_strerror(codes[i].value);
		bool distinct = true;

		is_str(world_err_name(codes[i].value), codes[i].name,
		       "error: world_err_name gives the enum name");
		for (size_t k = 0; k < NCODES; k++) {
			distinct = distinct &&
				   (k == i ||
				    strcmp(text, world_strerror(codes[k].value)) != 0);
		}
		ok(text != NULL && text[0] != '\0' && distinct &&
			   strcmp(text, world_strerror(INT_MIN)) != 0,
		   "error: %s has its own description (\"%s\")", codes[i].name,
		   text ? text : "(null)");
		ok(codes[i].value <= -4096,
		   "error: %s is outside the errno range", codes[i].name);
	}
}

static void
test_others(void)
{
	static const int unknown[] = { -5000, 1, 4096, INT_MIN, INT_MAX, -4095,
				       WORLD_EMISMATCH - 1 };

	is_str(world_err_name(-ENOENT), "ENOENT", "error: -ENOENT is named ENOENT");
	is_str(world_strerror(-ENOENT), strerror(ENOENT),
	       "error: -ENOENT is described by libc");
	is_str(world_err_name(-ETIMEDOUT), "ETIMEDOUT",
	       "error: -ETIMEDOUT is named ETIMEDOUT");
	is_str(world_strerror(-EPIPE), strerror(EPIPE),
	       "error: -EPIPE is described by libc");
	is_str(world_err_name(0), "OK", "error: 0 is named OK");
	ok(world_strerror(0) != NULL && world_strerror(0)[0] != '\0',
	   "error: 0 has a description");
	is_int(WORLD_OK, 0, "error: WORLD_OK is 0");
	for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
		const char *text = world_strerror(unknown[i]);

		is_str(world_err_name(unknown[i]), "EUNKNOWN",
		       "error: an unknown code is named EUNKNOWN");
		ok(text != NULL && text[0] != '\0',
		   "error: an unknown code (%d) has a description", unknown[i]);
	}
}

int
main(int argc, char **argv)
{
	bool all_known = false;
	int n;

	if (argc < 2) {
		plan(1);
		ok(false, "error: argv[1] names world_errors.h (meson passes it)");
		return done_testing();
	}
	plan(2 + 3 * (int)NCODES + 7 + 14);
	n = check_header(argv[1], &all_known);
	is_int(n, (long long)NCODES,
	       "error: world_errors.h declares as many WORLD_E* codes as tested");
	ok(all_known, "error: every WORLD_E* code of world_errors.h is tested, "
		      "with the same value");
	test_codes();
	test_others();
	return done_testing();
}
