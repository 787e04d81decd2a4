/* SPDX-License-Identifier: MIT */
/*
 * wr-grandchild [-k] PIDFILE MODE: fork a grandchild that ignores SIGTERM,
 * SIGINT and SIGHUP and sleeps up to 300 s; append its pid and ours to
 * PIDFILE ("PID\n" each), then act by MODE: "sleep" (sleep 300 s),
 * "exit" (exit 0 at once) or "crash" (die by SIGSEGV). Without -k the
 * grandchild's stdin, stdout and stderr are /dev/null; with -k it keeps
 * ours open.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static void
grandchild(int keep)
{
	signal(SIGTERM, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	if (!keep) {
		int null = open("/dev/null", O_RDWR);

		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
	}
	sleep(300);
	_exit(0);
}

int
main(int argc, char **argv)
{
	int keep = argc > 1 && strcmp(argv[1], "-k") == 0;
	struct rlimit none = { 0, 0 };
	const char *path, *mode;
	char buf[64];
	pid_t pid;
	int fd;

	if (argc < 3 + keep) {
		fprintf(stderr, "usage: wr-grandchild [-k] PIDFILE sleep|exit|crash\n");
		return 2;
	}
	path = argv[1 + keep];
	mode = argv[2 + keep];
	pid = fork();
	if (pid < 0) {
		return 1;
	}
	if (pid == 0) {
		grandchild(keep);
	}
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
	snprintf(buf, sizeof(buf), "%d\n%d\n", (int)pid, (int)getpid());
	if (fd < 0 || write(fd, buf, strlen(buf)) < 0) {
		return 1;
	}
	close(fd);
	if (strcmp(mode, "exit") == 0) {
		return 0;
	}
	if (strcmp(mode, "crash") == 0) {
		setrlimit(RLIMIT_CORE, &none);
		/* A sanitizer's own SIGSEGV handler would exit 1 instead. */
		signal(SIGSEGV, SIG_DFL);
		raise(SIGSEGV);
	}
	sleep(300);
	return 0;
}
