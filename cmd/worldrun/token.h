/* SPDX-License-Identifier: MIT */
/*
 * token: random identifiers in hexadecimal, from getrandom(): the job id
 * and the job secret.
 */
#ifndef WR_TOKEN_H
#define WR_TOKEN_H

#include <stddef.h>

/* @nbytes random bytes as 2 * @nbytes hex digits and a NUL in @out.
 * Returns 0 or -errno. */
int wr_token(char *out, size_t nbytes);

#endif
