/* SPDX-License-Identifier: MIT */
#include "ctl.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "rundir.h"
#include "spin.h"
#include "world_errors.h"

#define CONNECT_TIMEOUT_MS 10000
/*
 * The registry ends a wait itself and answers -ETIMEDOUT; worldctl waits
 * this much longer, so that the registry's answer, not ours, decides.
 */
#define ANSWER_GRACE_MS 30000
/* What worldrun uses when WORLD_WAIT_TIMEOUT is not set. */
#define WAIT_DEFAULT_S 300

static const char *
env_or_null(const char *name)
{
	const char *v = getenv(name);

	return v != NULL && v[0] != '\0' ? v : NULL;
}

/* WORLD_RANK and WORLD_SIZE: 0 <= rank < size. */
static int
read_identity(struct wr_ctl *ctl)
{
	const char *rank = env_or_null("WORLD_RANK");
	const char *size = env_or_null("WORLD_SIZE");
	int64_t r, s;

	if (rank == NULL || size == NULL) {
		fprintf(stderr, "worldctl: not inside a job: %s is not set\n",
			rank == NULL ? "WORLD_RANK" : "WORLD_SIZE");
		return -EINVAL;
	}
	if (wr_args_integer(size, 1, INT_MAX, &s) < 0 ||
	    wr_args_integer(rank, 0, s - 1, &r) < 0) {
		fprintf(stderr, "worldctl: WORLD_RANK=%.20s WORLD_SIZE=%.20s: not a "
				"rank of the job\n", rank, size);
		return -EINVAL;
	}
	ctl->rank = (int)r;
	ctl->size = (int)s;
	return 0;
}

void
wr_ctl_init(struct wr_ctl *ctl)
{
	*ctl = (struct wr_ctl){ .rank = -1, .wait_default = WAIT_DEFAULT_S };
}

int
wr_ctl_identify(struct wr_ctl *ctl)
{
	const char *wait = env_or_null("WORLD_WAIT_TIMEOUT");

	if (ctl->rank >= 0) {
		return 0;
	}
	ctl->endpoints = env_or_null("WORLD_REGISTRY");
	if (ctl->endpoints == NULL) {
		fprintf(stderr, "worldctl: not inside a job: WORLD_REGISTRY is not "
				"set (run worldctl in a rank of worldrun, or name a "
				"job with --job JOBID)\n");
		return -EINVAL;
	}
	/* A bad WORLD_WAIT_TIMEOUT only moves our own bound: keep the default. */
	if (wait != NULL && (wr_args_seconds(wait, &ctl->wait_default) < 0 ||
			     ctl->wait_default <= 0)) {
		ctl->wait_default = WAIT_DEFAULT_S;
	}
	return read_identity(ctl);
}

void
wr_ctl_finish(struct wr_ctl *ctl)
{
	if (ctl == NULL) {
		return;
	}
	wr_regclient_close(ctl->client);
	ctl->client = NULL;
}

/* Say why connecting to @what failed with @rc. */
static void
say_unconnected(const char *what, int rc, const char *why)
{
	if (rc == -ETIMEDOUT) {
		fprintf(stderr, "worldctl: connecting to %s: no answer within %d s\n",
			what, CONNECT_TIMEOUT_MS / 1000);
	} else if (rc == -EINVAL) {
		fprintf(stderr, "worldctl: connecting to %s: WORLD_REGISTRY is not a "
				"list of endpoints\n", what);
	} else if (rc < 0) {
		fprintf(stderr, "worldctl: connecting to %s: %s\n", what,
			why[0] != '\0' ? why : world_strerror(rc));
	}
}

int
wr_ctl_connect(struct wr_ctl *ctl)
{
	struct wr_regclient_cfg cfg = {
		.role = "tool", .timeout_ms = CONNECT_TIMEOUT_MS,
	};
	struct wr_frame_limits lim;
	const char *bad;
	char why[256] = "";
	int rc;

	if (ctl->job != NULL) {
		return wr_ctl_connect_job(ctl, ctl->job);
	}
	rc = wr_ctl_identify(ctl);
	if (rc < 0) {
		return rc;
	}
	if (wr_frame_limits_parse(&lim, getenv("WORLD_MSG_MAX"),
				  getenv("WORLD_BLOB_MAX"), &bad) < 0) {
		fprintf(stderr, "worldctl: %s=%.40s: not a size in bytes within its "
				"range\n", bad, getenv(bad));
		return -EINVAL;
	}
	/* A bad WORLD_SPIN_US only changes how we wait: keep the default. */
	wr_spin_parse(env_or_null("WORLD_SPIN_US"), &cfg.spin_us);
	cfg.limits = &lim;
	cfg.endpoints = ctl->endpoints;
	cfg.rank = ctl->rank;
	cfg.secret = env_or_null("WORLD_SECRET");
	if (cfg.secret == NULL) {
		fprintf(stderr, "worldctl: not inside a job: WORLD_SECRET is not set\n");
		return -EINVAL;
	}
	cfg.why = why;
	cfg.why_len = sizeof(why);
	rc = wr_regclient_open(&cfg, &ctl->client);
	say_unconnected("the registry", rc, why);
	return rc;
}

int
wr_ctl_open_entry(struct wr_ctl *ctl, const struct wr_rundir_entry *e,
		  int timeout_ms, char *why, size_t why_len)
{
	struct wr_frame_limits lim = { .json_max = (size_t)e->msg_max,
				       .blob_max = (size_t)e->blob_max };
	struct wr_regclient_cfg cfg = {
		.endpoints = e->registry, .secret = e->secret, .rank = -1,
		.role = "observer", .timeout_ms = timeout_ms, .limits = &lim,
		.why = why, .why_len = why_len,
	};

	why[0] = '\0';
	return wr_regclient_open(&cfg, &ctl->client);
}

/* The id of this user's job that @prefix starts, in @id; or says why not. */
static int
find_job(const struct wr_rundir *d, const char *prefix, char *id)
{
	char other[WR_RUNDIR_ID_LEN + 1];
	int rc = wr_rundir_find(d, prefix, id, other);

	if (rc == -ENOENT) {
		fprintf(stderr, "worldctl: job %.40s: no such job of this user (see "
				"worldctl jobs)\n", prefix);
	} else if (rc == -ENOTUNIQ) {
		fprintf(stderr, "worldctl: job %.40s: ambiguous: it starts %s and %s "
				"(give more of the id)\n", prefix, id, other);
	} else if (rc < 0) {
		fprintf(stderr, "worldctl: job %.40s: unable to read %s: %s\n", prefix,
			d->path, strerror(-rc));
	}
	return rc;
}

int
wr_ctl_connect_job(struct wr_ctl *ctl, const char *jobid)
{
	struct wr_rundir dir;
	struct wr_rundir_entry e;
	char id[WR_RUNDIR_ID_LEN + 1], what[64], why[256];
	int rc = wr_rundir_open(&dir, false);

	if (rc == -ENOENT) {
		fprintf(stderr, "worldctl: job %.40s: no such job of this user (see "
				"worldctl jobs)\n", jobid);
		return rc;
	}
	if (rc < 0) {
		fprintf(stderr, "worldctl: %s: not used: %s\n", dir.path,
			wr_rundir_refusal(rc));
		return rc;
	}
	rc = find_job(&dir, jobid, id);
	if (rc < 0) {
		return rc;
	}
	rc = wr_rundir_read(&dir, id, &e);
	if (rc < 0) {
		fprintf(stderr, "worldctl: job %s: unable to read its entry in %s: %s\n",
			id, dir.path, rc == -EBADMSG ? "not an entry of worldrun"
			: strerror(-rc));
		return rc;
	}
	rc = wr_ctl_open_entry(ctl, &e, CONNECT_TIMEOUT_MS, why, sizeof(why));
	snprintf(what, sizeof(what), "job %s", id);
	say_unconnected(what, rc, why);
	wr_rundir_entry_finish(&e);
	return rc;
}

void
wr_ctl_doing(struct wr_ctl *ctl, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ctl->what, sizeof(ctl->what), fmt, ap);
	va_end(ap);
	/* Keys may hold anything: keep the message on one line. */
	for (char *p = ctl->what; *p != '\0'; p++) {
		if ((unsigned char)*p < 0x20 || *p == 0x7f) {
			*p = '?';
		}
	}
}

void
wr_ctl_say(const struct wr_ctl *ctl, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "worldctl: %s: ", ctl->what);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int
wr_ctl_call(struct wr_ctl *ctl, json_t *req_new, const void *blob, size_t len,
	    int64_t wait_ms, json_t **result, void **rblob, size_t *rlen)
{
	double wait_s = wait_ms < 0 ? ctl->wait_default : (double)wait_ms / 1e3;
	double bound_ms = wait_s * 1e3 + ANSWER_GRACE_MS;
	int rc;

	ctl->waited = wait_s;
	if (req_new == NULL) {
		return -ENOMEM;
	}
	rc = wr_regclient_call(ctl->client, req_new, blob, len,
			       bound_ms > INT_MAX ? INT_MAX : (int)bound_ms,
			       result, rblob, rlen);
	/* No answer at all (not the registry's own -ETIMEDOUT): it is stuck. */
	if (rc == -ETIMEDOUT && wr_regclient_error(ctl->client)[0] == '\0') {
		ctl->waited = bound_ms / 1e3;
		rc = -ETIME;
	}
	return rc;
}

/* Whether the registry said more than the code's name (who, what). */
static bool
told(const char *msg, int rc)
{
	return msg[0] != '\0' && strcmp(msg, world_strerror(rc)) != 0;
}

int
wr_ctl_fail(const struct wr_ctl *ctl, int rc)
{
	const char *msg = ctl->client != NULL ? wr_regclient_error(ctl->client) : "";
	int dead = ctl->client != NULL ? wr_regclient_dead_rank(ctl->client) : -1;

	switch (rc) {
	case 0:
		return WR_CTL_OK;
	case -ENOENT:
		return WR_CTL_MISSING;
	case WORLD_EPEERDEAD:
		if (told(msg, rc)) {
			wr_ctl_say(ctl, "%s", msg);
		} else if (dead >= 0) {
			wr_ctl_say(ctl, "rank %d is dead", dead);
		} else {
			wr_ctl_say(ctl, "a rank is dead");
		}
		return WR_CTL_PEERDEAD;
	case -ETIMEDOUT:
		wr_ctl_say(ctl, "timed out after %g s%s%s", ctl->waited,
			   told(msg, rc) ? ": " : "", told(msg, rc) ? msg : "");
		return WR_CTL_TIMEOUT;
	case -ETIME:
		wr_ctl_say(ctl, "the registry did not answer within %g s",
			   ctl->waited);
		return WR_CTL_FAILED;
	}
	wr_ctl_say(ctl, "%s", msg[0] != '\0' ? msg : world_strerror(rc));
	return WR_CTL_FAILED;
}
