/* SPDX-License-Identifier: MIT */
/* wr-alloc MIB: allocate MIB mebibytes, touch every page, exit 0. */
#include <stdlib.h>

int
main(int argc, char **argv)
{
	size_t mib = argc > 1 ? (size_t)atol(argv[1]) : 1;
	volatile char *p = malloc(mib << 20);

	if (p == NULL) {
		return 1;
	}
	/* Through a volatile pointer: the compiler may not drop the writes. */
	for (size_t i = 0; i < (mib << 20); i += 4096) {
		p[i] = 1;
	}
	free((char *)p);
	return 0;
}
