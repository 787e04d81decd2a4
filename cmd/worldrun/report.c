/* SPDX-License-Identifier: MIT */
#include "report.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

static json_t *
maybe_int(bool present, json_int_t v)
{
	return present ? json_integer(v) : json_null();
}

/* A string that is not UTF-8 (from another host's agent) is null. */
static json_t *
text_new(const char *s)
{
	json_t *j = s != NULL ? json_string(s) : NULL;

	return j != NULL ? j : json_null();
}

/* What its error file said: {"message", "traceback"}, or null. */
static json_t *
exception_new(const struct wr_report_rank *k)
{
	if (k->exception == NULL) {
		return json_null();
	}
	return json_pack("{s:o, s:o}", "message", text_new(k->exception),
			 "traceback", text_new(k->traceback));
}

static json_t *
rank_new(const struct wr_report_rank *k)
{
	return json_pack("{s:i, s:s, s:o, s:o, s:o, s:o, s:o, s:I, s:b, s:o}",
			 "rank", k->rank,
			 "host", k->host,
			 "pid", maybe_int(k->pid > 0, k->pid),
			 "exit_code", maybe_int(k->exit_code >= 0, k->exit_code),
			 "signal", maybe_int(k->signal > 0, k->signal),
			 "start", k->start > 0 ? json_real(k->start) : json_null(),
			 "end", k->end > 0 ? json_real(k->end) : json_null(),
			 "maxrss_kib", (json_int_t)k->maxrss_kib,
			 "killed_by_worldrun", k->killed_by_worldrun,
			 "exception", exception_new(k));
}

/* {rank, stream, path, error} of the --output-dir file that failed, or null. */
static json_t *
file_new(const struct wr_report_file *f)
{
	if (f->path == NULL) {
		return json_null();
	}
	return json_pack("{s:i, s:s, s:s, s:s}", "rank", f->rank, "stream", f->stream,
			 "path", f->path, "error", strerror(f->err));
}

static json_t *
report_new(const struct wr_report *r)
{
	json_t *ranks = json_array();

	for (int i = 0; ranks != NULL && i < r->nranks; i++) {
		if (json_array_append_new(ranks, rank_new(&r->ranks[i])) < 0) {
			json_decref(ranks);
			ranks = NULL;
		}
	}
	return json_pack("{s:s, s:i, s:s, s:o, s:o, s:o, s:O, s:O}",
			 "jobid", r->jobid,
			 "status", r->status,
			 "cause", r->cause,
			 "failed_rank", maybe_int(r->failed_rank >= 0, r->failed_rank),
			 "output_file_error", file_new(&r->output_file),
			 "ranks", ranks,
			 "hang", r->hang != NULL ? r->hang : json_null(),
			 "attempts", r->attempts != NULL ? r->attempts : json_null());
}

int
wr_report_check(const char *path)
{
	size_t len = strlen(path);
	struct stat st;
	char *tmp = NULL;
	int fd, rc = 0;

	if (len == 0) {
		return -ENOENT;
	}
	if (path[len - 1] == '/' || (stat(path, &st) == 0 && S_ISDIR(st.st_mode))) {
		return -EISDIR;
	}
	/*
	 * Make and remove a temporary file as the write will: access() says
	 * yes to root on a file system that refuses new files (sysfs).
	 */
	if (asprintf(&tmp, "%s.XXXXXX", path) < 0) {
		return -ENOMEM;
	}
	fd = mkstemp(tmp);
	if (fd < 0) {
		rc = -errno;
	} else {
		close(fd);
		unlink(tmp);
	}
	free(tmp);
	return rc;
}

int
wr_report_write(const char *path, const struct wr_report *r)
{
	json_t *doc = report_new(r);
	char *tmp = NULL;
	int fd = -1, rc = 0;

	if (doc == NULL || asprintf(&tmp, "%s.XXXXXX", path) < 0) {
		json_decref(doc);
		return -ENOMEM;
	}
	fd = mkstemp(tmp);
	if (fd < 0) {
		rc = -errno;
		goto out;
	}
	errno = 0;
	if (json_dumpfd(doc, fd, JSON_INDENT(2) | JSON_REAL_PRECISION(16)) < 0 ||
	    write(fd, "\n", 1) != 1) {
		rc = errno ? -errno : -EIO;
	}
	if (fchmod(fd, 0644) < 0 && rc == 0) {
		rc = -errno;
	}
	if (close(fd) < 0 && rc == 0) {
		rc = -errno;
	}
	if (rc == 0 && rename(tmp, path) < 0) {
		rc = -errno;
	}
	if (rc < 0) {
		unlink(tmp);
	}
out:
	free(tmp);
	json_decref(doc);
	return rc;
}
