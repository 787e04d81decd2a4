/* SPDX-License-Identifier: MIT */
#include "wire.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <string.h>

#include "frame.h"
#include "world_errors.h"

static const char *const cmd_names[WR_CMD_NKINDS] = {
	[WR_CMD_START] = "start",
	[WR_CMD_SIGNAL] = "signal",
	[WR_CMD_PAUSE] = "pause",
	[WR_CMD_RESUME] = "resume",
	[WR_CMD_STDIN] = "stdin",
	[WR_CMD_STDIN_EOF] = "stdin_eof",
};

static const char *const ev_names[WR_EV_NKINDS] = {
	[WR_EV_STARTED] = "started",
	[WR_EV_START_FAILED] = "start_failed",
	[WR_EV_OUTPUT] = "output",
	[WR_EV_EXITED] = "exited",
	[WR_EV_FINISHED] = "finished",
	[WR_EV_STDIN_TAKEN] = "stdin_taken",
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

int
wr_wire_cmd_write(struct evbuffer *out, const struct wr_cmd *c)
{
	const char *name = wr_wire_cmd_name(c->kind);

	switch (c->kind) {
	case WR_CMD_START:
		return write_msg(out, json_pack("{s:s, s:i, s:i}", "cmd", name,
						"first", c->first, "count",
						c->count), NULL, 0);
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
		return write_msg(out, json_pack("{s:s}", "cmd", name), NULL, 0);
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
		return write_msg(out, json_pack("{s:s, s:i, s:i, s:f}", "ev", name,
						"rank", e->rank, "pid", (int)e->pid,
						"mono", e->mono), NULL, 0);
	case WR_EV_START_FAILED:
		return write_msg(out, json_pack("{s:s, s:i, s:i, s:i}", "ev", name,
						"rank", e->rank, "err", e->err,
						"stage", e->stage), NULL, 0);
	case WR_EV_OUTPUT:
		return write_msg(out, json_pack("{s:s, s:i, s:i, s:b, s:b}", "ev",
						name, "rank", e->rank, "stream",
						e->stream, "partial", e->partial,
						"eof", e->eof), e->data, e->len);
	case WR_EV_EXITED:
		return write_msg(out, json_pack("{s:s, s:i, s:i, s:i, s:I, s:f}",
						"ev", name, "rank", e->rank, "pid",
						(int)e->pid, "wstatus", e->wstatus,
						"maxrss_kib", (json_int_t)e->maxrss_kib,
						"mono", e->mono), NULL, 0);
	case WR_EV_FINISHED:
		return write_msg(out, json_pack("{s:s, s:i, s:b}", "ev", name,
						"rank", e->rank, "forced", e->forced),
				 NULL, 0);
	case WR_EV_STDIN_TAKEN:
		return write_msg(out, json_pack("{s:s}", "ev", name), NULL, 0);
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
		if (json_unpack_ex(msg, &err, 0, "{s:I, s:I}", "first", &a,
				   "count", &b) != 0 ||
		    !within(a, 0, WR_WIRE_RANK_MAX) ||
		    !within(b, 0, WR_WIRE_RANK_MAX - a)) {
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
	/* Only a stdin chunk has bytes, and it always has some. */
	if (k < 0 || (k == WR_CMD_STDIN) != (blob != NULL && blob_len > 0) ||
	    !cmd_fields(msg, k, c)) {
		memset(c, 0, sizeof(*c));
		return WORLD_EPROTO;
	}
	c->kind = (enum wr_cmd_kind)k;
	if (k == WR_CMD_STDIN) {
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
	/* Only output has bytes; its last piece may have none. */
	if (k < 0 || (k != WR_EV_OUTPUT && blob != NULL) ||
	    !ev_fields(msg, k, e)) {
		memset(e, 0, sizeof(*e));
		return WORLD_EPROTO;
	}
	e->kind = (enum wr_ev_kind)k;
	if (k == WR_EV_OUTPUT) {
		e->data = blob_len > 0 ? blob : "";
		e->len = blob_len;
	}
	return 0;
}
