/* SPDX-License-Identifier: MIT */
#include "progress.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "clock.h"
#include "frame.h"
#include "regclient.h"
#include "world.h"

/* One request from a user thread, and later its answer. */
struct call {
	struct call *next;
	json_t *req;   /* until sent */
	void *blob;    /* a copy, until sent */
	size_t len;
	json_int_t id;
	bool done;
	bool abandoned; /* its caller gave up waiting: free it on the answer */
	int rc;
	json_t *result;
	void *rblob;
	size_t rlen;
	int dead_rank;
};

struct wr_prog {
	pthread_t thread;
	bool started;
	struct event_base *base;
	struct bufferevent *bev;
	struct wr_frame_reader rd;
	int wake_fd;
	struct event *wake;
	struct event *lease;
	double lease_interval;
	json_int_t next_id; /* loop thread only */
	/* Guarded by mu. */
	pthread_mutex_t mu;
	pthread_cond_t answered;
	struct call *queue;   /* not sent yet */
	struct call *pending; /* sent, waiting for the answer */
	bool broken;          /* the connection is gone */
	bool stopping;
};

static void
call_free(struct call *c)
{
	if (c == NULL) {
		return;
	}
	json_decref(c->req);
	json_decref(c->result);
	free(c->blob);
	free(c->rblob);
	free(c);
}

/* Called with mu held: the answer is in; wake its caller or drop it. */
static void
finish(struct wr_prog *p, struct call *c)
{
	c->done = true;
	if (c->abandoned) {
		call_free(c);
		return;
	}
	pthread_cond_broadcast(&p->answered);
}

/* Called with mu held: every call still out ends with @rc. */
static void
fail_all(struct wr_prog *p, int rc)
{
	struct call *lists[2] = { p->queue, p->pending };

	p->queue = p->pending = NULL;
	for (int i = 0; i < 2; i++) {
		while (lists[i] != NULL) {
			struct call *c = lists[i];

			lists[i] = c->next;
			c->rc = rc;
			finish(p, c);
		}
	}
}

static void
take_answer(struct wr_prog *p, json_t *msg, void *blob, size_t len)
{
	json_int_t id = json_integer_value(json_object_get(msg, "id"));
	json_t *err = json_object_get(msg, "error");
	struct call **at, *c = NULL;

	pthread_mutex_lock(&p->mu);
	for (at = &p->pending; *at != NULL; at = &(*at)->next) {
		if ((*at)->id == id) {
			c = *at;
			*at = c->next;
			break;
		}
	}
	if (c == NULL) {
		/* A lease's answer, or one whose call is gone: nobody waits. */
		pthread_mutex_unlock(&p->mu);
		free(blob);
		return;
	}
	c->dead_rank = -1;
	if (err != NULL) {
		json_unpack(err, "{s?i, s?i}", "code", &c->rc, "rank", &c->dead_rank);
		c->rc = c->rc < 0 ? c->rc : WORLD_EPROTO;
		free(blob);
	} else {
		c->rc = 0;
		c->result = json_incref(json_object_get(msg, "result"));
		c->rblob = blob;
		c->rlen = len;
	}
	finish(p, c);
	pthread_mutex_unlock(&p->mu);
}

static void
on_read(struct bufferevent *bev, void *arg)
{
	struct wr_prog *p = arg;
	struct evbuffer *in = bufferevent_get_input(bev);

	for (;;) {
		json_t *msg = NULL;
		void *blob = NULL;
		size_t len = 0;
		int rc = wr_frame_read(&p->rd, in, &msg, &blob, &len);

		if (rc == 0) {
			return;
		}
		if (rc < 0) {
			/* The registry sent what is not a frame: nothing after it holds. */
			pthread_mutex_lock(&p->mu);
			p->broken = true;
			fail_all(p, WORLD_EREGISTRY);
			pthread_mutex_unlock(&p->mu);
			bufferevent_disable(bev, EV_READ);
			return;
		}
		take_answer(p, msg, blob, len);
		json_decref(msg);
	}
}

static void
on_event(struct bufferevent *bev, short what, void *arg)
{
	struct wr_prog *p = arg;

	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
		pthread_mutex_lock(&p->mu);
		p->broken = true;
		fail_all(p, WORLD_EREGISTRY);
		pthread_mutex_unlock(&p->mu);
		bufferevent_disable(bev, EV_READ | EV_WRITE);
	}
}

/* Frame and send @c; it joins the pending list. Called with mu held. */
static void
send_call(struct wr_prog *p, struct call *c)
{
	struct evbuffer *out = bufferevent_get_output(p->bev);

	c->id = ++p->next_id;
	if (json_object_set_new(c->req, "id", json_integer(c->id)) < 0 ||
	    wr_frame_write(out, c->req, c->blob, c->len) < 0) {
		c->rc = -ENOMEM;
		finish(p, c);
		return;
	}
	json_decref(c->req);
	free(c->blob);
	c->req = NULL;
	c->blob = NULL;
	c->next = p->pending;
	p->pending = c;
}

static void
on_wake(evutil_socket_t fd, short what, void *arg)
{
	struct wr_prog *p = arg;
	uint64_t n;
	struct call *list;

	if (read(p->wake_fd, &n, sizeof(n)) < 0) {
		/* EAGAIN: another wake took it. */
	}
	pthread_mutex_lock(&p->mu);
	if (p->stopping) {
		event_base_loopbreak(p->base);
	}
	list = p->queue;
	p->queue = NULL;
	while (list != NULL) {
		struct call *c = list;

		list = c->next;
		if (p->broken) {
			c->rc = WORLD_EREGISTRY;
			finish(p, c);
		} else {
			send_call(p, c);
		}
	}
	pthread_mutex_unlock(&p->mu);
}

static void
on_lease(evutil_socket_t fd, short what, void *arg)
{
	struct wr_prog *p = arg;
	json_t *msg = json_pack("{s:s, s:I}", "op", "lease", "id", ++p->next_id);

	/* Its answer matches no call and is dropped. */
	if (msg != NULL) {
		wr_frame_write(bufferevent_get_output(p->bev), msg, NULL, 0);
	}
	json_decref(msg);
}

static void *
loop(void *arg)
{
	struct wr_prog *p = arg;

	event_base_dispatch(p->base);
	return NULL;
}

static int
start_loop(struct wr_prog *p, int fd)
{
	struct timeval tv = wr_clock_tv(p->lease_interval);
	sigset_t all, old;
	int rc;

	p->base = event_base_new();
	if (p->base == NULL) {
		close(fd);
		return -ENOMEM;
	}
	p->bev = bufferevent_socket_new(p->base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (p->bev == NULL) {
		close(fd);
		return -ENOMEM;
	}
	bufferevent_setcb(p->bev, on_read, NULL, on_event, p);
	bufferevent_enable(p->bev, EV_READ);
	p->wake = event_new(p->base, p->wake_fd, EV_READ | EV_PERSIST, on_wake, p);
	if (p->wake == NULL || event_add(p->wake, NULL) < 0) {
		return -ENOMEM;
	}
	if (p->lease_interval > 0) {
		p->lease = event_new(p->base, -1, EV_PERSIST, on_lease, p);
		if (p->lease == NULL || event_add(p->lease, &tv) < 0) {
			return -ENOMEM;
		}
	}
	/* Signals belong to the program's own threads, never to ours. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	rc = -pthread_create(&p->thread, NULL, loop, p);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	p->started = rc == 0;
	return rc;
}

int
wr_prog_open(const struct wr_prog_cfg *cfg, struct wr_prog **out)
{
	struct wr_regclient_cfg ccfg = {
		.endpoints = cfg->endpoints, .secret = cfg->secret, .rank = cfg->rank,
		.role = "rank", .timeout_ms = cfg->connect_timeout_ms,
	};
	struct wr_prog *p = calloc(1, sizeof(*p));
	struct wr_regclient *client = NULL;
	pthread_condattr_t ca;
	int rc;

	*out = NULL;
	if (p == NULL) {
		return -ENOMEM;
	}
	pthread_mutex_init(&p->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->answered, &ca);
	pthread_condattr_destroy(&ca);
	wr_frame_reader_init(&p->rd, NULL);
	p->lease_interval = cfg->lease_interval;
	p->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	rc = p->wake_fd < 0 ? -errno : wr_regclient_open(&ccfg, &client);
	if (rc == 0) {
		rc = start_loop(p, wr_regclient_release(client));
	}
	if (rc < 0) {
		wr_prog_close(p, 0);
		return rc;
	}
	*out = p;
	return 0;
}

/* Called with mu held: wait for @c until @deadline (-1: none). */
static void
await(struct wr_prog *p, struct call *c, int64_t deadline)
{
	while (!c->done) {
		struct timespec ts;

		if (deadline < 0) {
			pthread_cond_wait(&p->answered, &p->mu);
			continue;
		}
		if (wr_clock_ms() >= deadline) {
			return;
		}
		ts.tv_sec = (time_t)(deadline / 1000);
		ts.tv_nsec = (long)(deadline % 1000) * 1000000;
		pthread_cond_timedwait(&p->answered, &p->mu, &ts);
	}
}

static void
wake(struct wr_prog *p)
{
	uint64_t one = 1;

	if (write(p->wake_fd, &one, sizeof(one)) < 0) {
		/* EAGAIN: the counter is full of wakes already. */
	}
}

int
wr_prog_call(struct wr_prog *p, json_t *req_new, const void *blob, size_t len,
	     int wait_ms, json_t **result, void **rblob, size_t *rlen,
	     int *dead_rank)
{
	int64_t deadline = wait_ms < 0 ? -1 : wr_clock_ms() + wait_ms;
	struct call *c = calloc(1, sizeof(*c));
	int rc;

	if (c != NULL && len > 0) {
		c->blob = malloc(len);
	}
	if (c == NULL || req_new == NULL || (len > 0 && c->blob == NULL)) {
		json_decref(req_new);
		call_free(c);
		return -ENOMEM;
	}
	c->req = req_new;
	c->len = len;
	if (len > 0) {
		memcpy(c->blob, blob, len);
	}
	pthread_mutex_lock(&p->mu);
	if (p->broken || p->stopping) {
		pthread_mutex_unlock(&p->mu);
		call_free(c);
		return WORLD_EREGISTRY;
	}
	c->next = p->queue;
	p->queue = c;
	wake(p);
	await(p, c, deadline);
	if (!c->done) {
		c->abandoned = true; /* the loop frees it when (if) it is answered */
		pthread_mutex_unlock(&p->mu);
		return -ETIMEDOUT;
	}
	pthread_mutex_unlock(&p->mu);
	rc = c->rc;
	if (dead_rank != NULL) {
		*dead_rank = c->dead_rank;
	}
	if (rc == 0 && result != NULL) {
		*result = c->result;
		c->result = NULL;
	}
	if (rc == 0 && rblob != NULL) {
		*rblob = c->rblob;
		*rlen = c->rlen;
		c->rblob = NULL;
	}
	call_free(c);
	return rc;
}

void
wr_prog_close(struct wr_prog *p, int goodbye)
{
	if (p == NULL) {
		return;
	}
	if (goodbye && p->started) {
		wr_prog_call(p, json_pack("{s:s}", "op", "goodbye"), NULL, 0, 5000,
			     NULL, NULL, NULL, NULL);
	}
	if (p->started) {
		pthread_mutex_lock(&p->mu);
		p->stopping = true;
		wake(p);
		pthread_mutex_unlock(&p->mu);
		pthread_join(p->thread, NULL);
	}
	pthread_mutex_lock(&p->mu);
	fail_all(p, WORLD_EREGISTRY);
	pthread_mutex_unlock(&p->mu);
	if (p->lease != NULL) {
		event_free(p->lease);
	}
	if (p->wake != NULL) {
		event_free(p->wake);
	}
	if (p->bev != NULL) {
		bufferevent_free(p->bev);
	}
	if (p->base != NULL) {
		event_base_free(p->base);
	}
	if (p->wake_fd >= 0) {
		close(p->wake_fd);
	}
	wr_frame_reader_finish(&p->rd);
	pthread_cond_destroy(&p->answered);
	pthread_mutex_destroy(&p->mu);
	free(p);
}
