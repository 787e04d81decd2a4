/* SPDX-License-Identifier: MIT */
#include "restart.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include "clock.h"

/* The name of the memfd that carries the record (/proc shows it). */
#define STATE_NAME "worldrun-restart"

/* What an attempt passes on, read back: the memfd it made, by name. */
static int
load(struct wr_restart *r, const char *fdtext)
{
	char link[64], target[64] = "", *end = NULL;
	long fd = strtol(fdtext, &end, 10);
	json_t *doc = NULL, *attempts = NULL;
	const char *jobid = NULL;
	int count = 0, max = 0;
	ssize_t n;

	if (*fdtext == '\0' || *end != '\0' || fd < 3 || fd > 1 << 20) {
		return -EINVAL;
	}
	snprintf(link, sizeof(link), "/proc/self/fd/%ld", fd);
	n = readlink(link, target, sizeof(target) - 1);
	if (n < 0 || strncmp(target, "/memfd:" STATE_NAME " ", strlen(STATE_NAME) + 8) != 0) {
		return -EINVAL;
	}
	lseek((int)fd, 0, SEEK_SET);
	doc = json_loadfd((int)fd, JSON_REJECT_DUPLICATES, NULL);
	close((int)fd);
	if (json_unpack(doc, "{s:i, s:i, s:s, s:o}", "count", &count, "max", &max, "jobid",
			&jobid, "attempts", &attempts) < 0 || count < 1 || count > max ||
	    max > 1000 || strlen(jobid) != 12 || !json_is_array(attempts)) {
		json_decref(doc);
		return -EINVAL;
	}
	r->count = count;
	r->max = max;
	snprintf(r->jobid, sizeof(r->jobid), "%s", jobid);
	json_decref(r->attempts);
	r->attempts = json_incref(attempts);
	json_decref(doc);
	return 0;
}

int
wr_restart_init(struct wr_restart *r)
{
	const char *fd = getenv("WORLD_RESTART_FD");
	int rc;

	*r = (struct wr_restart){ .interval = 1.0, .attempts = json_array() };
	if (fd == NULL) {
		return 0;
	}
	rc = load(r, fd);
	unsetenv("WORLD_RESTART_FD");
	if (rc < 0) {
		fprintf(stderr, "worldrun: WORLD_RESTART_FD=%.32s: not the record of an earlier "
				"attempt of this job (worldrun sets it for itself)\n", fd);
	}
	return rc;
}

void
wr_restart_finish(struct wr_restart *r)
{
	if (r == NULL) {
		return;
	}
	json_decref(r->attempts);
	r->attempts = NULL;
}

/* What torchrun restarts for: a worker that failed, however it failed. */
static bool
restartable(const char *cause)
{
	static const char *const causes[] = {
		"rank-exited", "rank-killed", "rank-failed", "rank-aborted",
		"rank-lost", "rank-left-pmi", "host-lost",
	};

	for (size_t i = 0; cause != NULL && i < sizeof(causes) / sizeof(causes[0]); i++) {
		if (strcmp(cause, causes[i]) == 0) {
			return true;
		}
	}
	return false;
}

static json_t *
maybe_real(double v)
{
	return v > 0 ? json_real(v) : json_null();
}

bool
wr_restart_record(struct wr_restart *r, const struct wr_restart_end *end)
{
	json_t *what = end->exception != NULL ? json_string(end->exception) : NULL;
	json_t *one = json_pack("{s:i, s:i, s:s, s:o, s:o, s:o, s:o}", "restart", r->count,
				"status", end->status, "cause",
				end->cause != NULL ? end->cause : "success", "failed_rank",
				end->failed_rank >= 0 ? json_integer(end->failed_rank)
						      : json_null(),
				"start", maybe_real(end->start_epoch), "end",
				maybe_real(end->end_epoch), "exception",
				what != NULL ? what : json_null());

	json_array_append_new(r->attempts, one);
	if (!restartable(end->cause) || r->count >= r->max) {
		return false;
	}
	r->count++;
	return true;
}

int
wr_restart_wait(const struct wr_restart *r)
{
	double wait = r->interval, end;
	sigset_t set;

	for (int i = 1; i < r->count && wait < WR_RESTART_BACKOFF_MAX; i++) {
		wait *= 2;
	}
	wait = (wait < WR_RESTART_BACKOFF_MAX ? wait : WR_RESTART_BACKOFF_MAX) -
	       (wr_clock_mono() - r->started);
	end = wr_clock_mono() + wait;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	while (wait > 0) {
		struct timespec ts = { .tv_sec = (time_t)wait,
				       .tv_nsec = (long)((wait - (double)(time_t)wait) * 1e9) };
		int sig = sigtimedwait(&set, NULL, &ts);

		if (sig > 0) {
			return sig;
		}
		wait = end - wr_clock_mono();
	}
	return 0;
}

int
wr_restart_exec(struct wr_restart *r, char **argv)
{
	json_t *doc = json_pack("{s:i, s:i, s:s, s:O}", "count", r->count, "max", r->max,
				"jobid", r->jobid, "attempts", r->attempts);
	int fd = memfd_create(STATE_NAME, 0); /* inherited by the exec */
	char num[16];

	if (doc == NULL || fd < 0 || json_dumpfd(doc, fd, JSON_COMPACT) < 0) {
		fprintf(stderr, "worldrun: unable to restart the job: %s\n",
			strerror(fd < 0 ? errno : ENOMEM));
		json_decref(doc);
		return 125;
	}
	json_decref(doc);
	snprintf(num, sizeof(num), "%d", fd);
	setenv("WORLD_RESTART_FD", num, 1);
	execv("/proc/self/exe", argv);
	fprintf(stderr, "worldrun: unable to restart the job: %s\n", strerror(errno));
	unsetenv("WORLD_RESTART_FD");
	close(fd);
	return 125;
}
