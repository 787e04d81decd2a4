/* SPDX-License-Identifier: MIT */
#include "resolve.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* 0 if @p is an executable file; -ENOENT if absent; -EACCES otherwise. */
static int
check(const char *p)
{
	struct stat st;

	if (stat(p, &st) < 0) {
		return errno == ENOENT || errno == ENOTDIR ? -ENOENT : -EACCES;
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
		if (r == -EACCES) {
			rc = -EACCES;
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
