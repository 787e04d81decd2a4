/* SPDX-License-Identifier: MIT */
#include "token.h"

#include <errno.h>
#include <stdio.h>
#include <sys/random.h>

int
wr_token(char *out, size_t nbytes)
{
	unsigned char b[64];

	if (nbytes > sizeof(b)) {
		return -EINVAL;
	}
	if (getrandom(b, nbytes, 0) != (ssize_t)nbytes) {
		return -errno;
	}
	for (size_t i = 0; i < nbytes; i++) {
		snprintf(out + 2 * i, 3, "%02x", b[i]);
	}
	return 0;
}
