/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for starter: the command line that starts an agent. ssh by
 * default, never prompting and bounded; --rsh split at blanks; the
 * agent's path quoted only where a remote shell needs it; no shell for
 * an agent of this machine.
 */
#include "starter.h"
#include "tap.h"

#include <errno.h>
#include <stdlib.h>

/* @argv joined with single spaces, in a static buffer. */
static const char *
joined(char **argv)
{
	static char buf[4096];
	size_t at = 0;

	buf[0] = '\0';
	for (int i = 0; argv[i] != NULL && at < sizeof(buf); i++) {
		at += (size_t)snprintf(buf + at, sizeof(buf) - at, "%s%s", i ? " " : "", argv[i]);
	}
	return buf;
}

/* The last two words: the agent's path and --agent. */
static bool
ends_with_agent(char **argv, const char *self)
{
	int n = 0;

	while (argv[n] != NULL) {
		n++;
	}
	return n >= 2 && strcmp(argv[n - 2], self) == 0 && strcmp(argv[n - 1], "--agent") == 0;
}

int
main(void)
{
	char *self = realpath("/proc/self/exe", NULL);
	struct wr_starter s;
	char many[WR_STARTER_WORDS_MAX * 2 + 8];
	const char *want;

	plan(14);
	is_int(wr_starter_init(&s, NULL, 7.5, "node-a", false), 0, "ssh by default");
	ok(strstr(joined(s.argv), "ssh -x -T -o BatchMode=yes") == joined(s.argv),
	   "it starts with ssh, no X11, no terminal, BatchMode (%s)", joined(s.argv));
	ok(strstr(joined(s.argv), "-o StrictHostKeyChecking=accept-new") != NULL &&
		   strstr(joined(s.argv), "-o ConnectTimeout=7 node-a ") != NULL,
	   "accept-new, the connect timeout in whole seconds, then the host");
	ok(ends_with_agent(s.argv, self), "then this worldrun's path and --agent");
	wr_starter_finish(&s);

	is_int(wr_starter_init(&s, "  ssh\t-p 2222  ", 10, "node-b", false), 0, "--rsh");
	ok(strncmp(joined(s.argv), "ssh -p 2222 node-b /", 20) == 0 && ends_with_agent(s.argv, self),
	   "--rsh split at blanks, then the host and the agent (%s)", joined(s.argv));
	wr_starter_finish(&s);

	is_int(wr_starter_init(&s, NULL, 10, "localhost", true), 0, "an agent of this machine");
	ok(s.argv[2] == NULL && ends_with_agent(s.argv, self), "no shell for it: the agent itself");
	wr_starter_finish(&s);

	is_int(wr_starter_init(&s, " \t ", 10, "node-b", false), -EINVAL, "an --rsh of blanks is refused");
	wr_starter_finish(&s);
	for (int i = 0; i < WR_STARTER_WORDS_MAX + 1; i++) {
		many[2 * i] = 'w';
		many[2 * i + 1] = ' ';
	}
	many[2 * (WR_STARTER_WORDS_MAX + 1)] = '\0';
	is_int(wr_starter_init(&s, many, 10, "node-b", false), -EINVAL,
	       "an --rsh of more words than WR_STARTER_WORDS_MAX is refused");
	wr_starter_finish(&s);

	is_int(wr_starter_init_srun(&s, (const char *[]){ "n2", "n3", NULL }, 2),
	       0, "srun for two nodes");
	want = "srun --overlap --nodes=2 --ntasks=2 --ntasks-per-node=1 --nodelist=n2,n3 "
	       "--kill-on-bad-exit=1 --whole --mpi=none --input=all --label ";
	ok(strncmp(joined(s.argv), want, strlen(want)) == 0, "one task per node, sharing CPUs with other steps, every CPU "
	   "of the job there, no MPI plugin, labelled, every option given (%s)", joined(s.argv));
	wr_starter_finish(&s);
	wr_starter_init_srun(&s, (const char *[]){ "n1", NULL }, 1);
	ok(strcmp(s.argv[1], "--overlap") == 0 && strcmp(s.argv[5], "--nodelist=n1") == 0,
	   "one node (%s)", joined(s.argv));
	ok(s.argv[11] != NULL && strcmp(s.argv[11], self) == 0 &&
		   strcmp(s.argv[12], "--agent") == 0 && strcmp(s.argv[13], "--dial") == 0 &&
		   s.argv[14] == NULL,
	   "then this worldrun and --agent --dial: no port, which stdin gives");
	wr_starter_finish(&s);
	free(self);
	return done_testing();
}
