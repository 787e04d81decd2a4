/* SPDX-License-Identifier: MIT */
#include "reghost.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "opts.h"
#include "spin.h"
#include "token.h"

/* Seconds from worldrun's environment, or @dflt. */
static int
setting(char *const *envp, const char *name, double dflt, double *out)
{
	const char *v = wr_env_value(envp, name);

	*out = dflt;
	if (v != NULL && (wr_opts_parse_seconds(v, out) < 0 || *out <= 0)) {
		fprintf(stderr, "worldrun: %s=%s: not a number of seconds\n", name, v);
		return 125;
	}
	return 0;
}

/* A count from worldrun's environment (1 to 1048576), or @dflt. */
static int
count_setting(char *const *envp, const char *name, long dflt, long *out)
{
	const char *v = wr_env_value(envp, name);

	*out = dflt;
	if (v != NULL && wr_opts_parse_count(v, out) < 0) {
		fprintf(stderr, "worldrun: %s=%.40s: not a count from 1 to 1048576\n",
			name, v);
		return 125;
	}
	return 0;
}

/* A quarter of this host's memory: the key/value space's default budget. */
static size_t
kv_default(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);

	return pages > 0 && size > 0 ? (size_t)pages * (size_t)size / 4
				     : (size_t)1 << 30;
}

static int
read_settings(struct wr_reghost *h, char *const *envp)
{
	int rc = setting(envp, "WORLD_LEASE_INTERVAL", 5, &h->lease_interval);
	const char *bad, *spin = wr_env_value(envp, "WORLD_SPIN_US");
	const char *pull = wr_env_value(envp, "WORLD_PULL");

	if (rc == 0) {
		rc = setting(envp, "WORLD_LEASE_TIMEOUT", 6 * h->lease_interval,
			     &h->lease_timeout);
	}
	if (rc == 0) {
		rc = setting(envp, "WORLD_WAIT_TIMEOUT", 300, &h->wait_timeout);
	}
	if (rc == 0 && h->lease_timeout < 2 * h->lease_interval) {
		fprintf(stderr, "worldrun: WORLD_LEASE_TIMEOUT must be at least twice "
				"WORLD_LEASE_INTERVAL\n");
		rc = 125;
	}
	if (rc == 0 && wr_frame_limits_parse(&h->limits, wr_env_value(envp, "WORLD_MSG_MAX"),
					     wr_env_value(envp, "WORLD_BLOB_MAX"), &bad) < 0) {
		fprintf(stderr, "worldrun: %s=%.40s: not a size in bytes within its "
				"range (see ENVIRONMENT in worldrun(1))\n", bad,
			wr_env_value(envp, bad));
		rc = 125;
	}
	if (rc == 0) {
		rc = count_setting(environ, "WORLD_CONN_MAX", WR_REG_CONN_MAX, &h->conn_max);
	}
	h->kv_max = kv_default();
	if (rc == 0 && wr_frame_size_parse(wr_env_value(environ, "WORLD_KV_MAX"), 1 << 20,
					   (size_t)1 << 50, &h->kv_max) < 0) {
		fprintf(stderr, "worldrun: WORLD_KV_MAX=%.40s: not a size in bytes "
				"from 1M to 1024T\n", wr_env_value(environ, "WORLD_KV_MAX"));
		rc = 125;
	}
	if (rc == 0 && wr_spin_parse(spin, &h->spin_us) < 0) {
		fprintf(stderr, "worldrun: WORLD_SPIN_US=%.40s: not a number of "
				"microseconds from 0 to %d\n", spin, WR_SPIN_US_MAX);
		rc = 125;
	}
	h->pull = pull == NULL || strcmp(pull, "1") == 0;
	if (rc == 0 && pull != NULL && !h->pull && strcmp(pull, "0") != 0) {
		fprintf(stderr, "worldrun: WORLD_PULL=%.40s: 0 or 1\n", pull);
		rc = 125;
	}
	return rc;
}

/* A 0700 directory of the job's own, for the registry's socket. */
static int
make_dir(struct wr_reghost *h, const char *jobid)
{
	const char *tmp = getenv("TMPDIR");
	int rc;

	if (tmp == NULL || tmp[0] == '\0') {
		tmp = "/tmp";
	}
	rc = wr_jobdir_make(&h->dir, tmp, jobid);
	if (rc < 0) {
		fprintf(stderr, "worldrun: unable to create a directory in %s: %s\n",
			tmp, strerror(-rc));
	}
	return rc;
}

int
wr_reghost_open(struct wr_reghost *h, const struct wr_reghost_cfg *cfg)
{
	struct wr_regsrv_cfg scfg = {
		.base = cfg->base, .jobid = cfg->jobid, .secret = h->secret,
		.dir = h->dir.path, .hello_timeout = WR_REG_HELLO_TIMEOUT,
		.rank_lost = cfg->rank_lost, .rank_failed = cfg->rank_failed,
		.peer_dead = cfg->peer_dead, .full = cfg->full, .status = cfg->status,
		.fate = cfg->fate, .far = cfg->far,
		.arg = cfg->arg,
	};
	int rc;

	*h = (struct wr_reghost){ 0 };
	rc = read_settings(h, cfg->environ);
	if (rc != 0) {
		return rc;
	}
	scfg.lease_timeout = h->lease_timeout;
	scfg.tools_max = (int)h->conn_max;
	scfg.limits = h->limits;
	scfg.wait_default = h->wait_timeout;
	h->reg = wr_reg_create(cfg->size);
	if (h->reg == NULL || wr_token(h->secret, 16) < 0 ||
	    make_dir(h, cfg->jobid) < 0) {
		return 125;
	}
	wr_reg_limit(h->reg, h->limits.blob_max, h->kv_max);
	scfg.reg = h->reg;
	rc = wr_regsrv_open(&scfg, &h->srv);
	if (rc < 0) {
		fprintf(stderr, "worldrun: unable to open the registry: %s\n",
			strerror(-rc));
		return 125;
	}
	return 0;
}

void
wr_reghost_close(struct wr_reghost *h)
{
	if (h == NULL) {
		return;
	}
	wr_regsrv_close(h->srv);
	wr_reg_destroy(h->reg);
	h->srv = NULL;
	h->reg = NULL;
	/* What ranks that did not stop left there (their sockets) goes too. */
	wr_jobdir_remove(&h->dir);
	wr_jobdir_release(&h->dir);
	h->dir.path[0] = '\0';
}

int
wr_reghost_export(const struct wr_reghost *h, struct wr_env *env)
{
	char num[5][32];
	int rc;

	snprintf(num[0], sizeof(num[0]), "%g", h->lease_interval);
	snprintf(num[1], sizeof(num[1]), "%g", h->wait_timeout);
	snprintf(num[2], sizeof(num[2]), "%zu", h->limits.json_max);
	snprintf(num[3], sizeof(num[3]), "%zu", h->limits.blob_max);
	snprintf(num[4], sizeof(num[4]), "%d", h->spin_us);
	rc = wr_env_set(env, "WORLD_REGISTRY", wr_regsrv_endpoints(h->srv));
	if (rc == 0) {
		rc = wr_env_set(env, "WORLD_JOBDIR", h->dir.path);
	}
	if (rc == 0) {
		rc = wr_env_set(env, "WORLD_SECRET", h->secret);
	}
	if (rc == 0) {
		rc = wr_env_set(env, "WORLD_LEASE_INTERVAL", num[0]);
	}
	if (rc == 0) {
		rc = wr_env_set(env, "WORLD_WAIT_TIMEOUT", num[1]);
	}
	if (rc == 0) {
		rc = wr_env_set(env, "WORLD_MSG_MAX", num[2]);
	}
	if (rc == 0) {
		rc = wr_env_set(env, "WORLD_BLOB_MAX", num[3]);
	}
	if (rc == 0) {
		rc = wr_env_set(env, "WORLD_SPIN_US", num[4]);
	}
	if (rc == 0) {
		rc = wr_env_set(env, "WORLD_PULL", h->pull ? "1" : "0");
	}
	return rc;
}

void
wr_reghost_guard(const struct wr_reghost *h, struct wr_guardian *g)
{
	wr_guardian_remove_dir(g, &h->dir);
}

void
wr_reghost_rank_dead(struct wr_reghost *h, int rank)
{
	if (h != NULL) {
		wr_reg_rank_dead(h->reg, rank);
	}
}

int
wr_reghost_grow(struct wr_reghost *h, int nranks)
{
	return h != NULL && h->reg != NULL ? wr_reg_grow(h->reg, nranks) : 0;
}

void
wr_reghost_rank_done(struct wr_reghost *h, int rank)
{
	if (h != NULL) {
		wr_reg_rank_done(h->reg, rank);
	}
}

void
wr_reghost_rank_name(const struct wr_reghost *h, int rank, char *buf, size_t room)
{
	const char *v = NULL;
	size_t len = 0, i = 0;

	buf[0] = '\0';
	if (h == NULL || h->reg == NULL ||
	    wr_reg_rank_name(h->reg, rank, (const void **)&v, &len) < 0 ||
	    len >= room || len > 64) {
		return;
	}
	/* A rank's own words on worldrun's lines: printable, no quote; the
	 * value is bytes, not a string, so counted within its length. */
	while (i < len && (unsigned char)v[i] >= 0x20 && v[i] != 0x7f && v[i] != '"') {
		i++;
	}
	if (i == len) {
		memcpy(buf, v, len);
		buf[len] = '\0';
	}
}

bool
wr_reghost_rank_left(const struct wr_reghost *h, int rank)
{
	return h != NULL && wr_reg_rank_life(h->reg, rank) == WR_RANK_DONE;
}

bool
wr_reghost_rank_stopping(const struct wr_reghost *h, int rank)
{
	return h != NULL && wr_reg_rank_is_stopping(h->reg, rank);
}

void
wr_reghost_pause_leases(struct wr_reghost *h, bool paused)
{
	if (h != NULL && h->srv != NULL) {
		wr_regsrv_pause_leases(h->srv, paused);
	}
}

int
wr_reghost_survey(struct wr_reghost *h, int timeout_ms, wr_regsrv_survey_fn *fn,
		  void *arg)
{
	if (h == NULL || h->srv == NULL) {
		return -ENOTCONN;
	}
	return wr_regsrv_survey(h->srv, timeout_ms, fn, arg);
}

const char *
wr_reghost_endpoints(const struct wr_reghost *h)
{
	return wr_regsrv_endpoints(h->srv);
}

int
wr_reghost_far_port(const struct wr_reghost *h)
{
	return wr_regsrv_far_port(h->srv);
}
