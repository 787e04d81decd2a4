/* SPDX-License-Identifier: MIT */
/*
 * forkexec N [PROG]: the launch floor. Fork and exec N copies of PROG
 * (default /bin/true, no arguments) all at once, then reap them all.
 * Nothing else: no pipes, no environment, no signals, so its wall time is
 * what the kernel alone charges for N processes. Exits 0 when every copy
 * exited 0, 1 otherwise.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int
start_copies(long count, char *prog)
{
	char *args[] = { prog, NULL };

	for (long i = 0; i < count; i++) {
		pid_t pid = fork();

		if (pid < 0) {
			fprintf(stderr, "forkexec: fork: %s\n", strerror(errno));
			return -1;
		}
		if (pid == 0) {
			execv(prog, args);
			_exit(127);
		}
	}
	return 0;
}

/* Reaps every child; returns how many did not exit 0. */
static long
reap_all(void)
{
	long failed = 0;
	int status;

	for (;;) {
		pid_t pid = wait(&status);

		if (pid < 0) {
			if (errno == EINTR) {
				continue;
			}
			break;
		}
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			failed++;
		}
	}
	return failed;
}

int
main(int argc, char **argv)
{
	char *prog = "/bin/true";
	char *end;
	long count;
	int started;

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: forkexec N [PROG]\n");
		return 2;
	}
	count = strtol(argv[1], &end, 10);
	if (*end != '\0' || count < 1 || count > 100000) {
		fprintf(stderr, "forkexec: N must be 1..100000\n");
		return 2;
	}
	if (argc == 3) {
		prog = argv[2];
	}
	started = start_copies(count, prog);
	/* Reap what did start even when a fork failed, so nothing is left. */
	if (reap_all() > 0 || started < 0) {
		return 1;
	}
	return 0;
}
