/* SPDX-License-Identifier: MIT */
/* wr-alloc MIB: allocate MIB mebibytes, touch every page, exit 0. */
#include <stdlib.h>
#include <string.h>

int
main(int argc, char **argv)
{
	size_t mib = argc > 1 ? (size_t)atol(argv[1]) : 1;
	char *p = malloc(mib << 20);

	if (p == NULL) {
		return 1;
	}
	memset(p, 1, mib << 20);
	free(p);
	return 0;
}
