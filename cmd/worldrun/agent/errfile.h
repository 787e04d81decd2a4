/* SPDX-License-Identifier: MIT */
/*
 * errfile: a rank's error file (TORCHELASTIC_ERROR_FILE), where torch's
 * @record, world's excepthook and world_error_record() write the
 * exception a rank dies of, in torchelastic's JSON, in the job's
 * directory (new for every job and every restart). The agent reads it
 * after the rank ended badly: one
 * line for worldrun's failure line, and the traceback's end for
 * --report. Nothing in the file is trusted: the rank's own process may
 * have put anything there, or something else than a file.
 */
#ifndef WR_ERRFILE_H
#define WR_ERRFILE_H

#include <stddef.h>

/* The most of a file that is read; a larger one is said to be so. */
#define WR_ERRFILE_READ_MAX (16u << 20)
/* The longest line (bytes, an ellipsis included). */
#define WR_ERRFILE_LINE_MAX 240
/* The most of a traceback that is kept: its end, from a line's start. */
#define WR_ERRFILE_TRACE_MAX (32u << 10)

/* Rank @rank's error file in the job's directory @jobdir, in @buf.
 * Returns 0, or -ENAMETOOLONG. */
int wr_errfile_path(char *buf, size_t size, const char *jobdir, int rank);

/*
 * What the error file at @path says: in *out (malloc'd; free()) its
 * exception as one line of printable UTF-8 ("ValueError: bad input",
 * control characters written as \n, \t or \xHH, cut to
 * WR_ERRFILE_LINE_MAX), then "\n" and the end of its traceback (may be
 * empty), *len bytes in all. Returns 0; -ENOENT when there is no such
 * file; otherwise 0 with a line that says what is wrong with the file
 * ("(its error file is not torchelastic's JSON)"), or -ENOMEM.
 */
int wr_errfile_read(const char *path, char **out, size_t *len);

#endif
