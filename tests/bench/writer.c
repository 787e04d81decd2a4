/* SPDX-License-Identifier: MIT */
/*
 * writer [-i ID] [BYTES]: write exactly BYTES bytes (default 256 MiB; a
 * K, M or G suffix means KiB, MiB, GiB) to stdout as 100-byte lines
 * "w<ID> <SEQ> xxx...x\n", SEQ a 10-digit counter from 0, in write() calls
 * of 655 whole lines (65,500 bytes). When BYTES is not a multiple of 100
 * the last line is cut short but still ends in "\n", so the output has
 * ceil(BYTES / 100) lines. ID defaults to $WORLD_RANK, or "-" without it.
 * The lines are cheap to make (no printf per line), so the writer costs
 * little CPU next to the pipe it feeds.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LINE_BYTES 100
#define LINES_PER_WRITE 655
#define SEQ_DIGITS 10
#define ID_MAX 32

struct writer {
	char line[LINE_BYTES];	/* the next line to write */
	char *seq;		/* its SEQ_DIGITS-digit counter, in line */
	char buf[LINE_BYTES * LINES_PER_WRITE];
};

static int
write_all(const char *p, size_t len)
{
	while (len > 0) {
		ssize_t n = write(1, p, len);

		if (n < 0) {
			if (errno == EINTR) {
				continue;
			}
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int
parse_bytes(const char *text, unsigned long long *bytes)
{
	unsigned long long scale = 1;
	char *end;

	errno = 0;
	*bytes = strtoull(text, &end, 10);
	if (errno != 0 || end == text || text[0] == '-') {
		return -1;
	}
	if (*end == 'K') {
		scale = 1ULL << 10;
	} else if (*end == 'M') {
		scale = 1ULL << 20;
	} else if (*end == 'G') {
		scale = 1ULL << 30;
	} else if (*end != '\0') {
		return -1;
	}
	if (*end != '\0' && end[1] != '\0') {
		return -1;
	}
	*bytes *= scale;
	return 0;
}

static void
writer_init(struct writer *w, const char *id)
{
	int n = snprintf(w->line, sizeof(w->line), "w%s %0*d ", id,
	    SEQ_DIGITS, 0);

	memset(w->line + n, 'x', sizeof(w->line) - (size_t)n);
	w->line[LINE_BYTES - 1] = '\n';
	w->seq = w->line + n - 1 - SEQ_DIGITS;
}

/* Adds one to the decimal counter in place, like an odometer. */
static void
advance_line(struct writer *w)
{
	for (int i = SEQ_DIGITS - 1; i >= 0; i--) {
		if (w->seq[i] != '9') {
			w->seq[i]++;
			return;
		}
		w->seq[i] = '0';
	}
}

static int
write_lines(struct writer *w, unsigned long long bytes)
{
	unsigned long long lines = bytes / LINE_BYTES;
	size_t rest = (size_t)(bytes % LINE_BYTES);
	int rc;

	while (lines > 0) {
		size_t batch = lines < LINES_PER_WRITE ? (size_t)lines :
		    LINES_PER_WRITE;

		for (size_t i = 0; i < batch; i++) {
			memcpy(w->buf + i * LINE_BYTES, w->line, LINE_BYTES);
			advance_line(w);
		}
		rc = write_all(w->buf, batch * LINE_BYTES);
		if (rc < 0) {
			return rc;
		}
		lines -= batch;
	}
	if (rest > 0) {
		memcpy(w->buf, w->line, rest);
		w->buf[rest - 1] = '\n';
		return write_all(w->buf, rest);
	}
	return 0;
}

int
main(int argc, char **argv)
{
	static struct writer w;
	const char *id = getenv("WORLD_RANK");
	unsigned long long bytes = 256ULL << 20;
	int opt, rc;

	while ((opt = getopt(argc, argv, "i:")) != -1) {
		if (opt != 'i') {
			goto usage;
		}
		id = optarg;
	}
	if (id == NULL) {
		id = "-";
	}
	if (argc - optind > 1 || strlen(id) > ID_MAX ||
	    strpbrk(id, " \t\n") != NULL) {
		goto usage;
	}
	if (optind < argc && parse_bytes(argv[optind], &bytes) < 0) {
		goto usage;
	}
	writer_init(&w, id);
	rc = write_lines(&w, bytes);
	if (rc < 0) {
		if (rc != -EPIPE) {
			fprintf(stderr, "writer: write: %s\n", strerror(-rc));
		}
		return 1;
	}
	return 0;
usage:
	fprintf(stderr, "usage: writer [-i ID] [BYTES[K|M|G]]"
	    " (ID: up to 32 characters, no blanks)\n");
	return 2;
}
