/* SPDX-License-Identifier: MIT */
#include "reach.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <jansson.h>

#include "clock.h"
#include "frame.h"
#include "regclient.h"
#include "wire.h"
#include "world_errors.h"

/* One line "SECRET PORT" from fd 0, by @end: the secret into @d->secret,
 * the port (decimal digits) into @port. 0 or -1 with @why. */
static int
read_secret(struct wr_reach *d, double end, char port[8], char *why, size_t size)
{
	char *blank;

	size_t n = 0;

	for (;;) {
		struct pollfd p = { .fd = 0, .events = POLLIN };
		int left = (int)((end - wr_clock_mono()) * 1e3);
		ssize_t got;

		if (left <= 0 || poll(&p, 1, left) == 0) {
			snprintf(why, size, "no job secret on stdin in time (srun passes "
				 "on what the launcher writes there)");
			return -1;
		}
		got = read(0, d->secret + n, WR_REACH_SECRET_MAX - n);
		if (got < 0 && errno == EINTR) {
			continue;
		}
		if (got <= 0) {
			snprintf(why, size, "no job secret on stdin: %s",
				 got == 0 ? "it ended first" : strerror(errno));
			return -1;
		}
		n += (size_t)got;
		d->secret[n] = '\0';
		if (strchr(d->secret, '\n') != NULL) {
			break;
		}
		if (n == WR_REACH_SECRET_MAX) {
			snprintf(why, size, "stdin is not a job secret: a line longer than %d",
				 WR_REACH_SECRET_MAX);
			return -1;
		}
	}
	*strchr(d->secret, '\n') = '\0';
	blank = strchr(d->secret, ' ');
	if (blank != NULL) {
		*blank++ = '\0';
	}
	if (d->secret[0] == '\0' || strspn(d->secret, "0123456789abcdef") != strlen(d->secret)) {
		snprintf(why, size, "stdin is not a job secret (hexadecimal digits)");
		return -1;
	}
	if (blank == NULL || blank[0] == '\0' || strlen(blank) > 5 ||
	    strspn(blank, "0123456789") != strlen(blank)) {
		snprintf(why, size, "stdin has no port after the job secret");
		return -1;
	}
	strcpy(port, blank);
	return 0;
}

/* The node as Slurm names it: the frame that starts the channel. */
static int
name_node(struct wr_reach *d, const char *name, int nodeid)
{
	struct evbuffer *out = evbuffer_new();
	json_t *msg = json_pack("{s:s, s:s, s:i}", "op", WR_WIRE_DIAL_OP, "name", name,
				"node", nodeid);
	int rc = -ENOMEM;

	if (out != NULL && msg != NULL && wr_frame_write(out, NULL, msg, NULL, 0) == 0) {
		size_t len = evbuffer_get_length(out);

		/* A few bytes into a socket nothing was sent on yet. */
		rc = wr_frame_send(out, d->fd) == (ssize_t)len ? 0 : -EPIPE;
	}
	json_decref(msg);
	evbuffer_free(out);
	return rc;
}

/* Both ends' addresses of the channel, as numbers. */
static void
addrs(struct wr_reach *d)
{
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);

	strcpy(d->self, "127.0.0.1");
	if (getsockname(d->fd, (struct sockaddr *)&sa, &len) == 0 && sa.sin_family == AF_INET) {
		inet_ntop(AF_INET, &sa.sin_addr, d->self, sizeof(d->self));
	}
}

int
wr_reach_open(struct wr_reach *d, double timeout, char *why, size_t size)
{
	const char *host = getenv("SLURM_LAUNCH_NODE_IPADDR");
	const char *id = getenv("SLURM_NODEID"), *name = getenv("SLURMD_NODENAME");
	double end = wr_clock_mono() + timeout;
	struct wr_regclient *c = NULL;
	char ep[128], err[256] = "", port[8];
	struct in_addr a;
	char *tail = NULL;
	long nodeid = id != NULL ? strtol(id, &tail, 10) : -1;
	int rc;

	*d = (struct wr_reach){ .fd = -1 };
	if (host == NULL || inet_pton(AF_INET, host, &a) != 1) {
		snprintf(why, size, "SLURM_LAUNCH_NODE_IPADDR=%s: not an IPv4 address "
			 "(an agent with --dial is started by srun)", host != NULL ? host : "");
		return -1;
	}
	if (tail == NULL || *tail != '\0' || tail == id || nodeid < 0 || nodeid >= WR_WIRE_RANK_MAX) {
		snprintf(why, size, "SLURM_NODEID=%s: not a node number", id != NULL ? id : "");
		return -1;
	}
	if (read_secret(d, end, port, why, size) < 0) {
		return -1;
	}
	snprintf(d->launcher, sizeof(d->launcher), "%s", host);
	snprintf(ep, sizeof(ep), "tcp:%s:%s", host, port);
	rc = wr_regclient_open(&(struct wr_regclient_cfg){
		.endpoints = ep, .secret = d->secret, .rank = (int)nodeid,
		.role = WR_WIRE_DIAL_ROLE, .server = WR_WIRE_DIAL_WHO,
		.timeout_ms = (int)((end - wr_clock_mono()) * 1e3), .why = err,
		.why_len = sizeof(err) }, &c);
	if (rc == 0) {
		d->fd = wr_regclient_release(c);
		rc = d->fd < 0 ? d->fd : name_node(d, name != NULL ? name : "", (int)nodeid);
	}
	if (rc < 0) {
		snprintf(why, size, "unable to reach the launcher at %s:%s: %s", host, port,
			 err[0] != '\0' ? err : world_strerror(rc));
		if (d->fd >= 0) {
			close(d->fd);
			d->fd = -1;
		}
		return -1;
	}
	addrs(d);
	return 0;
}
