/* SPDX-License-Identifier: MIT */
/*
 * later: a request answered when its wait ends (conn.h's
 * wr_regconn_wait()), the one way the registry answers later: the
 * connection's budget of waits, the timer, the core's wait started with
 * this file's callback, and its end turned into the answer, or into the
 * error in words that name who is missing. A connection that closes
 * ends its waits unanswered.
 */
#include <errno.h>
#include <stdlib.h>

#include "clock.h"
#include "srvint.h"
#include "world_errors.h"

/*
 * What a wait costs while it waits: its data, and about as much again in
 * the core's watches on its keys.
 */
static size_t
cost_of(const struct wr_regwait *w)
{
	return 2 * w->bytes + 64 * w->n + 256;
}

/* @p no longer counts against its connection's waits. */
static void
uncount(struct pending *p)
{
	p->c->nwaits--;
	p->c->wait_bytes -= p->cost;
}

static void
pending_free(struct pending *p)
{
	if (p->c != NULL) {
		uncount(p);
		if (p->prev != NULL) {
			p->prev->next = p->next;
		} else {
			p->c->pending = p->next;
		}
		if (p->next != NULL) {
			p->next->prev = p->prev;
		}
	}
	if (p->timer != NULL) {
		event_free(p->timer);
	}
	json_decref(p->msg);
	free(p->why);
	free(p->what);
	free(p);
}

/* The core's callback for every wait: answer, then forget it. */
static void
on_end(void *arg, int err, int dead_rank)
{
	struct pending *p = arg;
	char *why = NULL;

	if (p->c != NULL && err == 0 && p->what->done != NULL) {
		p->what->done(p->what, p->c, p->id);
	} else if (p->c != NULL && err == 0) {
		wr_regconn_reply(p->c, p->id, NULL, NULL, 0);
	} else if (p->c != NULL) {
		if (err == WORLD_EPEERDEAD && dead_rank >= 0) {
			why = wr_regsurvey_dead_why(p->c->s, p->msg, dead_rank);
		}
		wr_regconn_fail(p->c, p->id, err, dead_rank,
				err == -ETIMEDOUT ? p->why : why);
	}
	free(why);
	pending_free(p);
}

static void
on_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct pending *p = arg;

	if (p->w != NULL) {
		p->why = wr_regsurvey_timeout_why(p->w, p->msg);
		wr_reg_cancel(p->w, -ETIMEDOUT);
	}
}

static double
timeout_seconds(const struct wr_regsrv *s, int64_t ms)
{
	if (ms == WORLD_TIMEOUT_FOREVER) {
		return -1;
	}
	return ms == WORLD_TIMEOUT_DEFAULT ? s->cfg.wait_default : (double)ms / 1e3;
}

/* A pending answer to @rq, counted against its connection: 0, -ENOBUFS
 * or -ENOMEM, and @w is freed then. */
static int
pending_new(struct wr_regreq *rq, struct wr_regwait *w, struct pending **out)
{
	struct wr_regconn *c = rq->conn;
	double secs = timeout_seconds(c->s, w->timeout_ms);
	struct pending *p;

	if (c->nwaits >= WR_REGCONN_WAITS_MAX ||
	    cost_of(w) > WR_REGCONN_WAIT_BYTES_MAX - c->wait_bytes) {
		free(w);
		return -ENOBUFS;
	}
	p = calloc(1, sizeof(*p));
	if (p == NULL) {
		free(w);
		return -ENOMEM;
	}
	*p = (struct pending){ .id = rq->id, .what = w, .cost = cost_of(w),
			       .since = wr_clock_mono(), .msg = json_incref(rq->msg) };
	if (secs >= 0) {
		struct timeval tv = wr_clock_tv(secs);

		p->timer = evtimer_new(c->s->cfg.base, on_timeout, p);
		if (p->timer == NULL || evtimer_add(p->timer, &tv) < 0) {
			pending_free(p);
			return -ENOMEM;
		}
	}
	p->c = c;
	p->next = c->pending;
	if (c->pending != NULL) {
		c->pending->prev = p;
	}
	c->pending = p;
	c->nwaits++;
	c->wait_bytes += p->cost;
	*out = p;
	return 0;
}

void
wr_regconn_wait(struct wr_regreq *rq, struct wr_regwait *w)
{
	struct wr_reg_wait *cw = NULL;
	struct pending *p = NULL;
	int rc;

	/* Forever is WORLD_TIMEOUT_FOREVER, never any other negative number. */
	if (w->timeout_ms < WORLD_TIMEOUT_FOREVER) {
		free(w);
		wr_regconn_fail(rq->conn, rq->id, WORLD_EPROTO, -1,
				"timeout_ms must be -2 (forever), -1 (default) or >= 0");
		wr_regconn_abort(rq->conn);
		return;
	}
	rc = pending_new(rq, w, &p);
	if (rc < 0) {
		wr_regconn_fail(rq->conn, rq->id, rc, -1, rc == -ENOBUFS
				? "this connection holds as many waits as it may" : NULL);
		return;
	}
	rc = p->what->start(p->what, on_end, p, &cw);
	if (rc < 0) {
		/* The core refused: end the pending answer with that error. */
		on_end(p, rc, -1);
		return;
	}
	/* Else the core may have ended it already, and p is gone. */
	if (cw != NULL) {
		p->w = cw;
	}
}

void
wr_regconn_drop_waits(struct wr_regconn *c)
{
	while (c->pending != NULL) {
		struct pending *p = c->pending;

		c->pending = p->next;
		uncount(p);
		p->c = NULL;
		if (p->w != NULL) {
			wr_reg_cancel(p->w, -ECONNRESET);
		} else {
			pending_free(p);
		}
	}
}

const struct pending *
wr_regconn_pending_of(const struct wr_reg_wait_info *in)
{
	return in->cb == on_end ? in->arg : NULL;
}
