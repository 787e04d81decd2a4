/* SPDX-License-Identifier: MIT */
/*
 * fuzz-opts: worldrun's command line (opts.c). The input is argv after
 * "worldrun", its words NUL-separated. A parse that succeeds must leave
 * values in their ranges and pointers into argv; every word also goes
 * through the count and seconds parsers alone. Usage errors and --help
 * go to stderr and stdout: run with -close_fd_mask=3 (run.sh does).
 */
#include <math.h>
#include <stdbool.h>

#include "fuzz.h"
#include "opts.h"

/* @p points into one of the @n words of @v (an option's value may be the
 * rest of its word: -xNAME). */
static bool
in_argv(char **v, int n, const char *p)
{
	for (int i = 0; i < n; i++) {
		if (p >= v[i] && p <= v[i] + strlen(v[i])) {
			return true;
		}
	}
	return false;
}

static void
check_numbers(const char *w)
{
	double s = -1;
	long n = 0;

	if (wr_opts_parse_count(w, &n) == 0) {
		FUZZ_CHECK(n >= 1 && n <= 1048576);
	}
	if (wr_opts_parse_seconds(w, &s) == 0) {
		FUZZ_CHECK(isfinite(s) && s >= 0 && s <= 366.0 * 86400);
	}
}

static void
check_opts(const struct wr_opts *o, char **argv, int argc)
{
	if (o->done) {
		return;
	}
	FUZZ_CHECK(o->argc >= 1 && o->argv + o->argc == argv + argc);
	FUZZ_CHECK(o->np >= 1 && o->np <= 1048576);
	/* Without -n the ranks are known only once a host list is read. */
	FUZZ_CHECK(o->stdin_mode != WR_STDIN_RANK ||
		   (o->stdin_rank >= 0 && (!o->np_given || o->stdin_rank < o->np)));
	FUZZ_CHECK(o->hosts_file == NULL || o->hosts_list == NULL);
	FUZZ_CHECK(o->ppn >= 0 && o->ppn <= 65536);
	FUZZ_CHECK(isfinite(o->kill_grace) && o->kill_grace >= 0);
	FUZZ_CHECK(isfinite(o->timeout) && o->timeout >= 0);
	FUZZ_CHECK(o->nxvars <= (size_t)argc);
	for (size_t i = 0; i < o->nxvars; i++) {
		bool made = false;

		for (size_t j = 0; j < o->nmade; j++) {
			made = made || o->xvars[i] == o->made[j];
		}
		FUZZ_CHECK(made || in_argv(argv, argc, o->xvars[i]));
		FUZZ_CHECK(o->xvars[i][0] != '\0' && o->xvars[i][0] != '=');
	}
	FUZZ_CHECK(o->wdir == NULL || in_argv(argv, argc, o->wdir));
	FUZZ_CHECK(o->output_dir == NULL || in_argv(argv, argc, o->output_dir));
	FUZZ_CHECK(o->report == NULL || in_argv(argv, argc, o->report));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t n = 0;
	char **words = fuzz_words(data, size, &n);
	char **argv;
	struct wr_opts o;

	if (words == NULL) {
		return 0;
	}
	argv = malloc((n + 2) * sizeof(*argv));
	FUZZ_CHECK(argv != NULL);
	argv[0] = "worldrun";
	memcpy(argv + 1, words, (n + 1) * sizeof(*argv));
	for (size_t i = 0; i < n; i++) {
		check_numbers(words[i]);
	}
	if (wr_opts_parse(&o, (int)n + 1, argv) == 0) {
		check_opts(&o, argv, (int)n + 1);
	}
	wr_opts_finish(&o);
	free(argv);
	free(words);
	return 0;
}
