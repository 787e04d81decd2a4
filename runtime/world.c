/* SPDX-License-Identifier: MIT */
/*
 * world: this process as a rank: its identity from the environment, its
 * registry connection (through the progress thread), barriers, stop. It
 * never prints and never exits the process.
 */
#include "worldint.h"

#include "clock.h"
#include "embed.h"
#include "regcall.h"
#include "spin.h"
#include "table.h"

#include <errno.h>
#include <limits.h>
#include <sys/random.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "regproto.h"

#define CONNECT_TIMEOUT_MS 10000
/* How long rank 0 of a world without worldrun serves the others after
 * its own stop, so that their last answers reach them. */
#define LINGER_MS 5000
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
advertised(const struct world *w)
{
	const char *a = getenv("WORLD_ADVERTISE");
	const char *n = getenv("WORLD_NNODES");

	if (w->alone) {
		return w->advertise[0] != '\0' ? w->advertise : NULL;
	}
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

/* What the others are told once rank 0 of a world without worldrun
 * is gone with the registry it hosted. */
#define GONE "rank 0, which hosted this world's registry, is gone"

static int
connect_job(struct world *w, const char *endpoints, const char *secret)
{
	struct wr_prog_cfg cfg = {
		.endpoints = endpoints,
		.secret = secret,
		.gone = w->alone && w->rank != 0 ? GONE : NULL,
		.rank = w->rank,
		.size = w->size,
		.lease_interval = env_seconds("WORLD_LEASE_INTERVAL", 5),
		.connect_timeout_ms = CONNECT_TIMEOUT_MS,
		.handlers = w->handlers,
		.workers = w->workers,
		.waits = &w->waits,
		.advertise = advertised(w),
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
	/* A world without worldrun has no job directory (and must not use
	 * worldrun's, where its ranks' sockets are): each rank makes one of
	 * its own, removed at its stop. */
	if (w->alone) {
		w->own_dir = wr_embed_rank_dir();
	}
	dir = w->alone ? NULL : job_dir(cfg.endpoints);
	cfg.dir = w->alone ? w->own_dir : dir;
	rc = wr_prog_open(&cfg, &w->prog);
	free(dir);
	if (rc == 0) {
		rc = publish(w);
	}
	return rc == 0 ? wr_names_publish(w) : rc;
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
	wr_embed_host_close(w->host, goodbye ? LINGER_MS : 0);
	wr_embed_rank_dir_remove(w->own_dir);
	free(w->own_dir);
	if (w->addr != NULL) {
		wr_embed_secret_remove(w->addr);
		free(w->addr);
	}
	wr_handlers_destroy(w->handlers);
	wr_names_finish(w);
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

/* @n random bytes as hex into @out (2n + 1 bytes). */
static int
random_hex(char *out, size_t n)
{
	unsigned char b[32];

	if (n > sizeof(b) || getrandom(b, n, 0) != (ssize_t)n) {
		return -EIO;
	}
	for (size_t i = 0; i < n; i++) {
		snprintf(out + 2 * i, 3, "%02x", b[i]);
	}
	return 0;
}

/* Rank 0 of a world without worldrun: host the registry, make the
 * secret findable, join, and name the job. */
static int
host_world(struct world *w, const struct wr_embed_addr *a, const char *endpoints)
{
	const char *given = getenv("WORLD_SECRET");
	int rc = given != NULL ? 0 : random_hex(w->secret, 16);

	if (given != NULL) {
		snprintf(w->secret, sizeof(w->secret), "%s", given);
	}
	if (rc == 0) {
		rc = wr_embed_host_open(a, w->size, w->secret, &w->host);
	}
	if (rc == 0 && given == NULL) {
		w->addr = malloc(sizeof(*a));
		rc = w->addr == NULL ? -ENOMEM : wr_embed_secret_write(a, w->secret);
		if (w->addr != NULL) {
			*w->addr = *a;
		}
	}
	if (rc == 0) {
		rc = connect_job(w, endpoints, w->secret);
	}
	if (rc == 0) {
		rc = random_hex(w->jobid, 6);
	}
	return rc == 0 ? world_kv_set(w, "world.jobid", w->jobid, strlen(w->jobid)) : rc;
}

/* What may pass once rank 0 is there: it is not yet, or its secret file
 * is an old one (a rank 0 that died), or is not written yet; a secret
 * given in WORLD_SECRET that rank 0 refuses stays refused. */
static bool
worth_retrying(int rc, bool given)
{
	return rc == -ENOENT || rc == WORLD_EREGISTRY || (rc == WORLD_EAUTH && !given) ||
	       rc == -ECONNREFUSED || rc == -ETIMEDOUT;
}

/* Another rank: join rank 0's registry, waiting for it at most the wait
 * timeout, then learn the job's id. */
static int
join_world(struct world *w, const struct wr_embed_addr *a, const char *endpoints)
{
	const char *given = getenv("WORLD_SECRET");
	double deadline = wr_clock_mono() + w->wait_ms / 1000.0;
	long pause_ns = 10 * 1000 * 1000;
	void *id = NULL;
	size_t len = 0;
	int rc;

	if (given != NULL) {
		snprintf(w->secret, sizeof(w->secret), "%s", given);
	}
	for (;;) {
		rc = given != NULL ? 0 : wr_embed_secret_read(a, w->secret, sizeof(w->secret));
		if (rc == 0) {
			rc = connect_job(w, endpoints, w->secret);
		}
		if (rc == 0 || !worth_retrying(rc, given != NULL)) {
			break;
		}
		if (wr_clock_mono() >= deadline) {
			/* No secret found (a stranger finds none): no rank 0. */
			rc = rc == -ENOENT ? -ETIMEDOUT : rc;
			break;
		}
		nanosleep(&(struct timespec){ 0, pause_ns }, NULL);
		pause_ns = pause_ns < 200 * 1000 * 1000 ? pause_ns * 2 : pause_ns;
	}
	if (rc == 0) {
		rc = world_kv_get(w, "world.jobid", &id, &len, WORLD_TIMEOUT_DEFAULT);
	}
	if (rc == 0) {
		snprintf(w->jobid, sizeof(w->jobid), "%.*s", (int)len, (char *)id);
	}
	free(id);
	return rc;
}

/* A world without worldrun, at @o->address. */
static int
open_alone(struct world *w, const struct world_options *o)
{
	struct wr_embed_addr a;
	char endpoints[64];
	int rc = wr_embed_parse(o->address, &a);

	if (rc < 0) {
		return rc;
	}
	snprintf(endpoints, sizeof(endpoints), "tcp:%s:%d", a.ip, a.port);
	w->alone = true;
	/* Rank 0 on another host: this rank answers where that route leaves. */
	rc = wr_embed_local_ip(&a, w->advertise);
	if (rc != 0) {
		w->advertise[0] = '\0';
	}
	return o->rank == 0 ? host_world(w, &a, endpoints) : join_world(w, &a, endpoints);
}

/* Rank and size: @o's, worldrun's, or the singleton's 0 of 1; and the
 * name: @o's, or the decimal rank. */
static int
identity(struct world *w, const struct world_options *o)
{
	int rc = 0;

	if (o != NULL && o->address != NULL) {
		if (o->size < 1 || o->rank < 0 || o->rank >= o->size || o->address == NULL) {
			return -EINVAL;
		}
		w->size = o->size;
		w->rank = o->rank;
	} else if (getenv("WORLD_REGISTRY") != NULL) {
		rc = env_int("WORLD_SIZE", 1, INT_MAX, &w->size);
		if (rc == 0) {
			rc = env_int("WORLD_RANK", 0, w->size - 1, &w->rank);
		}
	}
	if (rc == 0 && o != NULL && o->name != NULL && o->name[0] != '\0') {
		rc = wr_names_check(o->name, w->rank);
		snprintf(w->name, sizeof(w->name), "%s", rc == 0 ? o->name : "");
	}
	if (w->name[0] == '\0') {
		snprintf(w->name, sizeof(w->name), "%d", w->rank);
	}
	return rc;
}

/* A rank that named itself learns every name now, and whether another
 * rank took its name (then every rank that named itself is told). */
static bool
named(const struct world *w)
{
	char own[16];

	snprintf(own, sizeof(own), "%d", w->rank);
	return strcmp(w->name, own) != 0;
}

int
world_open_with(const struct world_options *o, struct world **out)
{
	struct world *w = calloc(1, sizeof(*w));
	const char *jobid = getenv("WORLD_JOBID");
	int rc, spin_us;

	*out = NULL;
	if (w == NULL) {
		return -ENOMEM;
	}
	pthread_mutex_init(&w->mu, NULL);
	pthread_mutex_init(&w->fab_mu, NULL);
	wr_waits_init(&w->waits);
	w->size = 1;
	w->wait_ms = (int)(env_seconds("WORLD_WAIT_TIMEOUT", 300) * 1000);
	rc = identity(w, o);
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
	if (rc == 0 && o != NULL && o->address != NULL) {
		rc = open_alone(w, o);
	} else if (rc == 0 && getenv("WORLD_REGISTRY") != NULL) {
		/* Kept: the job's /dev/shm names come from it later (endpoint.c),
		 * when the program may have cleaned its environment. */
		snprintf(w->secret, sizeof(w->secret), "%s",
			 getenv("WORLD_SECRET") != NULL ? getenv("WORLD_SECRET") : "");
		rc = connect_job(w, getenv("WORLD_REGISTRY"),
				 getenv("WORLD_SECRET") != NULL ? w->secret : NULL);
		snprintf(w->jobid, sizeof(w->jobid), "%s", jobid != NULL ? jobid : "");
	}
	if (rc == 0 && named(w)) {
		rc = wr_names_load(w, WORLD_TIMEOUT_DEFAULT);
	}
	if (rc < 0) {
		/* Two ranks of one name: a rank 0 that hosts the registry serves
		 * the others until they too learned it (world_free() lingers). */
		world_free(w, rc == -EEXIST && w->host != NULL);
		return rc;
	}
	*out = w;
	return 0;
}

int
world_open(struct world **out)
{
	return world_open_with(NULL, out);
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

/* Barrier @name of every rank; the stop barrier says how far each
 * collective group got (wr_regproto_stop()). */
static int
barrier_as(struct world *w, enum wr_wait_kind kind, const char *name,
	   int timeout_ms)
{
	struct wr_wait rec = { .kind = kind, .name = name, .peer = -1 };

	if (w->prog == NULL) {
		return timeout_ms < WORLD_TIMEOUT_FOREVER ? -EINVAL : 0;
	}
	if (kind != WR_WAIT_STOP && w->stopping) {
		return -ESHUTDOWN;
	}
	return wr_regcall_run_as(w, &rec, kind == WR_WAIT_STOP
				 ? wr_regproto_stop(wr_coll_world_progress(w))
				 : wr_regproto_barrier(name, NULL),
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
		w->stopping = true;
		rc = barrier_as(w, WR_WAIT_STOP, WR_STOP_BARRIER, timeout_ms);
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
