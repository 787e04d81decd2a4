/* SPDX-License-Identifier: MIT */
/*
 * wr-probe: print facts about this process, one "key=value" per line:
 * pid, ppid, pgid, sid, fds (open fds, comma-separated), blocked (blocked
 * signal numbers), ignored (ignored signal numbers), tty0/tty1/tty2
 * (isatty), stdin (what fd 0 points to), cwd, nofile (soft limit).
 */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static void
print_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	const char *sep = "";

	printf("fds=");
	while (d != NULL && (e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.' || atoi(e->d_name) == dirfd(d)) {
			continue;
		}
		printf("%s%s", sep, e->d_name);
		sep = ",";
	}
	printf("\n");
	if (d != NULL) {
		closedir(d);
	}
}

static void
print_signals(void)
{
	sigset_t set;
	const char *sep = "";

	sigprocmask(SIG_BLOCK, NULL, &set);
	printf("blocked=");
	for (int s = 1; s < NSIG; s++) {
		if (sigismember(&set, s) == 1) {
			printf("%s%d", sep, s);
			sep = ",";
		}
	}
	printf("\nignored=");
	sep = "";
	for (int s = 1; s < NSIG; s++) {
		struct sigaction sa;

		if (sigaction(s, NULL, &sa) == 0 && sa.sa_handler == SIG_IGN) {
			printf("%s%d", sep, s);
			sep = ",";
		}
	}
	printf("\n");
}

int
main(void)
{
	char path[4096];
	ssize_t n = readlink("/proc/self/fd/0", path, sizeof(path) - 1);
	struct rlimit rl;

	printf("pid=%d\nppid=%d\npgid=%d\nsid=%d\n", (int)getpid(), (int)getppid(),
	       (int)getpgid(0), (int)getsid(0));
	print_fds();
	print_signals();
	printf("tty0=%d\ntty1=%d\ntty2=%d\n", isatty(0), isatty(1), isatty(2));
	path[n > 0 ? n : 0] = '\0';
	printf("stdin=%s\n", path);
	printf("cwd=%s\n", getcwd(path, sizeof(path)) ? path : "?");
	getrlimit(RLIMIT_NOFILE, &rl);
	printf("nofile=%lld\n", (long long)rl.rlim_cur);
	return 0;
}
