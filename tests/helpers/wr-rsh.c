/* SPDX-License-Identifier: MIT */
/*
 * wr-rsh [-x] [-T] [-o OPT]... HOST COMMAND [ARGS...]: a stand-in for ssh,
 * as worldrun's --rsh (or Hydra's -launcher-exec) calls it, that runs
 * COMMAND on this machine; ssh's options are taken and ignored. Its
 * environment steers it:
 * - WR_RSH_LOG=FILE appends "HOST PID" to FILE first;
 * - WR_RSH_REFUSE=HOST makes it fail for HOST as ssh does for a host it
 *   cannot reach (a line on stderr, exit 255);
 * - WR_RSH_HANG=HOST makes it wait for HOST (at most an hour) without
 *   running anything, as ssh does for a host that drops its packets;
 * - WR_RSH_UNSHARE=1 runs COMMAND in new mount and UTS namespaces, with
 *   HOST as its host name and a /tmp and /dev/shm of its own, as on
 *   another host (root only), but the directories that WR_RSH_KEEP lists
 *   (':' between them) at their paths: where the binaries are, when they
 *   are under /tmp;
 * - WR_RSH_SHELL=1 runs the words joined with blanks as one line for
 *   sh -c, as sshd does (else they are exec'd as they are).
 * COMMAND gets what sshd would give it: SSH_CONNECTION set (to "wr-rsh
 * HOST", or to WR_RSH_CONNECTION if set) and no DISPLAY.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

static int
is(const char *var, const char *host)
{
	const char *v = getenv(var);

	return v != NULL && strcmp(v, host) == 0;
}

/* mkdir -p @path. */
static int
make_path(char *path)
{
	for (char *s = path + 1; *s != '\0'; s++) {
		if (*s == '/') {
			*s = '\0';
			if (mkdir(path, 0755) < 0 && errno != EEXIST) {
				return -1;
			}
			*s = '/';
		}
	}
	return mkdir(path, 0755) < 0 && errno != EEXIST ? -1 : 0;
}

/* The directories of WR_RSH_KEEP (8 at most), held open while /tmp is
 * replaced, then bound back at their paths. */
static int
keep(bool back, int fds[8], char *paths[8])
{
	for (int i = 0; i < 8 && paths[i] != NULL; i++) {
		char src[64];

		if (!back) {
			fds[i] = open(paths[i], O_PATH | O_DIRECTORY);
			if (fds[i] < 0) {
				return -1;
			}
			continue;
		}
		snprintf(src, sizeof(src), "/proc/self/fd/%d", fds[i]);
		if (make_path(paths[i]) < 0 || mount(src, paths[i], NULL, MS_BIND, NULL) < 0) {
			return -1;
		}
	}
	return 0;
}

/* A host of its own: its name, and private /tmp and /dev/shm. */
static int
other_host(const char *host)
{
	char *list = getenv("WR_RSH_KEEP") != NULL ? strdup(getenv("WR_RSH_KEEP")) : NULL;
	char *paths[9] = { 0 }, *save = NULL;
	int fds[8];
	int n = 0;

	for (char *p = list != NULL ? strtok_r(list, ":", &save) : NULL; p != NULL && n < 8;
	     p = strtok_r(NULL, ":", &save)) {
		paths[n++] = p;
	}
	if (unshare(CLONE_NEWNS | CLONE_NEWUTS) < 0 ||
	    mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    sethostname(host, strlen(host)) < 0 || keep(false, fds, paths) < 0 ||
	    mount("tmpfs", "/tmp", "tmpfs", 0, "mode=1777") < 0 ||
	    mount("tmpfs", "/dev/shm", "tmpfs", 0, "mode=1777") < 0 ||
	    keep(true, fds, paths) < 0) {
		fprintf(stderr, "wr-rsh: %s: unable to make a host: %s\n", host,
			strerror(errno));
		return -1;
	}
	free(list);
	return 0;
}

/* What sshd does with a command: one line, for the shell. */
static int
run_line(char **words)
{
	size_t n = 1;
	char *line, *p;

	for (char **w = words; *w != NULL; w++) {
		n += strlen(*w) + 1;
	}
	line = malloc(n);
	if (line == NULL) {
		return 255;
	}
	p = line;
	for (char **w = words; *w != NULL; w++) {
		p += sprintf(p, "%s%s", w == words ? "" : " ", *w);
	}
	execl("/bin/sh", "sh", "-c", line, (char *)NULL);
	fprintf(stderr, "wr-rsh: /bin/sh: %s\n", strerror(errno));
	return 127;
}

int
main(int argc, char **argv)
{
	const char *log = getenv("WR_RSH_LOG");
	const char *host;
	char conn[300];

	/* ssh's options, those with a value too. */
	while (argc > 1 && argv[1][0] == '-') {
		int skip = strchr("oplij", argv[1][1]) != NULL && argv[1][2] == '\0' ? 2 : 1;

		argc -= skip;
		argv += skip;
	}
	if (argc < 3) {
		fprintf(stderr, "usage: wr-rsh [-x] [-T] [-o OPT]... HOST COMMAND [ARGS...]\n");
		return 255;
	}
	host = argv[1];
	if (log != NULL) {
		FILE *f = fopen(log, "a");

		if (f != NULL) {
			fprintf(f, "%s %d\n", host, (int)getpid());
			fclose(f);
		}
	}
	if (is("WR_RSH_REFUSE", host)) {
		fprintf(stderr, "ssh: connect to host %s port 22: Connection refused\n", host);
		return 255;
	}
	if (is("WR_RSH_HANG", host)) {
		sleep(3600);
		return 255;
	}
	if (getenv("WR_RSH_UNSHARE") != NULL && other_host(host) < 0) {
		return 255;
	}
	snprintf(conn, sizeof(conn), "wr-rsh %s", host);
	if (getenv("WR_RSH_CONNECTION") != NULL) {
		snprintf(conn, sizeof(conn), "%s", getenv("WR_RSH_CONNECTION"));
	}
	if (setenv("SSH_CONNECTION", conn, 1) < 0 || unsetenv("DISPLAY") < 0) {
		return 255;
	}
	if (getenv("WR_RSH_SHELL") != NULL) {
		return run_line(argv + 2);
	}
	execvp(argv[2], argv + 2);
	fprintf(stderr, "wr-rsh: %s: %s\n", argv[2], strerror(errno));
	return 127;
}
