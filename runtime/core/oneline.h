/* SPDX-License-Identifier: MIT */
/*
 * oneline: text that others chose (a barrier's or a key's name, an abort
 * message, a rank's reason) made fit for one line on a terminal: control
 * characters (a newline, a carriage return, ESC) become visible escapes,
 * so that such text can neither break the one line a message promises
 * nor steer the terminal. Everything else stays as it is.
 */
#ifndef WR_ONELINE_H
#define WR_ONELINE_H

#include <stddef.h>

/*
 * @len bytes of @in into @out (@size bytes, at least 1), each control
 * character as \n, \r, \t or \xHH, cut where it does not fit (never
 * within an escape), and NUL-terminated. Returns the length written.
 */
size_t wr_oneline(char *out, size_t size, const char *in, size_t len);

#endif
