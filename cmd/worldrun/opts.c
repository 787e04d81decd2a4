/* SPDX-License-Identifier: MIT */
#include "opts.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bind.h"
#include "spell.h"

#define WR_MAX_RANKS 1048576L

enum opt_id {
	OPT_NP = 'n',
	OPT_ENV = 'x',
	OPT_LABEL = 'l',
	OPT_VERBOSE = 'v',
	OPT_HELP = 'h',
	OPT_VERSION = 'V',
	OPT_HOST = 'H',
	OPT_WDIR = 256,
	OPT_OUTPUT_DIR,
	OPT_PTY,
	OPT_NO_PMI,
	OPT_PMI,
	OPT_STDIN,
	OPT_KILL_GRACE,
	OPT_KEEP_GOING,
	OPT_TIMEOUT,
	OPT_REPORT,
	OPT_DRY_RUN,
	OPT_TIMEOUT_STACKS,
	OPT_FORWARD_QUIT,
	OPT_HOSTS,
	OPT_MAP_BY,
	OPT_PPN,
	OPT_OVERSUBSCRIBE,
	OPT_DISPLAY_MAP,
	OPT_BIND_TO,
	OPT_CPUS_PER_RANK,
	OPT_REPORT_BINDINGS,
	OPT_ENV_NONE,
	OPT_RSH,
	OPT_CONNECT_TIMEOUT,
	OPT_HOST_TIMEOUT,
	OPT_LAUNCHER,
	OPT_MAX_RESTARTS,
};

struct opt_doc {
	const char *name;
	int id;
	const char *arg; /* NULL: a flag */
	const char *help;
};

/* The one table: getopt's options and --help both come from it. */
static const struct opt_doc opt_table[] = {
	{ "np", OPT_NP, "N", "start N ranks (default 1, or the hosts' slots)" },
	{ "hosts", OPT_HOSTS, "FILE",
	  "place the ranks on FILE's hosts (lines 'host slots=N' or 'host:N')" },
	{ "hostfile", OPT_HOSTS, "FILE", "same as --hosts" },
	{ "machinefile", OPT_HOSTS, "FILE", "same as --hosts" },
	{ "host", OPT_HOST, "LIST", "place the ranks on LIST's hosts (a:2,b,c)" },
	{ "map-by", OPT_MAP_BY, "slot|node|core|hwthread|ppr:N:node",
	  "fill each host's slots in turn (default), or one rank per host in turn" },
	{ "ppn", OPT_PPN, "N", "N ranks per host, whatever its slots" },
	{ "oversubscribe", OPT_OVERSUBSCRIBE, NULL,
	  "allow more ranks than the hosts have slots" },
	{ "display-map", OPT_DISPLAY_MAP, NULL,
	  "print which ranks go to which host, then start them" },
	{ "bind-to", OPT_BIND_TO, "none|hwthread|core|l3cache|numa|package",
	  "bind each rank to CPUs of that level (default none)" },
	{ "cpus-per-rank", OPT_CPUS_PER_RANK, "N",
	  "N cores per rank (binds to core unless --bind-to says otherwise)" },
	{ "report-bindings", OPT_REPORT_BINDINGS, NULL,
	  "say where each rank runs, a line per rank" },
	{ "launcher", OPT_LAUNCHER, "ssh|slurm|local",
	  "how agents start on other hosts (default: slurm in an allocation)" },
	{ "rsh", OPT_RSH, "CMD",
	  "start agents on other hosts with CMD HOST ... (default: ssh)" },
	{ "connect-timeout", OPT_CONNECT_TIMEOUT, "S",
	  "fail if a host's agent does not answer in S seconds (default 10)" },
	{ "host-timeout", OPT_HOST_TIMEOUT, "S",
	  "fail a host silent for S seconds, either way (default 10; 0: never)" },
	{ "env", OPT_ENV, "NAME[=VALUE]",
	  "set NAME in every rank, or forward it (repeatable)" },
	{ "env-none", OPT_ENV_NONE, NULL,
	  "pass the ranks none of worldrun's environment, only what -x names" },
	{ "wdir", OPT_WDIR, "DIR", "run the ranks in DIR" },
	{ "label", OPT_LABEL, NULL, "prefix every output line with 'RANK: '" },
	{ "tag-output", OPT_LABEL, NULL, "same as --label" },
	{ "output-dir", OPT_OUTPUT_DIR, "DIR",
	  "also write DIR/RANK/stdout and DIR/RANK/stderr" },
	{ "pty", OPT_PTY, NULL,
	  "give each rank's stdout a pseudo-terminal (line-buffered stdio)" },
	{ "pmi", OPT_PMI, "LIST",
	  "the PMI servers, of fd, port, pmix or none (default fd,pmix)" },
	{ "no-pmi", OPT_NO_PMI, NULL, "same as --pmi none" },
	{ "stdin", OPT_STDIN, "N|all|none",
	  "which ranks read worldrun's stdin (default 0)" },
	{ "kill-grace", OPT_KILL_GRACE, "S",
	  "seconds between SIGTERM and SIGKILL when stopping (default 3)" },
	{ "keep-going", OPT_KEEP_GOING, NULL,
	  "do not stop the job when a rank fails" },
	{ "max-restarts", OPT_MAX_RESTARTS, "N",
	  "start the whole job again when a rank fails, N times at most" },
	{ "timeout", OPT_TIMEOUT, "S", "stop the job after S seconds (exit 124)" },
	{ "timeout-stacks", OPT_TIMEOUT_STACKS, NULL,
	  "add stuck ranks' stacks to the --timeout hang report (eu-stack, gdb)" },
	{ "forward-quit", OPT_FORWARD_QUIT, NULL,
	  "pass SIGQUIT on to the ranks instead of printing the hang report" },
	{ "report", OPT_REPORT, "FILE", "write a JSON report of the job to FILE" },
	{ "dry-run", OPT_DRY_RUN, NULL, "print what would start, start nothing" },
	{ "verbose", OPT_VERBOSE, NULL, "narrate launch and shutdown, sum up the job (twice: each rank)" },
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
	printf("\nOne dash works too (-wdir DIR, -np N). Other launchers' "
	       "options (-genv NAME\nVALUE, --nproc-per-node N, -hostfile ...) "
	       "are taken as worldrun's, ignored\nwhen they mean nothing here, "
	       "or refused with what to use instead: see\nworldrun(1), OTHER "
	       "LAUNCHERS' OPTIONS.\n");
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

/*
 * --pmi: which PMI servers the ranks get, a list of fd or port (PMI-1,
 * one way) and pmix, or none. Default fd,pmix.
 */
static int
parse_pmi(struct wr_opts *o, const char *as, const char *arg)
{
	bool fd = false, port = false, pmix = false, none = false, bad = arg[0] == '\0';
	const char *at = arg;

	while (!bad && *at != '\0') {
		size_t n = strcspn(at, ",");

		fd |= n == 2 && strncmp(at, "fd", 2) == 0;
		port |= n == 4 && strncmp(at, "port", 4) == 0;
		pmix |= n == 4 && strncmp(at, "pmix", 4) == 0;
		none |= n == 4 && strncmp(at, "none", 4) == 0;
		bad = !(n == 2 && strncmp(at, "fd", 2) == 0) &&
		      !(n == 4 && (strncmp(at, "port", 4) == 0 || strncmp(at, "pmix", 4) == 0 ||
				   strncmp(at, "none", 4) == 0));
		at += n + (at[n] == ',' && at[n + 1] != '\0');
	}
	if (bad || (fd && port) || (none && (fd || port || pmix))) {
		usage_error("%s %s: expected fd or port, pmix, both (fd,pmix), or none", as, arg);
		return -1;
	}
	o->no_pmi = !fd && !port;
	o->pmi_port = port;
	o->no_pmix = !pmix;
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
seconds_arg(const char *as, const char *arg, double *out)
{
	if (wr_opts_parse_seconds(arg, out) < 0) {
		usage_error("%s %s: not a number of seconds", as, arg);
		return -1;
	}
	return 0;
}

/* Seconds that must be more than 0 (a timeout). */
static int
timeout_arg(const char *as, const char *arg, double *out)
{
	if (seconds_arg(as, arg, out) < 0) {
		return -1;
	}
	if (*out == 0) {
		usage_error("%s %s: must be more than 0", as, arg);
		return -1;
	}
	return 0;
}

/* Open MPI's modifiers of --map-by after its kind: PE=N (CPUs per rank)
 * and oversubscribe; 0, or -1 after saying which is not. */
static int
map_modifiers(struct wr_opts *o, char *mods, const char *arg, const char *as)
{
	char *save = NULL;

	for (char *m = strtok_r(mods, ":", &save); m != NULL; m = strtok_r(NULL, ":", &save)) {
		if (strncasecmp(m, "PE=", 3) == 0 && wr_opts_parse_count(m + 3, &o->cpus_per_rank) == 0 &&
		    o->cpus_per_rank <= WR_BIND_CPUS_MAX) {
			continue;
		}
		if (strcasecmp(m, "oversubscribe") == 0) {
			o->oversubscribe = true;
			continue;
		}
		usage_error("%s %s: %s: expected PE=N or OVERSUBSCRIBE after the kind", as, arg, m);
		return -1;
	}
	return 0;
}

/*
 * --map-by KIND[:MODIFIER...], as Open MPI's: slot and node place ranks on
 * the hosts; core and hwthread fill each host's slots and bind the ranks
 * to them (unless --bind-to says otherwise); ppr:N:node is --ppn N. What
 * would spread ranks over a host's sockets or caches is refused, naming
 * --ppn and --bind-to.
 */
/* Cut @s at its first ':'; what follows it ("" when none). */
static char *
cut_colon(char *s)
{
	char *c = strchr(s, ':');

	if (c == NULL) {
		return s + strlen(s);
	}
	*c = '\0';
	return c + 1;
}

static int
map_by(struct wr_opts *o, const char *arg, const char *as)
{
	char kind[64], *rest, *res;
	long n;

	if (strlen(arg) >= sizeof(kind)) {
		goto refuse;
	}
	memcpy(kind, arg, strlen(arg) + 1);
	rest = cut_colon(kind);
	if (strcmp(kind, "ppr") == 0) {
		res = cut_colon(rest);
		if (wr_opts_parse_count(rest, &n) < 0 || n > 65536) {
			goto refuse;
		}
		rest = cut_colon(res);
		if (strcmp(res, "node") != 0) {
			goto refuse;
		}
		o->ppn = n;
		return map_modifiers(o, rest, arg, as);
	}
	if (strcmp(kind, "slot") == 0 || strcmp(kind, "node") == 0 || strcmp(kind, "core") == 0 ||
	    strcmp(kind, "hwthread") == 0) {
		o->map_by_node = strcmp(kind, "node") == 0;
		o->map_bind = strcmp(kind, "core") == 0 ? WR_BIND_CORE
			      : strcmp(kind, "hwthread") == 0 ? WR_BIND_HWTHREAD : WR_BIND_NONE;
		return map_modifiers(o, rest, arg, as);
	}
refuse:
	usage_error("%s %s: expected slot, node, core, hwthread or ppr:N:node; worldrun "
		    "places ranks on hosts (give them with --ppn N) and binds them with "
		    "--bind-to package|numa|l3cache", as, arg);
	return -1;
}

/* Option @id with its value @arg; @as is the option as typed, for errors. */
static int
apply(struct wr_opts *o, int id, char *arg, const char *as)
{
	switch (id) {
	case OPT_NP:
		if (wr_opts_parse_count(arg, &o->np) < 0) {
			usage_error("%s %s: not a rank count (1 to %ld)", as, arg,
				    WR_MAX_RANKS);
			return -1;
		}
		o->np_given = true;
		return 0;
	case OPT_HOSTS:
	case OPT_HOST:
		if ((id == OPT_HOSTS ? o->hosts_list : o->hosts_file) != NULL) {
			usage_error("%s: give the hosts either with --hosts FILE or with -H LIST", as);
			return -1;
		}
		*(id == OPT_HOSTS ? &o->hosts_file : &o->hosts_list) = arg;
		return 0;
	case OPT_MAP_BY:
		return map_by(o, arg, as);
	case OPT_PPN:
		if (wr_opts_parse_count(arg, &o->ppn) < 0 || o->ppn > 65536) {
			usage_error("%s %s: not a rank count per host (1 to 65536)", as, arg);
			return -1;
		}
		return 0;
	case OPT_OVERSUBSCRIBE:
		o->oversubscribe = true;
		return 0;
	case OPT_DISPLAY_MAP:
		o->display_map = true;
		return 0;
	case OPT_BIND_TO: {
		enum wr_bind_level level;

		if (wr_bind_parse(arg, &level) < 0) {
			usage_error("%s %s: expected none, hwthread, core, l3cache, numa or "
				    "package", as, arg);
			return -1;
		}
		o->bind = level;
		o->bind_given = true;
		return 0;
	}
	case OPT_CPUS_PER_RANK:
		if (wr_opts_parse_count(arg, &o->cpus_per_rank) < 0 ||
		    o->cpus_per_rank > WR_BIND_CPUS_MAX) {
			usage_error("%s %s: not a CPU count (1 to %d)", as, arg, WR_BIND_CPUS_MAX);
			return -1;
		}
		return 0;
	case OPT_REPORT_BINDINGS:
		o->report_bindings = true;
		return 0;
	case OPT_RSH:
		if (arg[strspn(arg, " \t")] == '\0') {
			usage_error("%s: expected a command", as);
			return -1;
		}
		o->rsh = arg;
		return 0;
	case OPT_CONNECT_TIMEOUT:
		return timeout_arg(as, arg, &o->connect_timeout);
	case OPT_HOST_TIMEOUT:
		if (seconds_arg(as, arg, &o->host_timeout) < 0) {
			return -1;
		}
		/* Beats go every quarter of it: shorter, and a busy host
		 * would look silent. */
		if (o->host_timeout > 0 && o->host_timeout < 1) {
			usage_error("%s %s: must be at least 1, or 0 for never", as, arg);
			return -1;
		}
		return 0;
	case OPT_LAUNCHER:
		/* Hydra's names too: rsh starts agents as ssh does, fork is local. */
		if (strcmp(arg, "ssh") == 0 || strcmp(arg, "rsh") == 0) {
			o->launcher = WR_LAUNCH_SSH;
		} else if (strcmp(arg, "slurm") == 0) {
			o->launcher = WR_LAUNCH_SLURM;
		} else if (strcmp(arg, "local") == 0 || strcmp(arg, "fork") == 0) {
			o->launcher = WR_LAUNCH_LOCAL;
		} else {
			usage_error("%s %s: expected ssh, slurm or local", as, arg);
			return -1;
		}
		return 0;
	case OPT_ENV:
		if (arg[0] == '\0' || arg[0] == '=') {
			usage_error("%s '%s': expected NAME or NAME=VALUE", as, arg);
			return -1;
		}
		return add_xvar(o, arg) < 0 ? -1 : 0;
	case OPT_ENV_NONE:
		o->env_none = true;
		return 0;
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
	case OPT_NO_PMI:
		o->no_pmi = true;
		o->no_pmix = true;
		return 0;
	case OPT_PMI:
		return parse_pmi(o, as, arg);
	case OPT_STDIN:
		if (parse_stdin(o, arg) < 0) {
			usage_error("%s %s: expected a rank, 'all' or 'none'", as,
				    arg);
			return -1;
		}
		return 0;
	case OPT_KILL_GRACE:
		return seconds_arg(as, arg, &o->kill_grace);
	case OPT_KEEP_GOING:
		o->keep_going = true;
		return 0;
	case OPT_TIMEOUT:
		return timeout_arg(as, arg, &o->timeout);
	case OPT_MAX_RESTARTS:
		if (strcmp(arg, "0") != 0 && (wr_opts_parse_count(arg, &o->max_restarts) < 0 ||
					      o->max_restarts > 1000)) {
			usage_error("%s %s: not a number of restarts (0 to 1000)", as, arg);
			return -1;
		}
		return 0;
	case OPT_REPORT:
		o->report = arg;
		return 0;
	case OPT_DRY_RUN:
		o->dry_run = true;
		return 0;
	case OPT_TIMEOUT_STACKS:
		o->timeout_stacks = true;
		return 0;
	case OPT_FORWARD_QUIT:
		o->forward_quit = true;
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
	if (o->stdin_mode == WR_STDIN_RANK && o->np_given && o->stdin_rank >= o->np) {
		fprintf(stderr, "worldrun: --stdin %ld: there are only %ld ranks "
				"(see worldrun --help)\n",
			o->stdin_rank, o->np);
		return -1;
	}
	/* CPUs for each rank mean binding, as Open MPI's PE=N and srun's -c
	 * with task/affinity: to cores, unless said otherwise. */
	if (!o->bind_given && o->map_bind != WR_BIND_NONE) {
		o->bind = o->map_bind;
	} else if (o->cpus_per_rank > 1 && !o->bind_given) {
		o->bind = WR_BIND_CORE;
	}
	return 0;
}

/* The long option of worldrun named by the @len bytes at @name, or NULL. */
static const struct opt_doc *
find_doc(const char *name, size_t len)
{
	for (size_t i = 0; i < NOPTS; i++) {
		if (strlen(opt_table[i].name) == len &&
		    strncmp(opt_table[i].name, name, len) == 0) {
			return &opt_table[i];
		}
	}
	return NULL;
}

/* The long option nearest to a mistyped @name, if one is near enough. */
static const char *
nearest(const char *name, size_t len)
{
	const char *best = NULL;
	int bestd = len >= 6 ? 3 : 2;

	for (size_t i = 0; i < NOPTS && len >= 3; i++) {
		int d = wr_spell_distance(name, len, opt_table[i].name);

		if (d < bestd) {
			best = opt_table[i].name;
			bestd = d;
		}
	}
	return best;
}

/* An option getopt did not know, in the word @tok. */
static void
say_unknown(const char *tok)
{
	size_t dashes = tok[1] == '-' ? 2 : 1;
	int len = (int)strcspn(tok, "=");
	const char *near = nearest(tok + dashes, (size_t)len - dashes);

	if (dashes == 2 && tok[len] == '=' && optopt != 0) {
		usage_error("option %.*s takes no value", len, tok);
	} else if (near != NULL) {
		fprintf(stderr, "worldrun: unknown option %.*s; did you mean --%s?\n",
			len, tok, near);
	} else if (dashes == 1 && optopt != 0) {
		usage_error("unknown option -%c", optopt);
	} else {
		usage_error("unknown option %.*s", len, tok);
	}
}

/* -genv NAME VALUE: -x NAME=VALUE, in a string that @o owns. */
static int
env_pair(struct wr_opts *o, char *const *val, const char *as)
{
	char **made;
	char *x = NULL;

	if (val[0][0] == '\0' || strchr(val[0], '=') != NULL) {
		usage_error("%s '%s' '%s': expected NAME VALUE", as, val[0], val[1]);
		return -1;
	}
	made = realloc(o->made, (o->nmade + 1) * sizeof(*made));
	if (made == NULL || asprintf(&x, "%s=%s", val[0], val[1]) < 0) {
		o->made = made != NULL ? made : o->made;
		return -1;
	}
	o->made = made;
	o->made[o->nmade++] = x;
	return add_xvar(o, x) < 0 ? -1 : 0;
}

/* Another launcher's spelling with its values @val: apply it or refuse it. */
static int
apply_spell(struct wr_opts *o, const struct wr_spell *sp, char **val,
	    const char *as)
{
	const struct opt_doc *d = NULL;

	/* srun's -N counts nodes: inside an allocation, say which it is. */
	if (strcmp(sp->name, "-N") == 0 && getenv("SLURM_JOB_ID") != NULL) {
		fprintf(stderr, "worldrun: -N %s: ranks per host, as Open MPI's mpirun reads "
				"it (srun's -N counts nodes: worldrun runs on the allocation's); "
				"--ppn %s says it plainly\n", val[0], val[0]);
	}
	if (sp->means != NULL) {
		d = find_doc(sp->means, strlen(sp->means));
	}
	if (d != NULL && sp->nargs == 2) {
		return env_pair(o, val, as);
	}
	if (sp->torch != WR_TORCH_NONE) {
		if (wr_torchrun_apply(&o->torch, sp->torch, val[0], as) < 0) {
			return -1;
		}
		/* Ranks per node; with hosts, map.c multiplies it out. */
		o->np = sp->torch == WR_TORCH_NPROC ? o->torch.nproc : o->np;
		o->np_given |= sp->torch == WR_TORCH_NPROC;
		return 0;
	}
	if (d != NULL) {
		return apply(o, d->id, val[0], as);
	}
	if (sp->say == NULL || wr_spell_ok(sp, val[0])) {
		return 0;
	}
	if (sp->ok != NULL) {
		fprintf(stderr, "worldrun: %s %s: %s\n", as, val[0], sp->say);
	} else {
		fprintf(stderr, "worldrun: %s: %s\n", as, sp->say);
	}
	return -1;
}

/*
 * The word at optind, if getopt would misread it: another launcher's
 * spelling (getopt reads -hostfile as -h) or one of worldrun's long
 * options with one dash (-wdir), as mpirun users type them. Consumes it
 * and its values; 1 if it was one, 0 if getopt should read it, -1 after
 * a usage error.
 */
static int
take_spelling(struct wr_opts *o, int argc, char **argv)
{
	char *w = argv[optind], *val[2] = { NULL, NULL }, as[64];
	size_t len = strcspn(w, "=");
	const struct wr_spell *sp = NULL;
	const struct opt_doc *d = NULL;
	int nargs, i = 0;

	if (w[0] != '-' || w[1] == '\0' || strcmp(w, "--") == 0) {
		return 0;
	}
	sp = wr_spell_find(w, len);
	if (sp == NULL && w[1] != '-' && len > 2) {
		d = find_doc(w + 1, len - 1);
	}
	if (sp == NULL && d == NULL) {
		return 0;
	}
	snprintf(as, sizeof(as), "%.*s", (int)len, w);
	nargs = sp != NULL ? sp->nargs : d->arg != NULL;
	optind++;
	if (w[len] == '=' && nargs == 0 && (sp == NULL || sp->say == NULL)) {
		usage_error("option %s takes no value", as);
		return -1;
	}
	if (w[len] == '=' && nargs > 0) {
		val[i++] = w + len + 1;
	}
	for (; i < nargs; i++) {
		if (optind >= argc) {
			usage_error("option %s needs %s", as,
				    nargs == 2 ? "a name and a value" : "a value");
			return -1;
		}
		val[i] = argv[optind++];
	}
	if (sp != NULL) {
		return apply_spell(o, sp, val, as) < 0 ? -1 : 1;
	}
	return apply(o, d->id, val[0], as) < 0 ? -1 : 1;
}

/* One option from getopt; @li is its index in @lo, or -1 if short. */
static int
take_getopt(struct wr_opts *o, const struct option *lo, int c, int li)
{
	char as[64];

	if (li >= 0) {
		snprintf(as, sizeof(as), "--%s", lo[li].name);
	} else {
		snprintf(as, sizeof(as), "-%c", c);
	}
	return apply(o, c, optarg, as);
}

int
wr_opts_parse(struct wr_opts *o, int argc, char **argv)
{
	struct option lo[NOPTS + 1];
	char so[2 * NOPTS + 3];
	bool boundary = true; /* getopt is not inside a word like -lx */
	int c;

	*o = (struct wr_opts){ .np = 1, .kill_grace = 3.0, .connect_timeout = 10.0,
			       .host_timeout = 10.0, .cpus_per_rank = 1 };
	build_getopt(lo, so);
	opterr = 0;
	/*
	 * optind 0 makes glibc forget any earlier parse; a first call on
	 * argv[0] alone does that, so that we may then step optind over the
	 * words we read ourselves.
	 */
	optind = 0;
	getopt_long(1, argv, so, lo, NULL);
	for (;;) {
		int at = optind, li = -1, rc = 0;

		if (boundary && optind < argc) {
			rc = take_spelling(o, argc, argv);
		}
		if (rc != 0) {
			if (rc < 0 || o->done) {
				return rc < 0 ? -1 : 0;
			}
			continue;
		}
		c = getopt_long(argc, argv, so, lo, &li);
		boundary = optind != at;
		if (c == -1) {
			break;
		}
		if (c == '?') {
			say_unknown(argv[at]);
			return -1;
		}
		if (c == ':') {
			usage_error("option %s needs a value", argv[optind - 1]);
			return -1;
		}
		if (take_getopt(o, lo, c, li) < 0) {
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
	for (size_t i = 0; i < o->nmade; i++) {
		free(o->made[i]);
	}
	free(o->made);
	o->made = NULL;
	o->nmade = 0;
	wr_torchrun_finish(&o->torch);
}
