/* SPDX-License-Identifier: MIT */
#include "embed.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/event.h>

#include "clock.h"
#include "core.h"
#include "rundir.h"
#include "server.h"

/* Seconds, as worldrun has them by default (reghost.c). */
#define HELLO_TIMEOUT 5.0
#define LEASE_TIMEOUT 30.0
#define WAIT_DEFAULT 300.0
/* How often a closing host looks whether every rank is gone. */
#define LINGER_TICK 0.02

struct wr_embed {
	struct event_base *base;
	struct wr_reg *reg;
	struct wr_regsrv *srv;
	struct event *wake;    /* wr_embed_host_close() asks */
	struct event *linger;  /* then this looks until the ranks are gone */
	int wake_fd;
	double deadline;
	pthread_t thread;
	bool started;
	char **fate;           /* how each rank was lost, for its peers */
	int size;
	char secret[128];
};

int
wr_embed_parse(const char *address, struct wr_embed_addr *out)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res = NULL;
	char host[256], *end;
	const char *colon;
	long port;
	size_t n;

	if (address == NULL) {
		return -EINVAL;
	}
	if (strncmp(address, "tcp://", 6) == 0) {
		address += 6;
	}
	colon = strrchr(address, ':');
	n = colon != NULL ? (size_t)(colon - address) : 0;
	if (n == 0 || n >= sizeof(host)) {
		return -EINVAL;
	}
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	if (errno != 0 || end == colon + 1 || *end != '\0' || port < 1 || port > 65535) {
		return -EINVAL;
	}
	memcpy(host, address, n);
	host[n] = '\0';
	if (getaddrinfo(host, NULL, &hints, &res) != 0 || res == NULL) {
		return -EHOSTUNREACH;
	}
	inet_ntop(AF_INET, &((struct sockaddr_in *)res->ai_addr)->sin_addr, out->ip,
		  sizeof(out->ip));
	freeaddrinfo(res);
	out->port = (int)port;
	return 0;
}

int
wr_embed_local_ip(const struct wr_embed_addr *a, char ip[INET_ADDRSTRLEN])
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(a->port) };
	socklen_t len = sizeof(sin);
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), rc = 0;

	inet_pton(AF_INET, a->ip, &sin.sin_addr);
	/* A datagram socket's connect sends nothing: it only picks the route. */
	if (fd < 0 || connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sin, &len) < 0) {
		rc = -errno;
	}
	if (fd >= 0) {
		close(fd);
	}
	if (rc == 0) {
		inet_ntop(AF_INET, &sin.sin_addr, ip, INET_ADDRSTRLEN);
		rc = (ntohl(sin.sin_addr.s_addr) >> 24) == 127 ? 1 : 0;
	}
	return rc;
}

/* ---- the host: the registry on a thread of its own ---- */

/* "@how (@why)", how rank @rank ended, kept for the words of its peers. */
static void
keep_fate(struct wr_embed *e, int rank, const char *how, const char *why)
{
	char *text = NULL;

	if (rank >= 0 && rank < e->size && e->fate[rank] == NULL &&
	    asprintf(&text, "%s (%s)", how, why) >= 0) {
		e->fate[rank] = text;
	}
}

static void
rank_lost(void *arg, int rank, const char *why)
{
	struct wr_embed *e = arg;

	keep_fate(arg, rank, "was lost", why);
	wr_reg_rank_dead(e->reg, rank);
}

static void
rank_failed(void *arg, int rank, int status, const char *why)
{
	struct wr_embed *e = arg;

	keep_fate(arg, rank, "failed", why);
	wr_reg_rank_dead(e->reg, rank);
}

static void
fate(void *arg, int rank, char *buf, size_t room)
{
	struct wr_embed *e = arg;

	if (rank >= 0 && rank < e->size && e->fate[rank] != NULL) {
		snprintf(buf, room, "%s", e->fate[rank]);
	}
}

static bool
all_gone(const struct wr_embed *e)
{
	for (int r = 0; r < e->size; r++) {
		if (wr_reg_rank_life(e->reg, r) == WR_RANK_UP) {
			return false;
		}
	}
	return true;
}

static void
on_linger(evutil_socket_t fd, short what, void *arg)
{
	struct wr_embed *e = arg;
	struct timeval tv = wr_clock_tv(LINGER_TICK);

	if (all_gone(e) || wr_clock_mono() >= e->deadline) {
		event_base_loopbreak(e->base);
		return;
	}
	evtimer_add(e->linger, &tv);
}

static void
on_wake(evutil_socket_t fd, short what, void *arg)
{
	struct wr_embed *e = arg;
	uint64_t n;

	if (read(e->wake_fd, &n, sizeof(n)) < 0) {
		return; /* EAGAIN: nothing asked */
	}
	on_linger(-1, 0, e);
}

static void *
loop(void *arg)
{
	struct wr_embed *e = arg;

	event_base_dispatch(e->base);
	return NULL;
}

static int
open_server(struct wr_embed *e, const struct wr_embed_addr *a)
{
	struct wr_regsrv_cfg cfg = {
		.base = e->base, .reg = e->reg, .jobid = "", .secret = e->secret,
		.tcp_addr = a->ip, .tcp_port = a->port, .hello_timeout = HELLO_TIMEOUT,
		.lease_timeout = LEASE_TIMEOUT, .wait_default = WAIT_DEFAULT,
		.rank_lost = rank_lost, .rank_failed = rank_failed, .fate = fate,
		.arg = e,
	};
	const char *bad;
	int rc = wr_frame_limits_parse(&cfg.limits, getenv("WORLD_MSG_MAX"),
				       getenv("WORLD_BLOB_MAX"), &bad);

	if (rc < 0) {
		return rc;
	}
	wr_reg_limit(e->reg, cfg.limits.blob_max, (size_t)1 << 30);
	return wr_regsrv_open(&cfg, &e->srv);
}

static int
start(struct wr_embed *e, const struct wr_embed_addr *a)
{
	sigset_t all, old;
	int rc;

	e->base = event_base_new();
	e->reg = wr_reg_create(e->size);
	e->fate = calloc((size_t)e->size, sizeof(*e->fate));
	e->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (e->base == NULL || e->reg == NULL || e->fate == NULL || e->wake_fd < 0) {
		return -ENOMEM;
	}
	e->wake = event_new(e->base, e->wake_fd, EV_READ | EV_PERSIST, on_wake, e);
	e->linger = evtimer_new(e->base, on_linger, e);
	if (e->wake == NULL || e->linger == NULL || event_add(e->wake, NULL) < 0) {
		return -ENOMEM;
	}
	rc = open_server(e, a);
	if (rc < 0) {
		return rc;
	}
	/* Signals belong to the program's own threads, never to ours. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	rc = -pthread_create(&e->thread, NULL, loop, e);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	e->started = rc == 0;
	return rc;
}

static void
host_free(struct wr_embed *e)
{
	wr_regsrv_close(e->srv);
	wr_reg_destroy(e->reg);
	if (e->wake != NULL) {
		event_free(e->wake);
	}
	if (e->linger != NULL) {
		event_free(e->linger);
	}
	if (e->base != NULL) {
		event_base_free(e->base);
	}
	if (e->wake_fd >= 0) {
		close(e->wake_fd);
	}
	for (int r = 0; e->fate != NULL && r < e->size; r++) {
		free(e->fate[r]);
	}
	free(e->fate);
	free(e);
}

int
wr_embed_host_open(const struct wr_embed_addr *a, int size, const char *secret,
		   struct wr_embed **out)
{
	struct wr_embed *e = calloc(1, sizeof(*e));
	int rc;

	*out = NULL;
	if (e == NULL) {
		return -ENOMEM;
	}
	e->wake_fd = -1;
	e->size = size;
	snprintf(e->secret, sizeof(e->secret), "%s", secret);
	rc = start(e, a);
	if (rc < 0) {
		host_free(e);
		return rc;
	}
	*out = e;
	return 0;
}

void
wr_embed_host_close(struct wr_embed *e, int linger_ms)
{
	uint64_t one = 1;

	if (e == NULL) {
		return;
	}
	if (e->started) {
		/* Read by the loop only after the wake below. */
		e->deadline = wr_clock_mono() + linger_ms / 1000.0;
		if (write(e->wake_fd, &one, sizeof(one)) < 0) {
			/* EAGAIN: a wake is pending already. */
		}
		pthread_join(e->thread, NULL);
	}
	host_free(e);
}

/* ---- the secret's file ---- */

static void
file_name(const struct wr_embed_addr *a, char *buf, size_t room)
{
	snprintf(buf, room, "world-%s-%d", a->ip, a->port);
}

/*
 * A rank 0 killed before its stop leaves its file: remove the files of
 * rank 0s that are gone (the second line is the pid), so that they do
 * not pile up; a pid used again only keeps a file.
 */
static void
sweep(const struct wr_rundir *d)
{
	DIR *dir = opendir(d->path);
	struct dirent *de;

	while (dir != NULL && (de = readdir(dir)) != NULL) {
		char *text = NULL, *nl;
		long pid;

		if (strncmp(de->d_name, "world-", 6) != 0 ||
		    wr_rundir_get(d, de->d_name, &text) < 0) {
			continue;
		}
		nl = strchr(text, '\n');
		pid = nl != NULL ? strtol(nl + 1, NULL, 10) : 0;
		if (pid > 0 && kill((pid_t)pid, 0) < 0 && errno == ESRCH) {
			wr_rundir_drop(d, de->d_name);
		}
		free(text);
	}
	if (dir != NULL) {
		closedir(dir);
	}
}

int
wr_embed_secret_write(const struct wr_embed_addr *a, const char *secret)
{
	struct wr_rundir d;
	char name[64], *text = NULL;
	int rc = wr_rundir_open(&d, true);

	file_name(a, name, sizeof(name));
	if (rc == 0) {
		sweep(&d);
		rc = asprintf(&text, "%s\n%ld", secret, (long)getpid()) < 0 ? -ENOMEM
			: wr_rundir_put(&d, name, text);
	}
	free(text);
	return rc;
}

void
wr_embed_secret_remove(const struct wr_embed_addr *a)
{
	struct wr_rundir d;
	char name[64];

	file_name(a, name, sizeof(name));
	if (wr_rundir_open(&d, false) == 0) {
		wr_rundir_drop(&d, name);
	}
}

int
wr_embed_secret_read(const struct wr_embed_addr *a, char *secret, size_t room)
{
	struct wr_rundir d;
	char name[64], *text = NULL;
	int rc = wr_rundir_open(&d, false);

	file_name(a, name, sizeof(name));
	if (rc == 0) {
		rc = wr_rundir_get(&d, name, &text);
	}
	if (rc == 0) {
		text[strcspn(text, "\n")] = '\0';
		rc = strlen(text) < room && text[0] != '\0' ? 0 : -EBADMSG;
		snprintf(secret, room, "%s", rc == 0 ? text : "");
	}
	free(text);
	return rc;
}

/* ---- a rank's own directory ---- */

#define RANK_DIR "rank-"

void
wr_embed_rank_dir_remove(const char *path)
{
	DIR *dir = path != NULL ? opendir(path) : NULL;
	struct dirent *de;

	/* Only the socket is there; nothing under it is a directory. */
	while (dir != NULL && (de = readdir(dir)) != NULL) {
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0) {
			unlinkat(dirfd(dir), de->d_name, 0);
		}
	}
	if (dir != NULL) {
		closedir(dir);
		rmdir(path);
	}
}

/* The directories of processes that are gone: a pid used again only
 * keeps one. */
static void
sweep_rank_dirs(const struct wr_rundir *d)
{
	DIR *dir = opendir(d->path);
	struct dirent *de;

	while (dir != NULL && (de = readdir(dir)) != NULL) {
		bool ours = strncmp(de->d_name, RANK_DIR, strlen(RANK_DIR)) == 0;
		long pid = ours ? strtol(de->d_name + strlen(RANK_DIR), NULL, 10) : 0;
		char *path = NULL;

		if (pid > 0 && kill((pid_t)pid, 0) < 0 && errno == ESRCH &&
		    asprintf(&path, "%s/%s", d->path, de->d_name) >= 0) {
			wr_embed_rank_dir_remove(path);
		}
		free(path);
	}
	if (dir != NULL) {
		closedir(dir);
	}
}

char *
wr_embed_rank_dir(void)
{
	struct wr_rundir d;
	char *path = NULL;

	if (wr_rundir_open(&d, true) < 0) {
		return NULL;
	}
	sweep_rank_dirs(&d);
	if (asprintf(&path, "%s/" RANK_DIR "%ld-XXXXXX", d.path, (long)getpid()) < 0) {
		return NULL;
	}
	/* Room for "/rank.N" in a socket's path, or no directory. */
	if (strlen(path) + 16 >= sizeof(((struct sockaddr_un *)0)->sun_path) ||
	    mkdtemp(path) == NULL) {
		free(path);
		return NULL;
	}
	return path;
}
