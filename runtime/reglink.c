/* SPDX-License-Identifier: MIT */
/*
 * The registry link's upkeep, the progress thread's own traffic with the
 * registry: connecting as the rank, the lease, the standing deaths watch
 * and the losses it reports (the deaths word, the watchers), the answers
 * to the registry's questions (what this process blocks in), and the
 * goodbye. The link itself, the calls on it and the links to peers are
 * progress.c's.
 */
#include "progress.h"
#include "progint.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <event2/event.h>

#include "clock.h"
#include "link.h"
#include "payload.h"
#include "regclient.h"
#include "regproto.h"
#include "waits.h"
#include "world_errors.h"

int
wr_prog_connect(const struct wr_prog_cfg *cfg, int *fd)
{
	struct wr_regclient_cfg ccfg = {
		.endpoints = cfg->endpoints, .secret = cfg->secret, .rank = cfg->rank,
		.role = "rank", .timeout_ms = cfg->connect_timeout_ms,
		.limits = &cfg->limits,
	};
	struct wr_regclient *client = NULL;
	int rc = wr_regclient_open(&ccfg, &client);

	if (rc < 0) {
		return rc;
	}
	*fd = wr_regclient_release(client);
	return *fd < 0 ? *fd : 0;
}

/*
 * Ask the registry to answer once more than the deaths we know of have
 * happened: one standing request, no polling. Called with mu held.
 */
void
wr_prog_watch_deaths(struct wr_prog *p)
{
	json_t *req = wr_regproto_id(wr_regproto_deaths_wait(p->losses), ++p->next_id);

	p->watch_id = 0;
	if (req != NULL && !p->broken && wr_link_send(p->registry.conn, req, NULL, 0) == 0) {
		p->watch_id = p->next_id;
	}
	json_decref(req);
}

/* Rank @rank is lost: note it, bump the word, wake its sleepers, tell
 * the watchers. Called with mu held. */
static void
lose(struct wr_prog *p, json_int_t rank, bool left)
{
	if (rank < 0 || rank >= p->size || p->dead[rank] || p->left[rank]) {
		return;
	}
	if (left) {
		p->left[rank] = true;
	} else {
		p->dead[rank] = true;
	}
	__atomic_add_fetch(&p->deaths, 1, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, &p->deaths, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
	for (struct ring *r = p->watchers.next; r != &p->watchers; r = r->next) {
		struct wr_prog_watch *w = (struct wr_prog_watch *)(void *)r;

		w->fn(w->arg, (int)rank, left);
	}
}

/* Rank @rank begins to stop, having said @colls: keep it, tell the
 * watchers. Called with mu held. */
static void
stopping(struct wr_prog *p, json_int_t rank, json_t *colls)
{
	if (rank < 0 || rank >= p->size || p->stopped[rank] != NULL || !json_is_object(colls)) {
		return;
	}
	p->stopped[rank] = json_incref(colls);
	for (struct ring *r = p->watchers.next; r != &p->watchers; r = r->next) {
		struct wr_prog_watch *w = (struct wr_prog_watch *)(void *)r;

		if (w->stop != NULL) {
			w->stop(w->arg, (int)rank, colls);
		}
	}
}

/*
 * The watch's answer: the losses since the last one, the ranks that died,
 * those that said goodbye and those that began to stop. Note each, count
 * them all, and watch again.
 */
static void
take_deaths(struct wr_prog *p, json_t *msg)
{
	json_t *res = json_object_get(msg, "result");
	size_t i;
	json_t *r;

	p->watch_id = 0;
	json_array_foreach(json_object_get(res, "dead"), i, r) {
		lose(p, json_integer_value(r), false);
		p->losses++;
	}
	json_array_foreach(json_object_get(res, "left"), i, r) {
		lose(p, json_integer_value(r), true);
		p->losses++;
	}
	json_array_foreach(json_object_get(res, "stopping"), i, r) {
		stopping(p, json_integer_value(json_object_get(r, "rank")),
			 json_object_get(r, "colls"));
		p->losses++;
	}
	/* An error (the registry is going away) is not worth a retry. */
	if (json_object_get(msg, "error") == NULL) {
		wr_prog_watch_deaths(p);
	}
}

/*
 * A request from the registry on our own connection: what this process
 * blocks in, for a hang report. Answered here, on the loop, without
 * waking any thread that waits. Anything else is refused, not fatal: a
 * newer registry may ask what we do not know.
 */
static void
answer_registry(struct wr_prog *p, json_t *msg)
{
	json_t *id = json_object_get(msg, "id");
	const char *op = json_string_value(json_object_get(msg, "op"));
	json_t *waits = NULL, *ans;

	if (op != NULL && strcmp(op, WR_OP_WAITS) == 0) {
		waits = p->waits != NULL ? wr_waits_json(p->waits) : json_array();
	}
	if (waits != NULL) {
		ans = json_pack("{s:O, s:{s:o}}", "id", id, "result", "waits", waits);
	} else {
		ans = json_pack("{s:O, s:{s:i, s:s, s:s}}", "id", id, "error", "code",
				-ENOTSUP, "name", world_err_name(-ENOTSUP), "message",
				"libworld does not answer that");
	}
	if (ans != NULL && !p->broken) {
		wr_link_send(p->registry.conn, ans, NULL, 0);
	}
	json_decref(ans);
}

bool
wr_prog_registry_frame(struct wr_prog *p, json_t *msg)
{
	json_int_t id = json_integer_value(json_object_get(msg, "id"));

	if (json_object_get(msg, "op") != NULL &&
	    json_is_integer(json_object_get(msg, "id"))) {
		answer_registry(p, msg);
		return true;
	}
	if (id != 0 && id == p->watch_id) {
		take_deaths(p, msg);
		return true;
	}
	return false;
}

static void
on_lease(evutil_socket_t fd, short what, void *arg)
{
	struct wr_prog *p = arg;
	json_t *msg;

	pthread_mutex_lock(&p->mu);
	msg = wr_regproto_id(wr_regproto_op(WR_OP_LEASE), ++p->next_id);
	/* Its answer matches no call and is dropped. */
	if (msg != NULL && !p->broken) {
		wr_link_send(p->registry.conn, msg, NULL, 0);
	}
	pthread_mutex_unlock(&p->mu);
	json_decref(msg);
	/* A quiet rank does not hold large buffers it kept for good. */
	wr_payload_drop_stale();
}

int
wr_prog_lease_start(struct wr_prog *p, double interval)
{
	struct timeval tv = wr_clock_tv(interval);

	if (interval > 0) {
		p->lease = event_new(p->base, -1, EV_PERSIST, on_lease, p);
		if (p->lease == NULL || event_add(p->lease, &tv) < 0) {
			return -ENOMEM;
		}
	}
	return 0;
}

void
wr_prog_goodbye(struct wr_prog *p)
{
	struct wr_result res;

	wr_prog_call(p, -1, NULL, wr_regproto_op(WR_OP_GOODBYE), NULL, 0,
		     5000, &res);
	wr_result_finish(&res);
}

const uint32_t *
wr_prog_deaths_word(struct wr_prog *p)
{
	return &p->deaths;
}

bool
wr_prog_is_dead(struct wr_prog *p, int rank)
{
	bool dead;

	pthread_mutex_lock(&p->mu);
	dead = rank >= 0 && rank < p->size && p->dead[rank];
	pthread_mutex_unlock(&p->mu);
	return dead;
}

bool
wr_prog_is_gone(struct wr_prog *p, int rank)
{
	bool gone;

	pthread_mutex_lock(&p->mu);
	gone = rank >= 0 && rank < p->size && (p->dead[rank] || p->left[rank]);
	pthread_mutex_unlock(&p->mu);
	return gone;
}

long long
wr_prog_stopped_at(struct wr_prog *p, int rank, uint32_t id)
{
	char key[16];
	json_t *n;
	long long at;

	snprintf(key, sizeof(key), "%u", id);
	pthread_mutex_lock(&p->mu);
	n = rank >= 0 && rank < p->size && p->stopped[rank] != NULL
		? json_object_get(p->stopped[rank], key) : NULL;
	at = json_is_integer(n) ? json_integer_value(n) : -1;
	pthread_mutex_unlock(&p->mu);
	return at;
}

void
wr_prog_watch_add(struct wr_prog *p, struct wr_prog_watch *w)
{
	pthread_mutex_lock(&p->mu);
	ring_insert(&p->watchers, &w->node);
	pthread_mutex_unlock(&p->mu);
}

void
wr_prog_watch_remove(struct wr_prog *p, struct wr_prog_watch *w)
{
	pthread_mutex_lock(&p->mu);
	if (w->node.next != NULL) {
		ring_cut(&w->node);
	}
	pthread_mutex_unlock(&p->mu);
}
