/* SPDX-License-Identifier: MIT */
/*
 * report: the --report file, a JSON summary of the job written
 * atomically (a temporary file in the same directory, then rename), so
 * that a reader sees the whole report or none.
 */
#ifndef WR_REPORT_H
#define WR_REPORT_H

#include <stdbool.h>
#include <sys/types.h>

struct wr_report_rank {
	int rank;
	const char *host;
	pid_t pid;         /* 0: never started */
	int exit_code;     /* -1: none */
	int signal;        /* 0: none */
	double start;      /* epoch seconds; 0: never started */
	double end;        /* epoch seconds; 0: not ended */
	long maxrss_kib;
	bool killed_by_worldrun;
	const char *exception; /* its error file's line; NULL: none */
	const char *traceback; /* and its traceback's end */
};

/* A file under --output-dir that could not be written. */
struct wr_report_file {
	const char *path;   /* NULL: none failed */
	int rank;
	const char *stream; /* "stdout" or "stderr" */
	int err;            /* errno */
};

struct wr_report {
	const char *jobid;
	int status;
	const char *cause;
	int failed_rank; /* -1: none */
	struct wr_report_file output_file;
	const struct wr_report_rank *ranks;
	int nranks;
	struct json_t *hang; /* the last hang report (hang.h), borrowed; NULL: none */
	struct json_t *attempts; /* each attempt so far (restart.h), borrowed;
				  * NULL: the one */
};

/*
 * Whether a report could be written to @path, checked before the job
 * starts: @path is not a directory, and a temporary file can be made
 * next to it (one is, and removed at once; @path itself is not touched).
 * Returns 0 or -errno.
 */
int wr_report_check(const char *path);

/* Write @r to @path. Returns 0 or -errno. */
int wr_report_write(const char *path, const struct wr_report *r);

#endif
