/* SPDX-License-Identifier: MIT */
/*
 * prog-storm DIR: for tests/long/storm.bats, 8 ranks that keep the job's
 * registry and its peers busy until a fault ends the job. Each rank first
 * forks a child that sleeps (300 s at most) in its process group, appends
 * its pid and its child's to DIR/pids and writes its own to DIR/pid.R.
 * Ranks 0 and 1 register hold.0 and hold.1, whose handler does not answer;
 * ranks 2 and 3 call hold.0, ranks 4 and 5 hold.1. Ranks 0 and 1 then wait
 * in a get of a key nobody sets, ranks 6 and 7 in a barrier that never
 * completes. Once both handlers hold both their calls and the registry
 * holds every wait (its stats), rank 7 writes the job id to DIR/ready.
 * Every wait is bounded (60 s); one that ends (by a fault elsewhere) is
 * followed by another, so that only the fault decides how the job ends.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "progs.h"

#define T 60000
#define RANKS 8

/* Calls of this rank's hold.R that have come in (hold_call counts them). */
static int arrived;

/* A child in our process group that sleeps, its stdio on /dev/null. */
static pid_t
start_child(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		for (int i = 0; i < 3 && null >= 0; i++) {
			dup2(null, i);
		}
		sleep(300);
		_exit(0);
	}
	return pid;
}

/* Write @text to DIR/@name, in one write; through a rename if @atomic. */
static int
put(const char *dir, const char *name, const char *text, int flags, bool atomic)
{
	char path[512], tmp[520];
	size_t len = strlen(text);
	int fd, rc = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(atomic ? tmp : path, O_WRONLY | O_CREAT | O_CLOEXEC | flags, 0600);
	if (fd < 0 || write(fd, text, len) != (ssize_t)len) {
		rc = -errno;
	}
	if (fd >= 0) {
		close(fd);
	}
	if (rc == 0 && atomic && rename(tmp, path) < 0) {
		rc = -errno;
	}
	return rc;
}

static int
record_pids(const char *dir, int rank, pid_t child)
{
	char text[64], name[32];
	int rc;

	snprintf(text, sizeof(text), "%d\n%d\n", (int)getpid(), (int)child);
	rc = put(dir, "pids", text, O_APPEND, false);
	snprintf(name, sizeof(name), "pid.%d", rank);
	snprintf(text, sizeof(text), "%d\n", (int)getpid());
	return rc < 0 ? rc : put(dir, name, text, O_TRUNC, true);
}

struct watch {
	struct world *w;
	const char *dir;
};

/*
 * Rank 7's watcher: the handlers set held.0 and held.1 when they hold both
 * calls; then the registry must hold the four waits beside the deaths
 * watch that each rank's libworld keeps there.
 */
static void *
watch(void *arg)
{
	const char *keys[] = { "held.0", "held.1" };
	struct watch *wt = arg;
	int64_t deadline = wr_clock_ms() + T;

	if (world_kv_wait(wt->w, keys, 2, T) < 0) {
		return NULL;
	}
	while (pending(wt->w) != RANKS + 4) {
		if (wr_clock_ms() > deadline) {
			fprintf(stderr, "prog-storm: the registry holds %lld waits, "
				"not %d\n", (long long)pending(wt->w), RANKS + 4);
			return NULL;
		}
		pause_ms(10);
	}
	put(wt->dir, "ready", world_jobid(wt->w), O_TRUNC, true);
	return NULL;
}

/* Ranks 0 and 1, once the group is set up: both calls, then the get. */
static int
serve(struct world *w)
{
	char key[32];
	void *val = NULL;
	size_t len = 0;
	int64_t deadline = wr_clock_ms() + T;
	int rc;

	while (__atomic_load_n(&arrived, __ATOMIC_SEQ_CST) < 2) {
		if (wr_clock_ms() > deadline) {
			return -ETIMEDOUT;
		}
		pause_ms(10);
	}
	snprintf(key, sizeof(key), "held.%d", world_rank(w));
	rc = world_kv_set(w, key, "1", 1);
	if (rc == 0) {
		rc = world_kv_get(w, "nobody.sets.this", &val, &len, T);
		free(val);
	}
	return rc;
}

/* What rank @rank holds until the fault. */
static int
hold_on(struct world *w, struct world_group *g, const char *dir)
{
	struct watch wt = { w, dir };
	pthread_t watcher;
	int rank = world_rank(w), rc;

	if (rank < 2) {
		return serve(w);
	}
	if (rank < 6) {
		return world_call(g, rank < 4 ? "hold.0" : "hold.1", NULL, NULL, 0, T,
				  NULL, NULL, NULL);
	}
	if (rank == 7 && pthread_create(&watcher, NULL, watch, &wt) != 0) {
		return -EAGAIN;
	}
	rc = world_barrier(w, "never.complete", T);
	if (rank == 7) {
		pthread_join(watcher, NULL);
	}
	return rc;
}

int
main(int argc, char **argv)
{
	const char *members[RANKS] = { "0", "1", "2", "3", "4", "5", "6", "7" };
	const char *dir = argc == 2 ? argv[1] : NULL;
	pid_t child = dir != NULL ? start_child() : -1;
	struct world_group *g = NULL;
	struct world *w = NULL;
	char name[16];
	void *val = NULL;
	size_t len = 0;
	int rc = child < 0 ? -EINVAL : world_open(&w);

	if (rc < 0 || world_size(w) != RANKS) {
		fprintf(stderr, "usage: worldrun -n 8 prog-storm DIR (%s)\n",
			world_strerror(rc));
		world_abort(w);
		return 2;
	}
	rc = record_pids(dir, world_rank(w), child);
	if (rc == 0) {
		rc = world_group_create(w, "storm", members, RANKS, T, &g);
	}
	snprintf(name, sizeof(name), "hold.%d", world_rank(w));
	if (rc == 0 && world_rank(w) < 2) {
		rc = world_register(g, name, hold_call, &arrived, 0);
	}
	if (rc == 0) {
		rc = world_group_barrier(g, T);
	}
	if (rc == 0) {
		rc = hold_on(w, g, dir);
	}
	fprintf(stderr, "rank %d: %s; waiting again\n", world_rank(w), world_err_name(rc));
	world_kv_get(w, "nobody.sets.this.either", &val, &len, T);
	free(val);
	world_abort(w);
	return 1;
}
