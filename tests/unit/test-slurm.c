/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for slurm: node lists in Slurm's compressed form (ranges,
 * zero padding, several brackets, Open MPI's width) with the counts of
 * "4,1(x2)", merged into a host list as hostfile entries are; and every
 * kind of bad list or count refused with a message that names the
 * variable and what is wrong. And the lines of srun's stderr told apart:
 * an agent's (--label) from srun's own.
 */
#include "slurm.h"
#include "srun.h"
#include "tap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The nodes of @list with @counts as "name:slots,...", or the error. */
static const char *
hosts_of(const char *list, const char *counts)
{
	static char out[4096];
	struct wr_slurm_alloc a = { list, "SLURM_JOB_NODELIST", counts, "SLURM_TASKS_PER_NODE" };
	struct wr_hosts h = { 0 };
	char err[WR_HOSTS_ERR_MAX];
	size_t at = 0;
	int rc = wr_slurm_hosts(&h, &a, err);

	out[0] = '\0';
	if (rc < 0) {
		snprintf(out, sizeof(out), "%s", err);
	}
	for (int i = 0; rc == 0 && i < h.n && at < sizeof(out); i++) {
		at += (size_t)snprintf(out + at, sizeof(out) - at, "%s%s:%d", i ? "," : "",
				       h.v[i].name, h.v[i].slots);
	}
	wr_hosts_finish(&h);
	return out;
}

/* A list, its counts, what they give ("name:slots,..." or the message),
 * and what the case shows. */
static const struct {
	const char *list, *counts, *want, *what;
} cases[] = {
	{ "vm", "4",
	  "vm:4",
	  "one node" },
	{ "n[1-3]", "4,1(x2)",
	  "n1:4,n2:1,n3:1",
	  "a range, and a repeat count" },
	{ "n[1-3,7]", "2(x4)",
	  "n1:2,n2:2,n3:2,n7:2",
	  "a range and a number" },
	{ "c[08-11]", "1,2,3,4",
	  "c08:1,c09:2,c10:3,c11:4",
	  "zero padding as wide as the first number is written" },
	{ "rack[1-2]-n[1-2]", "1(x4)",
	  "rack1-n1:1,rack1-n2:1,rack2-n1:1,rack2-n2:1",
	  "two brackets: every combination, the last varying first" },
	{ "vm,n[2:1-3]", "1(x4)",
	  "vm:1,n01:1,n02:1,n03:1",
	  "Open MPI's form gives the width before a colon" },
	{ "a,b[1-2],c", "1,2,3,4",
	  "a:1,b1:2,b2:3,c:4",
	  "commas inside brackets do not part entries" },
	{ "n1,n[1-2]", "1,2,3",
	  "n1:3,n2:3",
	  "a node named twice is one node" },
	{ "n[0-2]x", "1(x3)",
	  "n0x:1,n1x:1,n2x:1",
	  "text after a bracket" },
	{ "", "1",
	  "SLURM_JOB_NODELIST=: no node in it",
	  "an empty list" },
	{ "a,,b", "1",
	  "SLURM_JOB_NODELIST=a,,b: an empty entry",
	  "an empty entry" },
	{ "n[1-3", "1",
	  "SLURM_JOB_NODELIST=n[1-3: a bracket that does not close",
	  "an open bracket" },
	{ "n1-3]", "1",
	  "SLURM_JOB_NODELIST=n1-3]: a bracket that does not open",
	  "a closing bracket alone" },
	{ "n[1-[2]]", "1",
	  "SLURM_JOB_NODELIST=n[1-[2]]: a bracket inside a bracket",
	  "nested brackets" },
	{ "n[3-1]", "1",
	  "SLURM_JOB_NODELIST=n[3-1]: 3-1: a range that runs backwards",
	  "a backward range" },
	{ "n[a-b]", "1",
	  "SLURM_JOB_NODELIST=n[a-b]: \"a-b\" is not a number or a range of them",
	  "letters in a range" },
	{ "n[]", "1",
	  "SLURM_JOB_NODELIST=n[]: \"\" is not a number or a range of them",
	  "an empty bracket" },
	{ "n[1-99999]", "1",
	  "SLURM_JOB_NODELIST=n[1-99999]: 1-99999: more than 16384 nodes",
	  "a range of more nodes than a host list holds" },
	{ "-n1", "1",
	  "SLURM_JOB_NODELIST: \"-n1\" is not a host name",
	  "a name that would be an option" },
	{ "n[0:1-2]", "1(x2)",
	  "SLURM_JOB_NODELIST=n[0:1-2]: [0:1-2]: \"0\" is not a width of 1 to 9 digits",
	  "a width of 0" },
	{ "n[1-3]", "4,1",
	  "SLURM_TASKS_PER_NODE=4,1: fewer counts than nodes",
	  "fewer counts than nodes" },
	{ "n[1-3]", "1(x4)",
	  "SLURM_TASKS_PER_NODE=1(x4): more counts than nodes",
	  "more counts than nodes" },
	{ "n1", "",
	  "SLURM_TASKS_PER_NODE=: not a list of counts from 1 to 65536 (\"4,1(x2)\")",
	  "no count" },
	{ "n1", "0",
	  "SLURM_TASKS_PER_NODE=0: not a list of counts from 1 to 65536 (\"4,1(x2)\")",
	  "a count of 0" },
	{ "n[1-2]", "1,",
	  "SLURM_TASKS_PER_NODE=1,: not a list of counts from 1 to 65536 (\"4,1(x2)\")",
	  "a trailing comma" },
	{ "n[1-2]", "1(x2",
	  "SLURM_TASKS_PER_NODE=1(x2: not a repeat count (\"(x2)\")",
	  "an open repeat" },
	{ "n1", "1;",
	  "SLURM_TASKS_PER_NODE=1;: not a list of counts (\"4,1(x2)\")",
	  "garbage after a count" },
	{ "n1", "65537",
	  "SLURM_TASKS_PER_NODE=65537: not a list of counts from 1 to 65536 (\"4,1(x2)\")",
	  "more slots than a host may have" },
};

static void
test_limits(void)
{
	ok(strncmp(hosts_of("n[1-200],m[1-200],o[1-200]", "1(x600)"), "n1:1,n2:1,", 10) == 0 &&
		   strstr(hosts_of("n[1-200],m[1-200],o[1-200]", "1(x600)"), ",o200:1") != NULL,
	   "six hundred nodes from three ranges");
	ok(strstr(hosts_of("a[1-129]b[1-128]", "1(x16384)"), "more than 16384 nodes") != NULL,
	   "brackets that multiply past the limit are refused");
}

/* The task and words of srun's stderr line @line, as "TASK|WORDS". */
static const char *
label_of(const char *line)
{
	static char out[256];
	const char *text;
	int task = wr_srun_label(line, &text);

	snprintf(out, sizeof(out), "%d|%s", task, text);
	return out;
}

static void
test_labels(void)
{
	is_str(label_of("0: agent: ready"), "0|agent: ready", "an agent's line, its label gone");
	is_str(label_of(" 7: agent: x"), "7|agent: x",
	       "a label padded to the widest task: no blank left before the words");
	is_str(label_of("12:  two blanks"), "12| two blanks", "the words' own blanks stay");
	is_str(label_of("srun: error: Unable to create step"), "-1|srun: error: Unable to create step",
	       "srun's own line");
	is_str(label_of("x1: y"), "-1|x1: y", "no number before the colon: srun's own");
	is_str(label_of("3:no blank"), "-1|3:no blank", "no blank after the colon: srun's own");
}

int
main(void)
{
	plan((int)(sizeof(cases) / sizeof(cases[0])) + 2 + 6);
	test_labels();
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		is_str(hosts_of(cases[i].list, cases[i].counts), cases[i].want, cases[i].what);
	}
	test_limits();
	return done_testing();
}
