/* SPDX-License-Identifier: MIT */
/*
 * wr-cat [-c]: copy stdin to stdout until EOF. With -c print only
 * "bytes N eof" once stdin ends.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
	int count_only = argc > 1 && strcmp(argv[1], "-c") == 0;
	unsigned long long total = 0;
	char buf[65536];
	ssize_t n;

	for (;;) {
		n = read(0, buf, sizeof(buf));
		if (n <= 0) {
			break;
		}
		total += (unsigned long long)n;
		if (!count_only && write(1, buf, (size_t)n) != n) {
			return 1;
		}
	}
	if (count_only) {
		printf("bytes %llu %s\n", total, n == 0 ? "eof" : "error");
	}
	return n == 0 ? 0 : 1;
}
