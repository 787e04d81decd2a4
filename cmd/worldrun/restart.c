/* SPDX-License-Identifier: MIT */
#include "restart.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include "clock.h"

/* The name of the memfd that carries the record (/proc shows it). */
#define STATE_NAME "worldrun-restart"

/* An fd this process inherited for a kept agent: a pipe or socket, made
 * close-on-exec (not for ranks, shells or another attempt until handed
 * on again). False for anything else. */
static bool
take_inherited(json_int_t fd)
{
	struct stat st;

	return fd >= 3 && fd <= 1 << 20 && fstat((int)fd, &st) == 0 &&
	       (S_ISSOCK(st.st_mode) || S_ISFIFO(st.st_mode)) &&
	       fcntl((int)fd, F_SETFD, FD_CLOEXEC) == 0;
}

/* Whether @pid is a child of this process (a kept shell is: the exec
 * kept it), reaped now if it ended. */
static bool
our_child(json_int_t pid)
{
	return pid > 1 && pid < 1 << 22 && waitpid((pid_t)pid, NULL, WNOHANG) >= 0;
}

/* The kept agents of the record, into @r: 0 or -EINVAL. */
static int
load_agents(struct wr_restart *r, json_t *agents)
{
	size_t i;
	json_t *a;

	if (agents == NULL) {
		return 0;
	}
	if (!json_is_array(agents) || json_array_size(agents) > 1 << 16) {
		return -EINVAL;
	}
	json_array_foreach(agents, i, a) {
		json_int_t node, pid, chan, err;
		const char *host;
		struct wr_remote_kept k;

		if (json_unpack(a, "{s:I, s:s, s:I, s:I, s:I}", "node", &node, "host", &host,
				"pid", &pid, "chan", &chan, "err", &err) < 0 ||
		    node < -1 || node > 1 << 20 || !our_child(pid) || !take_inherited(chan) ||
		    (err != -1 && (err == chan || !take_inherited(err)))) {
			return -EINVAL;
		}
		k = (struct wr_remote_kept){ .pid = (pid_t)pid, .chan = (int)chan,
					     .err = (int)err };
		if (wr_restart_attach_agent(r, (int)node, host, &k) < 0) {
			return -EINVAL;
		}
	}
	return 0;
}

static json_t *
dump_agents(const struct wr_restart *r)
{
	json_t *all = json_array();

	for (int i = 0; all != NULL && i < r->nagents; i++) {
		const struct wr_restart_agent *a = &r->agents[i];

		/* Handed on by the exec that follows. */
		fcntl(a->kept.chan, F_SETFD, 0);
		if (a->kept.err >= 0) {
			fcntl(a->kept.err, F_SETFD, 0);
		}
		json_array_append_new(all, json_pack("{s:i, s:s, s:i, s:i, s:i}", "node", a->node,
						     "host", a->host, "pid", (int)a->kept.pid,
						     "chan", a->kept.chan, "err", a->kept.err));
	}
	return all;
}

/* The kept agents go: their channels close, their shells are killed. */
static void
drop_agents(struct wr_restart *r)
{
	for (int i = 0; i < r->nagents; i++) {
		struct wr_restart_agent *a = &r->agents[i];

		wr_remote_kept_end(&a->kept);
		free(a->host);
	}
	free(r->agents);
	r->agents = NULL;
	r->nagents = 0;
}

int
wr_restart_attach_agent(struct wr_restart *r, int node, const char *host,
		const struct wr_remote_kept *k)
{
	struct wr_restart_agent *more = realloc(r->agents, (size_t)(r->nagents + 1) *
							   sizeof(*more));
	char *name = strdup(host);

	if (more != NULL) {
		r->agents = more;
	}
	if (more == NULL || name == NULL) {
		free(name);
		wr_remote_kept_end(k);
		return -ENOMEM;
	}
	r->agents[r->nagents++] = (struct wr_restart_agent){ .node = node, .host = name,
							     .kept = *k };
	return 0;
}

bool
wr_restart_take(struct wr_restart *r, int node, const char *host, struct wr_remote_kept *k)
{
	for (int i = 0; r != NULL && i < r->nagents; i++) {
		struct wr_restart_agent *a = &r->agents[i];

		if (a->node == node && strcmp(a->host, host) == 0) {
			*k = a->kept;
			free(a->host);
			r->agents[i] = r->agents[--r->nagents];
			return true;
		}
	}
	return false;
}

/* What an attempt passes on, read back: the memfd it made, by name. */
static int
load(struct wr_restart *r, const char *fdtext)
{
	char link[64], target[64] = "", *end = NULL;
	long fd = strtol(fdtext, &end, 10);
	json_t *doc = NULL, *attempts = NULL, *agents = NULL;
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
	if (json_unpack(doc, "{s:i, s:i, s:s, s:o, s?o}", "count", &count, "max", &max,
			"jobid", &jobid, "attempts", &attempts, "agents", &agents) < 0 ||
	    count < 1 || count > max || max > 1000 || strlen(jobid) != 12 ||
	    !json_is_array(attempts) || load_agents(r, agents) < 0) {
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
	drop_agents(r);
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
	json_t *doc = json_pack("{s:i, s:i, s:s, s:O, s:o}", "count", r->count, "max", r->max,
				"jobid", r->jobid, "attempts", r->attempts, "agents",
				dump_agents(r));
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
