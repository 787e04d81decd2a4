/* SPDX-License-Identifier: MIT */
/*
 * wr-flood [-t] [-e ENDPOINTS] [-r ROLE] [-q JSON] N [CMD ARG...]: opens
 * N connections to a server of the job, as an attacker or a careless
 * tool would, and holds them while CMD runs.
 *
 *   -e ENDPOINTS  "unix:PATH,tcp:HOST:PORT" (default $WORLD_REGISTRY);
 *                 the unix: one, or with -t the tcp: one
 *   -r ROLE       each connection says hello as ROLE (tool, peer) for
 *                 $WORLD_RANK with $WORLD_SECRET; the answers are read
 *                 once all hellos are out
 *   -q JSON       then send JSON as one frame on the first connection
 *                 and print its answer (or EOF, TIMEOUT)
 *
 * Connections are made one after the other, each within 5 seconds; one
 * that cannot be made ends the opening (the server may have stopped
 * accepting). Afterwards it prints, one per line:
 *
 *   opened N        connections made
 *   answered N      hellos answered without an error (-r)
 *   refused N       hellos answered with an error (-r)
 *   closed LIST     the connections (0 is the first) that the server
 *                   has closed by the time CMD ended, as "0-5,9", or "-"
 *
 * Exit status: CMD's, or 0 without one; 2 for bad usage or a failure of
 * its own.
 */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define WAIT 5.0

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int
wait_fd(int fd, short events, double deadline)
{
	struct pollfd pfd = { .fd = fd, .events = events };
	int rc;

	do {
		double left = deadline - now();

		rc = poll(&pfd, 1, left > 0 ? (int)(left * 1000) + 1 : 0);
	} while (rc < 0 && errno == EINTR);
	return rc;
}

static int
connect_to(const struct sockaddr *sa, socklen_t len)
{
	int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int err = 0;
	socklen_t elen = sizeof(err);

	if (fd < 0) {
		return -1;
	}
	if (connect(fd, sa, len) < 0 &&
	    (errno != EINPROGRESS && errno != EAGAIN)) {
		close(fd);
		return -1;
	}
	if (wait_fd(fd, POLLOUT, now() + WAIT) <= 0 ||
	    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) < 0 || err != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* One connection to the unix: or (@tcp) the tcp: endpoint of @eps. */
static int
dial(const char *eps, bool tcp)
{
	const char *at = strstr(eps, tcp ? "tcp:" : "unix:");
	char buf[512], *colon;
	size_t n;

	if (at == NULL) {
		return -1;
	}
	at += tcp ? 4 : 5;
	n = strcspn(at, ",");
	if (n >= sizeof(buf)) {
		return -1;
	}
	memcpy(buf, at, n);
	buf[n] = '\0';
	if (!tcp) {
		struct sockaddr_un sun = { .sun_family = AF_UNIX };

		if (n >= sizeof(sun.sun_path)) {
			return -1;
		}
		memcpy(sun.sun_path, buf, n + 1);
		return connect_to((struct sockaddr *)&sun, sizeof(sun));
	}
	colon = strrchr(buf, ':');
	if (colon == NULL) {
		return -1;
	}
	*colon = '\0';
	{
		struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
		int fd;

		if (getaddrinfo(buf, colon + 1, &hints, &ai) != 0) {
			return -1;
		}
		fd = connect_to(ai->ai_addr, ai->ai_addrlen);
		freeaddrinfo(ai);
		return fd;
	}
}

static int
send_frame(int fd, const char *json)
{
	size_t len = strlen(json);
	unsigned char hdr[4] = { (unsigned char)(len >> 24), (unsigned char)(len >> 16),
				 (unsigned char)(len >> 8), (unsigned char)len };
	struct iovec iov[2] = { { hdr, 4 }, { (void *)json, len } };
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };

	return sendmsg(fd, &mh, MSG_NOSIGNAL) == (ssize_t)(len + 4) ? 0 : -1;
}

/* Reads one answer into @buf (its JSON, NUL-ended): 1, 0 at EOF, -1 late. */
static int
read_answer(int fd, char *buf, size_t size, double deadline)
{
	size_t have = 0, want = 4;
	unsigned char hdr[4];

	while (have < want) {
		ssize_t n;

		if (wait_fd(fd, POLLIN, deadline) <= 0) {
			return -1;
		}
		n = have < 4 ? recv(fd, hdr + have, 4 - have, 0)
			     : recv(fd, buf + have - 4, want - have, 0);
		if (n <= 0) {
			return n == 0 || errno == ECONNRESET ? 0 : -1;
		}
		have += (size_t)n;
		if (have == 4) {
			size_t len = (size_t)hdr[0] << 24 | (size_t)hdr[1] << 16 |
				     (size_t)hdr[2] << 8 | hdr[3];

			if (len >= size) {
				return -1;
			}
			want = 4 + len;
			buf[len] = '\0';
		}
	}
	return 1;
}

/* Whether the server has closed @fd: EOF (or a reset) is readable now. */
static bool
is_closed(int fd)
{
	char c;
	ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);

	return n == 0 || (n < 0 && errno != EAGAIN);
}

static void
print_closed(const int *fds, int n)
{
	int shown = 0;

	printf("closed ");
	for (int i = 0; i < n; i++) {
		int j = i;

		if (!is_closed(fds[i])) {
			continue;
		}
		while (j + 1 < n && is_closed(fds[j + 1])) {
			j++;
		}
		printf(shown++ ? ",%d" : "%d", i);
		if (j > i) {
			printf("-%d", j);
		}
		i = j;
	}
	printf(shown ? "\n" : "-\n");
}

static void
hellos(const int *fds, int n, const char *role)
{
	char json[512], buf[4096];
	double deadline;
	int answered = 0, refused = 0;

	snprintf(json, sizeof(json),
		 "{\"op\":\"hello\",\"id\":0,\"secret\":\"%s\",\"rank\":%s,\"role\":\"%s\"}",
		 getenv("WORLD_SECRET") != NULL ? getenv("WORLD_SECRET") : "",
		 getenv("WORLD_RANK") != NULL ? getenv("WORLD_RANK") : "0", role);
	for (int i = 0; i < n; i++) {
		send_frame(fds[i], json);
	}
	deadline = now() + WAIT;
	for (int i = 0; i < n; i++) {
		if (read_answer(fds[i], buf, sizeof(buf), deadline) == 1) {
			answered += strstr(buf, "\"error\"") == NULL;
			refused += strstr(buf, "\"error\"") != NULL;
		}
	}
	printf("answered %d\nrefused %d\n", answered, refused);
}

static void
query(int fd, const char *json)
{
	char buf[1 << 16];
	int rc = send_frame(fd, json) < 0 ? 0 : read_answer(fd, buf, sizeof(buf),
							    now() + WAIT);

	printf("%s\n", rc == 1 ? buf : rc == 0 ? "EOF" : "TIMEOUT");
}

static int
run(char **argv)
{
	int status;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		execvp(argv[0], argv);
		perror("wr-flood: exec");
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) < 0) {
		return 2;
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int
main(int argc, char **argv)
{
	const char *eps = getenv("WORLD_REGISTRY"), *role = NULL, *q = NULL;
	bool tcp = false;
	int opt, n, opened = 0, rc = 0;
	int *fds;

	while ((opt = getopt(argc, argv, "+te:r:q:")) != -1) {
		if (opt == 't') {
			tcp = true;
		} else if (opt == 'e') {
			eps = optarg;
		} else if (opt == 'r') {
			role = optarg;
		} else if (opt == 'q') {
			q = optarg;
		} else {
			return 2;
		}
	}
	if (optind >= argc || eps == NULL || (n = atoi(argv[optind])) <= 0) {
		fprintf(stderr, "usage: wr-flood [-t] [-e ENDPOINTS] [-r ROLE] "
				"[-q JSON] N [CMD ARG...]\n");
		return 2;
	}
	fds = calloc((size_t)n, sizeof(*fds));
	if (fds == NULL) {
		return 2;
	}
	for (; opened < n; opened++) {
		fds[opened] = dial(eps, tcp);
		if (fds[opened] < 0) {
			break;
		}
	}
	printf("opened %d\n", opened);
	if (role != NULL) {
		hellos(fds, opened, role);
	}
	if (q != NULL && opened > 0) {
		query(fds[0], q);
	}
	if (optind + 1 < argc) {
		rc = run(argv + optind + 1);
	}
	print_closed(fds, opened);
	for (int i = 0; i < opened; i++) {
		close(fds[i]);
	}
	free(fds);
	return rc;
}
