/* SPDX-License-Identifier: MIT */
#include "errfile.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int
wr_errfile_path(char *buf, size_t size, const char *jobdir, int rank)
{
	int n = snprintf(buf, size, "%s/error-%d.json", jobdir, rank);

	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/* The whole file, if it is a regular file of at most READ_MAX bytes:
 * no FIFO to block on, no link to follow, no device. */
static int
slurp(const char *path, char **buf, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
	struct stat st;
	ssize_t n = 0;
	size_t got = 0;

	*buf = NULL;
	if (fd < 0) {
		return errno == ENOENT ? -ENOENT : -EINVAL;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	if (st.st_size > (off_t)WR_ERRFILE_READ_MAX) {
		close(fd);
		return -EFBIG;
	}
	*buf = malloc((size_t)st.st_size + 1);
	while (*buf != NULL && got < (size_t)st.st_size &&
	       (n = read(fd, *buf + got, (size_t)st.st_size - got)) > 0) {
		got += (size_t)n;
	}
	close(fd);
	if (*buf == NULL) {
		return -ENOMEM;
	}
	*len = got;
	return 0;
}

/* The bytes of the character @p starts, of valid UTF-8 (jansson's). */
static size_t
char_len(const unsigned char *p)
{
	size_t k = *p < 0x80 ? 1 : *p >= 0xf0 ? 4 : *p >= 0xe0 ? 3 : 2;

	for (size_t i = 1; i < k; i++) {
		if ((p[i] & 0xc0) != 0x80) {
			return i;
		}
	}
	return k;
}

/* Write @s (valid UTF-8) to @out as one printable line of at most
 * LINE_MAX bytes: control bytes escaped, cut between characters. */
static size_t
one_line(char *out, const char *s)
{
	size_t n = 0;

	for (const unsigned char *p = (const unsigned char *)s; *p != '\0';) {
		char esc[8];
		size_t k = char_len(p), take = k;

		if (*p == '\n' || *p == '\t' || *p == '\r') {
			k = (size_t)snprintf(esc, sizeof(esc), "\\%c",
					     *p == '\n' ? 'n' : *p == '\t' ? 't' : 'r');
		} else if (*p < 0x20 || *p == 0x7f) {
			k = (size_t)snprintf(esc, sizeof(esc), "\\x%02x", *p);
		} else {
			memcpy(esc, p, k);
		}
		if (n + k > WR_ERRFILE_LINE_MAX - 3) {
			memcpy(out + n, "...", 3);
			return n + 3;
		}
		memcpy(out + n, esc, k);
		n += k;
		p += take;
	}
	return n;
}

/* torchelastic's two forms: {"message": {"message": M, "extraInfo":
 * {"py_callstack": T}}}, or {"message": M} (a newer one). */
static int
parse(const char *buf, size_t len, char **msg, char **trace)
{
	json_t *doc = json_loadb(buf, len, JSON_REJECT_DUPLICATES, NULL);
	json_t *m = json_object_get(doc, "message");
	json_t *inner = json_is_object(m) ? json_object_get(m, "message") : m;
	json_t *t = json_object_get(json_object_get(m, "extraInfo"), "py_callstack");

	int rc = json_is_string(inner) ? 0 : -EINVAL;

	*msg = rc == 0 ? strdup(json_string_value(inner)) : NULL;
	*trace = strdup(json_is_string(t) ? json_string_value(t) : "");
	json_decref(doc);
	if (rc == 0 && (*msg == NULL || *trace == NULL)) {
		rc = -ENOMEM;
	}
	if (rc < 0) {
		free(*msg);
		free(*trace);
		*msg = *trace = NULL;
	}
	return rc;
}

/* The last TRACE_MAX bytes of @t, from a line's start: where it raised. */
static const char *
trace_end(const char *t)
{
	size_t n = strlen(t);
	const char *from;

	if (n <= WR_ERRFILE_TRACE_MAX) {
		return t;
	}
	from = strchr(t + n - WR_ERRFILE_TRACE_MAX, '\n');
	return from != NULL ? from + 1 : t + n;
}

static const char *
what_is_wrong(int rc)
{
	return rc == -EFBIG ? "(its error file is larger than 16 MiB)"
	       : rc == -EINVAL ? "(its error file is not torchelastic's JSON)"
			       : "(its error file could not be read)";
}

int
wr_errfile_read(const char *path, char **out, size_t *len)
{
	char *buf = NULL, *msg = NULL, *trace = NULL;
	const char *end;
	size_t n = 0;
	int rc = slurp(path, &buf, &n);

	if (rc == 0) {
		rc = parse(buf, n, &msg, &trace);
	}
	free(buf);
	if (rc == -ENOENT || rc == -ENOMEM) {
		return rc;
	}
	end = rc == 0 ? trace_end(trace) : "";
	*out = malloc(WR_ERRFILE_LINE_MAX + 1 + strlen(end) + 1);
	if (*out != NULL) {
		n = one_line(*out, rc == 0 ? msg : what_is_wrong(rc));
		(*out)[n++] = '\n';
		memcpy(*out + n, end, strlen(end) + 1);
		*len = n + strlen(end);
	}
	free(msg);
	free(trace);
	return *out != NULL ? 0 : -ENOMEM;
}
