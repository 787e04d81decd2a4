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
};

struct wr_report {
	const char *jobid;
	int status;
	const char *cause;
	int failed_rank; /* -1: none */
	const struct wr_report_rank *ranks;
	int nranks;
};

/* Write @r to @path. Returns 0 or -errno. */
int wr_report_write(const char *path, const struct wr_report *r);

#endif
