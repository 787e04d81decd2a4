/* SPDX-License-Identifier: MIT */
/*
 * wr-regpoke [-t] [-w SECONDS] STEP...: a raw client of worldrun's
 * registry for the tests, written from the wire format alone (a 4-byte
 * big-endian length, that many bytes of JSON, then the blob whose length
 * the JSON's top-level "blob" gives) with libc only, so that it can send
 * what no well-behaved client would. It connects to the unix: endpoint of
 * WORLD_REGISTRY (-t: the tcp: one) and runs the steps in order:
 *
 *   hello [ROLE [RANK [SECRET]]]  send {op: hello, id: 0, ...} and read the
 *                   answer; defaults tool, $WORLD_RANK, $WORLD_SECRET; RANK
 *                   goes into the JSON as written
 *   send JSON       send JSON as one frame, as is (no id is added);
 *                   @FILE sends the content of FILE
 *   blob JSON HEX   the same with a blob; "blob": N is added to JSON
 *                   unless it has a "blob" of its own
 *   raw HEX         send these bytes, unframed
 *   read            read one answer
 *   sleep SECONDS, close (the connection), stop (raise SIGSTOP)
 *   expect-eof      read answers until the server closes the connection;
 *                   fails if it does not within the wait
 *
 * Every answer is printed as its JSON on one line, plus " blob=HEX" (64
 * bytes at most) or " blob=len:N"; "EOF" when the server closed the
 * connection, "TIMEOUT" when nothing came within -w SECONDS (default 5).
 * It judges no answer. Exit status: 0 when every step ran, 1 when one
 * failed (a message on stderr), 2 for bad usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define ANSWER_MAX (16u << 20) /* far above the registry's 1 MiB */
#define HEAD_MAX 64            /* blob bytes printed as hex */

struct poke {
	int fd;
	double wait; /* seconds that one read or write may take */
};

enum got { GOT_ANSWER, GOT_EOF, GOT_TIMEOUT, GOT_ERROR };

static const struct kind {
	const char *name;
	int min_args, max_args;
} kinds[] = {
	{ "hello", 0, 3 }, { "send", 1, 1 }, { "blob", 2, 2 },
	{ "raw", 1, 1 }, { "read", 0, 0 }, { "sleep", 1, 1 },
	{ "close", 0, 0 }, { "stop", 0, 0 }, { "expect-eof", 0, 0 },
};

static const struct kind *
kind_of(const char *name)
{
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		if (strcmp(kinds[i].name, name) == 0) {
			return &kinds[i];
		}
	}
	return NULL;
}

/*
 * The number of arguments of the step at argv[i], or -1 if there is no
 * such step or it lacks some. Optional arguments end at the next word
 * that names a step.
 */
static int
step_args(int argc, char **argv, int i)
{
	const struct kind *k = kind_of(argv[i]);
	int n = 0;

	if (k == NULL) {
		return -1;
	}
	while (n < k->max_args && i + 1 + n < argc &&
	       (n < k->min_args || kind_of(argv[i + 1 + n]) == NULL)) {
		n++;
	}
	return n < k->min_args ? -1 : n;
}

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* 1 when @fd is ready for @events, 0 at @deadline, -1 on error. */
static int
wait_fd(int fd, short events, double deadline)
{
	struct pollfd pfd = { .fd = fd, .events = events };
	double left = deadline - now();
	int rc;

	if (left < 0) {
		left = 0;
	}
	do {
		rc = poll(&pfd, 1, (int)(left * 1000) + 1);
	} while (rc < 0 && errno == EINTR);
	return rc < 0 ? -1 : rc > 0;
}

static int
send_all(struct poke *p, const void *buf, size_t len)
{
	const char *at = buf;
	double deadline = now() + p->wait;

	while (len > 0) {
		ssize_t n = send(p->fd, at, len, MSG_NOSIGNAL);

		if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
			if (wait_fd(p->fd, POLLOUT, deadline) == 0) {
				fprintf(stderr, "wr-regpoke: send: timed out\n");
				return -1;
			}
			continue;
		}
		if (n < 0) {
			fprintf(stderr, "wr-regpoke: send: %s\n", strerror(errno));
			return -1;
		}
		at += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Exactly @len bytes into @buf before @deadline. A reset counts as EOF. */
static enum got
recv_all(struct poke *p, void *buf, size_t len, double deadline)
{
	char *at = buf;

	while (len > 0) {
		ssize_t n = recv(p->fd, at, len, 0);

		if (n == 0 || (n < 0 && errno == ECONNRESET)) {
			return GOT_EOF;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
			int rc = wait_fd(p->fd, POLLIN, deadline);

			if (rc <= 0) {
				return rc == 0 ? GOT_TIMEOUT : GOT_ERROR;
			}
			continue;
		}
		if (n < 0) {
			return GOT_ERROR;
		}
		at += n;
		len -= (size_t)n;
	}
	return GOT_ANSWER;
}

/* Skips blanks from @i; true if a ':' follows, with *i just past it. */
static bool
colon_next(const char *s, size_t len, size_t *i)
{
	while (*i < len && strchr(" \t\r\n", s[*i]) != NULL && s[*i] != '\0') {
		(*i)++;
	}
	if (*i < len && s[*i] == ':') {
		(*i)++;
		return true;
	}
	return false;
}

/* A non-negative decimal integer at @i (after blanks), or -1. */
static long long
count_at(const char *s, size_t len, size_t i)
{
	long long v = -1;

	while (i < len && (s[i] == ' ' || s[i] == '\t')) {
		i++;
	}
	for (; i < len && s[i] >= '0' && s[i] <= '9' && v < (1LL << 50); i++) {
		v = (v < 0 ? 0 : v * 10) + (s[i] - '0');
	}
	return v;
}

/*
 * The top-level "blob" of JSON object @s: 0 when there is none, -1 when
 * it is no count. A scanner, not a parser: it trusts the server's JSON.
 */
static long long
blob_field(const char *s, size_t len)
{
	int depth = 0;

	for (size_t i = 0; i < len; i++) {
		if (s[i] == '"') {
			size_t start = ++i;

			while (i < len && s[i] != '"') {
				i += s[i] == '\\' ? 2 : 1;
			}
			if (depth == 1 && i - start == 4 && i < len &&
			    memcmp(s + start, "blob", 4) == 0) {
				size_t j = i + 1;

				if (colon_next(s, len, &j)) {
					return count_at(s, len, j);
				}
			}
		} else if (s[i] == '{' || s[i] == '[') {
			depth++;
		} else if (s[i] == '}' || s[i] == ']') {
			depth--;
		}
	}
	return 0;
}

/* Reads and prints @len bytes of blob: hex if short, else the length. */
static enum got
read_blob(struct poke *p, size_t len, double deadline)
{
	unsigned char head[HEAD_MAX], chunk[65536];
	size_t got = 0;

	while (got < len) {
		size_t n = len - got < sizeof(chunk) ? len - got : sizeof(chunk);
		enum got rc = recv_all(p, chunk, n, deadline);

		if (rc != GOT_ANSWER) {
			return rc;
		}
		if (got < HEAD_MAX) {
			size_t keep = HEAD_MAX - got < n ? HEAD_MAX - got : n;

			memcpy(head + got, chunk, keep);
		}
		got += n;
	}
	if (len > HEAD_MAX) {
		printf(" blob=len:%zu", len);
		return GOT_ANSWER;
	}
	printf(" blob=");
	for (size_t i = 0; i < len; i++) {
		printf("%02x", head[i]);
	}
	return GOT_ANSWER;
}

/* Reads one answer and prints it, or EOF or TIMEOUT. */
static enum got
read_answer(struct poke *p)
{
	double deadline = now() + p->wait;
	unsigned char hdr[4];
	enum got rc = recv_all(p, hdr, sizeof(hdr), deadline);
	uint32_t len;
	long long blob;
	char *json;

	if (rc != GOT_ANSWER) {
		return rc;
	}
	len = (uint32_t)hdr[0] << 24 | (uint32_t)hdr[1] << 16 |
	      (uint32_t)hdr[2] << 8 | (uint32_t)hdr[3];
	json = len <= ANSWER_MAX ? malloc(len + 1) : NULL;
	if (json == NULL) {
		fprintf(stderr, "wr-regpoke: an answer of %u bytes\n", (unsigned)len);
		return GOT_ERROR;
	}
	rc = recv_all(p, json, len, deadline);
	blob = rc == GOT_ANSWER ? blob_field(json, len) : 0;
	if (rc == GOT_ANSWER) {
		fwrite(json, 1, len, stdout);
	}
	if (rc == GOT_ANSWER && blob != 0) {
		rc = blob < 0 ? GOT_ERROR : read_blob(p, (size_t)blob, deadline);
	}
	if (rc == GOT_ANSWER) {
		printf("\n");
	}
	free(json);
	return rc;
}

/* Prints what read_answer() got; 0, or 1 on an I/O error. */
static int
show(enum got g)
{
	if (g == GOT_EOF) {
		printf("EOF\n");
	} else if (g == GOT_TIMEOUT) {
		printf("TIMEOUT\n");
	} else if (g == GOT_ERROR) {
		fprintf(stderr, "wr-regpoke: read: %s\n",
			errno != 0 ? strerror(errno) : "a bad answer");
	}
	fflush(stdout);
	return g == GOT_ERROR;
}

static int
expect_eof(struct poke *p)
{
	enum got g;

	do {
		errno = 0;
		g = read_answer(p);
		if (show(g) != 0) {
			return 1;
		}
	} while (g == GOT_ANSWER);
	if (g != GOT_EOF) {
		fprintf(stderr, "wr-regpoke: expected the server to close\n");
		return 1;
	}
	return 0;
}

static int
hex_value(char c)
{
	if (c >= '0' && c <= '9') {
		return c - '0';
	}
	if (c >= 'a' && c <= 'f') {
		return c - 'a' + 10;
	}
	return c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* @hex as bytes (malloc'd), or NULL if it is not hex. */
static unsigned char *
unhex(const char *hex, size_t *len)
{
	size_t n = strlen(hex);
	unsigned char *b = malloc(n / 2 + 1);

	*len = n / 2;
	for (size_t i = 0; b != NULL && i < *len; i++) {
		int hi = hex_value(hex[2 * i]), lo = hex_value(hex[2 * i + 1]);

		if (hi < 0 || lo < 0) {
			free(b);
			return NULL;
		}
		b[i] = (unsigned char)(hi << 4 | lo);
	}
	if (n % 2 != 0) {
		free(b);
		return NULL;
	}
	return b;
}

/* The JSON argument @arg, or the content of the file after '@' (malloc'd). */
static char *
json_arg(const char *arg)
{
	FILE *f;
	char *buf = NULL;
	size_t size = 0;
	long n;

	if (arg[0] != '@') {
		return strdup(arg);
	}
	f = fopen(arg + 1, "r");
	if (f == NULL || fseek(f, 0, SEEK_END) < 0 || (n = ftell(f)) < 0) {
		fprintf(stderr, "wr-regpoke: %s: %s\n", arg + 1, strerror(errno));
		if (f != NULL) {
			fclose(f);
		}
		return NULL;
	}
	rewind(f);
	buf = malloc((size_t)n + 1);
	if (buf != NULL) {
		size = fread(buf, 1, (size_t)n, f);
		while (size > 0 && buf[size - 1] == '\n') {
			size--;
		}
		buf[size] = '\0';
	}
	fclose(f);
	return buf;
}

/* Sends one frame: the length of @json, @json, then @blen bytes of @blob. */
static int
send_frame(struct poke *p, const char *json, const unsigned char *blob,
	   size_t blen)
{
	size_t len = strlen(json);
	unsigned char hdr[4] = { (unsigned char)(len >> 24), (unsigned char)(len >> 16),
				 (unsigned char)(len >> 8), (unsigned char)len };

	if (send_all(p, hdr, sizeof(hdr)) < 0 || send_all(p, json, len) < 0) {
		return 1;
	}
	return blen > 0 && send_all(p, blob, blen) < 0;
}

/* "blob JSON HEX": @json gets "blob": N unless it names a blob itself. */
static int
send_blob(struct poke *p, const char *json, const char *hex)
{
	size_t blen;
	unsigned char *blob = unhex(hex, &blen);
	const char *brace = strchr(json, '{');
	char *framed = NULL;
	int rc = 2;

	if (blob == NULL || brace == NULL) {
		fprintf(stderr, "wr-regpoke: blob: bad JSON or hex\n");
		goto out;
	}
	if (strstr(json, "\"blob\"") != NULL) {
		rc = send_frame(p, json, blob, blen);
		goto out;
	}
	if (asprintf(&framed, "%.*s{\"blob\":%zu%s%s", (int)(brace - json), json,
		     blen, brace[strspn(brace + 1, " \t\n") + 1] == '}' ? "" : ",",
		     brace + 1) < 0) {
		framed = NULL;
		rc = 1;
		goto out;
	}
	rc = send_frame(p, framed, blob, blen);
out:
	free(framed);
	free(blob);
	return rc;
}

/* @s as a JSON string into @out (@size bytes): quotes and controls escaped. */
static void
quote(char *out, size_t size, const char *s)
{
	size_t o = 0;

	out[o++] = '"';
	for (; *s != '\0' && o + 8 < size; s++) {
		if (*s == '"' || *s == '\\') {
			out[o++] = '\\';
			out[o++] = *s;
		} else if ((unsigned char)*s < 0x20) {
			o += (size_t)snprintf(out + o, size - o, "\\u%04x", *s);
		} else {
			out[o++] = *s;
		}
	}
	out[o++] = '"';
	out[o] = '\0';
}

static int
hello(struct poke *p, char **args, int nargs)
{
	const char *rank = getenv("WORLD_RANK"), *secret = getenv("WORLD_SECRET");
	char role[256], sec[1024], *msg = NULL;
	int rc;

	quote(role, sizeof(role), nargs > 0 ? args[0] : "tool");
	quote(sec, sizeof(sec), nargs > 2 ? args[2] : secret != NULL ? secret : "");
	if (nargs > 1) {
		rank = args[1];
	}
	if (asprintf(&msg, "{\"op\":\"hello\",\"id\":0,\"role\":%s,\"rank\":%s,"
		     "\"secret\":%s}", role, rank != NULL ? rank : "0", sec) < 0) {
		return 1;
	}
	rc = send_frame(p, msg, NULL, 0);
	free(msg);
	errno = 0;
	return rc != 0 ? rc : show(read_answer(p));
}

static int
send_raw(struct poke *p, const char *hex)
{
	size_t len;
	unsigned char *b = unhex(hex, &len);
	int rc;

	if (b == NULL) {
		fprintf(stderr, "wr-regpoke: raw: %s is not hex\n", hex);
		return 2;
	}
	rc = send_all(p, b, len) < 0;
	free(b);
	return rc;
}

static int
send_json(struct poke *p, const char *arg)
{
	char *json = json_arg(arg);
	int rc;

	if (json == NULL) {
		return 1;
	}
	rc = send_frame(p, json, NULL, 0);
	free(json);
	return rc;
}

static int
pause_for(const char *arg)
{
	char *end;
	double s = strtod(arg, &end);
	struct timespec ts;

	if (end == arg || *end != '\0' || s < 0 || s > 3600) {
		fprintf(stderr, "wr-regpoke: sleep: bad number of seconds %s\n", arg);
		return 2;
	}
	ts.tv_sec = (time_t)s;
	ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
	}
	return 0;
}

/* Runs the step at argv[0] with its @nargs arguments: 0, 1 or 2. */
static int
run_step(struct poke *p, char **argv, int nargs)
{
	const char *name = argv[0];

	if (p->fd < 0 && strcmp(name, "sleep") != 0 && strcmp(name, "stop") != 0) {
		fprintf(stderr, "wr-regpoke: %s: the connection is closed\n", name);
		return 2;
	}
	if (strcmp(name, "hello") == 0) {
		return hello(p, argv + 1, nargs);
	} else if (strcmp(name, "send") == 0) {
		return send_json(p, argv[1]);
	} else if (strcmp(name, "blob") == 0) {
		return send_blob(p, argv[1], argv[2]);
	} else if (strcmp(name, "raw") == 0) {
		return send_raw(p, argv[1]);
	} else if (strcmp(name, "read") == 0) {
		errno = 0;
		return show(read_answer(p));
	} else if (strcmp(name, "sleep") == 0) {
		return pause_for(argv[1]);
	} else if (strcmp(name, "close") == 0) {
		close(p->fd);
		p->fd = -1;
		return 0;
	} else if (strcmp(name, "stop") == 0) {
		return raise(SIGSTOP) != 0;
	}
	return expect_eof(p);
}

/* Connects (non-blocking, bounded by @wait) to @sa. Returns the fd or -1. */
static int
connect_to(const struct sockaddr *sa, socklen_t salen, double wait)
{
	int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int err = 0;
	socklen_t elen = sizeof(err);

	if (fd < 0) {
		return -1;
	}
	if (connect(fd, sa, salen) < 0) {
		if (errno != EINPROGRESS ||
		    wait_fd(fd, POLLOUT, now() + wait) <= 0 ||
		    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) < 0 || err != 0) {
			err = errno != EINPROGRESS ? errno : err != 0 ? err : ETIMEDOUT;
			close(fd);
			errno = err;
			return -1;
		}
	}
	return fd;
}

/* "tcp:HOST:PORT" (@len bytes at @ep), HOST numeric. */
static int
open_tcp(const char *ep, size_t len, double wait)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV };
	struct addrinfo *ai = NULL;
	const char *colon = memrchr(ep, ':', len);
	char host[256], port[16];
	int fd;

	if (colon == NULL || colon - ep <= 4 || colon - ep - 4 >= (int)sizeof(host) ||
	    ep + len - colon - 1 >= (int)sizeof(port)) {
		errno = EINVAL;
		return -1;
	}
	snprintf(host, sizeof(host), "%.*s", (int)(colon - ep - 4), ep + 4);
	snprintf(port, sizeof(port), "%.*s", (int)(ep + len - colon - 1), colon + 1);
	if (getaddrinfo(host, port, &hints, &ai) != 0) {
		errno = EINVAL;
		return -1;
	}
	fd = connect_to(ai->ai_addr, ai->ai_addrlen, wait);
	freeaddrinfo(ai);
	return fd;
}

/* "unix:PATH" (@len bytes at @ep). */
static int
open_unix(const char *ep, size_t len, double wait)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };

	if (len - 5 >= sizeof(sun.sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(sun.sun_path, ep + 5, len - 5);
	return connect_to((struct sockaddr *)&sun, sizeof(sun), wait);
}

/* Connects to the endpoint of WORLD_REGISTRY with the wanted scheme. */
static int
open_registry(bool tcp, double wait)
{
	const char *want = tcp ? "tcp:" : "unix:";
	const char *list = getenv("WORLD_REGISTRY");

	while (list != NULL && *list != '\0') {
		size_t len = strcspn(list, ",");

		if (strncmp(list, want, strlen(want)) == 0) {
			int fd = tcp ? open_tcp(list, len, wait)
				     : open_unix(list, len, wait);

			if (fd < 0) {
				fprintf(stderr, "wr-regpoke: unable to connect to "
					"%.*s: %s\n", (int)len, list, strerror(errno));
			}
			return fd;
		}
		list += len + (list[len] == ',');
	}
	fprintf(stderr, "wr-regpoke: no %s endpoint in WORLD_REGISTRY\n", want);
	return -1;
}

static int
usage(void)
{
	fprintf(stderr, "usage: wr-regpoke [-t] [-w SECONDS] STEP...\n");
	return 2;
}

int
main(int argc, char **argv)
{
	struct poke p = { .fd = -1, .wait = 5 };
	bool tcp = false;
	int opt, rc = 0;

	while ((opt = getopt(argc, argv, "+tw:")) != -1) {
		if (opt == 't') {
			tcp = true;
		} else if (opt == 'w' && atof(optarg) > 0) {
			p.wait = atof(optarg);
		} else {
			return usage();
		}
	}
	if (optind >= argc) {
		return usage();
	}
	/* Check the whole script before any of it runs. */
	for (int i = optind, n; i < argc; i += 1 + n) {
		n = step_args(argc, argv, i);
		if (n < 0) {
			fprintf(stderr, "wr-regpoke: bad step at %s\n", argv[i]);
			return usage();
		}
	}
	p.fd = open_registry(tcp, p.wait);
	if (p.fd < 0) {
		return 1;
	}
	for (int i = optind, n; rc == 0 && i < argc; i += 1 + n) {
		n = step_args(argc, argv, i);
		rc = run_step(&p, argv + i, n);
	}
	if (p.fd >= 0) {
		close(p.fd);
	}
	fflush(stdout);
	return rc;
}
