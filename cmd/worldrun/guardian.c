/* SPDX-License-Identifier: MIT */
#include "guardian.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/*
 * A message is one byte of kind, then a pid (4 bytes) or a path (2-byte
 * length and the bytes). Messages are written whole (short ones are
 * atomic on a pipe) and read with a buffered reader.
 */
enum { MSG_WATCH = 'W', MSG_FORGET = 'F', MSG_REMOVE = 'R' };

struct book {
	pid_t *pgids;
	size_t n;
	size_t cap;
	char **paths;
	size_t npaths;
};

static int
read_full(int fd, void *p, size_t len)
{
	char *c = p;

	while (len > 0) {
		ssize_t n = read(fd, c, len);

		if (n < 0 && errno == EINTR) {
			continue;
		}
		if (n <= 0) {
			return -1;
		}
		c += n;
		len -= (size_t)n;
	}
	return 0;
}

static void
book_add(struct book *b, pid_t pgid)
{
	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 256;
		pid_t *p = realloc(b->pgids, cap * sizeof(*p));

		if (p == NULL) {
			return;
		}
		b->pgids = p;
		b->cap = cap;
	}
	b->pgids[b->n++] = pgid;
}

static void
book_forget(struct book *b, pid_t pgid)
{
	for (size_t i = 0; i < b->n; i++) {
		if (b->pgids[i] == pgid) {
			b->pgids[i] = b->pgids[--b->n];
			return;
		}
	}
}

static void
book_path(struct book *b, int fd)
{
	uint16_t len;
	char *path, **v;

	if (read_full(fd, &len, sizeof(len)) < 0) {
		return;
	}
	path = calloc(1, (size_t)len + 1);
	v = realloc(b->paths, (b->npaths + 1) * sizeof(*v));
	if (path == NULL || v == NULL || read_full(fd, path, len) < 0) {
		free(path);
		b->paths = v != NULL ? v : b->paths;
		return;
	}
	b->paths = v;
	b->paths[b->npaths++] = path;
}

static void __attribute__((noreturn))
guard(int fd)
{
	struct book b = { 0 };
	unsigned char kind;
	pid_t pid;

	for (;;) {
		if (read_full(fd, &kind, 1) < 0) {
			break;
		}
		if (kind == MSG_REMOVE) {
			book_path(&b, fd);
			continue;
		}
		if (read_full(fd, &pid, sizeof(pid)) < 0) {
			break;
		}
		if (kind == MSG_WATCH) {
			book_add(&b, pid);
		} else if (kind == MSG_FORGET) {
			book_forget(&b, pid);
		}
	}
	/* worldrun is gone. SIGCONT too, or a stopped group would linger. */
	for (size_t i = 0; i < b.n; i++) {
		kill(-b.pgids[i], SIGKILL);
		kill(-b.pgids[i], SIGCONT);
	}
	for (size_t i = 0; i < b.npaths; i++) {
		if (rmdir(b.paths[i]) < 0) {
			unlink(b.paths[i]);
		}
	}
	_exit(0);
}

static void __attribute__((noreturn))
child(int fd)
{
	struct sigaction ign = { .sa_handler = SIG_IGN };
	sigset_t none;
	int null;

	for (int sig = 1; sig < NSIG; sig++) {
		if (sig != SIGKILL && sig != SIGSTOP && sig != SIGCHLD) {
			sigaction(sig, &ign, NULL);
		}
	}
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* Its own session: a kill of worldrun's process group spares it. */
	setsid();
	if (fd != 3 && dup2(fd, 3) < 0) {
		_exit(1);
	}
	syscall(SYS_close_range, 4U, ~0U, 0);
	/* Holding worldrun's stdout would keep a reader of it waiting. */
	null = open("/dev/null", O_RDWR);
	for (int i = 0; i < 3 && null >= 0; i++) {
		dup2(null, i);
	}
	if (chdir("/") < 0) {
		/* Paths it removes are absolute. */
	}
	guard(3);
}

int
wr_guardian_open(struct wr_guardian *g)
{
	int p[2];
	pid_t pid;

	*g = (struct wr_guardian){ .pid = -1, .fd = -1 };
	if (pipe2(p, O_CLOEXEC) < 0) {
		return -errno;
	}
	pid = fork();
	if (pid < 0) {
		int err = -errno;

		close(p[0]);
		close(p[1]);
		return err;
	}
	if (pid == 0) {
		close(p[1]);
		child(p[0]);
	}
	close(p[0]);
	g->pid = pid;
	g->fd = p[1];
	return 0;
}

static int
send_msg(struct wr_guardian *g, const void *msg, size_t len)
{
	if (g->fd < 0) {
		return -EBADF;
	}
	for (;;) {
		ssize_t n = write(g->fd, msg, len);

		if (n == (ssize_t)len) {
			return 0;
		}
		if (n < 0 && errno == EINTR) {
			continue;
		}
		return n < 0 ? -errno : -EIO;
	}
}

static int
send_pid(struct wr_guardian *g, unsigned char kind, pid_t pgid)
{
	unsigned char msg[1 + sizeof(pid_t)];

	msg[0] = kind;
	memcpy(msg + 1, &pgid, sizeof(pgid));
	return send_msg(g, msg, sizeof(msg));
}

int
wr_guardian_watch(struct wr_guardian *g, pid_t pgid)
{
	return send_pid(g, MSG_WATCH, pgid);
}

int
wr_guardian_forget(struct wr_guardian *g, pid_t pgid)
{
	return send_pid(g, MSG_FORGET, pgid);
}

int
wr_guardian_remove(struct wr_guardian *g, const char *path)
{
	unsigned char msg[1 + 2 + PIPE_BUF];
	size_t len = strlen(path);
	uint16_t l16 = (uint16_t)len;

	if (len + 3 > PIPE_BUF) {
		return -ENAMETOOLONG;
	}
	msg[0] = MSG_REMOVE;
	memcpy(msg + 1, &l16, 2);
	memcpy(msg + 3, path, len);
	return send_msg(g, msg, len + 3);
}

void
wr_guardian_close(struct wr_guardian *g)
{
	if (g == NULL) {
		return;
	}
	if (g->fd >= 0) {
		close(g->fd);
		g->fd = -1;
	}
	for (;;) {
		if (g->pid <= 0 || waitpid(g->pid, NULL, 0) >= 0 || errno != EINTR) {
			break;
		}
	}
	g->pid = -1;
}
