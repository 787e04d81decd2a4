/* SPDX-License-Identifier: MIT */
/*
 * survey: what every rank of the job waits for, for a hang report. The
 * registry describes its own pending waits (who has not arrived), and
 * asks each rank's libworld, on the rank's own connection, what its
 * threads block in; a rank that does not answer in time (stopped, or
 * frozen) is reported as such. It formats nothing: the "status" request
 * is answered by worldrun's own status callback.
 */
#include "srvint.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "ranklist.h"
#include "link.h"
#include "regproto.h"
#include "world_errors.h"

/* Waits of one rank the registry lists at most, and keys per wait. */
#define REG_WAITS_SHOWN 16
#define KEYS_SHOWN 8
/* A rank's own libworld may list this many blocked threads. */
#define LIB_WAITS_SHOWN 64
/* What a "status" request gives the ranks to answer. */
#define STATUS_ASK_MS 1000
/*
 * Surveys at once: each holds a word from every rank and asks each of
 * them, so a client that floods "status" must not multiply that.
 */
#define SURVEYS_MAX 8

struct wr_regsurvey {
	struct wr_regsrv *s;
	struct ring node;       /* in s->surveys */
	json_int_t id;          /* of the "waits" requests it sent */
	json_t *ranks;          /* [size] */
	bool *asked;            /* [size]: an answer is due */
	int due;
	struct event *timer;
	wr_regsrv_survey_fn *fn;
	void *arg;
	struct wr_regconn *asker; /* a "status" request's, until it closes */
	json_int_t asker_id;
};

#define SURVEY_OF(r) \
	((struct wr_regsurvey *)(void *)((char *)(r) - \
					 offsetof(struct wr_regsurvey, node)))

static const char *const life_names[] = {
	[WR_RANK_UP] = "up", [WR_RANK_DONE] = "done", [WR_RANK_DEAD] = "dead",
};

static const char *const kind_names[] = {
	[WR_REG_WAIT_KV] = "kv.wait", [WR_REG_WAIT_LUT] = "lut.wait",
	[WR_REG_WAIT_BARRIER] = "barrier", [WR_REG_WAIT_JOIN] = "group.join",
	[WR_REG_WAIT_DEATHS] = "deaths.wait",
};

static json_t *
ints_new(const int *v, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; a != NULL && i < n; i++) {
		json_array_append_new(a, json_integer(v[i]));
	}
	return a;
}

static json_t *
keys_new(const char *const *keys, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; a != NULL && i < n && i < KEYS_SHOWN; i++) {
		json_array_append_new(a, json_string(keys[i]));
	}
	return a;
}

/* One pending wait of the core, as the report shows it. */
static json_t *
wait_new(const struct wr_reg_wait_info *in, const struct pending *p, double now)
{
	json_t *o = json_pack("{s:s, s:I, s:s}", "kind", kind_names[in->kind],
			      "for_ms", (json_int_t)((now - p->since) * 1e3), "via",
			      p->c != NULL && p->c->role == WR_ROLE_TOOL ? "tool" : "rank");

	if (o != NULL && in->name != NULL) {
		json_object_set_new(o, "name", json_string(in->name));
	}
	if (o != NULL && in->nkeys > 0) {
		json_object_set_new(o, "keys", keys_new(in->keys, in->nkeys));
		json_object_set_new(o, "nkeys", json_integer((json_int_t)in->nkeys));
	}
	if (o != NULL && (in->kind == WR_REG_WAIT_BARRIER || in->kind == WR_REG_WAIT_JOIN)) {
		json_object_set_new(o, "missing", ints_new(in->missing, in->nmissing));
	}
	return o;
}

/*
 * The core's pending waits, under the rank each acts for. A rank's
 * standing deaths.wait (libworld keeps one) is nothing it blocks in.
 */
static int
add_registry_waits(struct wr_regsurvey *v)
{
	struct wr_reg *reg = v->s->cfg.reg;
	const struct wr_reg_wait *w = NULL;
	double now = wr_clock_mono();
	int rc = 0;

	while (rc == 0 && (w = wr_reg_wait_next(reg, w)) != NULL) {
		struct wr_reg_wait_info in;
		const struct pending *p;
		json_t *list;

		rc = wr_reg_wait_describe(w, &in);
		p = rc == 0 ? wr_regconn_pending_of(&in) : NULL;
		if (p != NULL && in.rank >= 0 && in.kind != WR_REG_WAIT_DEATHS) {
			list = json_object_get(json_array_get(v->ranks, (size_t)in.rank),
					       "registry");
			if (json_array_size(list) < REG_WAITS_SHOWN) {
				rc = json_array_append_new(list, wait_new(&in, p, now));
			}
		}
		wr_reg_wait_info_finish(&in);
	}
	return rc < 0 ? -ENOMEM : 0;
}

static void
survey_free(struct wr_regsurvey *v)
{
	if (v->timer != NULL) {
		event_free(v->timer);
	}
	json_decref(v->ranks);
	free(v->asked);
	free(v);
}

/* Every answer is in, or time is up: hand the survey over. */
static void
survey_end(struct wr_regsurvey *v)
{
	struct wr_regsrv *s = v->s;
	json_t *all;

	ring_cut(&v->node);
	s->nsurveys--;
	all = json_pack("{s:O}", "ranks", v->ranks);
	v->fn(v->arg, all);
	survey_free(v);
}

static void
on_survey_time(evutil_socket_t fd, short what, void *arg)
{
	survey_end(arg);
}

/* Ask every rank connected as itself; those not connected answer nothing. */
static int
ask_ranks(struct wr_regsurvey *v)
{
	struct wr_regsrv *s = v->s;

	for (int r = 0; r < s->size; r++) {
		struct wr_regconn *c = s->rank_conn[r];
		json_t *rank = json_array_get(v->ranks, (size_t)r);
		json_t *req;

		json_object_set_new(rank, "libworld", json_string(c != NULL ? "connected" : "none"));
		if (c == NULL) {
			continue;
		}
		req = json_pack("{s:s, s:I}", "op", WR_OP_WAITS, "id", v->id);
		if (req == NULL) {
			return -ENOMEM;
		}
		if (wr_link_send(c->link, req, NULL, 0) == 0) {
			v->asked[r] = true;
			v->due++;
		}
		json_decref(req);
	}
	return 0;
}

/* The name rank @r goes by, when it gave one (not its number). */
static void
add_name(struct wr_reg *reg, int r, json_t *e)
{
	const void *v;
	size_t len;
	json_t *name;

	if (wr_reg_rank_name(reg, r, &v, &len) < 0 || len > 255) {
		return;
	}
	name = json_stringn(v, len);
	if (name != NULL) {
		json_object_set_new(e, "name", name);
	}
}

static int
ranks_init(struct wr_regsurvey *v)
{
	struct wr_regsrv *s = v->s;

	v->ranks = json_array();
	v->asked = calloc((size_t)s->size, sizeof(*v->asked));
	if (v->ranks == NULL || v->asked == NULL) {
		return -ENOMEM;
	}
	for (int r = 0; r < s->size; r++) {
		enum wr_rank_life life = wr_reg_rank_life(s->cfg.reg, r);
		json_t *e = json_pack("{s:i, s:s, s:b, s:[], s:[]}", "rank", r, "life",
				      life_names[life], "answered", 0, "waits", "registry");

		if (json_array_append_new(v->ranks, e) < 0) {
			return -ENOMEM;
		}
		add_name(s->cfg.reg, r, e);
	}
	return 0;
}

static int
survey_start(struct wr_regsrv *s, int timeout_ms, wr_regsrv_survey_fn *fn,
	     void *arg, struct wr_regsurvey **out)
{
	struct wr_regsurvey *v = calloc(1, sizeof(*v));
	struct timeval tv;
	int rc;

	*out = NULL;
	if (v == NULL || s->nsurveys >= SURVEYS_MAX) {
		free(v);
		return v == NULL ? -ENOMEM : -EBUSY;
	}
	*v = (struct wr_regsurvey){ .s = s, .id = ++s->survey_id, .fn = fn,
				    .arg = arg };
	v->timer = evtimer_new(s->cfg.base, on_survey_time, v);
	rc = v->timer == NULL ? -ENOMEM : ranks_init(v);
	if (rc == 0) {
		rc = add_registry_waits(v);
	}
	if (rc == 0) {
		rc = ask_ranks(v);
	}
	/* Even with nothing to wait for, it ends on the loop, not in here. */
	tv = wr_clock_tv(v->due > 0 ? timeout_ms / 1e3 : 0);
	if (rc == 0 && evtimer_add(v->timer, &tv) < 0) {
		rc = -ENOMEM;
	}
	if (rc < 0) {
		survey_free(v);
		return rc;
	}
	ring_insert(&s->surveys, &v->node);
	s->nsurveys++;
	*out = v;
	return 0;
}

int
wr_regsrv_survey(struct wr_regsrv *s, int timeout_ms, wr_regsrv_survey_fn *fn,
		 void *arg)
{
	struct wr_regsurvey *v;

	return survey_start(s, timeout_ms, fn, arg, &v);
}

/* Rank @r has answered, or cannot any more: one fewer is due. */
static void
settle(struct wr_regsurvey *v, int r)
{
	v->asked[r] = false;
	if (--v->due == 0) {
		event_del(v->timer);
		survey_end(v);
	}
}

void
wr_regsurvey_answer(struct wr_regsrv *s, int rank, json_t *msg)
{
	json_int_t id = json_integer_value(json_object_get(msg, "id"));
	json_t *waits = json_object_get(json_object_get(msg, "result"), "waits");
	struct wr_regsurvey *v = NULL;

	for (struct ring *r = s->surveys.next; r != &s->surveys; r = r->next) {
		if (SURVEY_OF(r)->id == id) {
			v = SURVEY_OF(r);
			break;
		}
	}
	if (v == NULL || !v->asked[rank]) {
		return; /* late, or not ours to take */
	}
	if (json_is_array(waits) && json_array_size(waits) <= LIB_WAITS_SHOWN) {
		json_t *r = json_array_get(v->ranks, (size_t)rank);

		json_object_set(r, "waits", waits);
		json_object_set_new(r, "answered", json_true());
	}
	settle(v, rank);
}

void
wr_regsurvey_gone(struct wr_regsrv *s, int rank)
{
	struct ring *r, *next;

	for (r = s->surveys.next; r != &s->surveys; r = next) {
		struct wr_regsurvey *v = SURVEY_OF(r);

		next = r->next; /* settle() may end it */
		if (v->asked[rank]) {
			json_object_set_new(json_array_get(v->ranks, (size_t)rank),
					    "libworld", json_string("gone"));
			settle(v, rank);
		}
	}
}

void
wr_regsurvey_close_all(struct wr_regsrv *s)
{
	while (!ring_empty(&s->surveys)) {
		struct wr_regsurvey *v = SURVEY_OF(s->surveys.next);

		event_del(v->timer);
		survey_end(v);
	}
}

void
wr_regsurvey_forget(struct wr_regsrv *s, struct wr_regconn *c)
{
	for (struct ring *r = s->surveys.next; r != &s->surveys; r = r->next) {
		if (SURVEY_OF(r)->asker == c) {
			SURVEY_OF(r)->asker = NULL;
		}
	}
}

/* The survey for a "status" request is in: answer it, if anyone listens. */
static void
status_done(void *arg, json_t *survey_new)
{
	struct wr_regsurvey *v = arg;
	struct wr_regsrv *s = v->s;
	json_t *res;

	if (v->asker == NULL) {
		json_decref(survey_new);
		return;
	}
	res = survey_new != NULL ? s->cfg.status(s->cfg.arg, survey_new) : NULL;
	if (res == NULL) {
		wr_regconn_fail(v->asker, v->asker_id, survey_new == NULL ? -ENOMEM
				: -ENOTSUP, -1, NULL);
	} else {
		wr_regconn_reply(v->asker, v->asker_id, res, NULL, 0);
	}
	json_decref(survey_new);
}

void
wr_regsurvey_status(struct wr_regreq *rq)
{
	struct wr_regsrv *s = rq->conn->s;
	struct wr_regsurvey *v;
	int rc;

	if (s->cfg.status == NULL) {
		wr_regconn_fail(rq->conn, rq->id, -ENOTSUP, -1,
				"this registry gives no status");
		return;
	}
	rc = survey_start(s, STATUS_ASK_MS, status_done, NULL, &v);
	if (rc < 0) {
		wr_regconn_fail(rq->conn, rq->id, rc, -1, rc == -EBUSY
				? "as many status requests are being answered as may be: "
				  "ask again" : NULL);
		return;
	}
	v->arg = v;
	v->asker = rq->conn;
	v->asker_id = rq->id;
}

/* ---- the words of a failed wait ---- */

/* What request @msg waits for: "barrier \"b\"", "group \"g\"", ... */
static void
wait_words(const json_t *msg, char *buf, size_t room)
{
	const char *op = json_string_value(json_object_get(msg, "op"));
	const json_t *keys = json_object_get(msg, "keys");
	const char *key = json_string_value(json_object_get(msg, "key"));

	op = op != NULL ? op : "";
	if (key == NULL) {
		key = json_string_value(json_array_get(keys, 0));
	}
	if (strcmp(op, "barrier") == 0) {
		snprintf(buf, room, "barrier \"%s\"",
			 json_string_value(json_object_get(msg, "name")));
	} else if (strcmp(op, "group.join") == 0) {
		snprintf(buf, room, "group \"%s\"",
			 json_string_value(json_object_get(msg, "group")));
	} else {
		snprintf(buf, room, "%s \"%s\"%s", op, key != NULL ? key : "",
			 json_array_size(keys) > 1 ? " and more keys" : "");
	}
}

char *
wr_regsurvey_timeout_why(const struct wr_reg_wait *w, const json_t *msg)
{
	struct wr_reg_wait_info in;
	char what[256], who[200], *why = NULL;
	const char *verb = json_is_string(json_object_get(msg, "name"))
		? "did not arrive at" : "did not join";
	int at;

	if (msg == NULL || wr_reg_wait_describe(w, &in) < 0) {
		wr_reg_wait_info_finish(&in);
		return NULL;
	}
	wait_words(msg, what, sizeof(what));
	if (in.nmissing > 0) {
		at = snprintf(who, sizeof(who), "rank%s ", in.nmissing == 1 ? "" : "s");
		wr_ranklist_text(in.missing, in.nmissing, who + at, sizeof(who) - (size_t)at);
		if (asprintf(&why, "%s %s %s", who, verb, what) < 0) {
			why = NULL;
		}
	} else if (in.nkeys > 0 && asprintf(&why, "key \"%s\"%s was not set",
					    in.keys[0], in.nkeys > 1
					    ? " (and more)" : "") < 0) {
		why = NULL;
	}
	wr_reg_wait_info_finish(&in);
	return why;
}

char *
wr_regsurvey_dead_why(struct wr_regsrv *s, const json_t *msg, int rank)
{
	const char *op = json_string_value(json_object_get(msg, "op"));
	char what[256], fate[128] = "died", *why;
	const char *when = "while waiting in";

	bool stopping = wr_reg_rank_is_stopping(s->cfg.reg, rank);

	if (msg == NULL) {
		return NULL;
	}
	if (s->cfg.fate != NULL) {
		s->cfg.fate(s->cfg.arg, rank, fate, sizeof(fate));
	}
	wait_words(msg, what, sizeof(what));
	if (op != NULL && strcmp(op, "barrier") == 0) {
		when = stopping ? "; it will not enter" : "before entering";
	} else if (op != NULL && strcmp(op, "group.join") == 0) {
		when = stopping ? "; it will not join" : "before joining";
	}
	if (stopping) {
		snprintf(fate, sizeof(fate), "is stopping (world_stop)");
	}
	if (stopping && asprintf(&why, "rank %d %s%s %s", rank, fate, when, what) >= 0) {
		return why;
	}
	return asprintf(&why, "rank %d %s %s %s", rank, fate, when, what) < 0
		? NULL : why;
}
