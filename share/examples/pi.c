/* SPDX-License-Identifier: MIT */
/*
 * pi: a real multi-rank job that uses only worldrun's environment
 * contract, the way a torchrun program finds its rendezvous. Every rank
 * integrates its share of 4/(1+x^2) over [0,1]; rank 0 listens on
 * MASTER_ADDR:MASTER_PORT, the other ranks connect and send their partial
 * sums, and rank 0 prints pi. Run it with: worldrun -n 4 -l ./pi
 */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define STEPS 50000000L
#define TIMEOUT_MS 30000

static int
env_int(const char *name)
{
	const char *v = getenv(name);

	if (v == NULL) {
		fprintf(stderr, "pi: %s is not set: run me under worldrun\n", name);
		exit(2);
	}
	return atoi(v);
}

static double
partial_sum(int rank, int size)
{
	double h = 1.0 / STEPS, sum = 0;

	for (long i = rank; i < STEPS; i += size) {
		double x = h * ((double)i + 0.5);

		sum += 4.0 / (1.0 + x * x);
	}
	return sum * h;
}

static struct sockaddr_in
master(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };

	sa.sin_port = htons((uint16_t)env_int("MASTER_PORT"));
	if (inet_pton(AF_INET, getenv("MASTER_ADDR"), &sa.sin_addr) != 1) {
		fprintf(stderr, "pi: bad MASTER_ADDR\n");
		exit(2);
	}
	return sa;
}

/* Rank 0: accept size-1 partial sums, each within the timeout. */
static double
gather(int fd, int size)
{
	double total = 0;

	for (int n = 1; n < size; n++) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		double part;
		int c;

		if (poll(&pfd, 1, TIMEOUT_MS) != 1) {
			fprintf(stderr, "pi: rank 0: a rank did not report in time\n");
			exit(1);
		}
		c = accept(fd, NULL, NULL);
		if (c < 0 || read(c, &part, sizeof(part)) != (ssize_t)sizeof(part)) {
			fprintf(stderr, "pi: rank 0: bad report: %s\n", strerror(errno));
			exit(1);
		}
		close(c);
		total += part;
	}
	return total;
}

/* Ranks 1..: connect to rank 0, retrying until it listens (bounded). */
static void
report(double part)
{
	struct sockaddr_in sa = master();
	struct timespec pause = { 0, 10 * 1000 * 1000 };

	for (int tries = 0; tries < TIMEOUT_MS / 10; tries++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);

		if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
			ssize_t n = write(fd, &part, sizeof(part));

			close(fd);
			if (n == (ssize_t)sizeof(part)) {
				return;
			}
			break;
		}
		if (fd >= 0) {
			close(fd);
		}
		nanosleep(&pause, NULL);
	}
	fprintf(stderr, "pi: unable to reach rank 0\n");
	exit(1);
}

int
main(void)
{
	int rank = env_int("WORLD_RANK"), size = env_int("WORLD_SIZE");
	int fd = -1, one = 1;
	double part;

	if (rank == 0) {
		struct sockaddr_in sa = master();

		/* Listen before computing, so the others never wait for us. */
		fd = socket(AF_INET, SOCK_STREAM, 0);
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
		    listen(fd, size) < 0) {
			fprintf(stderr, "pi: rank 0: cannot listen: %s\n", strerror(errno));
			return 1;
		}
	}
	part = partial_sum(rank, size);
	printf("rank %d of %d: partial sum %.12f\n", rank, size, part);
	fflush(stdout);
	if (rank != 0) {
		report(part);
		return 0;
	}
	part += gather(fd, size);
	printf("pi is about %.12f (error %.1e) from %d ranks\n", part,
	       fabs(part - M_PI), size);
	return 0;
}
