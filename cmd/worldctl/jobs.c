/* SPDX-License-Identifier: MIT */
#include "jobs.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "rundir.h"

/* How long a job's registry has to answer before it counts as unreachable. */
#define PROBE_MS 2000

/* The state letter of process @pid (/proc/PID/stat), or 0. */
static char
proc_state(long pid)
{
	char path[64], line[512], *paren;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	f = fopen(path, "re");
	if (f == NULL) {
		return 0;
	}
	n = fread(line, 1, sizeof(line) - 1, f);
	fclose(f);
	line[n] = '\0';
	paren = strrchr(line, ')');
	return paren != NULL && paren[1] == ' ' ? paren[2] : 0;
}

static const char *
state_of(const struct wr_rundir_entry *e)
{
	struct wr_ctl probe;
	char why[256], st;
	int rc;

	/* Another user's process (EPERM) took the number of a worldrun gone. */
	if (kill((pid_t)e->pid, 0) < 0) {
		return "stale";
	}
	st = proc_state(e->pid);
	if (st == 'Z' || st == 'X') {
		return "stale";
	}
	if (st == 'T' || st == 't') {
		return "stopped";
	}
	wr_ctl_init(&probe);
	rc = wr_ctl_open_entry(&probe, e, PROBE_MS, why, sizeof(why));
	wr_ctl_finish(&probe);
	return rc == 0 ? "running" : "unreachable";
}

static double
now(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

/* "45s", "3m07s", "2h05m", "4d03h". */
static void
format_age(char *buf, size_t size, double secs)
{
	long s = secs > 0 ? (long)secs : 0;

	if (s < 60) {
		snprintf(buf, size, "%lds", s);
	} else if (s < 3600) {
		snprintf(buf, size, "%ldm%02lds", s / 60, s % 60);
	} else if (s < 86400) {
		snprintf(buf, size, "%ldh%02ldm", s / 3600, s % 3600 / 60);
	} else {
		snprintf(buf, size, "%ldd%02ldh", s / 86400, s % 86400 / 3600);
	}
}

/* One job as a line of the table, or appended to @all for --json. */
static int
show(const struct wr_rundir_entry *e, const char *state, json_t *all)
{
	double age = now() - e->start;
	char text[32];

	if (all != NULL) {
		return json_array_append_new(all, json_pack(
			"{s:s, s:i, s:I, s:s, s:s, s:O, s:s, s:f, s:f, s:s}",
			"jobid", e->jobid, "ranks", e->ranks, "pid", (json_int_t)e->pid,
			"host", e->host, "program", e->program, "argv", e->argv,
			"command", e->command, "start", e->start, "age", age > 0 ? age : 0,
			"state", state));
	}
	format_age(text, sizeof(text), age);
	return printf("%-12s  %5d  %6s  %-11s  %s\n", e->jobid, e->ranks, text, state,
		      e->command) < 0 ? -1 : 0;
}

/*
 * Every entry of @dir that can be read, in id order; stale ones removed.
 * Returns 0, -1 when standard output failed, or 125 after saying why.
 */
static int
show_all(struct wr_ctl *ctl, const struct wr_rundir *dir, json_t *all)
{
	char (*ids)[WR_RUNDIR_ID_LEN + 1];
	size_t n, shown = 0;
	int rc = wr_rundir_list(dir, &ids, &n);

	if (rc < 0) {
		wr_ctl_say(ctl, "unable to read %s: %s", dir->path, strerror(-rc));
		return WR_CTL_FAILED;
	}
	for (size_t i = 0; rc == 0 && i < n; i++) {
		struct wr_rundir_entry e;
		const char *state;

		/* Gone meanwhile, or not worldrun's: not a job to list. */
		if (wr_rundir_read(dir, ids[i], &e) < 0) {
			continue;
		}
		state = state_of(&e);
		if (all == NULL && shown++ == 0 &&
		    printf("%-12s  %5s  %6s  %-11s  %s\n", "JOBID", "RANKS", "AGE",
			   "STATE", "COMMAND") < 0) {
			rc = -1;
		}
		if (rc == 0 && show(&e, state, all) < 0) {
			rc = -1;
		}
		if (strcmp(state, "stale") == 0) {
			wr_rundir_remove(dir, ids[i]);
		}
		wr_rundir_entry_finish(&e);
	}
	free(ids);
	return rc;
}

int
wr_jobs_list(struct wr_ctl *ctl, const struct wr_args *a)
{
	struct wr_rundir dir;
	json_t *all = a->json ? json_array() : NULL;
	int rc = wr_rundir_open(&dir, false);

	wr_ctl_doing(ctl, "jobs");
	if (rc < 0 && rc != -ENOENT) {
		json_decref(all);
		wr_ctl_say(ctl, "%s: not used: %s", dir.path, wr_rundir_refusal(rc));
		return WR_CTL_FAILED;
	}
	rc = rc == -ENOENT ? 0 : show_all(ctl, &dir, all);
	if (rc == WR_CTL_FAILED) {
		json_decref(all);
		return rc;
	}
	errno = 0;
	if (rc == 0 && all != NULL) {
		rc = json_dumpf(all, stdout, JSON_INDENT(2)) < 0 || putchar('\n') == EOF
		     ? -1 : 0;
	}
	json_decref(all);
	if (rc < 0 || fflush(stdout) == EOF) {
		wr_ctl_say(ctl, "writing to standard output: %s",
			   errno != 0 ? strerror(errno) : "failed");
		return WR_CTL_FAILED;
	}
	return WR_CTL_OK;
}
