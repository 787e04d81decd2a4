/* SPDX-License-Identifier: MIT */
#include "wire.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <string.h>

#include "bind.h"
#include "frame.h"
#include "wirespawn.h"
#include "world_errors.h"

static const char *const cmd_names[WR_CMD_NKINDS] = {
	[WR_CMD_START] = "start",
	[WR_CMD_SIGNAL] = "signal",
	[WR_CMD_PAUSE] = "pause",
	[WR_CMD_RESUME] = "resume",
	[WR_CMD_STDIN] = "stdin",
	[WR_CMD_STDIN_EOF] = "stdin_eof",
	[WR_CMD_BEAT] = "beat",
	[WR_CMD_STACK] = "stack",
	[WR_CMD_SPAWN] = "spawn",
	[WR_CMD_JOINED] = "joined",
	[WR_CMD_AGAIN] = "again",
};

static const char *const ev_names[WR_EV_NKINDS] = {
	[WR_EV_STARTED] = "started",
	[WR_EV_START_FAILED] = "start_failed",
	[WR_EV_OUTPUT] = "output",
	[WR_EV_EXITED] = "exited",
	[WR_EV_FINISHED] = "finished",
	[WR_EV_STDIN_TAKEN] = "stdin_taken",
	[WR_EV_START_DONE] = "start_done",
	[WR_EV_READY] = "ready",
	[WR_EV_ABORT] = "abort",
	[WR_EV_LEFT] = "left",
	[WR_EV_ALONE] = "alone",
	[WR_EV_BEAT] = "beat",
	[WR_EV_GAVE_UP] = "gave_up",
	[WR_EV_STACK] = "stack",
	[WR_EV_SPAWN] = "spawn",
	[WR_EV_JOINED] = "joined",
	[WR_EV_AGAIN] = "again",
};

const struct wr_frame_limits wr_wire_limits = {
	.json_max = 64u << 20, .blob_max = (size_t)256 << 20,
};

const struct wr_frame_limits wr_wire_event_limits = {
	.json_max = 4096, .blob_max = WR_WIRE_DATA_MAX,
};

/* The largest errno, spawn stage and signal number a message may carry. */
#define ERRNO_MAX 4095
#define STAGE_MAX 63
#define SIGNAL_MAX 64

const char *
wr_wire_cmd_name(enum wr_cmd_kind k)
{
	return (unsigned)k < WR_CMD_NKINDS ? cmd_names[k] : NULL;
}

const char *
wr_wire_ev_name(enum wr_ev_kind k)
{
	return (unsigned)k < WR_EV_NKINDS ? ev_names[k] : NULL;
}

/* The kind @msg names in its member @key, among @names; -1 if none. */
static int
kind_of(json_t *msg, const char *key, const char *const *names, int n)
{
	json_error_t err;
	const char *s;

	if (json_unpack_ex(msg, &err, 0, "{s:s}", key, &s) != 0) {
		return -1;
	}
	for (int i = 0; i < n; i++) {
		if (strcmp(names[i], s) == 0) {
			return i;
		}
	}
	return -1;
}

/* Frame @msg_new (stolen) with @len bytes of @data as its blob. */
static int
write_msg(struct evbuffer *out, json_t *msg_new, const void *data, size_t len)
{
	int rc;

	if (msg_new == NULL) {
		return -ENOMEM;
	}
	rc = wr_frame_write(out, NULL, msg_new, len > 0 ? data : NULL, len);
	json_decref(msg_new);
	return rc;
}

/* An IPv4 address in dotted form. */
static bool
addr_ok(const char *s)
{
	struct in_addr a;

	return strlen(s) < INET_ADDRSTRLEN && inet_pton(AF_INET, s, &a) == 1;
}

/* A stack tool's name: a few letters and dashes, or "". */
static bool
tool_ok(const char *s)
{
	size_t n = strlen(s);

	return n <= 16 && strspn(s, "abcdefghijklmnopqrstuvwxyz-") == n;
}

int
wr_wire_start_status(int stage, int err)
{
	if (stage != WR_SPAWN_EXEC) {
		return 125;
	}
	return err == ENOENT || err == ENOTDIR ? 127 : 126;
}

int
wr_wire_cmd_write(struct evbuffer *out, const struct wr_cmd *c)
{
	const char *name = wr_wire_cmd_name(c->kind);

	switch (c->kind) {
	case WR_CMD_START:
		if (c->addr != NULL && !addr_ok(c->addr)) {
			return -EINVAL;
		}
		return write_msg(out, json_pack("{s:s, s:i, s:i, s:s*}", "cmd", name,
						"first", c->first, "count",
						c->count, "addr", c->addr), NULL, 0);
	case WR_CMD_SIGNAL:
		return write_msg(out, json_pack("{s:s, s:i, s:i}", "cmd", name,
						"rank", c->rank, "sig", c->sig),
				 NULL, 0);
	case WR_CMD_PAUSE:
	case WR_CMD_RESUME:
		return write_msg(out, json_pack("{s:s, s:i, s:i}", "cmd", name,
						"rank", c->rank, "stream",
						c->stream), NULL, 0);
	case WR_CMD_STDIN:
		if (c->len == 0) {
			return -EINVAL;
		}
		return write_msg(out, json_pack("{s:s}", "cmd", name), c->data,
				 c->len);
	case WR_CMD_STDIN_EOF:
	case WR_CMD_BEAT:
	case WR_CMD_AGAIN:
		return write_msg(out, json_pack("{s:s}", "cmd", name), NULL, 0);
	case WR_CMD_STACK:
		return write_msg(out, json_pack("{s:s, s:i}", "cmd", name, "rank", c->rank),
				 NULL, 0);
	case WR_CMD_SPAWN:
		if ((c->count > 0) != (c->apps != NULL) || (c->apps != NULL) != (c->place != NULL)) {
			return -EINVAL;
		}
		return write_msg(out, json_pack("{s:s, s:i, s:i, s:i, s:O*, s:O*}", "cmd", name,
						"id", c->id, "first", c->first, "count",
						c->count, "apps", c->apps, "place", c->place),
				 c->data, c->len);
	case WR_CMD_JOINED:
		if (c->apps == NULL || c->place == NULL) {
			return -EINVAL;
		}
		return write_msg(out, json_pack("{s:s, s:i, s:i, s:i, s:O, s:O}", "cmd", name,
						"first", c->first, "count", c->count, "node",
						c->node, "apps", c->apps, "place", c->place),
				 c->data, c->len);
	case WR_CMD_NKINDS:
		break;
	}
	return -EINVAL;
}

int
wr_wire_ev_write(struct evbuffer *out, const struct wr_ev *e)
{
	const char *name = wr_wire_ev_name(e->kind);

	if (!isfinite(e->mono)) {
		return -EINVAL;
	}
	switch (e->kind) {
	case WR_EV_STARTED:
		if (e->len > WR_WIRE_WHY_MAX) {
			return -EINVAL;
		}
		return write_msg(out, json_pack("{s:s, s:i, s:i, s:f}", "ev", name,
						"rank", e->rank, "pid", (int)e->pid,
						"mono", e->mono), e->data, e->len);
	case WR_EV_START_FAILED:
		if (e->len > WR_WIRE_WHY_MAX) {
			return -EINVAL;
		}
		return write_msg(out, json_pack("{s:s, s:i, s:i, s:i}", "ev", name,
						"rank", e->rank, "err", e->err,
						"stage", e->stage), e->data, e->len);
	case WR_EV_OUTPUT:
		return write_msg(out, json_pack("{s:s, s:i, s:i, s:b, s:b}", "ev",
						name, "rank", e->rank, "stream",
						e->stream, "partial", e->partial,
						"eof", e->eof), e->data, e->len);
	case WR_EV_EXITED:
		if (e->len > WR_WIRE_DATA_MAX) {
			return -EINVAL;
		}
		return write_msg(out, json_pack("{s:s, s:i, s:i, s:i, s:I, s:f}",
						"ev", name, "rank", e->rank, "pid",
						(int)e->pid, "wstatus", e->wstatus,
						"maxrss_kib", (json_int_t)e->maxrss_kib,
						"mono", e->mono), e->data, e->len);
	case WR_EV_FINISHED:
		return write_msg(out, json_pack("{s:s, s:i, s:b}", "ev", name,
						"rank", e->rank, "forced", e->forced),
				 NULL, 0);
	case WR_EV_STDIN_TAKEN:
	case WR_EV_BEAT:
	case WR_EV_GAVE_UP:
	case WR_EV_AGAIN:
		return write_msg(out, json_pack("{s:s}", "ev", name), NULL, 0);
	case WR_EV_START_DONE:
		return write_msg(out, json_pack("{s:s, s:i, s:i}", "ev", name,
						"count", e->count, "err", e->err),
				 NULL, 0);
	case WR_EV_READY:
		if (e->len > WR_WIRE_WHY_MAX) {
			return -EINVAL;
		}
		if (e->addr != NULL && !addr_ok(e->addr)) {
			return -EINVAL;
		}
		return write_msg(out, json_pack("{s:s, s:i, s:s}", "ev", name, "status",
						e->status, "addr", e->addr != NULL ? e->addr : ""),
				 e->data, e->len);
	case WR_EV_ABORT:
	case WR_EV_LEFT:
	case WR_EV_ALONE:
		if (e->len > WR_WIRE_WHY_MAX) {
			return -EINVAL;
		}
		return write_msg(out, json_pack("{s:s, s:i, s:i, s:i}", "ev", name, "rank",
						e->rank, "status", e->status, "code",
						e->kind == WR_EV_ABORT ? e->code : 0),
				 e->data, e->len);
	case WR_EV_STACK:
		if (e->len > WR_WIRE_DATA_MAX || e->tool == NULL || !tool_ok(e->tool)) {
			return -EINVAL;
		}
		return write_msg(out, json_pack("{s:s, s:i, s:i, s:s}", "ev", name, "rank",
						e->rank, "err", e->err, "tool", e->tool),
				 e->data, e->len);
	case WR_EV_SPAWN:
		return write_msg(out, json_pack("{s:s, s:i, s:i, s:i, s:O*}", "ev", name, "rank",
						e->rank, "count", e->count, "id", e->id, "apps",
						e->apps),
				 e->data, e->len);
	case WR_EV_JOINED:
		return write_msg(out, json_pack("{s:s, s:i}", "ev", name, "rank", e->rank),
				 NULL, 0);
	case WR_EV_NKINDS:
		break;
	}
	return -EINVAL;
}

static bool
within(json_int_t v, json_int_t lo, json_int_t hi)
{
	return v >= lo && v <= hi;
}

/* A rank of the job, or with @all also -1 (every rank). */
static bool
rank_ok(json_int_t v, bool all)
{
	return within(v, all ? -1 : 0, WR_WIRE_RANK_MAX - 1);
}

static bool
time_ok(double t)
{
	return isfinite(t) && t >= 0;
}

/* The fields of command kind @k from @msg: whether they are all there and
 * in range. */
static bool
cmd_fields(json_t *msg, int k, struct wr_cmd *c)
{
	json_error_t err;
	json_int_t a = 0, b = 0;

	switch (k) {
	case WR_CMD_START:
		if (json_unpack_ex(msg, &err, 0, "{s:I, s:I, s?s}", "first", &a,
				   "count", &b, "addr", &c->addr) != 0 ||
		    !within(a, 0, WR_WIRE_RANK_MAX) ||
		    !within(b, 0, WR_WIRE_RANK_MAX - a) ||
		    (c->addr != NULL && !addr_ok(c->addr))) {
			return false;
		}
		c->first = (int)a;
		c->count = (int)b;
		return true;
	case WR_CMD_SIGNAL:
		if (json_unpack_ex(msg, &err, 0, "{s:I, s:I}", "rank", &a, "sig",
				   &b) != 0 ||
		    !rank_ok(a, true) || !within(b, 1, SIGNAL_MAX)) {
			return false;
		}
		c->rank = (int)a;
		c->sig = (int)b;
		return true;
	case WR_CMD_PAUSE:
	case WR_CMD_RESUME:
		if (json_unpack_ex(msg, &err, 0, "{s:I, s:I}", "rank", &a,
				   "stream", &b) != 0 ||
		    !rank_ok(a, true) || !within(b, -1, WR_ERR)) {
			return false;
		}
		c->rank = (int)a;
		c->stream = (int)b;
		return true;
	case WR_CMD_STACK:
		if (json_unpack_ex(msg, &err, 0, "{s:I}", "rank", &a) != 0 ||
		    !rank_ok(a, false)) {
			return false;
		}
		c->rank = (int)a;
		return true;
	case WR_CMD_SPAWN:
	case WR_CMD_JOINED:
		return true; /* wire-spawn.c's, with their blob */
	default:
		return true;
	}
}

int
wr_wire_cmd_read(json_t *msg, const void *blob, size_t blob_len,
		 struct wr_cmd *c)
{
	int k = kind_of(msg, "cmd", cmd_names, WR_CMD_NKINDS);

	memset(c, 0, sizeof(*c));
	/* Only a stdin chunk has bytes, and it always has some; a spawn's
	 * apps have their strings. */
	bool spawn = k == WR_CMD_SPAWN || k == WR_CMD_JOINED;

	if (k < 0 || (!spawn && (k == WR_CMD_STDIN) != (blob != NULL && blob_len > 0)) ||
	    !cmd_fields(msg, k, c) ||
	    (spawn && !wr_wire_spawn_fields(msg, k == WR_CMD_JOINED, blob, blob_len, c))) {
		memset(c, 0, sizeof(*c));
		return WORLD_EPROTO;
	}
	c->kind = (enum wr_cmd_kind)k;
	if (k == WR_CMD_STDIN || c->apps != NULL) {
		c->data = blob;
		c->len = blob_len;
	}
	return 0;
}

/* The fields of event kind @k from @msg, as cmd_fields(). */
static bool
ev_fields(json_t *msg, int k, struct wr_ev *e)
{
	json_error_t err;
	json_int_t rank = 0, a = 0, b = 0, rss = 0;
	int x = 0, y = 0;
	double t = 0;
	bool ok;

	switch (k) {
	case WR_EV_STARTED:
		ok = json_unpack_ex(msg, &err, 0, "{s:I, s:I, s:F}", "rank", &rank,
				    "pid", &a, "mono", &t) == 0 &&
		     within(a, 1, INT_MAX) && time_ok(t);
		e->pid = (pid_t)a;
		break;
	case WR_EV_START_FAILED:
		ok = json_unpack_ex(msg, &err, 0, "{s:I, s:I, s:I}", "rank", &rank,
				    "err", &a, "stage", &b) == 0 &&
		     within(a, 0, ERRNO_MAX) && within(b, 0, STAGE_MAX);
		e->err = (int)a;
		e->stage = (int)b;
		break;
	case WR_EV_OUTPUT:
		ok = json_unpack_ex(msg, &err, 0, "{s:I, s:I, s:b, s:b}", "rank",
				    &rank, "stream", &a, "partial", &x, "eof",
				    &y) == 0 &&
		     within(a, WR_OUT, WR_ERR);
		e->stream = (int)a;
		e->partial = x != 0;
		e->eof = y != 0;
		break;
	case WR_EV_EXITED:
		ok = json_unpack_ex(msg, &err, 0, "{s:I, s:I, s:I, s:I, s:F}",
				    "rank", &rank, "pid", &a, "wstatus", &b,
				    "maxrss_kib", &rss, "mono", &t) == 0 &&
		     within(a, 1, INT_MAX) && within(b, 0, 0xffff) &&
		     within(rss, 0, LONG_MAX) && time_ok(t);
		e->pid = (pid_t)a;
		e->wstatus = (int)b;
		e->maxrss_kib = (long)rss;
		break;
	case WR_EV_FINISHED:
		ok = json_unpack_ex(msg, &err, 0, "{s:I, s:b}", "rank", &rank,
				    "forced", &x) == 0;
		e->forced = x != 0;
		break;
	case WR_EV_START_DONE:
		ok = json_unpack_ex(msg, &err, 0, "{s:I, s:I}", "count", &a, "err",
				    &b) == 0 &&
		     within(a, 0, WR_WIRE_RANK_MAX) && within(b, 0, ERRNO_MAX);
		e->count = (int)a;
		e->err = (int)b;
		return ok;
	case WR_EV_READY:
		ok = json_unpack_ex(msg, &err, 0, "{s:I, s:s}", "status", &a, "addr",
				    &e->addr) == 0 &&
		     (a == 0 || within(a, 125, 127)) &&
		     (e->addr[0] == '\0' || addr_ok(e->addr));
		e->status = (int)a;
		if (ok && e->addr[0] == '\0') {
			e->addr = NULL;
		}
		return ok;
	case WR_EV_ABORT:
	case WR_EV_LEFT:
	case WR_EV_ALONE:
		ok = json_unpack_ex(msg, &err, 0, "{s:I, s:I, s:I}", "rank", &rank, "status",
				    &a, "code", &b) == 0 && within(a, 0, 255) &&
		     within(b, INT_MIN, INT_MAX);
		e->status = (int)a;
		e->code = (int)b;
		break;
	case WR_EV_STACK:
		ok = json_unpack_ex(msg, &err, 0, "{s:I, s:I, s:s}", "rank", &rank, "err",
				    &a, "tool", &e->tool) == 0 &&
		     within(a, 0, ERRNO_MAX) && tool_ok(e->tool);
		e->err = (int)a;
		break;
	case WR_EV_SPAWN:
		ok = json_unpack_ex(msg, &err, 0, "{s:I, s:I, s:I, s?o}", "rank", &rank, "count",
				    &a, "id", &b, "apps", &e->apps) == 0 &&
		     within(a, 1, WR_WIRE_RANK_MAX) && within(b, 0, INT_MAX);
		e->count = (int)a;
		e->id = (int)b;
		break;
	case WR_EV_JOINED:
		ok = json_unpack_ex(msg, &err, 0, "{s:I}", "rank", &rank) == 0;
		break;
	default:
		return true;
	}
	e->rank = (int)rank;
	e->mono = t;
	return ok && rank_ok(rank, false);
}

int
wr_wire_ev_read(json_t *msg, const void *blob, size_t blob_len,
		struct wr_ev *e)
{
	int k = kind_of(msg, "ev", ev_names, WR_EV_NKINDS);

	memset(e, 0, sizeof(*e));
	/* Only output, a stack, an end (its error file's line and traceback),
	 * READY, abort, left, alone, a start (where it runs) and a failed
	 * start have bytes; they may have none. */
	bool words = k == WR_EV_READY || k == WR_EV_ABORT || k == WR_EV_LEFT ||
		     k == WR_EV_ALONE || k == WR_EV_START_FAILED || k == WR_EV_STARTED;
	bool text = k == WR_EV_OUTPUT || k == WR_EV_STACK || k == WR_EV_EXITED;

	if (k < 0 || (!text && !words && k != WR_EV_SPAWN && blob != NULL) ||
	    (words && blob_len > WR_WIRE_WHY_MAX) || !ev_fields(msg, k, e) ||
	    (k == WR_EV_SPAWN && (e->apps != NULL ? !wr_wire_apps_ok(e->apps, blob, blob_len,
								      e->count)
						  : blob != NULL))) {
		memset(e, 0, sizeof(*e));
		return WORLD_EPROTO;
	}
	e->kind = (enum wr_ev_kind)k;
	if (text || words || e->apps != NULL) {
		e->data = blob_len > 0 ? blob : "";
		e->len = blob_len;
	}
	return 0;
}

/* The version of the setup message: agents of another version refuse it. */
#define SETUP_VERSION 11
/* The longest stop grace a setup may ask for, in seconds. */
#define GRACE_MAX 1e6
/* The longest --host-timeout (a year, as every option of seconds). */
#define HOST_TIMEOUT_MAX (366.0 * 86400)

static bool
jobid_ok(const char *id)
{
	size_t n = strlen(id);

	return n == 12 && strspn(id, "0123456789abcdef") == n;
}

static bool
env_ok(char *const *env, int envc)
{
	for (int i = 0; i < envc; i++) {
		if (env[i] == NULL || strchr(env[i], '=') == NULL || env[i][0] == '=') {
			return false;
		}
	}
	return env[envc] == NULL;
}

/* Whether JSON can hold @s as a string. */
static bool
utf8_ok(const char *s)
{
	json_t *t = json_string(s);

	json_decref(t);
	return t != NULL;
}

/* Whether @s is a setup an agent can run, both before it is written and
 * after it is read. */
static bool
setup_ok(const struct wr_setup *s)
{
	bool stdin_here = s->stdin_rank == WR_SETUP_STDIN_NONE ||
			  s->stdin_rank == WR_SETUP_STDIN_ALL;

	if (!jobid_ok(s->jobid) || !within(s->size, 1, WR_WIRE_RANK_MAX) ||
	    !within(s->nnodes, 1, s->size) || !within(s->node, 0, s->nnodes - 1) ||
	    !within(s->nranks, 1, s->size) || s->ranks == NULL ||
	    !within(s->argc, 1, WR_SETUP_STRINGS_MAX) ||
	    !within(s->envc, 0, WR_SETUP_STRINGS_MAX) || s->argv == NULL ||
	    s->env == NULL || !env_ok(s->env, s->envc) ||
	    !(isfinite(s->kill_grace) && s->kill_grace >= 0 &&
	      s->kill_grace <= GRACE_MAX) ||
	    !(isfinite(s->host_timeout) && s->host_timeout >= 0 &&
	      s->host_timeout <= HOST_TIMEOUT_MAX) ||
	    s->master_addr == NULL || !utf8_ok(s->master_addr) ||
	    !within(s->master_port, 0, 65535) || !within(s->registry_port, 0, 65535) ||
	    s->nofile_cur > s->nofile_max || !within(s->bind, WR_BIND_NONE, WR_BIND_NLEVELS - 1) ||
	    !within(s->cpus_per_rank, 0, WR_BIND_CPUS_MAX)) {
		return false;
	}
	for (int i = 0; i < s->argc; i++) {
		if (s->argv[i] == NULL) {
			return false;
		}
	}
	for (int i = 0; i < s->nranks; i++) {
		if (!within(s->ranks[i], i > 0 ? s->ranks[i - 1] + 1 : 0, s->size - 1)) {
			return false;
		}
		stdin_here = stdin_here || s->ranks[i] == s->stdin_rank;
	}
	return s->argv[s->argc] == NULL && stdin_here;
}

/* An rlimit value as JSON: infinity is -1; other values past int64 are
 * not written. */
static bool
limit_out(unsigned long long v, json_int_t *out)
{
	if (v == ~0ULL) {
		*out = -1;
		return true;
	}
	*out = (json_int_t)v;
	return v <= (unsigned long long)INT64_MAX;
}

static size_t
strings_len(char *const *v, int n)
{
	size_t len = 0;

	for (int i = 0; i < n; i++) {
		len += strlen(v[i]) + 1;
	}
	return len;
}

static char *
put_strings(char *p, char *const *v, int n)
{
	for (int i = 0; i < n; i++) {
		size_t len = strlen(v[i]) + 1;

		memcpy(p, v[i], len);
		p += len;
	}
	return p;
}

/* The working directory, the arguments and the environment, each
 * NUL-terminated, in one malloc'd blob. */
static char *
setup_blob(const struct wr_setup *s, size_t *len)
{
	char *wdir[] = {s->wdir};
	int nw = s->wdir != NULL;
	char *blob, *p;

	*len = strings_len(wdir, nw) + strings_len(s->argv, s->argc) +
	       strings_len(s->env, s->envc);
	blob = malloc(*len);
	if (blob != NULL) {
		p = put_strings(blob, wdir, nw);
		p = put_strings(p, s->argv, s->argc);
		put_strings(p, s->env, s->envc);
	}
	return blob;
}

/* A node's name: printable, without the comma that PMIx's lists use. */
static bool
name_ok(const char *n)
{
	size_t len = n != NULL ? strlen(n) : 0;

	if (len == 0 || len > WR_SETUP_NAME_MAX) {
		return false;
	}
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)n[i];

		if (c <= ' ' || c >= 127 || c == ',') {
			return false;
		}
	}
	return true;
}

/* Every node's name, if given, is one name_ok() takes. */
static bool
names_ok(const struct wr_setup *s)
{
	for (int i = 0; s->node_name != NULL && i < s->nnodes; i++) {
		if (!name_ok(s->node_name[i])) {
			return false;
		}
	}
	return true;
}

/* The nodes' names (an array of strings, or null). */
static json_t *
names_json(const struct wr_setup *s)
{
	json_t *a = s->node_name != NULL ? json_array() : json_null();

	for (int i = 0; s->node_name != NULL && a != NULL && i < s->nnodes; i++) {
		if (json_array_append_new(a, json_string(s->node_name[i])) < 0) {
			json_decref(a);
			a = NULL;
		}
	}
	return a;
}

/* "host_timeout", "pmi", "pmi_port", "pmix", "pmi_mapping" (a string or
 * null) and "node_name" into @msg. */
static int
add_rest(json_t *msg, const struct wr_setup *s)
{
	if (json_object_set_new(msg, "node_name", names_json(s)) < 0 ||
	    json_object_set_new(msg, "host_timeout", json_real(s->host_timeout)) < 0 ||
	    json_object_set_new(msg, "pmi", json_boolean(s->pmi)) < 0 ||
	    json_object_set_new(msg, "pmi_port", json_boolean(s->pmi_port)) < 0 ||
	    json_object_set_new(msg, "pmix", json_boolean(s->pmix)) < 0 ||
	    json_object_set_new(msg, "bind", json_pack("[iib]", s->bind, s->cpus_per_rank,
							s->report_bindings)) < 0 ||
	    json_object_set_new(msg, "pmi_mapping", s->pmi_mapping != NULL
				? json_string(s->pmi_mapping) : json_null()) < 0) {
		return -ENOMEM;
	}
	return 0;
}

int
wr_wire_setup_write(struct evbuffer *out, const struct wr_setup *s)
{
	json_int_t cur, max;
	json_t *ranks, *msg;
	size_t len;
	char *blob;
	int rc;

	if (!setup_ok(s) || !names_ok(s) || !limit_out(s->nofile_cur, &cur) ||
	    !limit_out(s->nofile_max, &max)) {
		return -EINVAL;
	}
	ranks = json_array();
	for (int i = 0; ranks != NULL && i < s->nranks; i++) {
		if (json_array_append_new(ranks, json_integer(s->ranks[i])) < 0) {
			json_decref(ranks);
			ranks = NULL;
		}
	}
	msg = ranks == NULL ? NULL : json_pack(
		"{s:i, s:s, s:i, s:i, s:i, s:o, s:i, s:i, s:b, s:b, s:b, s:i, s:f, s:s, s:i, s:i, s:[II]}",
		"setup", SETUP_VERSION, "jobid", s->jobid, "size", s->size,
		"nnodes", s->nnodes, "node", s->node, "ranks", ranks, "argc",
		s->argc, "envc", s->envc, "wdir", s->wdir != NULL, "wdir_soft",
		s->wdir_soft, "pty", s->pty,
		"stdin_rank", s->stdin_rank, "kill_grace", s->kill_grace,
		"master_addr", s->master_addr, "master_port", s->master_port,
		"registry_port", s->registry_port, "nofile", cur, max);
	blob = msg == NULL || add_rest(msg, s) < 0 ? NULL : setup_blob(s, &len);
	if (blob == NULL) {
		json_decref(msg);
		return -ENOMEM;
	}
	/* The blob is freed by the frame, or at once on failure. */
	rc = wr_frame_write_attach(out, NULL, msg, blob, len);
	json_decref(msg);
	return rc;
}

/* An rlimit value from JSON: -1 is infinity. */
static bool
limit_in(json_int_t v, unsigned long long *out)
{
	*out = v == -1 ? ~0ULL : (unsigned long long)v;
	return v >= -1;
}

/*
 * Point @n entries of @v at the next NUL-terminated strings of the blob
 * copy between *@p and @end, and end @v with NULL; false if the strings
 * run out.
 */
static bool
take_strings(char **p, const char *end, char **v, int n)
{
	for (int i = 0; i < n; i++) {
		char *nul = *p < end ? memchr(*p, '\0', (size_t)(end - *p)) : NULL;

		if (nul == NULL) {
			return false;
		}
		v[i] = *p;
		*p = nul + 1;
	}
	v[n] = NULL;
	return true;
}

/* The strings of the blob: exactly @nw + argc + envc of them. */
static int
read_strings(struct wr_setup *s, const void *blob, size_t len, int nw)
{
	char *copy = malloc(len > 0 ? len : 1), *p = copy, *wdir[2];

	s->strings_ = copy;
	s->argv = calloc((size_t)s->argc + 1, sizeof(*s->argv));
	s->env = calloc((size_t)s->envc + 1, sizeof(*s->env));
	if (copy == NULL || s->argv == NULL || s->env == NULL) {
		return -ENOMEM;
	}
	if (len > 0) {
		memcpy(copy, blob, len);
	}
	if (!take_strings(&p, copy + len, wdir, nw) ||
	    !take_strings(&p, copy + len, s->argv, s->argc) ||
	    !take_strings(&p, copy + len, s->env, s->envc) || p != copy + len) {
		return WORLD_EPROTO;
	}
	s->wdir = nw > 0 ? wdir[0] : NULL;
	return 0;
}

static int
read_ranks(struct wr_setup *s, json_t *ranks)
{
	size_t i;
	json_t *r;

	if (!json_is_array(ranks) ||
	    !within((json_int_t)json_array_size(ranks), 1, WR_WIRE_RANK_MAX)) {
		return WORLD_EPROTO;
	}
	s->nranks = (int)json_array_size(ranks);
	s->ranks = calloc((size_t)s->nranks, sizeof(*s->ranks));
	if (s->ranks == NULL) {
		return -ENOMEM;
	}
	json_array_foreach(ranks, i, r) {
		if (!json_is_integer(r) ||
		    !within(json_integer_value(r), 0, WR_WIRE_RANK_MAX - 1)) {
			return WORLD_EPROTO;
		}
		s->ranks[i] = (int)json_integer_value(r);
	}
	return 0;
}

/* The nodes' names: null, or one name a node. */
static int
read_names(struct wr_setup *s, json_t *names)
{
	if (json_is_null(names)) {
		return 0;
	}
	if (!json_is_array(names) || json_array_size(names) != (size_t)s->nnodes) {
		return WORLD_EPROTO;
	}
	s->node_name = calloc((size_t)s->nnodes + 1, sizeof(*s->node_name));
	if (s->node_name == NULL) {
		return -ENOMEM;
	}
	for (int i = 0; i < s->nnodes; i++) {
		const char *v = json_string_value(json_array_get(names, (size_t)i));

		if (!name_ok(v)) {
			return WORLD_EPROTO;
		}
		s->node_name[i] = strdup(v);
		if (s->node_name[i] == NULL) {
			return -ENOMEM;
		}
	}
	return 0;
}

/* The host timeout, the PMI part of a setup and the nodes' names. */
static int
read_rest(struct wr_setup *s, json_t *msg)
{
	json_t *map, *names;
	int pmi, port, pmix, report;

	if (json_unpack(msg, "{s:F, s:b, s:b, s:b, s:o, s:o, s:[iib]}", "host_timeout",
			&s->host_timeout, "pmi", &pmi, "pmi_port", &port, "pmix", &pmix,
			"pmi_mapping", &map, "node_name", &names, "bind", &s->bind,
			&s->cpus_per_rank, &report) < 0 ||
	    (!json_is_string(map) && !json_is_null(map)) ||
	    !within(s->bind, WR_BIND_NONE, WR_BIND_NLEVELS - 1) ||
	    !within(s->cpus_per_rank, 0, WR_BIND_CPUS_MAX)) {
		return WORLD_EPROTO;
	}
	s->report_bindings = report != 0;
	s->pmi = pmi != 0;
	s->pmi_port = port != 0;
	s->pmix = pmix != 0;
	if (json_is_string(map) && (s->pmi_mapping = strdup(json_string_value(map))) == NULL) {
		return -ENOMEM;
	}
	return read_names(s, names);
}

int
wr_wire_setup_read(json_t *msg, const void *blob, size_t blob_len,
		   struct wr_setup *s)
{
	json_int_t ver, size, nnodes, node, argc, envc, sr, port, rport, cur, max;
	const char *jobid, *maddr;
	json_error_t err;
	json_t *ranks;
	int wdir, soft, pty, rc;

	memset(s, 0, sizeof(*s));
	if (json_unpack_ex(msg, &err, 0,
			   "{s:I, s:s, s:I, s:I, s:I, s:o, s:I, s:I, s:b, s:b, s:b, s:I, s:F, s:s, s:I, s:I, s:[II]}",
			   "setup", &ver, "jobid", &jobid, "size", &size, "nnodes",
			   &nnodes, "node", &node, "ranks", &ranks, "argc", &argc,
			   "envc", &envc, "wdir", &wdir, "wdir_soft", &soft, "pty", &pty,
			   "stdin_rank", &sr,
			   "kill_grace", &s->kill_grace, "master_addr", &maddr,
			   "master_port", &port, "registry_port", &rport, "nofile",
			   &cur, &max) != 0 ||
	    ver != SETUP_VERSION || !jobid_ok(jobid) ||
	    !within(size, 1, WR_WIRE_RANK_MAX) || !within(nnodes, 1, size) ||
	    !within(node, 0, nnodes - 1) || !within(argc, 1, WR_SETUP_STRINGS_MAX) ||
	    !within(envc, 0, WR_SETUP_STRINGS_MAX) ||
	    !within(sr, WR_SETUP_STDIN_ALL, WR_WIRE_RANK_MAX - 1) ||
	    !within(port, 0, 65535) || !within(rport, 0, 65535) ||
	    !limit_in(cur, &s->nofile_cur) ||
	    !limit_in(max, &s->nofile_max)) {
		memset(s, 0, sizeof(*s));
		return WORLD_EPROTO;
	}
	memcpy(s->jobid, jobid, sizeof(s->jobid));
	s->size = (int)size;
	s->nnodes = (int)nnodes;
	s->node = (int)node;
	s->argc = (int)argc;
	s->envc = (int)envc;
	s->pty = pty != 0;
	s->wdir_soft = soft != 0;
	s->stdin_rank = (int)sr;
	s->master_port = (int)port;
	s->registry_port = (int)rport;
	s->master_addr = strdup(maddr);
	rc = s->master_addr == NULL ? -ENOMEM : read_ranks(s, ranks);
	if (rc == 0) {
		rc = read_rest(s, msg);
	}
	if (rc == 0) {
		rc = read_strings(s, blob, blob_len, wdir != 0);
	}
	if (rc == 0 && !setup_ok(s)) {
		rc = WORLD_EPROTO;
	}
	if (rc != 0) {
		wr_wire_setup_finish(s);
	}
	return rc;
}

void
wr_wire_setup_finish(struct wr_setup *s)
{
	free(s->ranks);
	free(s->argv);
	free(s->env);
	free(s->strings_);
	free(s->master_addr);
	free(s->pmi_mapping);
	for (int i = 0; s->node_name != NULL && i < s->nnodes; i++) {
		free(s->node_name[i]);
	}
	free(s->node_name);
	memset(s, 0, sizeof(*s));
}
