/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for jobdir: the directory is made 0700 and recorded; removal
 * takes whatever is in it (files, sockets, FIFOs, subdirectories), removes
 * symbolic links as links and leaves their targets, stops at the depth
 * bound, and leaves alone a path that now names another directory, one
 * whose mode changed, or a symbolic link.
 */
#include "jobdir.h"
#include "tap.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* The test's own scratch directory, made in main(). */
struct scratch {
	char root[64];
};

/* @dir/@name in @path (PATH_MAX bytes); "" if it does not fit. */
static char *
join(char *path, const char *dir, const char *name)
{
	int n = snprintf(path, PATH_MAX, "%s/%s", dir, name);

	if (n < 0 || n >= PATH_MAX) {
		path[0] = '\0';
	}
	return path;
}

static void
put_file(const char *dir, const char *name)
{
	char path[PATH_MAX];
	int fd;

	join(path, dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd >= 0) {
		close(fd);
	}
}

static bool
exists(const char *dir, const char *name)
{
	char path[PATH_MAX];
	struct stat st;

	return lstat(join(path, dir, name), &st) == 0;
}

/* A socket left bound at DIR/NAME, as a rank that never stopped leaves. */
static void
put_socket(const char *dir, const char *name)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int n = snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", dir, name);

	if (fd >= 0 && n > 0 && (size_t)n < sizeof(sa.sun_path)) {
		bind(fd, (struct sockaddr *)&sa, sizeof(sa));
		close(fd);
	}
}

static void
test_make(const struct scratch *s)
{
	struct wr_jobdir d;
	struct stat st;
	char prefix[128];
	mode_t old;

	snprintf(prefix, sizeof(prefix), "%s/worldrun-0123456789ab-", s->root);
	is_int(wr_jobdir_make(&d, s->root, "0123456789ab"), 0, "make: succeeds");
	ok(strncmp(d.path, prefix, strlen(prefix)) == 0 &&
		   strlen(d.path) == strlen(prefix) + 6,
	   "make: TMP/worldrun-JOBID-XXXXXX");
	ok(lstat(d.path, &st) == 0 && S_ISDIR(st.st_mode) &&
		   (st.st_mode & 07777) == 0700,
	   "make: a directory of mode 0700");
	ok(st.st_dev == d.dev && st.st_ino == d.ino, "make: records device and inode");
	is_int(wr_jobdir_remove(&d), 0, "remove: an empty directory");
	old = umask(0777);
	wr_jobdir_make(&d, s->root, "umask");
	umask(old);
	ok(lstat(d.path, &st) == 0 && (st.st_mode & 07777) == 0700 &&
		   wr_jobdir_remove(&d) == 0,
	   "make: mode 0700 under umask 0777 too, and removed");
	ok(lstat(d.path, &st) < 0 && errno == ENOENT, "remove: it is gone");
	is_int(wr_jobdir_remove(&d), 0, "remove: one already gone is no error");
	if (chdir(s->root) == 0) {
		wr_jobdir_make(&d, ".", "rel");
		chdir("/");
	}
	ok(strncmp(d.path, s->root, strlen(s->root)) == 0 && access(d.path, F_OK) == 0 &&
		   wr_jobdir_remove(&d) == 0 && access(d.path, F_OK) < 0,
	   "make: under a relative TMP, an absolute path, and removed from elsewhere");
	is_int(wr_jobdir_make(&d, "/nonexistent/dir", "x"), -ENOENT,
	       "make: -ENOENT under a missing directory");
	is_str(d.path, "", "make: a failed make leaves no path");
	is_int(wr_jobdir_remove(&d), 0, "remove: a directory never made is a no-op");
	is_int(wr_jobdir_remove(NULL), 0, "remove: accepts NULL");
}

static void
test_contents(const struct scratch *s)
{
	struct wr_jobdir d;
	char outside[PATH_MAX], sub[PATH_MAX], link[PATH_MAX];

	mkdir(join(outside, s->root, "outside"), 0700);
	put_file(outside, "precious");
	wr_jobdir_make(&d, s->root, "contents");
	put_file(d.path, "file");
	put_socket(d.path, "rank.0");
	mkfifo(join(sub, d.path, "fifo"), 0600);
	mkdir(join(sub, d.path, "sub"), 0700);
	put_file(sub, "deeper");
	/* Links to the outside, at the top and below: to a file, a directory. */
	symlink(join(sub, outside, "precious"), join(link, d.path, "to-file"));
	symlink(outside, join(link, d.path, "sub/to-dir"));
	ok(exists(d.path, "rank.0") && exists(d.path, "fifo") &&
		   exists(d.path, "sub/deeper") && exists(d.path, "to-file") &&
		   exists(d.path, "sub/to-dir"),
	   "contents: a socket, a FIFO, files, a subdirectory and links in place");
	is_int(wr_jobdir_remove(&d), 0, "contents: removal succeeds");
	ok(access(d.path, F_OK) < 0 && errno == ENOENT,
	   "contents: the directory is gone with all it held");
	ok(exists(outside, "precious"), "contents: the links' targets are untouched");
	unlink(sub);
	rmdir(outside);
}

/* @top/d/d/...: @levels of them, in @path; its length. */
static size_t
chain(char *path, size_t size, const char *top, int levels)
{
	size_t len = (size_t)snprintf(path, size, "%s", top);

	for (int i = 0; i < levels; i++) {
		len += (size_t)snprintf(path + len, size - len, "/d");
	}
	return len;
}

/* The chain of @levels directories in @top, with a file at the bottom. */
static void
nest(const char *top, int levels)
{
	char path[PATH_MAX];

	for (int i = 1; i <= levels; i++) {
		chain(path, sizeof(path), top, i);
		mkdir(path, 0700);
	}
	put_file(path, "bottom");
}

/* Remove the bottom of nest(@top, @levels): its file and last directory. */
static void
trim(const char *top, int levels)
{
	char path[PATH_MAX];
	size_t len = chain(path, sizeof(path), top, levels);

	snprintf(path + len, sizeof(path) - len, "/bottom");
	unlink(path);
	path[len] = '\0';
	rmdir(path);
}

static void
test_depth(const struct scratch *s)
{
	struct wr_jobdir d;

	wr_jobdir_make(&d, s->root, "depth");
	nest(d.path, WR_JOBDIR_DEPTH);
	is_int(wr_jobdir_remove(&d), 0, "depth: removes WR_JOBDIR_DEPTH levels down");
	ok(access(d.path, F_OK) < 0, "depth: all of it");
	wr_jobdir_make(&d, s->root, "depth");
	nest(d.path, WR_JOBDIR_DEPTH + 1);
	is_int(wr_jobdir_remove(&d), -ELOOP, "depth: -ELOOP one level further down");
	ok(exists(d.path, "d"), "depth: what holds the deepest level stays");
	trim(d.path, WR_JOBDIR_DEPTH + 1);
	is_int(wr_jobdir_remove(&d), 0, "depth: the rest goes once it is in reach");
}

static void
test_not_ours(const struct scratch *s)
{
	struct wr_jobdir d;
	char moved[PATH_MAX];

	wr_jobdir_make(&d, s->root, "moved");
	rename(d.path, join(moved, s->root, "moved-away"));
	mkdir(d.path, 0700);
	put_file(d.path, "keep");
	is_int(wr_jobdir_remove(&d), -ESTALE,
	       "not ours: -ESTALE when the path names another directory");
	ok(exists(d.path, "keep"), "not ours: the other directory is untouched");
	unlink(join(moved, d.path, "keep"));
	rmdir(d.path);
	join(moved, s->root, "moved-away");
	/* The path is now a link to the directory that was made. */
	symlink(moved, d.path);
	put_file(moved, "keep");
	ok(wr_jobdir_remove(&d) < 0 && exists(moved, "keep"),
	   "not ours: a symbolic link in its place is not followed");
	unlink(d.path);
	rename(moved, d.path);
	chmod(d.path, 0755);
	is_int(wr_jobdir_remove(&d), -ESTALE, "not ours: -ESTALE for mode 0755");
	ok(exists(d.path, "keep"), "not ours: its files stay");
	chmod(d.path, 0700);
	is_int(wr_jobdir_remove(&d), 0, "not ours: once back, it is removed");
}

/* A job directory @name in @root, made an hour ago (mtime), 0700, with a
 * file in it; its fd, locked if @held, else closed (-1). */
static int
old_job_dir(const char *root, const char *name, bool held)
{
	char path[PATH_MAX], file[PATH_MAX + 8];
	struct timespec t[2] = { { time(NULL) - 3600, 0 }, { time(NULL) - 3600, 0 } };
	int fd;

	snprintf(path, sizeof(path), "%s/%s", root, name);
	snprintf(file, sizeof(file), "%s/sock", path);
	mkdir(path, 0700);
	close(open(file, O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
	utimensat(AT_FDCWD, path, t, 0);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (held && flock(fd, LOCK_EX) == 0) {
		return fd;
	}
	close(fd);
	return -1;
}

/* A job directory nobody holds any more (its agent and guardian were
 * SIGKILLed together) is swept by the next one made in the same TMP;
 * one a live job holds, a fresh one, and other names are left. */
static void
test_sweep(struct scratch *s)
{
	char path[PATH_MAX];
	struct wr_jobdir d, held = { 0 }, fresh = { 0 };
	int fd = old_job_dir(s->root, "worldrun-0123456789ab-AAAAAA", true);

	old_job_dir(s->root, "worldrun-0123456789ab-BBBBBB", false);
	old_job_dir(s->root, "worldrun-notajobdir", false);
	wr_jobdir_make(&fresh, s->root, "fedcba987654");
	is_int(wr_jobdir_make(&d, s->root, "0123456789ab"), 0, "sweep: a new job directory");
	snprintf(path, sizeof(path), "%s/worldrun-0123456789ab-BBBBBB", s->root);
	ok(access(path, F_OK) < 0 && errno == ENOENT, "sweep: one nobody holds is removed");
	snprintf(path, sizeof(path), "%s/worldrun-0123456789ab-AAAAAA", s->root);
	ok(access(path, F_OK) == 0, "sweep: one a live job holds is left");
	ok(access(fresh.path, F_OK) == 0, "sweep: a fresh one is left, though nobody holds it");
	snprintf(path, sizeof(path), "%s/worldrun-notajobdir", s->root);
	ok(access(path, F_OK) == 0, "sweep: another name is left");
	/* Clean up: the held one as its job would, the rest by hand. */
	close(fd);
	snprintf(held.path, sizeof(held.path), "%s/worldrun-0123456789ab-AAAAAA", s->root);
	{
		struct stat st;

		stat(held.path, &st);
		held.dev = st.st_dev;
		held.ino = st.st_ino;
	}
	wr_jobdir_remove(&held);
	unlink(strcat(path, "/sock"));
	snprintf(path, sizeof(path), "%s/worldrun-notajobdir", s->root);
	rmdir(path);
	wr_jobdir_remove(&fresh);
	wr_jobdir_release(&fresh);
	wr_jobdir_remove(&d);
	wr_jobdir_release(&d);
}

int
main(void)
{
	struct scratch s = { "/tmp/wr-test-jobdir-XXXXXX" };

	if (mkdtemp(s.root) == NULL) {
		skip_all("mkdtemp failed");
	}
	plan(33);
	test_make(&s);
	test_contents(&s);
	test_depth(&s);
	test_not_ours(&s);
	test_sweep(&s);
	if (rmdir(s.root) < 0) {
		printf("# %s is left: %s\n", s.root, strerror(errno));
	}
	return done_testing();
}
