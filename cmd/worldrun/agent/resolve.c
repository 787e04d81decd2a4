/* SPDX-License-Identifier: MIT */
#include "resolve.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "quote.h"

/* "@base/@dir/@name" with empty parts left out; @base is absolute. */
static char *
join(const char *base, const char *dir, size_t dirlen, const char *name)
{
	char *s = NULL;

	if (name[0] == '/') {
		return strdup(name);
	}
	if (dir != NULL && dirlen > 0 && dir[0] == '/') {
		base = "";
	}
	if (asprintf(&s, "%s%s%.*s%s%s", base, base[0] ? "/" : "", (int)dirlen,
		     dir != NULL ? dir : "", dirlen > 0 ? "/" : "", name) < 0) {
		return NULL;
	}
	return s;
}

/*
 * 0 if @p is an executable file; -ENOENT if absent; -EISDIR for a
 * directory; -EACCES otherwise.
 */
static int
check(const char *p)
{
	struct stat st;

	if (stat(p, &st) < 0) {
		return errno == ENOENT || errno == ENOTDIR ? -ENOENT : -EACCES;
	}
	if (S_ISDIR(st.st_mode)) {
		return -EISDIR;
	}
	if (!S_ISREG(st.st_mode) || access(p, X_OK) < 0) {
		return -EACCES;
	}
	return 0;
}

static char *
rank_cwd(const char *wdir)
{
	char *cwd = getcwd(NULL, 0);
	char *s;

	if (wdir == NULL || cwd == NULL) {
		return cwd;
	}
	s = join(cwd, wdir, strlen(wdir), "");
	free(cwd);
	if (s != NULL && strlen(s) > 1 && s[strlen(s) - 1] == '/') {
		s[strlen(s) - 1] = '\0';
	}
	return s;
}

static int
search_path(const char *prog, const char *path, const char *cwd, char **out)
{
	int rc = -ENOENT;

	for (const char *p = path;; p++) {
		const char *colon = strchrnul(p, ':');
		char *cand = join(cwd, p, (size_t)(colon - p), prog);
		int r;

		if (cand == NULL) {
			return -ENOMEM;
		}
		r = check(cand);
		if (r == 0) {
			*out = cand;
			return 0;
		}
		free(cand);
		/* execvp goes on after EACCES but reports it if nothing is found. */
		if (r == -EACCES || (r == -EISDIR && rc == -ENOENT)) {
			rc = r;
		}
		if (*colon == '\0') {
			return rc;
		}
		p = colon;
	}
}

int
wr_resolve(const char *prog, const char *path, const char *wdir, char **out)
{
	char *cwd = NULL;
	int rc;

	*out = NULL;
	if (prog[0] == '\0') {
		return -ENOENT;
	}
	errno = ENOMEM;
	cwd = rank_cwd(wdir);
	if (cwd == NULL) {
		return -errno;
	}
	if (strchr(prog, '/') != NULL) {
		char *cand = join(cwd, NULL, 0, prog);

		rc = cand == NULL ? -ENOMEM : check(cand);
		if (rc == 0) {
			*out = cand;
		} else {
			free(cand);
		}
	} else {
		rc = search_path(prog, path != NULL ? path : "/usr/bin:/bin", cwd, out);
	}
	free(cwd);
	return rc;
}

/*
 * The interpreter of a "#!" line, as the kernel reads it: the first
 * BINPRM_BUF_SIZE (256) bytes, the word after "#!" and any blanks. NULL
 * (and *err 0) when there is none: no such line, an empty one, or a file
 * we cannot read (then exec itself will say what is wrong).
 */
static char *
read_interp(const char *path, int *err)
{
	char buf[257];
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	char *start;

	*err = 0;
	if (fd >= 0) {
		close(fd);
	}
	if (n < 2 || buf[0] != '#' || buf[1] != '!') {
		return NULL;
	}
	buf[n] = '\0';
	start = buf + 2 + strspn(buf + 2, " \t");
	start[strcspn(start, " \t\n")] = '\0';
	if (start[0] == '\0') {
		return NULL;
	}
	start = strdup(start);
	*err = start == NULL ? -ENOMEM : 0;
	return start;
}

int
wr_resolve_interp(const char *path, const char *wdir, char **interp)
{
	char *cwd = NULL;
	char *name;
	char *full;
	int rc;

	*interp = NULL;
	name = read_interp(path, &rc);
	if (name == NULL) {
		return rc;
	}
	errno = ENOMEM;
	cwd = rank_cwd(wdir);
	full = cwd != NULL ? join(cwd, NULL, 0, name) : NULL;
	rc = full != NULL ? check(full) : -errno;
	free(full);
	free(cwd);
	if (rc == -ENOMEM || rc == 0) {
		free(name);
		return rc;
	}
	*interp = name;
	return rc;
}

/* An absolute @wdir, or 125 with why. */
static int
check_wdir(struct wr_resolved *r, const char *wdir, char *why, size_t size)
{
	char q[WR_QUOTE_MAX];
	struct stat st;
	char *cwd;
	int err = 0;

	if (wdir == NULL) {
		return 0;
	}
	if (stat(wdir, &st) < 0) {
		err = errno;
	} else if (!S_ISDIR(st.st_mode)) {
		err = ENOTDIR;
	} else if (access(wdir, R_OK | X_OK) < 0) {
		err = errno;
	}
	if (err == 0 && wdir[0] == '/') {
		r->wdir = strdup(wdir);
	} else if (err == 0) {
		cwd = getcwd(NULL, 0);
		if (cwd == NULL || asprintf(&r->wdir, "%s/%s", cwd, wdir) < 0) {
			r->wdir = NULL;
		}
		free(cwd);
	}
	if (err == 0 && r->wdir == NULL) {
		err = ENOMEM;
	}
	if (err != 0) {
		snprintf(why, size, "--wdir %s: %s", wr_quote(q, sizeof(q), wdir),
			 strerror(err));
		return 125;
	}
	return 0;
}

/* The interpreter of a "#!" script, checked before any rank starts. */
static int
check_interp(const struct wr_resolved *r, const char *prog, char *why, size_t size)
{
	char q[WR_QUOTE_MAX];
	char *interp = NULL;
	int rc = wr_resolve_interp(r->path, r->wdir, &interp);
	int status = rc == -ENOENT ? 127 : rc < 0 && rc != -ENOMEM ? 126 : 125;

	if (rc == 0) {
		return 0;
	}
	if (interp == NULL) {
		snprintf(why, size, "%s: %s", prog, strerror(-rc));
	} else if (rc == -ENOENT) {
		snprintf(why, size, "%s: its interpreter %s was not found", prog,
			 wr_quote(q, sizeof(q), interp));
	} else {
		snprintf(why, size, "%s: its interpreter %s cannot be executed: %s",
			 prog, wr_quote(q, sizeof(q), interp), strerror(-rc));
	}
	free(interp);
	return status;
}

static int
resolve_program(struct wr_resolved *r, const char *argv0, const char *path,
		char *why, size_t size)
{
	char q[WR_QUOTE_MAX];
	const char *prog = wr_quote(q, sizeof(q), argv0);
	int rc = wr_resolve(argv0, path, r->wdir, &r->path);

	if (rc == -ENOENT) {
		snprintf(why, size, "%s: program not found%s", prog,
			 strchr(argv0, '/') ? "" : " in the ranks' PATH");
		return 127;
	}
	if (rc == -EACCES || rc == -EISDIR) {
		snprintf(why, size, "%s: cannot be executed: %s", prog, strerror(-rc));
		return 126;
	}
	if (rc < 0) {
		snprintf(why, size, "%s: %s", prog, strerror(-rc));
		return 125;
	}
	return check_interp(r, prog, why, size);
}

int
wr_resolve_locate(struct wr_resolved *r, const char *argv0, const char *wdir,
		  const char *path, char *why, size_t size)
{
	int rc;

	*r = (struct wr_resolved){ 0 };
	rc = check_wdir(r, wdir, why, size);
	if (rc == 0) {
		rc = resolve_program(r, argv0, path, why, size);
	}
	return rc;
}
