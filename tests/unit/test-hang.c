/* SPDX-License-Identifier: MIT */
/*
 * test-hang: the hang report's words from a survey written out here:
 * ranks grouped by what they wait for, who is
 * missing, ended ranks in the failure lines' words, and hostile survey
 * content (wrong types, ranks out of range) neither crashing nor counted.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hang.h"
#include "tap.h"

static json_t *
build(const char *survey_text, struct wr_hang_rank *ranks, int n)
{
	struct wr_hang_job job = { .jobid = "0123456789ab", .host = "h",
				   .elapsed = 30.0, .ranks = ranks, .nranks = n };
	json_t *survey = json_loads(survey_text, 0, NULL);
	json_t *out = wr_hang_build(&job, survey);

	json_decref(survey);
	return out;
}

static const char *
line(const json_t *res, size_t i)
{
	return json_string_value(json_array_get(json_object_get(res, "lines"), i));
}

/* A rank's survey: in barrier "step" for @ms, rank 1 missing. */
static void
in_step(char *buf, size_t room, int ms)
{
	snprintf(buf, room, "{\"libworld\":\"connected\",\"answered\":true,"
		 "\"waits\":[{\"kind\":\"barrier\",\"what\":\"barrier \\\"step\\\"\","
		 "\"for_ms\":%d,\"name\":\"step\"}],\"registry\":[{\"kind\":\"barrier\","
		 "\"for_ms\":1,\"via\":\"rank\",\"name\":\"step\",\"missing\":[1]}]}", ms);
}

/* Ranks 0,2,3 in barrier "step" missing rank 1; rank 1 exited 3. */
static void
test_grouping(void)
{
	struct wr_hang_rank ranks[4];
	json_t *res;
	char s[2048];
	char r0[512], r2[512], r3[512];

	in_step(r0, sizeof(r0), 29800);
	in_step(r2, sizeof(r2), 100);
	in_step(r3, sizeof(r3), 5000);
	snprintf(s, sizeof(s), "{\"ranks\":[%s,{\"libworld\":\"gone\"},%s,%s]}", r0,
		 r2, r3);
	for (int i = 0; i < 4; i++) {
		ranks[i] = (struct wr_hang_rank){ .pid = getpid(), .ran_s = 30 };
	}
	ranks[1].ended = true;
	ranks[1].wstatus = 3 << 8;
	res = build(s, ranks, 4);
	is_str(line(res, 0), "job 0123456789ab after 30.0 s: 3 ranks waiting, 1 ended",
	       "the first line counts the ranks by what they do");
	is_str(line(res, 1), "  ranks 0,2-3 in barrier \"step\" (since 29.8 s), "
	       "waiting for rank 1", "the waiting ranks are one line, since the longest wait");
	is_str(line(res, 2), "  rank 1 exited with status 3", "the rank that ended, as it ended");
	is_int((long long)json_array_size(json_object_get(res, "lines")), 3,
	       "and nothing more");
	json_decref(res);

	ranks[1].wstatus = SIGKILL;
	res = build(s, ranks, 4);
	is_str(line(res, 2), "  rank 1 killed by signal 9 (SIGKILL)",
	       "a signal in the failure lines' words");
	json_decref(res);
}

/* Two groups by what they wait for; a rank in no wait by its process. */
static void
test_kinds(void)
{
	struct wr_hang_rank ranks[3];
	const char *s = "{\"ranks\":["
		"{\"libworld\":\"connected\",\"answered\":true,\"waits\":[{\"kind\":\"call\","
		"\"what\":\"call to rank 2: service \\\"s\\\" of group \\\"g\\\"\",\"for_ms\":1000,"
		"\"peer\":2}],\"registry\":[]},"
		"{\"libworld\":\"connected\",\"answered\":true,\"waits\":[],\"registry\":"
		"[{\"kind\":\"kv.wait\",\"for_ms\":2000,\"via\":\"tool\",\"keys\":[\"k\"]}]},"
		"{\"libworld\":\"connected\",\"answered\":true,\"waits\":[{\"kind\":\"handler\","
		"\"what\":\"handler \\\"s\\\" of group \\\"g\\\"\",\"for_ms\":900,\"peer\":0}],"
		"\"registry\":[]}]}";
	json_t *res;

	for (int i = 0; i < 3; i++) {
		ranks[i] = (struct wr_hang_rank){ .pid = getpid(), .ran_s = 30 };
	}
	res = build(s, ranks, 3);
	is_str(line(res, 0), "job 0123456789ab after 30.0 s: 2 ranks waiting, 1 in a handler",
	       "a rank running handlers is busy, not waiting");
	is_str(line(res, 1), "  rank 0 in call to rank 2: service \"s\" of group \"g\" "
	       "(since 1.0 s), waiting for rank 2", "a call waits for its callee");
	is_str(line(res, 2), "  rank 1 in kv wait \"k\" via worldctl (since 2.0 s)",
	       "a tool's wait stands for a rank whose libworld waits for nothing");
	is_str(line(res, 3), "  rank 2 running handler \"s\" of group \"g\" for rank 0 "
	       "(since 0.9 s)", "a handler serves its caller: no wait for it");
	json_decref(res);
}

static void
test_no_libworld(void)
{
	struct wr_hang_rank ranks[2] = {
		{ .pid = getpid(), .ran_s = 1 }, { .pid = 0 },
	};
	json_t *res = build("{\"ranks\":[{\"libworld\":\"none\",\"waits\":[],"
			    "\"registry\":[]},{}]}", ranks, 2);
	char want[128];

	snprintf(want, sizeof(want), "  rank 0 not in any libworld wait (pid %d, "
		 "running (R), ", (int)getpid());
	ok(line(res, 1) != NULL && strncmp(line(res, 1), want, strlen(want)) == 0,
	   "a rank in no wait is told by its process state: %s", line(res, 1));
	is_str(line(res, 2), "  rank 1 not started", "a rank never started says so");
	json_decref(res);
}

/* A survey that lies: wrong types, ranks out of range, too few ranks. */
static void
test_hostile(void)
{
	struct wr_hang_rank ranks[2] = {
		{ .pid = getpid(), .ran_s = 1 }, { .pid = getpid(), .ran_s = 1 },
	};
	const char *s = "{\"ranks\":[{\"libworld\":3,\"answered\":\"yes\",\"waits\":"
		"[{\"kind\":7,\"what\":null,\"for_ms\":\"x\",\"peer\":99},{\"peer\":-5}],"
		"\"registry\":[{\"missing\":[1000,-1,\"a\",1]}]}]}";
	json_t *res = build(s, ranks, 2);

	ok(res != NULL, "a survey with wrong types still gives a report");
	ok(line(res, 1) != NULL && strstr(line(res, 1), "waiting for rank 1") != NULL,
	   "only ranks in range are named: %s", line(res, 1));
	json_decref(res);
	res = build("[]", ranks, 2);
	ok(res != NULL && line(res, 0) != NULL, "a survey that is no object: a report");
	json_decref(res);
	res = build("{}", NULL, 0);
	is_str(line(res, 0), "job 0123456789ab after 30.0 s:", "a job of no ranks");
	json_decref(res);
}

/* Whether the report has line @want. */
static bool
has(const json_t *res, const char *want)
{
	size_t i;
	json_t *l;

	json_array_foreach(json_object_get(res, "lines"), i, l) {
		if (strcmp(json_string_value(l), want) == 0) {
			return true;
		}
	}
	return false;
}

/* Ranks of other hosts: their agents' stacks, or why there is none. */
static void
test_far_stacks(void)
{
	struct wr_hang_rank ranks[3];
	struct wr_hang_stack far[2] = {
		{ .rank = 0, .answered = true, .tool = "eu-stack", .text = "#0 pause\n#1 main\n" },
		{ .rank = 2 },
	};
	struct wr_hang_job job = { .jobid = "0123456789ab", .host = "h", .elapsed = 30.0,
				   .ranks = ranks, .nranks = 3, .stacks = true,
				   .far = far, .nfar = 2, .far_wait = 7 };
	const char *hosts[] = { "h1", "h2", "h3" };
	char s[2048], r0[512], r1[512];
	json_t *survey, *res;
	int want[WR_HANG_STACKS_MAX];

	in_step(r0, sizeof(r0), 200);
	in_step(r1, sizeof(r1), 100);
	snprintf(s, sizeof(s), "{\"ranks\":[%s,%s,{\"libworld\":\"connected\","
		 "\"answered\":true,\"waits\":[],\"registry\":[]}]}", r0, r1);
	survey = json_loads(s, 0, NULL);
	for (int i = 0; i < 3; i++) {
		ranks[i] = (struct wr_hang_rank){ .pid = 100 + i, .ran_s = 30, .host = hosts[i] };
	}
	is_int(wr_hang_stack_ranks(&job, survey, want), 2,
	       "two groups, two stacks to take");
	ok(want[0] == 0 && want[1] == 2, "of ranks 0 and 2, each its group's first");
	res = wr_hang_build(&job, survey);
	ok(has(res, "    stack of rank 0 (eu-stack on h1):") && has(res, "      #0 pause") &&
	   has(res, "      #1 main"), "an agent's stack, under the tool and host that took it");
	ok(has(res, "    no stack of rank 2: no answer from the agent on h3 within 7 s"),
	   "an agent that did not answer in time, named");
	json_decref(res);
	far[1] = (struct wr_hang_stack){ .rank = 2, .answered = true, .tool = "" };
	res = wr_hang_build(&job, survey);
	ok(has(res, "    no stack of rank 2: neither eu-stack nor gdb is installed on h3"),
	   "a host without a tool, named");
	json_decref(res);
	far[1] = (struct wr_hang_stack){ .rank = 2, .answered = true, .tool = "gdb",
					 .err = ESRCH };
	res = wr_hang_build(&job, survey);
	ok(has(res, "    stack of rank 2 (gdb on h3):") && has(res, "      (No such process)"),
	   "a rank gone by the time its agent looked: the reason");
	json_decref(res);
	json_decref(survey);
}

int
main(void)
{
	plan(21);
	test_grouping();
	test_kinds();
	test_no_libworld();
	test_hostile();
	test_far_stacks();
	return done_testing();
}
