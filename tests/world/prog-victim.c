/* SPDX-License-Identifier: MIT */
/*
 * prog-victim ROOM: for tests/cli/worldrun-limits.bats, a libworld rank
 * that others attack through its peer listener. It joins the job, keeps
 * its file limit at what it holds plus ROOM, sets the key victim.ready,
 * and waits (60 s at most) for victim.go, which the attacker sets while
 * it holds its connections. Then it prints how many more fds it holds
 * than before ("fds +N"), opens /dev/null 8 times ("opened K", K < 8 when
 * the fds ran out), sets victim.done and stops; the attacker, not being
 * a libworld rank, makes world_stop() fail, which is no failure here.
 * What libworld might write to stderr, the test reads from the job's.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include "world.h"

static int
count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	while (d != NULL && readdir(d) != NULL) {
		n++;
	}
	if (d != NULL) {
		closedir(d);
	}
	return n - 3; /* ".", ".." and the directory's own fd */
}

int
main(int argc, char **argv)
{
	struct world *w;
	struct rlimit rl;
	int before, opened = 0, fds[8];
	void *v;
	size_t len;
	int rc = argc == 2 ? world_open(&w) : -EINVAL;

	if (rc < 0) {
		fprintf(stderr, "prog-victim: %s\n", world_strerror(rc));
		return 2;
	}
	before = count_fds();
	getrlimit(RLIMIT_NOFILE, &rl);
	rl.rlim_cur = (rlim_t)(before + atoi(argv[1]));
	setrlimit(RLIMIT_NOFILE, &rl);
	rc = world_kv_set(w, "victim.ready", "1", 1);
	if (rc == 0) {
		rc = world_kv_get(w, "victim.go", &v, &len, 60000);
	}
	if (rc < 0) {
		fprintf(stderr, "prog-victim: %s\n", world_strerror(rc));
		world_stop(w, 5000);
		return 1;
	}
	free(v);
	printf("fds +%d\n", count_fds() - before);
	for (; opened < 8; opened++) {
		fds[opened] = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (fds[opened] < 0) {
			break;
		}
	}
	printf("opened %d\n", opened);
	fflush(stdout);
	while (opened > 0) {
		close(fds[--opened]);
	}
	rc = world_kv_set(w, "victim.done", "1", 1);
	world_stop(w, 1000);
	return rc < 0;
}
