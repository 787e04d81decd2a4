/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for report: the --report JSON read back with jansson (every
 * field, nulls for what did not happen), atomic replacement with no
 * temporary file left, and failures that create nothing.
 */
#include "report.h"
#include "tap.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

static char top[] = "/tmp/wr-test-report-XXXXXX";

static const char *
at(const char *rel)
{
	static char buf[PATH_MAX];

	snprintf(buf, sizeof(buf), "%s/%s", top, rel);
	return buf;
}

/* The names in @top, sorted and joined by spaces, in @out. */
static void
list_top(char *out, size_t size)
{
	struct dirent **names = NULL;
	int n = scandir(top, &names, NULL, alphasort);

	out[0] = '\0';
	for (int i = 0; i < n; i++) {
		if (names[i]->d_name[0] != '.') {
			strncat(out, names[i]->d_name, size - strlen(out) - 2);
			strncat(out, " ", size - strlen(out) - 1);
		}
		free(names[i]);
	}
	free(names);
}

/* Remove @top and the files in it, temporary files of failed tests too. */
static void
remove_top(void)
{
	struct dirent **names = NULL;
	int n = scandir(top, &names, NULL, alphasort);

	for (int i = 0; i < n; i++) {
		if (names[i]->d_name[0] != '.') {
			unlink(at(names[i]->d_name));
			rmdir(at(names[i]->d_name));
		}
		free(names[i]);
	}
	free(names);
	rmdir(top);
}

static bool
has_keys(json_t *obj, const char *const *keys, size_t nkeys)
{
	if (!json_is_object(obj) || json_object_size(obj) != nkeys) {
		return false;
	}
	for (size_t i = 0; i < nkeys; i++) {
		if (json_object_get(obj, keys[i]) == NULL) {
			return false;
		}
	}
	return true;
}

static json_int_t
int_of(json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);

	return json_is_integer(v) ? json_integer_value(v) : -12345;
}

static bool
is_null(json_t *obj, const char *key)
{
	return json_is_null(json_object_get(obj, key));
}

static bool
real_is(json_t *obj, const char *key, double want)
{
	json_t *v = json_object_get(obj, key);

	return json_is_real(v) && fabs(json_real_value(v) - want) < 1e-6;
}

static void
test_file_error(void)
{
	const struct wr_report r = {
		.jobid = "0123456789ab", .status = 125, .cause = "output-dir-failed",
		.failed_rank = -1,
		.output_file = { .path = "od/1/stderr", .rank = 1, .stream = "stderr",
				 .err = ENOSPC },
	};
	json_error_t jerr;
	json_t *doc, *f;

	wr_report_write(at("report.json"), &r);
	doc = json_load_file(at("report.json"), 0, &jerr);
	f = json_object_get(doc, "output_file_error");
	ok(f != NULL && int_of(f, "rank") == 1 &&
	   strcmp(json_string_value(json_object_get(f, "stream")), "stderr") == 0 &&
	   strcmp(json_string_value(json_object_get(f, "path")), "od/1/stderr") == 0 &&
	   strcmp(json_string_value(json_object_get(f, "error")), strerror(ENOSPC)) == 0,
	   "report: output_file_error names the rank, stream, path and error");
	json_decref(doc);
}

static void
test_fields(void)
{
	static const char *const top_keys[] = {
		"jobid", "status", "cause", "failed_rank", "output_file_error", "ranks",
		"hang", "attempts",
	};
	static const char *const rank_keys[] = {
		"rank", "host", "pid", "exit_code", "signal", "start", "end",
		"maxrss_kib", "killed_by_worldrun", "exception",
	};
	const struct wr_report_rank ranks[] = {
		{ .rank = 0, .host = "h0", .pid = 4242, .exit_code = 0,
		  .start = 1700000000.125, .end = 1700000001.5,
		  .maxrss_kib = 2048 },
		{ .rank = 1, .host = "h1", .pid = 4243, .exit_code = -1,
		  .signal = 9, .start = 1700000000.25, .end = 1700000002.75,
		  .maxrss_kib = 1 << 30, .killed_by_worldrun = true },
		{ .rank = 2, .host = "h2", .pid = 0, .exit_code = -1 },
		{ .rank = 3, .host = "h3", .pid = 4245, .exit_code = 3,
		  .start = 1700000000.5, .exception = "E: bad", .traceback = "tb \xff" },
	};
	const struct wr_report r = {
		.jobid = "0123456789ab", .status = 137, .cause = "rank-killed",
		.failed_rank = 1, .ranks = ranks, .nranks = 4,
	};
	json_error_t jerr;
	json_t *doc, *rk;
	char names[256];

	is_int(wr_report_write(at("report.json"), &r), 0,
	       "report: write succeeds");
	doc = json_load_file(at("report.json"), 0, &jerr);
	if (!ok(doc != NULL, "report: the file is valid JSON")) {
		printf("#   %s\n", jerr.text);
		return;
	}
	ok(has_keys(doc, top_keys, 8),
	   "report: the top level has exactly jobid, status, cause, hang, "
	   "failed_rank, output_file_error, ranks, attempts");
	ok(json_is_null(json_object_get(doc, "attempts")),
	   "report: attempts is null when the run gave none");
	ok(json_is_null(json_object_get(doc, "output_file_error")),
	   "report: output_file_error is null when no file failed");
	ok(json_is_null(json_object_get(doc, "hang")),
	   "report: hang is null when no hang report was made");
	is_str(json_string_value(json_object_get(doc, "jobid")), "0123456789ab",
	       "report: jobid");
	is_int(int_of(doc, "status"), 137, "report: status");
	is_str(json_string_value(json_object_get(doc, "cause")), "rank-killed",
	       "report: cause");
	is_int(int_of(doc, "failed_rank"), 1, "report: failed_rank");
	is_int((long long)json_array_size(json_object_get(doc, "ranks")), 4,
	       "report: one entry per rank");

	rk = json_array_get(json_object_get(doc, "ranks"), 0);
	ok(has_keys(rk, rank_keys, 10), "report: a rank has exactly its 10 fields");
	ok(int_of(rk, "rank") == 0 &&
		   strcmp(json_string_value(json_object_get(rk, "host")), "h0") ==
			   0 &&
		   int_of(rk, "pid") == 4242 && int_of(rk, "exit_code") == 0 &&
		   is_null(rk, "signal") && real_is(rk, "start", 1700000000.125) &&
		   real_is(rk, "end", 1700000001.5) &&
		   int_of(rk, "maxrss_kib") == 2048 &&
		   json_is_false(json_object_get(rk, "killed_by_worldrun")),
	   "report: a rank that exited 0 has exit_code 0 (not null) and no signal");

	rk = json_array_get(json_object_get(doc, "ranks"), 1);
	ok(int_of(rk, "rank") == 1 && int_of(rk, "pid") == 4243 &&
		   is_null(rk, "exit_code") && int_of(rk, "signal") == 9 &&
		   real_is(rk, "end", 1700000002.75) &&
		   int_of(rk, "maxrss_kib") == 1 << 30 &&
		   json_is_true(json_object_get(rk, "killed_by_worldrun")),
	   "report: a signaled rank has null exit_code, its signal, and "
	   "killed_by_worldrun");

	rk = json_array_get(json_object_get(doc, "ranks"), 2);
	ok(has_keys(rk, rank_keys, 10) && int_of(rk, "rank") == 2 &&
		   is_null(rk, "pid") && is_null(rk, "exit_code") &&
		   is_null(rk, "signal") && is_null(rk, "start") &&
		   is_null(rk, "end"),
	   "report: a rank that never started has null pid, status and times");

	rk = json_array_get(json_object_get(doc, "ranks"), 3);
	ok(int_of(rk, "exit_code") == 3 && is_null(rk, "signal") &&
		   real_is(rk, "start", 1700000000.5) && is_null(rk, "end"),
	   "report: a rank that has not ended has a start and a null end");
	ok(json_is_null(json_object_get(json_array_get(json_object_get(doc, "ranks"), 0),
					"exception")),
	   "report: a rank without an error file has a null exception");
	ok(json_is_string(json_object_get(json_object_get(rk, "exception"), "message")) &&
		   strcmp(json_string_value(json_object_get(json_object_get(rk, "exception"),
							    "message")), "E: bad") == 0 &&
		   json_is_null(json_object_get(json_object_get(rk, "exception"), "traceback")),
	   "report: an exception has its message, and a traceback that is not UTF-8 is null");
	json_decref(doc);

	list_top(names, sizeof(names));
	is_str(names, "report.json ", "report: no temporary file is left behind");
}

static void
test_replace(void)
{
	const struct wr_report r = {
		.jobid = "abcdefabcdef", .status = 0, .cause = "success",
		.failed_rank = -1, .ranks = NULL, .nranks = 0,
	};
	json_t *doc;
	char names[256];

	is_int(wr_report_write(at("report.json"), &r), 0,
	       "report: overwriting an existing report succeeds");
	doc = json_load_file(at("report.json"), 0, NULL);
	ok(doc != NULL && is_null(doc, "failed_rank") &&
		   json_is_array(json_object_get(doc, "ranks")) &&
		   json_array_size(json_object_get(doc, "ranks")) == 0 &&
		   strcmp(json_string_value(json_object_get(doc, "cause")),
			  "success") == 0,
	   "report: the new report replaces the old (null failed_rank, no ranks)");
	json_decref(doc);

	ok(wr_report_write(at("missing/report.json"), &r) == -ENOENT,
	   "report: writing into a missing directory returns -ENOENT");
	mkdir(at("adir"), 0755);
	ok(wr_report_write(at("adir"), &r) < 0,
	   "report: writing over a directory fails with a negative errno");
	list_top(names, sizeof(names));
	is_str(names, "adir report.json ",
	       "report: failed writes create nothing and leave no temporary file");
	rmdir(at("adir"));
}

int
main(void)
{
	if (mkdtemp(top) == NULL) {
		skip_all("mkdtemp under /tmp failed");
	}
	plan(25);
	test_fields();
	test_file_error();
	test_replace();
	remove_top();
	return done_testing();
}
