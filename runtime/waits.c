/* SPDX-License-Identifier: MIT */
#include "waits.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "clock.h"

/* Keys a record lists at most; "what" says how many there were. */
#define KEYS_SHOWN 8

/* "what" in words, @verb first: @at has room for @room bytes. */
typedef void describe_fn(const struct wr_wait *w, const char *verb, char *at,
			 size_t room);

static const char *
or_empty(const char *s)
{
	return s != NULL ? s : "";
}

static void
say_name(const struct wr_wait *w, const char *verb, char *at, size_t room)
{
	snprintf(at, room, "%s \"%s\"", verb, or_empty(w->name));
}

static void
say_group(const struct wr_wait *w, const char *verb, char *at, size_t room)
{
	snprintf(at, room, "%s \"%s\"", verb, or_empty(w->group));
}

static void
say_keys(const struct wr_wait *w, const char *verb, char *at, size_t room)
{
	size_t n = (size_t)snprintf(at, room, "%s", verb);

	for (size_t i = 0; i < w->nkeys && i < KEYS_SHOWN && n < room; i++) {
		n += (size_t)snprintf(at + n, room - n, "%s\"%s\"", i > 0 ? ", " : " ",
				      w->keys[i]);
	}
	if (w->nkeys > KEYS_SHOWN && n < room) {
		snprintf(at + n, room - n, " (%zu keys)", w->nkeys);
	}
}

static void
say_value(const struct wr_wait *w, const char *verb, char *at, size_t room)
{
	snprintf(at, room, "%s \"%s\" of group \"%s\"", verb, or_empty(w->name),
		 or_empty(w->group));
}

static void
say_call(const struct wr_wait *w, const char *verb, char *at, size_t room)
{
	int n = snprintf(at, room, "%s %d: %s \"%s\"", verb, w->peer,
			 w->detail != NULL ? w->detail : "call", or_empty(w->name));

	if (w->group != NULL && w->group[0] != '\0' && n >= 0 && (size_t)n < room) {
		snprintf(at + n, room - (size_t)n, " of group \"%s\"", w->group);
	}
}

static void
say_verb(const struct wr_wait *w, const char *verb, char *at, size_t room)
{
	snprintf(at, room, "%s", verb);
}

static void
say_handler(const struct wr_wait *w, const char *verb, char *at, size_t room)
{
	say_name(w, verb, at, room);
	if (w->group != NULL) {
		size_t n = strlen(at);

		snprintf(at + n, room - n, " of group \"%s\"", w->group);
	}
}

/* "all_reduce #7 of coll 3" (the hang report adds the peer it waits for). */
static void
say_coll(const struct wr_wait *w, const char *verb, char *at, size_t room)
{
	int n = snprintf(at, room, "%s", or_empty(w->name));

	if (w->seq > 0 && n >= 0 && (size_t)n < room) {
		n += snprintf(at + n, room - (size_t)n, " #%llu", (unsigned long long)w->seq);
	}
	if (n >= 0 && (size_t)n < room) {
		snprintf(at + n, room - (size_t)n, " of %s", or_empty(w->group));
	}
}

/* The one table: a kind's name in JSON, and its words. */
static const struct {
	const char *kind;
	describe_fn *describe;
	const char *verb;
} kinds[] = {
	[WR_WAIT_BARRIER] = { "barrier", say_name, "barrier" },
	[WR_WAIT_KV_GET] = { "kv.get", say_name, "kv get" },
	[WR_WAIT_KV_WAIT] = { "kv.wait", say_keys, "kv wait" },
	[WR_WAIT_GROUP_CREATE] = { "group.create", say_group, "group create" },
	[WR_WAIT_GROUP_BARRIER] = { "group.barrier", say_group, "barrier of group" },
	[WR_WAIT_PAIRED] = { "paired.wait", say_value, "wait for value" },
	[WR_WAIT_CALL] = { "call", say_call, "call to rank" },
	[WR_WAIT_FUTURE] = { "future", say_call, "future of a call to rank" },
	[WR_WAIT_STOP] = { "stop", say_verb, "world_stop" },
	[WR_WAIT_HANDLER] = { "handler", say_handler, "handler" },
	[WR_WAIT_COLL] = { "collective", say_coll, "collective" },
};

void
wr_waits_init(struct wr_waits *ws)
{
	pthread_mutex_init(&ws->mu, NULL);
	ring_init(&ws->all);
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
	pthread_mutex_lock(&ws->mu);
	ring_insert(&ws->all, &w->node);
	pthread_mutex_unlock(&ws->mu);
}

void
wr_waits_leave(struct wr_waits *ws, struct wr_wait *w)
{
	if (ws == NULL) {
		return;
	}
	pthread_mutex_lock(&ws->mu);
	ring_cut(&w->node);
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

	kinds[w->kind].describe(w, kinds[w->kind].verb, what, sizeof(what));
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
	if (o != NULL && __atomic_load_n(&w->peer, __ATOMIC_RELAXED) >= 0) {
		json_object_set_new(o, "peer",
				    json_integer(__atomic_load_n(&w->peer, __ATOMIC_RELAXED)));
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
	int64_t now = wr_clock_ms();

	pthread_mutex_lock(&ws->mu);
	for (const struct ring *r = ws->all.next; all != NULL && r != &ws->all;
	     r = r->next) {
		const struct wr_wait *w = (const struct wr_wait *)(const void *)
			((const char *)r - offsetof(struct wr_wait, node));

		if (json_array_append_new(all, record_json(w, now)) < 0) {
			json_decref(all);
			all = NULL;
		}
	}
	pthread_mutex_unlock(&ws->mu);
	return all;
}
