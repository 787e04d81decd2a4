/* SPDX-License-Identifier: MIT */
/*
 * world: this process as a rank: its identity from the environment, its
 * registry connection (through the progress thread), barriers, stop. It
 * never prints and never exits the process.
 */
#include "worldint.h"

#include "regcall.h"
#include "spin.h"
#include "table.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "regproto.h"

#define CONNECT_TIMEOUT_MS 10000
/* How long world_fail() gives the registry to hear it. */
#define FAIL_TIMEOUT_MS 2000
/* Workers start as calls need them; a cap keeps a storm bounded. */
#define MAX_WORKERS 64

static int
env_int(const char *name, long lo, long hi, int *out)
{
	const char *v = getenv(name);
	char *end = NULL;
	long n;

	if (v == NULL || v[0] == '\0') {
		return -EINVAL;
	}
	errno = 0;
	n = strtol(v, &end, 10);
	if (errno != 0 || *end != '\0' || n < lo || n > hi) {
		return -EINVAL;
	}
	*out = (int)n;
	return 0;
}

/* Seconds from the environment as milliseconds, or @dflt. */
static double
env_seconds(const char *name, double dflt)
{
	const char *v = getenv(name);
	char *end = NULL;
	double s;

	if (v == NULL) {
		return dflt;
	}
	s = strtod(v, &end);
	return end != v && *end == '\0' && s > 0 && s < 1e7 ? s : dflt;
}

/*
 * The job's private directory on this host, for the rank's own socket:
 * WORLD_JOBDIR, or where the registry's Unix socket is (a worldrun
 * before WORLD_JOBDIR).
 */
static char *
job_dir(const char *endpoints)
{
	const char *d = getenv("WORLD_JOBDIR");
	const char *u = strstr(endpoints, "unix:");
	char *dir, *slash;

	if (d != NULL && d[0] == '/') {
		return strdup(d);
	}
	if (u == NULL) {
		return NULL;
	}
	dir = strndup(u + 5, strcspn(u + 5, ","));
	slash = dir != NULL ? strrchr(dir, '/') : NULL;
	if (slash == NULL) {
		free(dir);
		return NULL;
	}
	*slash = '\0';
	return dir;
}

/*
 * The address that ranks of other hosts reach this one at: worldrun's
 * WORLD_ADVERTISE in a job of several nodes; NULL (loopback) otherwise.
 */
static const char *
advertised(void)
{
	const char *a = getenv("WORLD_ADVERTISE");
	const char *n = getenv("WORLD_NNODES");

	return a != NULL && a[0] != '\0' && n != NULL && strcmp(n, "1") != 0 ? a : NULL;
}

/* Tell the others where this rank answers: "world.peer.RANK". */
static int
publish(struct world *w)
{
	const char *ep = wr_prog_endpoints(w->prog);
	char key[32];

	snprintf(key, sizeof(key), "world.peer.%d", w->rank);
	return world_kv_set(w, key, ep, strlen(ep));
}

static int
connect_job(struct world *w)
{
	struct wr_prog_cfg cfg = {
		.endpoints = getenv("WORLD_REGISTRY"),
		.secret = getenv("WORLD_SECRET"),
		.rank = w->rank,
		.size = w->size,
		.lease_interval = env_seconds("WORLD_LEASE_INTERVAL", 5),
		.connect_timeout_ms = CONNECT_TIMEOUT_MS,
		.handlers = w->handlers,
		.workers = w->workers,
		.waits = &w->waits,
		.advertise = advertised(),
	};
	const char *bad;
	char *dir;
	int rc;

	if (cfg.secret == NULL ||
	    wr_frame_limits_parse(&cfg.limits, getenv("WORLD_MSG_MAX"),
				  getenv("WORLD_BLOB_MAX"), &bad) < 0) {
		return -EINVAL;
	}
	/* Like the lease interval, a bad value falls back to the default. */
	wr_spin_parse(getenv("WORLD_SPIN_US"), &cfg.spin_us);
	cfg.no_pull = getenv("WORLD_PULL") != NULL && strcmp(getenv("WORLD_PULL"), "0") == 0;
	dir = job_dir(cfg.endpoints);
	cfg.dir = dir;
	rc = wr_prog_open(&cfg, &w->prog);
	free(dir);
	return rc == 0 ? publish(w) : rc;
}

/* Frees @w and what it holds, in the order the threads need. */
static void
world_free(struct world *w, bool goodbye)
{
	/* Groups still held: the goodbye releases their entries for us. */
	while (w->groups != NULL) {
		struct world_group *g = w->groups;

		w->groups = wr_group_next(g);
		wr_group_free(g);
	}
	wr_coll_world_finish(w);
	/* Running handlers finish first: they answer on the loop's connections. */
	wr_prog_refuse(w->prog);
	wr_workers_close(w->workers);
	wr_prog_close(w->prog, goodbye);
	wr_handlers_destroy(w->handlers);
	for (int i = 0; w->peer_ep != NULL && i < w->size; i++) {
		free(w->peer_ep[i]);
	}
	free(w->peer_ep);
	wr_table_destroy(w->cache);
	wr_waits_finish(&w->waits);
	pthread_mutex_destroy(&w->fab_mu);
	pthread_mutex_destroy(&w->mu);
	free(w);
	wr_payload_drop_kept();
}

int
world_open(struct world **out)
{
	struct world *w = calloc(1, sizeof(*w));
	const char *jobid = getenv("WORLD_JOBID");
	int rc = 0, spin_us;

	*out = NULL;
	if (w == NULL) {
		return -ENOMEM;
	}
	pthread_mutex_init(&w->mu, NULL);
	pthread_mutex_init(&w->fab_mu, NULL);
	wr_waits_init(&w->waits);
	w->size = 1;
	w->wait_ms = (int)(env_seconds("WORLD_WAIT_TIMEOUT", 300) * 1000);
	if (getenv("WORLD_REGISTRY") != NULL) {
		rc = env_int("WORLD_SIZE", 1, INT_MAX, &w->size);
		if (rc == 0) {
			rc = env_int("WORLD_RANK", 0, w->size - 1, &w->rank);
		}
	}
	/* Like the lease interval, a bad value falls back to the default
	 * (worldrun refuses one anyway). */
	wr_spin_parse(getenv("WORLD_SPIN_US"), &spin_us);
	w->handlers = wr_handlers_create();
	w->peer_ep = calloc((size_t)w->size, sizeof(*w->peer_ep));
	w->cache = wr_table_create(NULL);
	if (rc == 0 && (w->handlers == NULL || w->peer_ep == NULL || w->cache == NULL ||
			wr_workers_open(MAX_WORKERS, spin_us, &w->workers) < 0)) {
		rc = -ENOMEM;
	}
	if (rc == 0 && getenv("WORLD_REGISTRY") != NULL) {
		rc = connect_job(w);
	}
	if (rc < 0) {
		world_free(w, false);
		return rc;
	}
	snprintf(w->name, sizeof(w->name), "%d", w->rank);
	snprintf(w->jobid, sizeof(w->jobid), "%s",
		 jobid != NULL && w->prog != NULL ? jobid : "");
	*out = w;
	return 0;
}

const uint32_t *
wr_world_deaths_word(struct world *w)
{
	return w->prog != NULL ? wr_prog_deaths_word(w->prog) : NULL;
}

bool
wr_world_is_dead(struct world *w, int rank)
{
	return w->prog != NULL && wr_prog_is_dead(w->prog, rank);
}

int
wr_world_timeout(const struct world *w, int timeout_ms)
{
	if (timeout_ms < WORLD_TIMEOUT_FOREVER) {
		return -EINVAL;
	}
	if (timeout_ms == WORLD_TIMEOUT_FOREVER) {
		return -1;
	}
	return timeout_ms == WORLD_TIMEOUT_DEFAULT ? w->wait_ms : timeout_ms;
}

static int
barrier_as(struct world *w, enum wr_wait_kind kind, const char *name,
	   int timeout_ms)
{
	struct wr_wait rec = { .kind = kind, .name = name, .peer = -1 };

	if (w->prog == NULL) {
		return timeout_ms < WORLD_TIMEOUT_FOREVER ? -EINVAL : 0;
	}
	return wr_regcall_run_as(w, &rec, wr_regproto_barrier(name, NULL),
				 timeout_ms, NULL, NULL, NULL);
}

int
world_barrier(struct world *w, const char *name, int timeout_ms)
{
	return barrier_as(w, WR_WAIT_BARRIER, name, timeout_ms);
}

int
world_stop(struct world *w, int timeout_ms)
{
	int rc = 0;

	if (w == NULL) {
		return 0;
	}
	if (w->prog != NULL) {
		/* Everyone keeps answering peers until the last rank is here. */
		rc = barrier_as(w, WR_WAIT_STOP, "world.stop", timeout_ms);
	}
	world_free(w, true);
	return rc;
}

void
world_abort(struct world *w)
{
	if (w == NULL) {
		return;
	}
	world_free(w, true);
}

/* @why cut to what the registry takes, on a character's boundary. */
static void
clip(char *out, size_t room, const char *why)
{
	size_t n = strlen(why);

	if (n >= room) {
		n = room - 1;
		while (n > 0 && ((unsigned char)why[n] & 0xc0) == 0x80) {
			n--;
		}
	}
	memcpy(out, why, n);
	out[n] = '\0';
}

int
world_fail(struct world *w, int status, const char *why)
{
	char text[WR_FAIL_WHY_MAX + 1];
	json_t *req;
	int rc = 0;

	if (w == NULL) {
		return 0;
	}
	clip(text, sizeof(text), why != NULL && why[0] != '\0' ? why : "it failed");
	req = wr_regproto_fail(status >= 1 && status <= 255 ? status : 1, text);
	if (req == NULL) { /* not UTF-8 */
		req = wr_regproto_fail(status >= 1 && status <= 255 ? status : 1,
				       "it failed (its reason is not UTF-8)");
	}
	if (w->prog != NULL) {
		rc = wr_regcall_run(w, req, NULL, 0, FAIL_TIMEOUT_MS, NULL, NULL, NULL);
	} else {
		json_decref(req);
	}
	/* No goodbye: the registry counts this rank as dead, not done. */
	world_free(w, false);
	return rc;
}

int
world_rank(const struct world *w)
{
	return w->rank;
}

int
world_size(const struct world *w)
{
	return w->size;
}

const char *
world_name(const struct world *w)
{
	return w->name;
}

const char *
world_jobid(const struct world *w)
{
	return w->jobid;
}

void
world_set_interrupt(struct world *w, int (*check)(void *arg), void *arg)
{
	if (w->prog != NULL) {
		wr_prog_set_interrupt(w->prog, check, arg);
	}
}

int
world_stats(struct world *w, int64_t *requests, int64_t *entries)
{
	json_t *res = NULL, *conns, *c;
	json_int_t n = 0, e = 0;
	size_t i;
	int rc = wr_regcall_run(w, wr_regproto_op(WR_OP_STATS), NULL, 0, 0, &res,
				NULL, NULL);

	if (rc < 0) {
		return rc;
	}
	conns = json_object_get(res, "connections");
	json_array_foreach(conns, i, c) {
		if (json_is_true(json_object_get(c, "self"))) {
			n = json_integer_value(json_object_get(c, "requests"));
		}
	}
	e = json_integer_value(json_object_get(res, "entries"));
	json_decref(res);
	*requests = n;
	*entries = e;
	return 0;
}
