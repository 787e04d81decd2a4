/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for opts: the number parsers for rank counts and seconds, and
 * wr_opts_parse on whole command lines (mpirun spellings, -x, --stdin, the
 * program boundary, and every kind of usage error).
 */
#include "opts.h"
#include "tap.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAXARGS 24
#define MAXLEN 64

/*
 * What one wr_opts_parse returned, carried out of the child that ran it.
 * getopt keeps hidden state from one parse to the next (glibc resets it
 * only for optind = 0, and picks its mode on the first call), while
 * worldrun parses once per process: so every parse runs in a fresh fork.
 */
struct wire {
	int rc;
	struct wr_opts o; /* scalars only: its pointers are the child's */
	bool has[3];      /* wdir, output_dir, report */
	char str[3][MAXLEN];
	char xvars[MAXARGS][MAXLEN];
	char argv[MAXARGS][MAXLEN];
	char msg[512];    /* what it printed on stderr */
};

/* A parse result whose pointers lead into its own storage. */
struct cmdline {
	int rc;
	struct wr_opts o;
	const char *msg;
	struct wire w;
	char *xv[MAXARGS];
	char *av[MAXARGS + 1];
};

static void
copy_str(char *dst, const char *src)
{
	snprintf(dst, MAXLEN, "%s", src != NULL ? src : "");
}

/* In the child: parse "worldrun" + @args and describe the result in @w. */
static void
parse_here(const char *const *args, struct wire *w)
{
	char *argv[MAXARGS + 2] = { (char *)"worldrun" };
	const char *strs[3];
	struct wr_opts o;
	int argc = 1, err[2], null;
	ssize_t n;

	for (size_t i = 0; args[i] != NULL && argc <= MAXARGS; i++) {
		argv[argc++] = strdup(args[i]); /* writable, as main()'s are */
	}
	null = open("/dev/null", O_WRONLY);
	dup2(null, 1); /* --help and --version must not reach the TAP stream */
	if (pipe2(err, O_NONBLOCK) < 0 || dup2(err[1], 2) < 0) {
		_exit(3);
	}
	w->rc = wr_opts_parse(&o, argc, argv);
	n = read(err[0], w->msg, sizeof(w->msg) - 1);
	w->msg[n > 0 ? n : 0] = '\0';
	w->o = o;
	strs[0] = o.wdir;
	strs[1] = o.output_dir;
	strs[2] = o.report;
	for (int i = 0; i < 3; i++) {
		w->has[i] = strs[i] != NULL;
		copy_str(w->str[i], strs[i]);
	}
	for (size_t i = 0; i < o.nxvars && i < MAXARGS; i++) {
		copy_str(w->xvars[i], o.xvars[i]);
	}
	for (int i = 0; w->rc == 0 && i < o.argc && i < MAXARGS; i++) {
		copy_str(w->argv[i], o.argv[i]);
	}
}

/* Parse "worldrun" followed by @args (NULL-terminated) in a fresh fork. */
static void
parse(struct cmdline *c, const char *const *args)
{
	size_t got = 0;
	int p[2];
	pid_t pid;

	*c = (struct cmdline){ .rc = -99 };
	if (pipe(p) < 0 || (pid = fork()) < 0) {
		printf("# pipe or fork: %s\n", strerror(errno));
		return;
	}
	if (pid == 0) {
		static struct wire w;

		close(p[0]);
		parse_here(args, &w);
		_exit(write(p[1], &w, sizeof(w)) == sizeof(w) ? 0 : 3);
	}
	close(p[1]);
	while (got < sizeof(c->w)) {
		ssize_t n = read(p[0], (char *)&c->w + got, sizeof(c->w) - got);

		if (n <= 0) {
			break;
		}
		got += (size_t)n;
	}
	close(p[0]);
	waitpid(pid, NULL, 0);
	if (got != sizeof(c->w)) {
		printf("# the parsing child died\n");
		return;
	}
	c->rc = c->w.rc;
	c->msg = c->w.msg;
	c->o = c->w.o;
	c->o.wdir = c->w.has[0] ? c->w.str[0] : NULL;
	c->o.output_dir = c->w.has[1] ? c->w.str[1] : NULL;
	c->o.report = c->w.has[2] ? c->w.str[2] : NULL;
	for (int i = 0; i < MAXARGS; i++) {
		c->xv[i] = c->w.xvars[i];
		c->av[i] = c->w.argv[i];
	}
	c->o.xvars = c->o.nxvars > 0 ? c->xv : NULL;
	c->o.argv = c->av;
	c->av[c->o.argc >= 0 && c->o.argc < MAXARGS ? c->o.argc : MAXARGS] = NULL;
}

#define ARGS(...) ((const char *const[]){ __VA_ARGS__, NULL })

/* True if the command line is refused, as main() would with exit 125. */
static bool
refused(const char *const *args)
{
	struct cmdline c;
	bool bad;

	parse(&c, args);
	bad = c.rc == -1;
	return bad;
}

static void
test_count(void)
{
	static const char *const bad[] = {
		"0", "-1", "abc", "1e3", "0x10", "inf", "nan", " 5", "5 ",
		"1.5", ".5", "", "+5", "1048577", "99999999999999999999999",
	};
	long v = 0;

	ok(wr_opts_parse_count("4", &v) == 0 && v == 4, "count: accepts 4");
	ok(wr_opts_parse_count("1", &v) == 0 && v == 1,
	   "count: accepts 1, the smallest");
	ok(wr_opts_parse_count("1048576", &v) == 0 && v == 1048576,
	   "count: accepts 1048576, the largest");
	ok(wr_opts_parse_count("007", &v) == 0 && v == 7,
	   "count: reads leading zeros as decimal, not octal");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ok(wr_opts_parse_count(bad[i], &v) == -EINVAL,
		   "count: rejects \"%s\"", bad[i]);
	}
}

static void
test_seconds(void)
{
	static const char *const bad[] = {
		"-1", "abc", "1e3", "0x10", "inf", "nan", " 5", "5 ", "", ".",
		"1.2.3", "+1", "31622401", "1" "000000000000000000000000000000"
		"00000000000000000000000000000000000000000000000000000000000000"
		"00000000000000000000000000000000000000000000000000000000000000"
		"00000000000000000000000000000000000000000000000000000000000000"
		"00000000000000000000000000000000000000000000000000000000000000"
		"00000000000000000000000000000000000000000000000000000000000000",
	};
	double v = -1;

	ok(wr_opts_parse_seconds("0", &v) == 0 && v == 0.0,
	   "seconds: accepts 0");
	ok(wr_opts_parse_seconds("1.5", &v) == 0 && v == 1.5,
	   "seconds: accepts 1.5");
	ok(wr_opts_parse_seconds(".5", &v) == 0 && v == 0.5,
	   "seconds: accepts .5");
	ok(wr_opts_parse_seconds("3", &v) == 0 && v == 3.0,
	   "seconds: accepts 3");
	ok(wr_opts_parse_seconds("31622400", &v) == 0 && v == 31622400.0,
	   "seconds: accepts 366 days, the largest");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ok(wr_opts_parse_seconds(bad[i], &v) == -EINVAL,
		   "seconds: rejects \"%.12s%s\"", bad[i],
		   strlen(bad[i]) > 12 ? "..." : "");
	}
}

static void
test_defaults(void)
{
	struct cmdline c;

	parse(&c, ARGS("prog"));
	ok(c.rc == 0 && c.o.np == 1 && c.o.kill_grace == 3.0 &&
		   c.o.timeout == 0 && c.o.stdin_mode == WR_STDIN_RANK &&
		   c.o.stdin_rank == 0 && c.o.nxvars == 0 && !c.o.label &&
		   !c.o.pty && !c.o.keep_going && !c.o.dry_run &&
		   c.o.verbose == 0 && c.o.wdir == NULL && c.o.report == NULL &&
		   c.o.output_dir == NULL && !c.o.done,
	   "parse: defaults are 1 rank, grace 3 s, no timeout, stdin to rank 0");
	ok(c.rc == 0 && c.o.argc == 1 && strcmp(c.o.argv[0], "prog") == 0 &&
		   c.o.argv[1] == NULL,
	   "parse: the program is the first non-option");
}

static void
test_np(void)
{
	const char *const *const spellings[] = {
		ARGS("-n", "4", "prog"), ARGS("-n4", "prog"),
		ARGS("--np", "4", "prog"), ARGS("--np=4", "prog"),
		ARGS("-np", "4", "prog"), ARGS("-l", "-np", "4", "prog"),
	};
	static const char *const names[] = {
		"-n 4", "-n4", "--np 4", "--np=4", "-np 4 (mpirun)",
		"-l -np 4 (mpirun, after a flag)",
	};
	struct cmdline c;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		parse(&c, spellings[i]);
		ok(c.rc == 0 && c.o.np == 4 && c.o.argc == 1,
		   "parse: %s starts 4 ranks", names[i]);
	}
	parse(&c, ARGS("-x", "A=1", "-np", "4", "prog"));
	ok(c.rc == 0 && c.o.np == 4 && c.o.argc == 1,
	   "parse: -np 4 after an option with a value (-x A=1) starts 4 ranks");
	parse(&c, ARGS("--wdir", "/tmp", "-np", "2", "prog"));
	ok(c.rc == 0 && c.o.np == 2 && c.o.argc == 1,
	   "parse: -np 2 after --wdir /tmp starts 2 ranks");
	ok(refused(ARGS("-n", "0", "prog")), "parse: refuses -n 0");
	ok(refused(ARGS("-n", "abc", "prog")), "parse: refuses -n abc");
}

static void
test_xvars(void)
{
	struct cmdline c;

	parse(&c, ARGS("-x", "A=1", "--env", "B", "-x", "C=", "--env=D=x=y",
		       "prog"));
	ok(c.rc == 0 && c.o.nxvars == 4 && strcmp(c.o.xvars[0], "A=1") == 0 &&
		   strcmp(c.o.xvars[1], "B") == 0 &&
		   strcmp(c.o.xvars[2], "C=") == 0 &&
		   strcmp(c.o.xvars[3], "D=x=y") == 0,
	   "parse: -x and --env collect every NAME[=VALUE] in order");
	ok(refused(ARGS("-x", "", "prog")), "parse: refuses -x with an empty name");
	ok(refused(ARGS("-x", "=V", "prog")), "parse: refuses -x =V (no name)");
}

static void
test_stdin(void)
{
	struct cmdline c;

	parse(&c, ARGS("-n", "2", "--stdin", "all", "prog"));
	ok(c.rc == 0 && c.o.stdin_mode == WR_STDIN_ALL,
	   "parse: --stdin all copies stdin to every rank");
	parse(&c, ARGS("--stdin", "none", "prog"));
	ok(c.rc == 0 && c.o.stdin_mode == WR_STDIN_NONE,
	   "parse: --stdin none gives every rank /dev/null");
	parse(&c, ARGS("-n", "3", "--stdin", "2", "prog"));
	ok(c.rc == 0 && c.o.stdin_mode == WR_STDIN_RANK && c.o.stdin_rank == 2,
	   "parse: --stdin 2 with -n 3 gives stdin to rank 2");
	parse(&c, ARGS("--stdin", "1", "-n", "2", "prog"));
	ok(c.rc == 0 && c.o.stdin_rank == 1,
	   "parse: --stdin 1 before -n 2 is checked against the final count");
	parse(&c, ARGS("--stdin", "0", "prog"));
	ok(c.rc == 0 && c.o.stdin_mode == WR_STDIN_RANK && c.o.stdin_rank == 0,
	   "parse: --stdin 0 gives stdin to rank 0");
	ok(refused(ARGS("-n", "2", "--stdin", "5", "prog")),
	   "parse: refuses --stdin 5 with only 2 ranks");
	ok(refused(ARGS("-n", "2", "--stdin", "2", "prog")),
	   "parse: refuses --stdin 2 with ranks 0 and 1");
	ok(refused(ARGS("--stdin", "some", "prog")), "parse: refuses --stdin some");
	ok(refused(ARGS("--stdin", "-1", "prog")), "parse: refuses --stdin -1");
}

static void
test_program_boundary(void)
{
	struct cmdline c;

	parse(&c, ARGS("-n", "2", "prog", "-n", "3", "-x", "Y", "--bogus", "-np",
		       "5"));
	ok(c.rc == 0 && c.o.np == 2 && c.o.nxvars == 0 && c.o.argc == 8 &&
		   strcmp(c.o.argv[0], "prog") == 0 &&
		   strcmp(c.o.argv[1], "-n") == 0 &&
		   strcmp(c.o.argv[5], "--bogus") == 0 &&
		   strcmp(c.o.argv[6], "-np") == 0,
	   "parse: stops at the program and leaves its options alone");
	parse(&c, ARGS("-n", "2", "--", "prog", "-n", "3"));
	ok(c.rc == 0 && c.o.np == 2 && c.o.argc == 3 &&
		   strcmp(c.o.argv[0], "prog") == 0 &&
		   strcmp(c.o.argv[1], "-n") == 0,
	   "parse: -- ends the options and is not passed on");
	parse(&c, ARGS("--", "-np", "3"));
	ok(c.rc == 0 && c.o.np == 1 && c.o.argc == 2 &&
		   strcmp(c.o.argv[0], "-np") == 0,
	   "parse: after --, a program named like an option is the program");
}

static void
test_values(void)
{
	struct cmdline c;

	parse(&c, ARGS("-l", "--pty", "--keep-going", "--dry-run", "-v", "-v",
		       "--wdir", "/w", "--report", "r.json", "--output-dir",
		       "out", "--kill-grace", "0.25", "--timeout", "2.5",
		       "prog"));
	ok(c.rc == 0 && c.o.label && c.o.pty && c.o.keep_going &&
		   c.o.dry_run && c.o.verbose == 2 &&
		   strcmp(c.o.wdir, "/w") == 0 &&
		   strcmp(c.o.report, "r.json") == 0 &&
		   strcmp(c.o.output_dir, "out") == 0 &&
		   c.o.kill_grace == 0.25 && c.o.timeout == 2.5,
	   "parse: every option lands in its field");
	parse(&c, ARGS("--tag-output", "prog"));
	ok(c.rc == 0 && c.o.label, "parse: --tag-output is --label");
	parse(&c, ARGS("--kill-grace", "0", "prog"));
	ok(c.rc == 0 && c.o.kill_grace == 0, "parse: --kill-grace 0 is allowed");
	ok(refused(ARGS("--timeout", "0", "prog")), "parse: refuses --timeout 0");
	ok(refused(ARGS("--timeout", "1e3", "prog")),
	   "parse: refuses --timeout 1e3");
	ok(refused(ARGS("--kill-grace", "-1", "prog")),
	   "parse: refuses --kill-grace -1");
	parse(&c, ARGS("prog"));
	ok(c.rc == 0 && c.o.host_timeout == 10, "parse: --host-timeout is 10 s by default");
	parse(&c, ARGS("--host-timeout", "0", "prog"));
	ok(c.rc == 0 && c.o.host_timeout == 0, "parse: --host-timeout 0 is never");
	parse(&c, ARGS("--host-timeout", "2.5", "prog"));
	ok(c.rc == 0 && c.o.host_timeout == 2.5, "parse: --host-timeout 2.5");
	ok(refused(ARGS("--host-timeout", "0.5", "prog")),
	   "parse: refuses --host-timeout 0.5 (beats would come too often)");
	ok(refused(ARGS("--host-timeout", "x", "prog")),
	   "parse: refuses --host-timeout x");
}

static void
test_errors(void)
{
	ok(refused(ARGS("--bogus", "prog")), "parse: refuses an unknown long option");
	ok(refused(ARGS("-q", "prog")), "parse: refuses an unknown short option");
	ok(refused(ARGS("--label=yes", "prog")),
	   "parse: refuses a value given to a flag");
	ok(refused(ARGS("-n")), "parse: refuses -n without a value");
	ok(!refused(ARGS("prog", "--timeout")),
	   "parse: a missing value after the program is the program's business");
	ok(refused(ARGS("--timeout")), "parse: refuses --timeout without a value");
	ok(refused(ARGS("-l", "-x")), "parse: refuses -x without a value");
	ok(refused(ARGS("-n", "2")), "parse: refuses a command line with no program");
	ok(refused(ARGS("-n", "2", "--")), "parse: refuses -- with no program");
}

/* One line "worldrun: ...\n", printable, mentioning @word. */
static bool
one_clear_line(const char *msg, const char *word)
{
	size_t len = strlen(msg);

	for (size_t i = 0; i + 1 < len; i++) {
		if (msg[i] < ' ' || msg[i] > '~') {
			return false;
		}
	}
	return strncmp(msg, "worldrun: ", 10) == 0 && len > 0 &&
	       msg[len - 1] == '\n' && strstr(msg, word) != NULL;
}

static void
test_messages(void)
{
	const char *const *const cases[] = {
		ARGS("--bogus", "prog"), ARGS("-q", "prog"),
		ARGS("-n", "0", "prog"), ARGS("--timeout"), ARGS("-n", "2"),
		ARGS("-n", "2", "--stdin", "5", "prog"),
		ARGS("--label=yes", "prog"), ARGS("--pty=1", "prog"),
	};
	const char *const words[] = {
		"--bogus", "-q", "-n 0", "--timeout", "no program", "--stdin 5",
		"--label", "--pty",
	};
	struct cmdline c;

	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		parse(&c, cases[i]);
		if (!ok(c.rc == -1 && one_clear_line(c.msg, words[i]),
			"parse: the usage error for %s is one clear line naming it",
			words[i])) {
			printf("#   got: %s", c.msg);
		}
	}
}

static void
test_done(void)
{
	struct cmdline c;

	parse(&c, ARGS("--version"));
	ok(c.rc == 0 && c.o.done, "parse: --version is done with no program");
	parse(&c, ARGS("-n", "2", "--help", "--bogus"));
	ok(c.rc == 0 && c.o.done, "parse: --help is done at once, before "
				  "later errors and with no program");
}

/* --pmi: a list of fd or port, and pmix; or none. */
static void
test_pmi(void)
{
	static const char *const bad[] = {
		"", "fd,port", "none,pmix", "pmi", "fd,,pmix", "FD", "pmix,", ",fd", "fd pmix",
	};
	struct cmdline c;

	parse(&c, ARGS("prog"));
	ok(c.rc == 0 && !c.o.no_pmi && !c.o.pmi_port && !c.o.no_pmix,
	   "pmi: by default PMI-1 on an fd and PMIx");
	parse(&c, ARGS("--pmi", "fd", "prog"));
	ok(c.rc == 0 && !c.o.no_pmi && !c.o.pmi_port && c.o.no_pmix, "pmi: fd alone is PMI-1 alone");
	parse(&c, ARGS("--pmi", "port,pmix", "prog"));
	ok(c.rc == 0 && !c.o.no_pmi && c.o.pmi_port && !c.o.no_pmix,
	   "pmi: port,pmix serves both, PMI-1 on a port");
	parse(&c, ARGS("--pmi", "pmix", "prog"));
	ok(c.rc == 0 && c.o.no_pmi && !c.o.no_pmix, "pmi: pmix alone is PMIx alone");
	parse(&c, ARGS("--pmi=pmix,fd", "prog"));
	ok(c.rc == 0 && !c.o.no_pmi && !c.o.no_pmix, "pmi: the order does not matter");
	parse(&c, ARGS("--pmi", "none", "prog"));
	ok(c.rc == 0 && c.o.no_pmi && c.o.no_pmix, "pmi: none is neither");
	parse(&c, ARGS("--no-pmi", "prog"));
	ok(c.rc == 0 && c.o.no_pmi && c.o.no_pmix, "pmi: --no-pmi is neither");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ok(refused(ARGS("--pmi", bad[i], "prog")), "pmi: refuses \"%s\"", bad[i]);
	}
}

int
main(void)
{
	plan(111);
	test_count();
	test_seconds();
	test_defaults();
	test_np();
	test_xvars();
	test_stdin();
	test_program_boundary();
	test_values();
	test_errors();
	test_messages();
	test_done();
	test_pmi();
	return done_testing();
}
