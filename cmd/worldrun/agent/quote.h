/* SPDX-License-Identifier: MIT */
/*
 * quote: a name or an argument from the user (a program, a directory, a
 * -x value) made fit for one line of a message, and for a shell to read
 * back: as it is when it holds nothing a shell or a terminal would take
 * for something else, else in single quotes, or as $'...' with escapes
 * when it holds control characters (a newline would break the one line
 * a message promises).
 */
#ifndef WR_QUOTE_H
#define WR_QUOTE_H

#include <stddef.h>

/*
 * @s itself when it needs no quotes, else its quoted form written into
 * @buf (@size bytes, at least 8), cut short with "..." if it does not
 * fit.
 */
const char *wr_quote(char *buf, size_t size, const char *s);

/* A buffer size that fits most quoted paths whole. */
#define WR_QUOTE_MAX 1024

#endif
