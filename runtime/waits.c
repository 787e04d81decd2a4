/* SPDX-License-Identifier: MIT */
#include "waits.h"

#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "clock.h"

/* Keys a record lists at most; "what" says how many there were. */
#define KEYS_SHOWN 8

/* "what" in words: @at has room for @room bytes. */
typedef void describe_fn(const struct wr_wait *w, char *at, size_t room);

static void
say_name(const struct wr_wait *w, const char *verb, char *at, size_t room)
{
	snprintf(at, room, "%s \"%s\"", verb, w->name != NULL ? w->name : "");
}

static void
say_group(const struct wr_wait *w, const char *verb, char *at, size_t room)
{
	snprintf(at, room, "%s \"%s\"", verb, w->group != NULL ? w->group : "");
}

static void
barrier(const struct wr_wait *w, char *at, size_t room)
{
	say_name(w, "barrier", at, room);
}

static void
kv_get(const struct wr_wait *w, char *at, size_t room)
{
	say_name(w, "kv get", at, room);
}

static void
kv_wait(const struct wr_wait *w, char *at, size_t room)
{
	size_t n = (size_t)snprintf(at, room, "kv wait");

	for (size_t i = 0; i < w->nkeys && i < KEYS_SHOWN && n < room; i++) {
		n += (size_t)snprintf(at + n, room - n, "%s\"%s\"", i > 0 ? ", " : " ",
				      w->keys[i]);
	}
	if (w->nkeys > KEYS_SHOWN && n < room) {
		snprintf(at + n, room - n, " (%zu keys)", w->nkeys);
	}
}

static void
group_create(const struct wr_wait *w, char *at, size_t room)
{
	say_group(w, "group create", at, room);
}

static void
group_barrier(const struct wr_wait *w, char *at, size_t room)
{
	say_group(w, "barrier of group", at, room);
}

static void
paired(const struct wr_wait *w, char *at, size_t room)
{
	snprintf(at, room, "wait for value \"%s\" of group \"%s\"",
		 w->name != NULL ? w->name : "", w->group != NULL ? w->group : "");
}

static void
call(const struct wr_wait *w, char *at, size_t room)
{
	snprintf(at, room, "call to rank %d: %s \"%s\" of group \"%s\"", w->peer,
		 w->detail != NULL ? w->detail : "call",
		 w->name != NULL ? w->name : "", w->group != NULL ? w->group : "");
}

static void
future(const struct wr_wait *w, char *at, size_t room)
{
	snprintf(at, room, "future of a call to rank %d: %s \"%s\"", w->peer,
		 w->detail != NULL ? w->detail : "call", w->name != NULL ? w->name : "");
}

static void
stop(const struct wr_wait *w, char *at, size_t room)
{
	snprintf(at, room, "world_stop");
}

static void
handler(const struct wr_wait *w, char *at, size_t room)
{
	if (w->group != NULL) {
		snprintf(at, room, "handler \"%s\" of group \"%s\"", w->name, w->group);
	} else {
		snprintf(at, room, "handler \"%s\"", w->name);
	}
}

static const struct {
	const char *kind;
	describe_fn *describe;
} kinds[] = {
	[WR_WAIT_BARRIER] = { "barrier", barrier },
	[WR_WAIT_KV_GET] = { "kv.get", kv_get },
	[WR_WAIT_KV_WAIT] = { "kv.wait", kv_wait },
	[WR_WAIT_GROUP_CREATE] = { "group.create", group_create },
	[WR_WAIT_GROUP_BARRIER] = { "group.barrier", group_barrier },
	[WR_WAIT_PAIRED] = { "paired.wait", paired },
	[WR_WAIT_CALL] = { "call", call },
	[WR_WAIT_FUTURE] = { "future", future },
	[WR_WAIT_STOP] = { "stop", stop },
	[WR_WAIT_HANDLER] = { "handler", handler },
};

void
wr_waits_init(struct wr_waits *ws)
{
	pthread_mutex_init(&ws->mu, NULL);
	ws->head = NULL;
}

void
wr_waits_finish(struct wr_waits *ws)
{
	if (ws != NULL) {
		pthread_mutex_destroy(&ws->mu);
	}
}

/* A thread's id, asked of the kernel once per thread. */
static pid_t
thread_id(void)
{
	static _Thread_local pid_t tid;

	if (tid == 0) {
		tid = (pid_t)syscall(SYS_gettid);
	}
	return tid;
}

void
wr_waits_enter(struct wr_waits *ws, struct wr_wait *w)
{
	if (ws == NULL) {
		return;
	}
	w->since_ms = wr_clock_ms();
	w->tid = thread_id();
	w->prev = NULL;
	pthread_mutex_lock(&ws->mu);
	w->next = ws->head;
	if (ws->head != NULL) {
		ws->head->prev = w;
	}
	ws->head = w;
	pthread_mutex_unlock(&ws->mu);
}

void
wr_waits_leave(struct wr_waits *ws, struct wr_wait *w)
{
	if (ws == NULL) {
		return;
	}
	pthread_mutex_lock(&ws->mu);
	if (w->prev != NULL) {
		w->prev->next = w->next;
	} else {
		ws->head = w->next;
	}
	if (w->next != NULL) {
		w->next->prev = w->prev;
	}
	pthread_mutex_unlock(&ws->mu);
}

static json_t *
keys_json(const struct wr_wait *w)
{
	json_t *keys = json_array();

	for (size_t i = 0; keys != NULL && i < w->nkeys && i < KEYS_SHOWN; i++) {
		json_array_append_new(keys, json_string(w->keys[i]));
	}
	return keys;
}

/* One record; the strings it borrows are valid while ws->mu is held. */
static json_t *
record_json(const struct wr_wait *w, int64_t now)
{
	char what[512];
	json_t *o;

	kinds[w->kind].describe(w, what, sizeof(what));
	o = json_pack("{s:s, s:s, s:I, s:i}", "kind", kinds[w->kind].kind, "what",
		      what, "for_ms", (json_int_t)(now - w->since_ms), "tid",
		      (int)w->tid);
	if (o != NULL && w->group != NULL) {
		json_object_set_new(o, "group", json_string(w->group));
	}
	if (o != NULL && w->name != NULL) {
		json_object_set_new(o, "name", json_string(w->name));
	}
	if (o != NULL && w->nkeys > 0) {
		json_object_set_new(o, "keys", keys_json(w));
	}
	if (o != NULL && w->peer >= 0) {
		json_object_set_new(o, "peer", json_integer(w->peer));
	}
	if (o != NULL && w->seq > 0) {
		json_object_set_new(o, "seq", json_integer((json_int_t)w->seq));
	}
	return o;
}

json_t *
wr_waits_json(struct wr_waits *ws)
{
	json_t *all = json_array();
	const struct wr_wait *w, *last = NULL;
	int64_t now = wr_clock_ms();

	pthread_mutex_lock(&ws->mu);
	for (w = ws->head; w != NULL; w = w->next) {
		last = w;
	}
	/* The newest is at the head: walk back from the oldest. */
	for (w = last; all != NULL && w != NULL; w = w->prev) {
		if (json_array_append_new(all, record_json(w, now)) < 0) {
			json_decref(all);
			all = NULL;
		}
	}
	pthread_mutex_unlock(&ws->mu);
	return all;
}
