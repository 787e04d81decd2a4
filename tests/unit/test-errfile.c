/* SPDX-License-Identifier: MIT */
/*
 * errfile: a rank's error file read as the agent reads it, written as
 * world_error_record() and torch's @record write it; and every file a
 * rank could leave there instead (not JSON, too large, a FIFO, a link).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "errfile.h"
#include "tap.h"
#include "world.h"

static char dir[] = "/tmp/wr-test-errfile-XXXXXX";
static char path[256];

static void
put(const char *text)
{
	FILE *f = fopen(path, "w");

	fputs(text, f);
	fclose(f);
}

/* The line wr_errfile_read() makes of the file now at @path. */
static char *
line_of(int *rc, char **trace)
{
	char *out = NULL, *nl;
	size_t len = 0;

	*rc = wr_errfile_read(path, &out, &len);
	*trace = NULL;
	if (*rc < 0 || out == NULL) {
		return NULL;
	}
	nl = memchr(out, '\n', len);
	if (nl == NULL || strlen(out) != len) {
		free(out);
		return strdup("(no newline, or a NUL inside)");
	}
	*nl = '\0';
	*trace = strdup(nl + 1);
	return out;
}

static void
test_record_round_trip(void)
{
	char *line, *trace;
	int rc;

	unsetenv("TORCHELASTIC_ERROR_FILE");
	is_int(world_error_record("E: x", NULL), -ENOENT,
	       "errfile: world_error_record without TORCHELASTIC_ERROR_FILE is -ENOENT");
	setenv("TORCHELASTIC_ERROR_FILE", path, 1);
	is_int(world_error_record("ValueError: bad input", "Traceback\n  at main\n"), 0,
	       "errfile: world_error_record writes the file");
	line = line_of(&rc, &trace);
	is_str(line, "ValueError: bad input", "errfile: its message is the line");
	is_str(trace, "Traceback\n  at main\n", "errfile: its detail is the traceback");
	free(line);
	free(trace);
	is_int(world_error_record("bad \xff", NULL), -EINVAL,
	       "errfile: world_error_record refuses a message that is not UTF-8");
	line = line_of(&rc, &trace);
	is_str(line, "ValueError: bad input", "errfile: and leaves the file as it was");
	free(line);
	free(trace);
}

static void
test_forms(void)
{
	char *line, *trace;
	int rc;

	put("{\"message\": \"RuntimeError: newer form\", \"timestamp\": 1}");
	line = line_of(&rc, &trace);
	is_str(line, "RuntimeError: newer form", "errfile: the newer form's message is the line");
	is_str(trace, "", "errfile: and it has no traceback");
	free(line);
	free(trace);
	put("{\"message\": {\"message\": \"a\\nb\\tc\\u001b[31m\\u00e9\"}}");
	line = line_of(&rc, &trace);
	is_str(line, "a\\nb\\tc\\x1b[31m\xc3\xa9",
	       "errfile: control characters are written out, other UTF-8 kept");
	free(line);
	free(trace);
	unlink(path);
	line = line_of(&rc, &trace);
	is_int(rc, -ENOENT, "errfile: no file is -ENOENT");
	free(line);
}

/* A line cut at its end keeps whole characters and says it was cut. */
static void
test_long(void)
{
	char *text = malloc(2048), *line, *trace, *tb = malloc(200000);
	size_t n = 0;
	int rc;

	n += (size_t)sprintf(text, "{\"message\": {\"message\": \"E: ");
	for (int i = 0; i < 300; i++) {
		n += (size_t)sprintf(text + n, "\xc3\xa9");
	}
	sprintf(text + n, "\"}}");
	put(text);
	line = line_of(&rc, &trace);
	ok(line != NULL && strlen(line) <= WR_ERRFILE_LINE_MAX &&
		   strcmp(line + strlen(line) - 3, "...") == 0 &&
		   (line[strlen(line) - 4] & 0xff) == 0xa9,
	   "errfile: a long message is cut between characters, with ...");
	free(line);
	free(trace);
	n = (size_t)sprintf(tb, "{\"message\": {\"message\": \"E\", \"extraInfo\": "
			    "{\"py_callstack\": \"");
	for (int i = 0; i < 10000; i++) {
		n += (size_t)sprintf(tb + n, "line %d\\n", i);
	}
	sprintf(tb + n, "raised here\"}}}");
	put(tb);
	line = line_of(&rc, &trace);
	ok(trace != NULL && strlen(trace) <= WR_ERRFILE_TRACE_MAX &&
		   strncmp(trace, "line ", 5) == 0 &&
		   strcmp(trace + strlen(trace) - 11, "raised here") == 0,
	   "errfile: a traceback of 10,000 lines keeps its end, from a line's start");
	free(line);
	free(trace);
	free(text);
	free(tb);
}

static void
test_hostile(void)
{
	char *line, *trace, other[300];
	int rc, fd;
	FILE *f;

	put("Traceback (most recent call last): not JSON");
	line = line_of(&rc, &trace);
	is_str(line, "(its error file is not torchelastic's JSON)", "errfile: not JSON is said");
	free(line);
	free(trace);
	put("{\"message\": 3}");
	line = line_of(&rc, &trace);
	is_str(line, "(its error file is not torchelastic's JSON)",
	       "errfile: JSON of another shape is said");
	free(line);
	free(trace);
	unlink(path);
	mkfifo(path, 0600);
	line = line_of(&rc, &trace);
	is_str(line, "(its error file is not torchelastic's JSON)",
	       "errfile: a FIFO is not waited on");
	free(line);
	free(trace);
	unlink(path);
	ok(symlink("/dev/zero", path) == 0, "errfile: a link to /dev/zero is made");
	line = line_of(&rc, &trace);
	is_str(line, "(its error file is not torchelastic's JSON)",
	       "errfile: a link is not followed");
	free(line);
	free(trace);
	unlink(path);
	snprintf(other, sizeof(other), "%s/other.json", dir);
	f = fopen(other, "w");
	fputs("{\"message\": \"E: elsewhere\"}", f);
	fclose(f);
	ok(symlink(other, path) == 0, "errfile: a link to another file of that form is made");
	line = line_of(&rc, &trace);
	is_str(line, "(its error file is not torchelastic's JSON)",
	       "errfile: it is not followed either");
	free(line);
	free(trace);
	unlink(path);
	unlink(other);
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	ok(fd >= 0 && ftruncate(fd, (off_t)WR_ERRFILE_READ_MAX + 1) == 0,
	   "errfile: a file of 16 MiB and a byte is made");
	close(fd);
	line = line_of(&rc, &trace);
	is_str(line, "(its error file is larger than 16 MiB)", "errfile: it is not read");
	free(line);
	free(trace);
	unlink(path);
}

int
main(void)
{
	char buf[8];

	plan(23);
	if (mkdtemp(dir) == NULL) {
		skip_all("no temporary directory");
	}
	is_int(wr_errfile_path(path, sizeof(path), dir, 7), 0, "errfile: a rank's path is made");
	is_int(wr_errfile_path(buf, sizeof(buf), dir, 7), -ENAMETOOLONG,
	       "errfile: a path that does not fit is -ENAMETOOLONG");
	test_record_round_trip();
	test_forms();
	test_long();
	test_hostile();
	rmdir(dir);
	return done_testing();
}
