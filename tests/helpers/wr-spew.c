/* SPDX-License-Identifier: MIT */
/*
 * wr-spew [-n] [-e] [-l LEN] BYTES: write BYTES bytes to stdout (-e:
 * stderr) as lines of LEN bytes (default 100), the newline included;
 * each line is "r<RANK> " and then 'x' up to its newline, and each line
 * goes out in one write(). -n writes BYTES bytes of 'x' with no newline
 * at all, in 64 KiB writes. RANK comes from WORLD_RANK (or "-").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int
write_all(int fd, const char *p, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	const char *rank = getenv("WORLD_RANK");
	size_t len = 100, total;
	int fd = 1, nonl = 0, opt;
	char *line;

	while ((opt = getopt(argc, argv, "nel:")) != -1) {
		if (opt == 'n') {
			nonl = 1;
		} else if (opt == 'e') {
			fd = 2;
		} else if (opt == 'l') {
			len = (size_t)atol(optarg);
		} else {
			return 2;
		}
	}
	if (optind >= argc || len < 16) {
		fprintf(stderr, "usage: wr-spew [-n] [-e] [-l LEN>=16] BYTES\n");
		return 2;
	}
	total = (size_t)atoll(argv[optind]);
	if (nonl) {
		len = 65536;
	}
	line = malloc(len);
	if (line == NULL) {
		return 1;
	}
	memset(line, 'x', len);
	if (!nonl) {
		int n = snprintf(line, len, "r%s ", rank ? rank : "-");

		line[n] = 'x';
		line[len - 1] = '\n';
	}
	while (total > 0) {
		size_t n = total < len ? total : len;

		if (write_all(fd, line, n) < 0) {
			return 1;
		}
		total -= n;
	}
	free(line);
	return 0;
}
