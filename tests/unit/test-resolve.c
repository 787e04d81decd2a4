/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for resolve: finding the program in a temporary tree as a
 * rank in --wdir with its own PATH would (order, relative and empty PATH
 * entries, paths with a slash), and the ENOENT/EACCES answers.
 */
#include "resolve.h"
#include "tap.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

static char top[] = "/tmp/wr-test-resolve-XXXXXX";

/* "@top/@rel" in a static buffer that the next call reuses. */
static const char *
at(const char *rel)
{
	static char buf[2][PATH_MAX];
	static int which;

	which ^= 1;
	snprintf(buf[which], sizeof(buf[which]), "%s/%s", top, rel);
	return buf[which];
}

static void
make_file(const char *rel, mode_t mode)
{
	int fd = open(at(rel), O_WRONLY | O_CREAT | O_TRUNC, 0600);

	if (fd < 0 || write(fd, "#!/bin/sh\n", 10) != 10 ||
	    fchmod(fd, mode) < 0) {
		printf("# cannot create %s: %s\n", at(rel), strerror(errno));
	}
	if (fd >= 0) {
		close(fd);
	}
}

static void
make_tree(void)
{
	static const char *const dirs[] = {
		"bin1", "bin2", "noexec", "empty", "bin1/adir", "work",
		"work/rel", "work/sub",
	};

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		mkdir(at(dirs[i]), 0755);
	}
	make_file("bin1/tool", 0755);
	make_file("bin2/tool", 0755);
	make_file("bin2/only2", 0755);
	make_file("bin2/grouponly", 0010);
	make_file("noexec/tool", 0644);
	make_file("work/rel/rtool", 0755);
	make_file("work/wtool", 0755);
	make_file("work/sub/prog", 0755);
	if (symlink(at("bin1/tool"), at("bin2/link")) < 0 ||
	    symlink(at("nowhere"), at("bin2/dangling")) < 0) {
		printf("# cannot create symlinks: %s\n", strerror(errno));
	}
}

static int
remove_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	return remove(p);
}

/* Resolve and compare: @want_rc < 0 means "fails with @want_rc". */
static void
check(const char *prog, const char *path, const char *wdir, int want_rc,
      const char *want, const char *name)
{
	char *out = (char *)"unset";
	int rc = wr_resolve(prog, path, wdir, &out);
	bool good = want_rc < 0 ? rc == want_rc && out == NULL
				: rc == 0 && strcmp(out, want) == 0;

	if (!ok(good, "resolve: %s", name)) {
		printf("#   got %d \"%s\", want %d \"%s\"\n", rc,
		       rc == 0 ? out : "", want_rc, want ? want : "");
	}
	if (rc == 0) {
		free(out);
	}
}

static char *
join_path(const char *a, const char *b)
{
	char *s = NULL;

	if (asprintf(&s, "%s:%s", a, b) < 0) {
		return NULL;
	}
	return s;
}

static void
test_path_search(void)
{
	char *p12 = join_path(at("bin1"), at("bin2"));
	char *p21 = join_path(at("bin2"), at("bin1"));
	char *pnx = join_path(at("noexec"), at("bin2"));
	char *pne = join_path(at("noexec"), at("empty"));
	char *pdir = join_path(at("bin1"), at("empty"));
	char *pfile = join_path(at("bin1/tool"), at("empty"));
	char *pempty = NULL, *ptrail = NULL, *plead = NULL;

	if (asprintf(&pempty, "%s::%s", at("empty"), at("bin2")) < 0 ||
	    asprintf(&ptrail, "%s:", at("empty")) < 0 ||
	    asprintf(&plead, ":%s", at("empty")) < 0) {
		printf("# out of memory\n");
	}
	check("tool", p12, NULL, 0, at("bin1/tool"),
	      "finds the program in the first PATH entry that has it");
	check("tool", p21, NULL, 0, at("bin2/tool"),
	      "follows PATH order");
	check("only2", p12, NULL, 0, at("bin2/only2"),
	      "finds the program in a later PATH entry");
	check("rtool", "rel", at("work"), 0, at("work/rel/rtool"),
	      "a relative PATH entry counts from the rank's wdir");
	check("wtool", pempty, at("work"), 0, at("work/wtool"),
	      "an empty PATH entry in the middle is the wdir");
	check("wtool", ptrail, at("work"), 0, at("work/wtool"),
	      "a trailing empty PATH entry is the wdir");
	check("wtool", plead, at("work"), 0, at("work/wtool"),
	      "a leading empty PATH entry is the wdir");
	check("tool", pnx, NULL, 0, at("bin2/tool"),
	      "skips a non-executable file for an executable later in PATH");
	check("link", p21, NULL, 0, at("bin2/link"),
	      "a symlink to an executable is found");
	check("nosuch", p12, NULL, -ENOENT, NULL,
	      "a program in no PATH entry is ENOENT");
	check("dangling", p21, NULL, -ENOENT, NULL,
	      "a dangling symlink is ENOENT");
	check("tool", at("noexec"), NULL, -EACCES, NULL,
	      "a file with mode 0644 is EACCES, even for root");
	/* As execve() decides: root may run it, its non-root owner may not. */
	check("grouponly", at("bin2"), NULL, geteuid() == 0 ? 0 : -EACCES,
	      at("bin2/grouponly"),
	      "a file with only the group x bit is found as exec would (root)");
	check("tool", pne, NULL, -EACCES, NULL,
	      "a non-executable file found and nothing better is EACCES");
	check("adir", pdir, NULL, -EISDIR, NULL,
	      "a directory with the program's name is EISDIR");
	check("tool", pfile, NULL, -ENOENT, NULL,
	      "a PATH entry that is a file is skipped (ENOENT)");
	check("", p12, NULL, -ENOENT, NULL, "an empty program name is ENOENT");
	free(p12);
	free(p21);
	free(pnx);
	free(pne);
	free(pdir);
	free(pfile);
	free(pempty);
	free(ptrail);
	free(plead);
}

static void
test_slash(void)
{
	check("sub/prog", "/nonexistent", at("work"), 0, at("work/sub/prog"),
	      "a program with a slash counts from the wdir, not PATH");
	check(at("bin1/tool"), "/nonexistent", at("work"), 0, at("bin1/tool"),
	      "an absolute program is taken as is");
	check("sub/nosuch", NULL, at("work"), -ENOENT, NULL,
	      "a missing program with a slash is ENOENT");
	check("sub/prog", NULL, at("missing"), -ENOENT, NULL,
	      "a program under a wdir that does not exist is ENOENT");
	check(at("bin1/tool/x"), NULL, NULL, -ENOENT, NULL,
	      "a path through a regular file is ENOENT");
	check(at("noexec/tool"), NULL, NULL, -EACCES, NULL,
	      "an absolute path to a 0644 file is EACCES");
	check(at("bin1/adir"), NULL, NULL, -EISDIR, NULL,
	      "an absolute path to a directory is EISDIR");
}

static void
test_relative_wdir(void)
{
	char cwd[PATH_MAX];
	char real[PATH_MAX];
	char *out = NULL;
	int rc;

	if (getcwd(cwd, sizeof(cwd)) == NULL || chdir(top) < 0) {
		printf("# cannot enter %s: %s\n", top, strerror(errno));
	}
	rc = wr_resolve("./sub/prog", NULL, "work", &out);
	ok(rc == 0 && out[0] == '/' && realpath(out, real) != NULL &&
		   strcmp(real, at("work/sub/prog")) == 0,
	   "resolve: ./sub/prog under a relative wdir gives an absolute path");
	free(out);
	check("wtool", "", "work", 0, at("work/wtool"),
	      "an empty PATH under a relative wdir gives an absolute path");
	check("tool", "bin1", NULL, 0, at("bin1/tool"),
	      "a relative PATH entry without wdir counts from our cwd");
	out = NULL;
	rc = wr_resolve("sh", NULL, NULL, &out);
	ok(rc == 0 && out[0] == '/' && access(out, X_OK) == 0,
	   "resolve: no PATH means the system default (finds sh)");
	free(out);
	if (chdir(cwd) < 0) {
		printf("# cannot return to %s\n", cwd);
	}
}

/* A script at @name under top whose first line is @line. */
static const char *
script(const char *name, const char *line)
{
	const char *path = at(name);
	FILE *f = fopen(path, "w");

	if (f != NULL) {
		fprintf(f, "%s\necho\n", line);
		fclose(f);
	}
	return path;
}

static void
test_interp(void)
{
	char *interp = NULL;
	int rc;

	rc = wr_resolve_interp(script("s1", "#!/nonexistent/python3 -u"), NULL,
			       &interp);
	ok(rc == -ENOENT && interp != NULL &&
		   strcmp(interp, "/nonexistent/python3") == 0,
	   "resolve: a missing #! interpreter is ENOENT, with its name");
	free(interp);
	rc = wr_resolve_interp(script("s2", "#! /bin/sh -e"), NULL, &interp);
	ok(rc == 0 && interp == NULL, "resolve: #! /bin/sh is fine");
	rc = wr_resolve_interp(script("s3", "echo no line"), NULL, &interp);
	ok(rc == 0 && interp == NULL, "resolve: a script without #! is fine");
	rc = wr_resolve_interp(script("s4", "#!/tmp"), NULL, &interp);
	ok(rc == -EISDIR && interp != NULL, "resolve: a #! directory is EISDIR");
	free(interp);
}

int
main(void)
{
	if (mkdtemp(top) == NULL) {
		skip_all("mkdtemp under /tmp failed");
	}
	plan(32);
	make_tree();
	test_path_search();
	test_slash();
	test_relative_wdir();
	test_interp();
	nftw(top, remove_one, 16, FTW_DEPTH | FTW_PHYS);
	return done_testing();
}
