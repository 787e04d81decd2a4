/* SPDX-License-Identifier: MIT */
/*
 * handlers: what this process answers when peers call it: services and
 * values by (group, key), direct handlers by name, and the results of
 * remote calls kept until fetched or released. User threads change the
 * tables while the progress thread and the workers read them: every
 * access takes the tables' lock, and entries are reference counted so
 * that a handler deregistered mid-call finishes safely.
 */
#ifndef WR_HANDLERS_H
#define WR_HANDLERS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "world.h"

struct wr_handlers;

/* A service or direct handler, held while it runs. */
struct wr_handler {
	world_handler_fn *fn;
	void *ctx;
	unsigned flags;
	pthread_mutex_t serial; /* held around each call with WORLD_SERIAL */
	int refs;
};

enum wr_hkind {
	WR_H_SERVICE,
	WR_H_DIRECT,
};

struct wr_handlers *wr_handlers_create(void);
void wr_handlers_destroy(struct wr_handlers *h);

/* -EEXIST if taken. @group NULL for direct handlers. */
int wr_handlers_add(struct wr_handlers *h, enum wr_hkind kind,
		    const char *group, const char *key, world_handler_fn *fn,
		    void *ctx, unsigned flags);
/* -ENOENT if absent. */
int wr_handlers_remove(struct wr_handlers *h, enum wr_hkind kind,
		       const char *group, const char *key);

/* A held handler (release with wr_handlers_put()), or NULL. */
struct wr_handler *wr_handlers_get(struct wr_handlers *h, enum wr_hkind kind,
				   const char *group, const char *key);
void wr_handlers_put(struct wr_handlers *h, struct wr_handler *x);

/* Values: a copy is kept; -EEXIST / -ENOENT. */
int wr_handlers_pair(struct wr_handlers *h, const char *group, const char *key,
		     const json_t *value, const void *blob, size_t len);
int wr_handlers_unpair(struct wr_handlers *h, const char *group,
		       const char *key);
/* A copy of a value: *value new reference, *blob malloc'd. -ENOENT. */
int wr_handlers_value(struct wr_handlers *h, const char *group, const char *key,
		      json_t **value, void **blob, size_t *len);

/* Drop every entry of @group (services and values); their keys in *keys. */
void wr_handlers_drop_group(struct wr_handlers *h, const char *group);

/* Remote results: stored under a new id; fetched as copies; released. */
int64_t wr_handlers_keep(struct wr_handlers *h, json_t *result_new, void *blob,
			 size_t len);
int wr_handlers_fetch(struct wr_handlers *h, int64_t id, json_t **result,
		      void **blob, size_t *len);
int wr_handlers_release(struct wr_handlers *h, int64_t id);

/* Run handler @x (held) on @args; fills what the caller gets back. */
struct wr_answer {
	int rc;            /* 0, or the handler's code */
	json_t *result;    /* new reference or NULL */
	void *blob;        /* malloc'd or NULL */
	size_t len;
	char message[256]; /* from world_reply_error() */
};
/* Run @x on @blob; @own, if not NULL, holds @blob malloc'd, for the
 * handler to take (world_reply_take_blob() sets *@own to NULL). */
void wr_handlers_run(struct wr_handler *x, const json_t *args,
		     const void *blob, size_t len, void **own, struct wr_answer *out);
void wr_answer_finish(struct wr_answer *a);

#endif
