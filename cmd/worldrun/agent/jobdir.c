/* SPDX-License-Identifier: MIT */
#include "jobdir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* A job directory younger than this is never swept: it may be between
 * its mkdtemp() and its lock. */
#define SWEEP_AGE 5

static void sweep(const char *tmp);

int
wr_jobdir_make(struct wr_jobdir *d, const char *tmp, const char *jobid)
{
	char cwd[PATH_MAX] = "";
	struct stat st;
	int n, fd, err;

	*d = (struct wr_jobdir){ 0 };
	/*
	 * An absolute path: ranks in another --wdir reach the socket in it,
	 * and the guardian, which works from "/", removes it.
	 */
	if (tmp[0] != '/' && getcwd(cwd, sizeof(cwd) - 1) == NULL) {
		return -errno;
	}
	if (cwd[0] != '\0' && strcmp(cwd, "/") != 0) {
		strcat(cwd, "/");
	}
	n = snprintf(d->path, sizeof(d->path), "%s%s/worldrun-%s-XXXXXX", cwd, tmp,
		     jobid);
	if (n < 0 || (size_t)n >= sizeof(d->path)) {
		d->path[0] = '\0';
		return -ENAMETOOLONG;
	}
	sweep(tmp);
	if (mkdtemp(d->path) == NULL) {
		err = -errno;
		d->path[0] = '\0';
		return err;
	}
	/* 0700 whatever the umask: removal checks the mode. The fd stays
	 * open, locked, for the job's life. */
	fd = open(d->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fchmod(fd, 0700) < 0 || fstat(fd, &st) < 0 ||
	    flock(fd, LOCK_EX | LOCK_NB) < 0) {
		err = -errno;
		if (fd >= 0) {
			close(fd);
		}
		rmdir(d->path);
		d->path[0] = '\0';
		return err;
	}
	d->lock = fd;
	d->dev = st.st_dev;
	d->ino = st.st_ino;
	return 0;
}

void
wr_jobdir_release(struct wr_jobdir *d)
{
	if (d != NULL && d->lock > 2) {
		close(d->lock);
		d->lock = 0;
	}
}

/* Whether @name is a job directory's: worldrun-<12 hex>-<6 of mkdtemp>. */
static bool
job_dir_name(const char *name)
{
	return strncmp(name, "worldrun-", 9) == 0 && strlen(name) == 9 + 12 + 1 + 6 &&
	       strspn(name + 9, "0123456789abcdef") == 12 && name[21] == '-';
}

/*
 * Remove our job directories in @tmp that nobody holds: their agent and
 * guardian were killed together. Each is locked while it is looked at,
 * so two sweepers never remove one twice; what fails is left for later.
 */
static void
sweep(const char *tmp)
{
	DIR *dir = opendir(tmp);
	struct dirent *e;
	time_t now = time(NULL);

	while (dir != NULL && (e = readdir(dir)) != NULL) {
		struct wr_jobdir old = { 0 };
		struct stat st;
		int fd;

		if (!job_dir_name(e->d_name) ||
		    (fd = openat(dirfd(dir), e->d_name,
				 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
			continue;
		}
		if (fstat(fd, &st) == 0 && st.st_uid == geteuid() &&
		    (st.st_mode & 07777) == 0700 && now - st.st_mtime >= SWEEP_AGE &&
		    flock(fd, LOCK_EX | LOCK_NB) == 0 &&
		    (size_t)snprintf(old.path, sizeof(old.path), "%s/%s", tmp, e->d_name) <
			    sizeof(old.path)) {
			old.dev = st.st_dev;
			old.ino = st.st_ino;
			wr_jobdir_remove(&old);
		}
		close(fd);
	}
	if (dir != NULL) {
		closedir(dir);
	}
}

static int
open_dir_at(int at, const char *name)
{
	return openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

static int
first_error(int rc, int more)
{
	return rc < 0 ? rc : more;
}

static int empty_dir(int fd, dev_t dev, int depth);

/*
 * Remove entry @name of directory @at. unlinkat() without AT_REMOVEDIR
 * comes first: it removes anything but a directory, a symbolic link as a
 * link, with no window between a look and the act. Only what it calls a
 * directory is opened, without following a link that may have been put
 * in its place since, and emptied if it is on our file system.
 */
static int
remove_entry(int at, const char *name, dev_t dev, int depth)
{
	struct stat st;
	int fd, rc;

	if (unlinkat(at, name, 0) == 0 || errno == ENOENT) {
		return 0;
	}
	if (errno != EISDIR) {
		return -errno;
	}
	if (depth >= WR_JOBDIR_DEPTH) {
		return -ELOOP;
	}
	fd = open_dir_at(at, name);
	if (fd < 0) {
		return errno == ENOENT ? 0 : -errno;
	}
	rc = fstat(fd, &st) < 0 ? -errno : st.st_dev != dev ? -EXDEV : 0;
	if (rc < 0) {
		close(fd);
		return rc;
	}
	rc = empty_dir(fd, dev, depth + 1);
	if (unlinkat(at, name, AT_REMOVEDIR) < 0 && errno != ENOENT) {
		rc = first_error(rc, -errno);
	}
	return rc;
}

/* Remove what directory @fd holds; @fd is closed. */
static int
empty_dir(int fd, dev_t dev, int depth)
{
	DIR *dir = fdopendir(fd);
	struct dirent *e;
	int rc = 0;

	if (dir == NULL) {
		rc = -errno;
		close(fd);
		return rc;
	}
	while ((e = readdir(dir)) != NULL) {
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
			rc = first_error(rc, remove_entry(dirfd(dir), e->d_name, dev,
							  depth));
		}
	}
	closedir(dir);
	return rc;
}

/* @st is the directory that was made, and still ours alone. */
static bool
is_ours(const struct wr_jobdir *d, const struct stat *st)
{
	return S_ISDIR(st->st_mode) && st->st_dev == d->dev && st->st_ino == d->ino &&
	       st->st_uid == geteuid() && (st->st_mode & 07777) == 0700;
}

static int
remove_in(int parent, const struct wr_jobdir *d, const char *name)
{
	struct stat st;
	int fd = open_dir_at(parent, name), rc;

	if (fd < 0) {
		return errno == ENOENT ? 0 : -errno;
	}
	rc = fstat(fd, &st) < 0 ? -errno : !is_ours(d, &st) ? -ESTALE : 0;
	if (rc < 0) {
		close(fd);
		return rc;
	}
	rc = empty_dir(fd, d->dev, 0);
	/* The name may have been moved onto another directory meanwhile. */
	if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		return errno == ENOENT ? rc : first_error(rc, -errno);
	}
	if (!is_ours(d, &st)) {
		return first_error(rc, -ESTALE);
	}
	if (unlinkat(parent, name, AT_REMOVEDIR) < 0 && errno != ENOENT) {
		rc = first_error(rc, -errno);
	}
	return rc;
}

int
wr_jobdir_remove(const struct wr_jobdir *d)
{
	char parent[PATH_MAX];
	const char *slash;
	int fd, rc;

	if (d == NULL || d->path[0] == '\0') {
		return 0;
	}
	/* A made path is TMP/worldrun-...; its parent "/" when TMP is "". */
	slash = strrchr(d->path, '/');
	if (slash == NULL) {
		return -EINVAL;
	}
	snprintf(parent, sizeof(parent), "%.*s",
		 slash > d->path ? (int)(slash - d->path) : 1, d->path);
	fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		return errno == ENOENT ? 0 : -errno;
	}
	rc = remove_in(fd, d, slash + 1);
	close(fd);
	return rc;
}
