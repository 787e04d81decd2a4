/* SPDX-License-Identifier: MIT */
#include "guardian.h"
#include "jobdir.h"
#include "procinfo.h"
#include "rundir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/*
 * On the pipe, a message is 'D', the directory's device and inode (8
 * bytes each), a 2-byte length and its path: a job directory to remove;
 * or 'E', the same of the runtime directory, then the job id
 * (WR_RUNDIR_ID_LEN bytes): the job's entry in it to remove. Process
 * groups are not sent: they are in the shared slot table.
 */
enum { MSG_JOBDIR = 'D', MSG_ENTRY = 'E', MSG_SHM = 'S' };

/* How long the guardian waits for the groups it killed to go before its
 * second look for their /dev/shm entries. */
#define GONE_WAIT_MS 2000
/* Where POSIX shared memory lives (shm_open names). */
#define SHM_DIR "/dev/shm"

struct entry {
	struct wr_rundir dir;
	char jobid[WR_RUNDIR_ID_LEN + 1];
};

struct book {
	struct wr_jobdir *dirs;
	size_t ndirs;
	struct entry *entries;
	size_t nentries;
	char (*shm)[WR_GUARDIAN_SHM_MAX + 1]; /* prefixes of /dev/shm names */
	size_t nshm;
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

/* A directory's device, inode and path; -1 if the pipe broke mid-message. */
static int
read_dir(int fd, char *path, size_t size, uint64_t id[2])
{
	uint16_t len;

	if (read_full(fd, id, 2 * sizeof(*id)) < 0 || read_full(fd, &len, sizeof(len)) < 0 ||
	    len >= size || read_full(fd, path, len) < 0) {
		return -1;
	}
	path[len] = '\0';
	return 0;
}

/* Read one directory's message; -1 if the pipe broke mid-message. */
static int
book_dir(struct book *b, int fd)
{
	struct wr_jobdir d = { 0 };
	uint64_t id[2];
	struct wr_jobdir *v;

	if (read_dir(fd, d.path, sizeof(d.path), id) < 0) {
		return -1;
	}
	d.dev = (dev_t)id[0];
	d.ino = (ino_t)id[1];
	v = realloc(b->dirs, (b->ndirs + 1) * sizeof(*v));
	if (v != NULL) {
		b->dirs = v;
		b->dirs[b->ndirs++] = d;
	}
	return 0;
}

/* Read one entry's message; -1 if the pipe broke mid-message. */
static int
book_entry(struct book *b, int fd)
{
	struct entry e = { 0 };
	uint64_t id[2];
	struct entry *v;

	if (read_dir(fd, e.dir.path, sizeof(e.dir.path), id) < 0 ||
	    read_full(fd, e.jobid, WR_RUNDIR_ID_LEN) < 0) {
		return -1;
	}
	e.dir.dev = (dev_t)id[0];
	e.dir.ino = (ino_t)id[1];
	v = realloc(b->entries, (b->nentries + 1) * sizeof(*v));
	if (v != NULL) {
		b->entries = v;
		b->entries[b->nentries++] = e;
	}
	return 0;
}

/* Read one shared memory prefix; -1 if the pipe broke mid-message. */
static int
book_shm(struct book *b, int fd)
{
	unsigned char len;
	char prefix[WR_GUARDIAN_SHM_MAX + 1];
	char (*v)[WR_GUARDIAN_SHM_MAX + 1];

	if (read_full(fd, &len, 1) < 0 || len == 0 || len > WR_GUARDIAN_SHM_MAX ||
	    read_full(fd, prefix, len) < 0) {
		return -1;
	}
	prefix[len] = '\0';
	v = realloc(b->shm, (b->nshm + 1) * sizeof(*v));
	if (v != NULL) {
		b->shm = v;
		memcpy(b->shm[b->nshm++], prefix, (size_t)len + 1);
	}
	return 0;
}

/* Whether @pgid is one of the @n groups in @slots. */
static bool
slotted(const pid_t *slots, size_t n, pid_t pgid)
{
	for (size_t i = 0; i < n; i++) {
		if (__atomic_load_n(&slots[i], __ATOMIC_SEQ_CST) == pgid) {
			return true;
		}
	}
	return false;
}

/*
 * Whether every process of the groups in @slots has gone. A zombie counts
 * as gone: it does nothing more, and may stay for seconds (a rank's child
 * that outlived it, sh's command, goes to init, and a container's init
 * may reap late). So where a group is still there, one pass over /proc
 * looks for a process of it that is not a zombie.
 */
static bool
all_gone(const pid_t *slots, size_t nslots)
{
	struct wr_procinfo info;
	struct dirent *e;
	bool there = false;
	DIR *d;

	for (size_t i = 0; i < nslots && !there; i++) {
		pid_t pgid = __atomic_load_n(&slots[i], __ATOMIC_SEQ_CST);

		there = pgid > 0 && (kill(-pgid, 0) == 0 || errno != ESRCH);
	}
	d = there ? opendir("/proc") : NULL;
	if (d == NULL) {
		return !there;
	}
	there = false;
	while (!there && (e = readdir(d)) != NULL) {
		pid_t pid = (pid_t)strtol(e->d_name, NULL, 10);

		there = pid > 0 && wr_procinfo_read(pid, &info) == 0 && info.state != 'Z' &&
			info.state != 'X' && info.pgrp > 0 && slotted(slots, nslots, info.pgrp);
	}
	closedir(d);
	return !there;
}

/* Wait up to GONE_WAIT_MS for the killed groups to go. */
static void
wait_gone(const pid_t *slots, size_t nslots)
{
	struct timespec tick = { .tv_nsec = 10 * 1000000 };

	for (int t = 0; t < GONE_WAIT_MS / 10 && !all_gone(slots, nslots); t++) {
		nanosleep(&tick, NULL);
	}
}

/* Unlink every /dev/shm entry whose name starts with one of the prefixes:
 * libfabric's shm segments and our doorbells, however the ranks ended. */
static void
remove_shm(const struct book *b)
{
	DIR *d = b->nshm > 0 ? opendir(SHM_DIR) : NULL;
	struct dirent *e;

	if (d == NULL) {
		return;
	}
	while ((e = readdir(d)) != NULL) {
		for (size_t i = 0; i < b->nshm; i++) {
			if (strncmp(e->d_name, b->shm[i], strlen(b->shm[i])) == 0) {
				unlinkat(dirfd(d), e->d_name, 0);
				break;
			}
		}
	}
	closedir(d);
}

static int
book(struct book *b, int fd, unsigned char kind)
{
	switch (kind) {
	case MSG_JOBDIR:
		return book_dir(b, fd);
	case MSG_ENTRY:
		return book_entry(b, fd);
	case MSG_SHM:
		return book_shm(b, fd);
	default:
		return -1;
	}
}

static void __attribute__((noreturn))
guard(int fd, const pid_t *slots, size_t nslots)
{
	struct book b = { 0 };
	unsigned char kind;

	for (;;) {
		if (read_full(fd, &kind, 1) < 0) {
			break;
		}
		if (book(&b, fd, kind) < 0) {
			break;
		}
	}
	/* worldrun is gone. SIGCONT too, or a stopped group would linger. */
	for (size_t i = 0; i < nslots; i++) {
		pid_t pgid = __atomic_load_n(&slots[i], __ATOMIC_SEQ_CST);

		if (pgid > 0) {
			kill(-pgid, SIGKILL);
			kill(-pgid, SIGCONT);
		}
	}
	/* The entry first: it points at the registry in the directory. */
	for (size_t i = 0; i < b.nentries; i++) {
		wr_rundir_remove(&b.entries[i].dir, b.entries[i].jobid);
	}
	for (size_t i = 0; i < b.ndirs; i++) {
		wr_jobdir_remove(&b.dirs[i]);
	}
	remove_shm(&b);
	/* A rank killed in the middle of creating a segment may add it after
	 * that pass: once the groups are gone (or a while has passed), look
	 * again. */
	wait_gone(slots, nslots);
	remove_shm(&b);
	_exit(0);
}

static void __attribute__((noreturn))
child(int fd, const pid_t *slots, size_t nslots)
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
		/* The job directory's path is absolute (see jobdir.h). */
	}
	guard(3, slots, nslots);
}

static size_t
table_bytes(size_t nslots)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return (nslots * sizeof(pid_t) + page - 1) / page * page;
}

int
wr_guardian_open(struct wr_guardian *g, size_t nslots)
{
	void *table;
	int p[2];
	pid_t pid;

	*g = (struct wr_guardian){ .pid = -1, .fd = -1 };
	/* Shared, not copied, across fork: what ranks write, it reads. */
	table = mmap(NULL, table_bytes(nslots ? nslots : 1), PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (table == MAP_FAILED) {
		return -errno;
	}
	if (pipe2(p, O_CLOEXEC) < 0) {
		int err = -errno;

		munmap(table, table_bytes(nslots ? nslots : 1));
		return err;
	}
	pid = fork();
	if (pid < 0) {
		int err = -errno;

		close(p[0]);
		close(p[1]);
		munmap(table, table_bytes(nslots ? nslots : 1));
		return err;
	}
	if (pid == 0) {
		close(p[1]);
		child(p[0], table, nslots);
	}
	close(p[0]);
	*g = (struct wr_guardian){ .pid = pid, .fd = p[1], .slots = table,
				   .nslots = nslots };
	return 0;
}

pid_t *
wr_guardian_slot(struct wr_guardian *g, size_t i)
{
	return g->slots != NULL && i < g->nslots ? &g->slots[i] : NULL;
}

static int
set_slot(struct wr_guardian *g, size_t i, pid_t pgid)
{
	if (g->fd < 0) {
		return -EBADF;
	}
	if (i >= g->nslots) {
		return -ERANGE;
	}
	__atomic_store_n(&g->slots[i], pgid, __ATOMIC_SEQ_CST);
	return 0;
}

int
wr_guardian_watch(struct wr_guardian *g, size_t i, pid_t pgid)
{
	return set_slot(g, i, pgid);
}

int
wr_guardian_forget(struct wr_guardian *g, size_t i)
{
	return set_slot(g, i, 0);
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

/*
 * Send message @kind about directory @path (@dev, @ino), with @tail
 * after it. One write of at most PIPE_BUF bytes: never interleaved,
 * never cut.
 */
static int
send_dir(struct wr_guardian *g, unsigned char kind, const char *path, dev_t dev,
	 ino_t ino, const char *tail)
{
	unsigned char msg[PIPE_BUF];
	uint64_t id[2] = { (uint64_t)dev, (uint64_t)ino };
	size_t len = strlen(path), tlen = strlen(tail);
	uint16_t l16 = (uint16_t)len;

	if (len + tlen + 1 + sizeof(id) + 2 > sizeof(msg)) {
		return -ENAMETOOLONG;
	}
	msg[0] = kind;
	memcpy(msg + 1, id, sizeof(id));
	memcpy(msg + 1 + sizeof(id), &l16, 2);
	memcpy(msg + 3 + sizeof(id), path, len);
	memcpy(msg + 3 + sizeof(id) + len, tail, tlen);
	return send_msg(g, msg, len + tlen + 3 + sizeof(id));
}

int
wr_guardian_remove_dir(struct wr_guardian *g, const struct wr_jobdir *d)
{
	return send_dir(g, MSG_JOBDIR, d->path, d->dev, d->ino, "");
}

int
wr_guardian_remove_entry(struct wr_guardian *g, const struct wr_rundir *d,
			 const char *jobid)
{
	if (strlen(jobid) != WR_RUNDIR_ID_LEN) {
		return -EINVAL;
	}
	return send_dir(g, MSG_ENTRY, d->path, d->dev, d->ino, jobid);
}

int
wr_guardian_remove_shm(struct wr_guardian *g, const char *prefix)
{
	unsigned char msg[2 + WR_GUARDIAN_SHM_MAX];
	size_t len = strlen(prefix);

	/* A prefix names files of this job only: no path, no empty match. */
	if (len < 4 || len > WR_GUARDIAN_SHM_MAX || strchr(prefix, '/') != NULL) {
		return -EINVAL;
	}
	msg[0] = MSG_SHM;
	msg[1] = (unsigned char)len;
	memcpy(msg + 2, prefix, len);
	return send_msg(g, msg, len + 2);
}

int
wr_guardian_remove_job_shm(struct wr_guardian *g, const char *jobid)
{
	char prefix[WR_GUARDIAN_SHM_MAX];

	snprintf(prefix, sizeof(prefix), "wr-%s", jobid);
	return wr_guardian_remove_shm(g, prefix);
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
	if (g->slots != NULL) {
		munmap(g->slots, table_bytes(g->nslots ? g->nslots : 1));
		g->slots = NULL;
	}
}
