/* SPDX-License-Identifier: MIT */
#include "rundir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * The entry's schema, for json_pack() and json_unpack() in that order:
 * jobid, pid, ranks, host, start, registry, secret, msg_max, blob_max,
 * program, argv, command.
 */
#define ENTRY_PACK "{s:s, s:I, s:i, s:s, s:f, s:s, s:s, s:I, s:I, s:s, s:O, s:s}"
#define ENTRY_UNPACK "{s:s, s:I, s:i, s:s, s:F, s:s, s:s, s:I, s:I, s:s, s:o, s:s}"

static int
open_dir_at(int at, const char *name)
{
	return openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* The parent to use: XDG_RUNTIME_DIR's fd and "worldrun", or TMP's and "worldrun-UID". */
static int
open_parent(struct wr_rundir *d, const char **name, char *buf, size_t len)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR"), *tmp = getenv("TMPDIR");
	struct stat st;
	int fd;

	if (xdg != NULL && xdg[0] == '/') {
		fd = open(xdg, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0 && fstat(fd, &st) == 0 && st.st_uid == geteuid() &&
		    (st.st_mode & 022) == 0) {
			snprintf(d->path, sizeof(d->path), "%s/worldrun", xdg);
			*name = "worldrun";
			return fd;
		}
		if (fd >= 0) {
			close(fd);
		}
	}
	if (tmp == NULL || tmp[0] != '/') {
		tmp = "/tmp";
	}
	snprintf(buf, len, "worldrun-%lu", (unsigned long)geteuid());
	if ((size_t)snprintf(d->path, sizeof(d->path), "%s/%s", tmp, buf) >=
	    sizeof(d->path)) {
		return -ENAMETOOLONG;
	}
	*name = buf;
	fd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* 0, or why directory @st may not hold our entries. */
static int
check_dir(const struct stat *st)
{
	if (!S_ISDIR(st->st_mode)) {
		return -ENOTDIR;
	}
	if (st->st_uid != geteuid()) {
		return -EPERM;
	}
	return (st->st_mode & 077) != 0 ? -EACCES : 0;
}

int
wr_rundir_open(struct wr_rundir *d, bool create)
{
	char buf[64];
	const char *name = NULL;
	struct stat st;
	int parent, fd, rc;

	*d = (struct wr_rundir){ 0 };
	parent = open_parent(d, &name, buf, sizeof(buf));
	if (parent < 0) {
		return parent;
	}
	if (create && mkdirat(parent, name, 0700) < 0 && errno != EEXIST) {
		rc = -errno;
		close(parent);
		return rc;
	}
	fd = open_dir_at(parent, name);
	rc = fd < 0 ? -errno : 0;
	/* O_DIRECTORY may say ENOTDIR of a symbolic link: tell which it is. */
	if (rc == -ENOTDIR && fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISLNK(st.st_mode)) {
		rc = -ELOOP;
	}
	close(parent);
	if (rc < 0) {
		return rc;
	}
	rc = fstat(fd, &st) < 0 ? -errno : check_dir(&st);
	close(fd);
	if (rc == 0) {
		d->dev = st.st_dev;
		d->ino = st.st_ino;
	}
	return rc;
}

const char *
wr_rundir_refusal(int rc)
{
	switch (rc) {
	case -ELOOP:
		return "it is a symbolic link";
	case -ENOTDIR:
		return "it is not a directory";
	case -EPERM:
		return "it belongs to another user";
	case -EACCES:
		return "group or others may access it (it must be 0700)";
	default:
		return strerror(-rc);
	}
}

/* The recorded directory, if its path still names it. */
static int
open_recorded(const struct wr_rundir *d)
{
	struct stat st;
	int fd, rc;

	if (d->path[0] == '\0' || d->dev == 0) {
		return -ENOENT;
	}
	fd = open(d->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		return -errno;
	}
	rc = fstat(fd, &st) < 0 ? -errno : check_dir(&st);
	if (rc == 0 && (st.st_dev != d->dev || st.st_ino != d->ino)) {
		rc = -ESTALE;
	}
	if (rc < 0) {
		close(fd);
		return rc;
	}
	return fd;
}

static bool
is_id(const char *s, size_t min)
{
	size_t n = strspn(s, "0123456789abcdef");

	return s[n] == '\0' && n >= min && n <= WR_RUNDIR_ID_LEN;
}

static int drop(const struct wr_rundir *d, const char *name);

/* Write @text into a new 0600 file @tmp of @dir; the caller renames it. */
static int
write_temp(int dir, const char *tmp, const char *text)
{
	int fd, rc;

	/* A temporary file that a killed worldrun left behind is ours. */
	unlinkat(dir, tmp, 0);
	fd = openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		return -errno;
	}
	/* dprintf() writes it all, or says it failed. */
	rc = fchmod(fd, 0600) < 0 || dprintf(fd, "%s\n", text) < 0 ? -errno : 0;
	if (close(fd) < 0 && rc == 0) {
		rc = -errno;
	}
	return rc;
}

/* @text into file @name of the directory, atomically: a temporary file,
 * then a rename over the name. */
static int
put_text(const struct wr_rundir *d, const char *name, const char *text)
{
	char tmp[NAME_MAX + 1];
	int dir = open_recorded(d), rc;

	if (dir < 0) {
		return dir;
	}
	rc = snprintf(tmp, sizeof(tmp), ".%s.tmp", name) >= (int)sizeof(tmp)
		? -ENAMETOOLONG : write_temp(dir, tmp, text);
	if (rc == 0 && renameat(dir, tmp, dir, name) < 0) {
		rc = -errno;
	}
	if (rc < 0) {
		unlinkat(dir, tmp, 0);
	}
	close(dir);
	return rc;
}

int
wr_rundir_write(const struct wr_rundir *d, const struct wr_rundir_entry *e)
{
	json_t *j;
	char *text;
	int rc;

	if (!is_id(e->jobid, WR_RUNDIR_ID_LEN)) {
		return -EINVAL;
	}
	j = json_pack(ENTRY_PACK, "jobid", e->jobid, "pid", (json_int_t)e->pid,
		      "ranks", e->ranks, "host", e->host, "start", e->start,
		      "registry", e->registry, "secret", e->secret,
		      "msg_max", (json_int_t)e->msg_max, "blob_max",
		      (json_int_t)e->blob_max, "program", e->program, "argv", e->argv,
		      "command", e->command);
	text = j != NULL ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	if (text == NULL) {
		return -ENOMEM;
	}
	rc = put_text(d, e->jobid, text);
	free(text);
	return rc;
}

int
wr_rundir_remove(const struct wr_rundir *d, const char *jobid)
{
	return is_id(jobid, WR_RUNDIR_ID_LEN) ? drop(d, jobid) : 0;
}

/* A name for a file of wr_rundir_put(): never a job's id, never hidden. */
static bool
is_name(const char *s)
{
	size_t n = strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789.-");

	return s[n] == '\0' && n > 0 && n <= 64 && s[0] != '.' &&
	       !is_id(s, WR_RUNDIR_ID_LEN);
}

int
wr_rundir_put(const struct wr_rundir *d, const char *name, const char *text)
{
	return is_name(name) ? put_text(d, name, text) : -EINVAL;
}

int
wr_rundir_drop(const struct wr_rundir *d, const char *name)
{
	return is_name(name) ? drop(d, name) : -EINVAL;
}

static int
drop(const struct wr_rundir *d, const char *name)
{
	struct stat st;
	int dir, rc = 0;

	if (d == NULL || d->path[0] == '\0') {
		return 0;
	}
	dir = open_recorded(d);
	if (dir < 0) {
		return dir == -ENOENT ? 0 : dir;
	}
	if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		rc = errno == ENOENT ? 0 : -errno;
	} else if (!S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
		rc = -ESTALE;
	} else if (unlinkat(dir, name, 0) < 0 && errno != ENOENT) {
		rc = -errno;
	}
	close(dir);
	return rc;
}

static int
by_id(const void *a, const void *b)
{
	return strcmp(a, b);
}

int
wr_rundir_list(const struct wr_rundir *d, char (**ids)[WR_RUNDIR_ID_LEN + 1],
	       size_t *n)
{
	char (*v)[WR_RUNDIR_ID_LEN + 1] = NULL;
	struct dirent *de;
	int fd = open_recorded(d);
	DIR *dir;

	*ids = NULL;
	*n = 0;
	if (fd < 0) {
		return fd;
	}
	dir = fdopendir(fd);
	if (dir == NULL) {
		int err = -errno;

		close(fd);
		return err;
	}
	while ((de = readdir(dir)) != NULL) {
		void *more;

		if (!is_id(de->d_name, WR_RUNDIR_ID_LEN)) {
			continue;
		}
		more = realloc(v, (*n + 1) * sizeof(*v));
		if (more == NULL) {
			free(v);
			closedir(dir);
			*n = 0;
			return -ENOMEM;
		}
		v = more;
		memcpy(v[(*n)++], de->d_name, WR_RUNDIR_ID_LEN + 1);
	}
	closedir(dir);
	if (*n > 0) {
		qsort(v, *n, sizeof(*v), by_id);
	}
	*ids = v;
	return 0;
}

int
wr_rundir_find(const struct wr_rundir *d, const char *prefix,
	       char id[WR_RUNDIR_ID_LEN + 1], char other[WR_RUNDIR_ID_LEN + 1])
{
	char (*ids)[WR_RUNDIR_ID_LEN + 1];
	size_t n, found = 0, len = strlen(prefix);
	int rc;

	if (!is_id(prefix, 1)) {
		return -ENOENT;
	}
	rc = wr_rundir_list(d, &ids, &n);
	if (rc < 0) {
		return rc;
	}
	for (size_t i = 0; i < n; i++) {
		if (strncmp(ids[i], prefix, len) == 0) {
			memcpy(found == 0 ? id : other, ids[i], WR_RUNDIR_ID_LEN + 1);
			if (++found == 2) {
				break;
			}
		}
	}
	free(ids);
	return found == 0 ? -ENOENT : found > 1 ? -ENOTUNIQ : 0;
}

/* The entry's text, from a regular file of ours that only we may read. */
static int
read_text(int dir, const char *jobid, char **text)
{
	struct stat st;
	ssize_t got = 0;
	int fd, rc;

	*text = NULL;
	fd = openat(dir, jobid, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		return errno == ELOOP ? -EPERM : -errno;
	}
	rc = fstat(fd, &st) < 0 ? -errno
	     : !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	       (st.st_mode & 077) != 0 ? -EPERM
	     : st.st_size > WR_RUNDIR_ENTRY_MAX ? -EFBIG : 0;
	if (rc == 0) {
		*text = malloc((size_t)st.st_size + 1);
		rc = *text == NULL ? -ENOMEM : 0;
	}
	while (rc == 0 && got < st.st_size) {
		ssize_t k = read(fd, *text + got, (size_t)(st.st_size - got));

		rc = k < 0 && errno != EINTR ? -errno : k == 0 ? -EBADMSG : 0;
		got += k > 0 ? k : 0;
	}
	close(fd);
	if (rc < 0) {
		free(*text);
		*text = NULL;
		return rc;
	}
	(*text)[got] = '\0';
	return 0;
}

int
wr_rundir_get(const struct wr_rundir *d, const char *name, char **text)
{
	int dir, rc;

	*text = NULL;
	if (!is_name(name)) {
		return -EINVAL;
	}
	dir = open_recorded(d);
	if (dir < 0) {
		return dir;
	}
	rc = read_text(dir, name, text);
	close(dir);
	return rc;
}

static bool
strings_only(const json_t *a)
{
	size_t i;
	json_t *v;

	if (!json_is_array(a)) {
		return false;
	}
	json_array_foreach(a, i, v) {
		if (!json_is_string(v)) {
			return false;
		}
	}
	return true;
}

static int
parse(const char *text, const char *jobid, struct wr_rundir_entry *e)
{
	json_int_t pid, msg_max, blob_max;
	json_error_t jerr;

	e->json = json_loads(text, 0, &jerr);
	if (e->json == NULL ||
	    json_unpack_ex(e->json, &jerr, 0, ENTRY_UNPACK, "jobid", &e->jobid, "pid",
			   &pid, "ranks", &e->ranks, "host", &e->host, "start",
			   &e->start, "registry", &e->registry, "secret", &e->secret,
			   "msg_max", &msg_max, "blob_max", &blob_max, "program",
			   &e->program, "argv", &e->argv, "command", &e->command) < 0 ||
	    strcmp(e->jobid, jobid) != 0 || pid <= 0 || pid > INT_MAX || e->ranks <= 0 ||
	    msg_max <= 0 || blob_max < 0 || !strings_only(e->argv)) {
		return -EBADMSG;
	}
	e->pid = (long)pid;
	e->msg_max = (long)msg_max;
	e->blob_max = (long)blob_max;
	return 0;
}

int
wr_rundir_read(const struct wr_rundir *d, const char *jobid, struct wr_rundir_entry *e)
{
	char *text;
	int dir, rc;

	*e = (struct wr_rundir_entry){ 0 };
	if (!is_id(jobid, WR_RUNDIR_ID_LEN)) {
		return -ENOENT;
	}
	dir = open_recorded(d);
	if (dir < 0) {
		return dir;
	}
	rc = read_text(dir, jobid, &text);
	close(dir);
	if (rc == 0) {
		rc = parse(text, jobid, e);
		free(text);
	}
	if (rc < 0) {
		wr_rundir_entry_finish(e);
	}
	return rc;
}

void
wr_rundir_entry_finish(struct wr_rundir_entry *e)
{
	if (e == NULL) {
		return;
	}
	json_decref(e->json);
	*e = (struct wr_rundir_entry){ 0 };
}
