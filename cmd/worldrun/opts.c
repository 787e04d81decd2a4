/* SPDX-License-Identifier: MIT */
#include "opts.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WR_MAX_RANKS 1048576L

enum opt_id {
	OPT_NP = 'n',
	OPT_ENV = 'x',
	OPT_LABEL = 'l',
	OPT_VERBOSE = 'v',
	OPT_HELP = 'h',
	OPT_VERSION = 'V',
	OPT_WDIR = 256,
	OPT_OUTPUT_DIR,
	OPT_PTY,
	OPT_STDIN,
	OPT_KILL_GRACE,
	OPT_KEEP_GOING,
	OPT_TIMEOUT,
	OPT_REPORT,
	OPT_DRY_RUN,
};

struct opt_doc {
	const char *name;
	int id;
	const char *arg; /* NULL: a flag */
	const char *help;
};

/* The one table: getopt's options and --help both come from it. */
static const struct opt_doc opt_table[] = {
	{ "np", OPT_NP, "N", "start N ranks (default 1)" },
	{ "env", OPT_ENV, "NAME[=VALUE]",
	  "set NAME in every rank, or forward it (repeatable)" },
	{ "wdir", OPT_WDIR, "DIR", "run the ranks in DIR" },
	{ "label", OPT_LABEL, NULL, "prefix every output line with 'RANK: '" },
	{ "tag-output", OPT_LABEL, NULL, "same as --label" },
	{ "output-dir", OPT_OUTPUT_DIR, "DIR",
	  "also write DIR/RANK/stdout and DIR/RANK/stderr" },
	{ "pty", OPT_PTY, NULL,
	  "give each rank's stdout a pseudo-terminal (line-buffered stdio)" },
	{ "stdin", OPT_STDIN, "N|all|none",
	  "which ranks read worldrun's stdin (default 0)" },
	{ "kill-grace", OPT_KILL_GRACE, "S",
	  "seconds between SIGTERM and SIGKILL when stopping (default 3)" },
	{ "keep-going", OPT_KEEP_GOING, NULL,
	  "do not stop the job when a rank fails" },
	{ "timeout", OPT_TIMEOUT, "S", "stop the job after S seconds (exit 124)" },
	{ "report", OPT_REPORT, "FILE", "write a JSON report of the job to FILE" },
	{ "dry-run", OPT_DRY_RUN, NULL, "print what would start, start nothing" },
	{ "verbose", OPT_VERBOSE, NULL, "narrate launch and shutdown" },
	{ "help", OPT_HELP, NULL, "print this help and exit" },
	{ "version", OPT_VERSION, NULL, "print the version and exit" },
};

#define NOPTS (sizeof(opt_table) / sizeof(opt_table[0]))

static void usage_error(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

static void
usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("worldrun: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (see worldrun --help)\n", stderr);
}

static void
print_help(void)
{
	char left[64];

	printf("usage: worldrun [options] [--] PROGRAM [ARGS...]\n\n"
	       "Start PROGRAM as a job of N cooperating ranks on this machine.\n\n"
	       "options:\n");
	for (size_t i = 0; i < NOPTS; i++) {
		const struct opt_doc *d = &opt_table[i];
		int n = 0;

		if (d->id < 256) {
			n = snprintf(left, sizeof(left), "-%c, ", d->id);
		}
		snprintf(left + n, sizeof(left) - (size_t)n, "--%s%s%s", d->name,
			 d->arg ? " " : "", d->arg ? d->arg : "");
		printf("  %-26s %s\n", left, d->help);
	}
	printf("\nExit status: 0 if every rank exited 0; else the first failed "
	       "rank's status\n(128+S if killed by signal S); 124 timeout; "
	       "125 worldrun failed;\n126 cannot execute; 127 not found. "
	       "See worldrun(1).\n");
}

int
wr_opts_parse_count(const char *s, long *out)
{
	char *end = NULL;
	long v;

	if (s[0] < '0' || s[0] > '9') {
		return -EINVAL;
	}
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < 1 || v > WR_MAX_RANKS) {
		return -EINVAL;
	}
	*out = v;
	return 0;
}

int
wr_opts_parse_seconds(const char *s, double *out)
{
	char *end = NULL;
	double v;

	/* strtod also takes hex, "inf" and "nan": allow digits and a dot. */
	if (s[0] == '\0' || strspn(s, "0123456789.") != strlen(s)) {
		return -EINVAL;
	}
	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || *end != '\0' || !isfinite(v) || v < 0 ||
	    v > 366.0 * 86400) {
		return -EINVAL;
	}
	*out = v;
	return 0;
}

static int
parse_stdin(struct wr_opts *o, const char *arg)
{
	if (strcmp(arg, "all") == 0) {
		o->stdin_mode = WR_STDIN_ALL;
		return 0;
	}
	if (strcmp(arg, "none") == 0) {
		o->stdin_mode = WR_STDIN_NONE;
		return 0;
	}
	o->stdin_mode = WR_STDIN_RANK;
	if (strcmp(arg, "0") == 0) {
		o->stdin_rank = 0;
		return 0;
	}
	return wr_opts_parse_count(arg, &o->stdin_rank);
}

static int
add_xvar(struct wr_opts *o, char *arg)
{
	char **v = realloc(o->xvars, (o->nxvars + 1) * sizeof(*v));

	if (v == NULL) {
		return -ENOMEM;
	}
	o->xvars = v;
	o->xvars[o->nxvars++] = arg;
	return 0;
}

static int
seconds_arg(const char *name, const char *arg, double *out)
{
	if (wr_opts_parse_seconds(arg, out) < 0) {
		usage_error("--%s %s: not a number of seconds", name, arg);
		return -1;
	}
	return 0;
}

static int
apply(struct wr_opts *o, int id, char *arg)
{
	switch (id) {
	case OPT_NP:
		if (wr_opts_parse_count(arg, &o->np) < 0) {
			usage_error("-n %s: not a rank count (1 to %ld)", arg,
				    WR_MAX_RANKS);
			return -1;
		}
		return 0;
	case OPT_ENV:
		if (arg[0] == '\0' || arg[0] == '=') {
			usage_error("-x '%s': expected NAME or NAME=VALUE", arg);
			return -1;
		}
		return add_xvar(o, arg) < 0 ? -1 : 0;
	case OPT_WDIR:
		o->wdir = arg;
		return 0;
	case OPT_LABEL:
		o->label = true;
		return 0;
	case OPT_OUTPUT_DIR:
		o->output_dir = arg;
		return 0;
	case OPT_PTY:
		o->pty = true;
		return 0;
	case OPT_STDIN:
		if (parse_stdin(o, arg) < 0) {
			usage_error("--stdin %s: expected a rank, 'all' or 'none'",
				    arg);
			return -1;
		}
		return 0;
	case OPT_KILL_GRACE:
		return seconds_arg("kill-grace", arg, &o->kill_grace);
	case OPT_KEEP_GOING:
		o->keep_going = true;
		return 0;
	case OPT_TIMEOUT:
		if (seconds_arg("timeout", arg, &o->timeout) < 0) {
			return -1;
		}
		if (o->timeout == 0) {
			usage_error("--timeout %s: must be more than 0", arg);
			return -1;
		}
		return 0;
	case OPT_REPORT:
		o->report = arg;
		return 0;
	case OPT_DRY_RUN:
		o->dry_run = true;
		return 0;
	case OPT_VERBOSE:
		o->verbose++;
		return 0;
	case OPT_HELP:
		print_help();
		o->done = true;
		return 0;
	case OPT_VERSION:
		printf("worldrun %s\n", WR_VERSION);
		o->done = true;
		return 0;
	}
	return -1;
}

static void
build_getopt(struct option *lo, char *so)
{
	char *end = so;

	*end++ = '+'; /* stop at the program: its options are its own */
	*end++ = ':'; /* report a missing argument as ':' */
	*end = '\0';
	for (size_t i = 0; i < NOPTS; i++) {
		const struct opt_doc *d = &opt_table[i];
		int has_arg = d->arg != NULL ? required_argument : no_argument;

		lo[i] = (struct option){ d->name, has_arg, NULL, d->id };
		if (d->id < 256 && strchr(so, d->id) == NULL) {
			*end++ = (char)d->id;
			if (d->arg != NULL) {
				*end++ = ':';
			}
			*end = '\0';
		}
	}
	lo[NOPTS] = (struct option){ 0, 0, 0, 0 };
}

static int
check_combination(struct wr_opts *o)
{
	if (o->done) {
		return 0;
	}
	if (o->argc == 0) {
		usage_error("no program to run");
		return -1;
	}
	if (o->stdin_mode == WR_STDIN_RANK && o->stdin_rank >= o->np) {
		fprintf(stderr, "worldrun: --stdin %ld: there are only %ld ranks "
				"(see worldrun --help)\n",
			o->stdin_rank, o->np);
		return -1;
	}
	return 0;
}

static void
say_unknown(char **argv)
{
	const char *tok = argv[optind - 1];
	int len = (int)strcspn(tok, "=");

	if (strncmp(tok, "--", 2) != 0) {
		usage_error("unknown option -%c", optopt);
	} else if (tok[len] == '=' && optopt != 0) {
		usage_error("option %.*s takes no value", len, tok);
	} else {
		usage_error("unknown option %.*s", len, tok);
	}
}

/*
 * mpirun and mpiexec users type "-np 4", which getopt reads as "-n p":
 * take the next argument as the count instead. NULL if there is none.
 */
static char *
np_value(int argc, char **argv, int c, char *arg)
{
	if (c != OPT_NP || strcmp(argv[optind - 1], "-np") != 0) {
		return arg;
	}
	return optind < argc ? argv[optind++] : NULL;
}

int
wr_opts_parse(struct wr_opts *o, int argc, char **argv)
{
	struct option lo[NOPTS + 1];
	char so[2 * NOPTS + 3];
	int c;

	*o = (struct wr_opts){ .np = 1, .kill_grace = 3.0 };
	build_getopt(lo, so);
	opterr = 0;
	optind = 0; /* 0, not 1: glibc then forgets any earlier parse */
	for (;;) {
		c = getopt_long(argc, argv, so, lo, NULL);
		if (c == -1) {
			break;
		}
		if (c == '?') {
			say_unknown(argv);
			return -1;
		}
		if (c == ':') {
			usage_error("option %s needs a value", argv[optind - 1]);
			return -1;
		}
		optarg = np_value(argc, argv, c, optarg);
		if (c == OPT_NP && optarg == NULL) {
			usage_error("option -np needs a value");
			return -1;
		}
		if (apply(o, c, optarg) < 0) {
			return -1;
		}
		if (o->done) {
			return 0;
		}
	}
	o->argv = argv + optind;
	o->argc = argc - optind;
	return check_combination(o);
}

void
wr_opts_finish(struct wr_opts *o)
{
	if (o == NULL) {
		return;
	}
	free(o->xvars);
	o->xvars = NULL;
	o->nxvars = 0;
}
