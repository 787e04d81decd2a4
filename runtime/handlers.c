/* SPDX-License-Identifier: MIT */
#include "handlers.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "table.h"

struct value {
	json_t *json;
	void *blob;
	size_t len;
};

struct wr_handlers {
	pthread_mutex_t mu;
	struct wr_table *services; /* "group\nkey" -> struct wr_handler */
	struct wr_table *direct;   /* name -> struct wr_handler */
	struct wr_table *values;   /* "group\nkey" -> struct value */
	struct wr_table *kept;     /* decimal id -> struct value (remote results) */
	int64_t next_kept;
};

struct world_reply {
	struct wr_answer *a;
	void **own; /* the call's blob, malloc'd, or NULL if not to be taken */
};

static void
value_free(void *p)
{
	struct value *v = p;

	json_decref(v->json);
	free(v->blob);
	free(v);
}

/* Called with mu held: drop one hold; the last frees it. */
static void
unhold(struct wr_handler *x)
{
	if (--x->refs == 0) {
		pthread_mutex_destroy(&x->serial);
		free(x);
	}
}

static void
handler_drop(void *p)
{
	unhold(p);
}

struct wr_handlers *
wr_handlers_create(void)
{
	struct wr_handlers *h = calloc(1, sizeof(*h));

	if (h == NULL) {
		return NULL;
	}
	pthread_mutex_init(&h->mu, NULL);
	h->services = wr_table_create(handler_drop);
	h->direct = wr_table_create(handler_drop);
	h->values = wr_table_create(value_free);
	h->kept = wr_table_create(value_free);
	if (h->services == NULL || h->direct == NULL || h->values == NULL ||
	    h->kept == NULL) {
		wr_handlers_destroy(h);
		return NULL;
	}
	return h;
}

void
wr_handlers_destroy(struct wr_handlers *h)
{
	if (h == NULL) {
		return;
	}
	wr_table_destroy(h->services);
	wr_table_destroy(h->direct);
	wr_table_destroy(h->values);
	wr_table_destroy(h->kept);
	pthread_mutex_destroy(&h->mu);
	free(h);
}

/* "group\nkey": a newline cannot be in a group name on the wire's path. */
static char *
full_key(const char *group, const char *key)
{
	const char *parts[] = { group != NULL ? group : "", key };

	return wr_table_key(parts, 2);
}

static struct wr_table *
table_of(struct wr_handlers *h, enum wr_hkind kind)
{
	return kind == WR_H_SERVICE ? h->services : h->direct;
}

int
wr_handlers_add(struct wr_handlers *h, enum wr_hkind kind, const char *group,
		const char *key, world_handler_fn *fn, void *ctx, unsigned flags)
{
	char *k = full_key(group, key);
	struct wr_handler *x = calloc(1, sizeof(*x));
	int rc = -ENOMEM;

	if (k != NULL && x != NULL) {
		*x = (struct wr_handler){ .fn = fn, .ctx = ctx, .flags = flags, .refs = 1 };
		pthread_mutex_init(&x->serial, NULL);
		pthread_mutex_lock(&h->mu);
		rc = wr_table_get(table_of(h, kind), k) != NULL ? -EEXIST
			: wr_table_put(table_of(h, kind), k, x);
		pthread_mutex_unlock(&h->mu);
	}
	if (rc < 0 && x != NULL) {
		pthread_mutex_destroy(&x->serial);
		free(x);
	}
	free(k);
	return rc;
}

int
wr_handlers_remove(struct wr_handlers *h, enum wr_hkind kind, const char *group,
		   const char *key)
{
	char *k = full_key(group, key);
	int rc;

	if (k == NULL) {
		return -ENOMEM;
	}
	pthread_mutex_lock(&h->mu);
	rc = wr_table_del(table_of(h, kind), k);
	pthread_mutex_unlock(&h->mu);
	free(k);
	return rc;
}

struct wr_handler *
wr_handlers_get(struct wr_handlers *h, enum wr_hkind kind, const char *group,
		const char *key)
{
	char *k = full_key(group, key);
	struct wr_handler *x = NULL;

	if (k == NULL) {
		return NULL;
	}
	pthread_mutex_lock(&h->mu);
	x = wr_table_get(table_of(h, kind), k);
	if (x != NULL) {
		x->refs++;
	}
	pthread_mutex_unlock(&h->mu);
	free(k);
	return x;
}

void
wr_handlers_put(struct wr_handlers *h, struct wr_handler *x)
{
	if (x == NULL) {
		return;
	}
	pthread_mutex_lock(&h->mu);
	unhold(x);
	pthread_mutex_unlock(&h->mu);
}

static struct value *
value_new(const json_t *json, const void *blob, size_t len)
{
	struct value *v = calloc(1, sizeof(*v));

	if (v == NULL) {
		return NULL;
	}
	v->json = json != NULL ? json_deep_copy(json) : json_null();
	v->blob = len > 0 ? malloc(len) : NULL;
	if (v->json == NULL || (len > 0 && v->blob == NULL)) {
		value_free(v);
		return NULL;
	}
	if (len > 0) {
		memcpy(v->blob, blob, len);
	}
	v->len = len;
	return v;
}

/* A copy of @v for a caller. */
static int
copy_out(const struct value *v, json_t **json, void **blob, size_t *len)
{
	*json = json_deep_copy(v->json);
	*blob = v->len > 0 ? malloc(v->len) : NULL;
	*len = v->len;
	if (*json == NULL || (v->len > 0 && *blob == NULL)) {
		json_decref(*json);
		free(*blob);
		*json = NULL;
		*blob = NULL;
		return -ENOMEM;
	}
	if (v->len > 0) {
		memcpy(*blob, v->blob, v->len);
	}
	return 0;
}

int
wr_handlers_pair(struct wr_handlers *h, const char *group, const char *key,
		 const json_t *value, const void *blob, size_t len)
{
	char *k = full_key(group, key);
	struct value *v = value_new(value, blob, len);
	int rc = -ENOMEM;

	if (k != NULL && v != NULL) {
		pthread_mutex_lock(&h->mu);
		rc = wr_table_get(h->values, k) != NULL ? -EEXIST
			: wr_table_put(h->values, k, v);
		pthread_mutex_unlock(&h->mu);
	}
	if (rc < 0 && v != NULL) {
		value_free(v);
	}
	free(k);
	return rc;
}

int
wr_handlers_unpair(struct wr_handlers *h, const char *group, const char *key)
{
	char *k = full_key(group, key);
	int rc;

	if (k == NULL) {
		return -ENOMEM;
	}
	pthread_mutex_lock(&h->mu);
	rc = wr_table_del(h->values, k);
	pthread_mutex_unlock(&h->mu);
	free(k);
	return rc;
}

int
wr_handlers_value(struct wr_handlers *h, const char *group, const char *key,
		  json_t **value, void **blob, size_t *len)
{
	char *k = full_key(group, key);
	struct value *v;
	int rc = -ENOENT;

	if (k == NULL) {
		return -ENOMEM;
	}
	pthread_mutex_lock(&h->mu);
	v = wr_table_get(h->values, k);
	if (v != NULL) {
		rc = copy_out(v, value, blob, len);
	}
	pthread_mutex_unlock(&h->mu);
	free(k);
	return rc;
}

static void
drop_prefix(struct wr_table *t, const char *prefix)
{
	size_t pos = 0, plen = strlen(prefix);
	const char *key;
	void *val;

	while (wr_table_next(t, &pos, &key, &val)) {
		if (strncmp(key, prefix, plen) == 0) {
			wr_table_del(t, key);
		}
	}
}

void
wr_handlers_drop_group(struct wr_handlers *h, const char *group)
{
	char *prefix = full_key(group, "");

	if (prefix == NULL) {
		return;
	}
	pthread_mutex_lock(&h->mu);
	drop_prefix(h->services, prefix);
	drop_prefix(h->values, prefix);
	pthread_mutex_unlock(&h->mu);
	free(prefix);
}

int64_t
wr_handlers_keep(struct wr_handlers *h, json_t *result_new, void *blob,
		 size_t len)
{
	struct value *v = calloc(1, sizeof(*v));
	char key[32];
	int64_t id = -ENOMEM;

	if (v == NULL) {
		json_decref(result_new);
		free(blob);
		return -ENOMEM;
	}
	*v = (struct value){ result_new != NULL ? result_new : json_null(), blob, len };
	pthread_mutex_lock(&h->mu);
	id = ++h->next_kept;
	snprintf(key, sizeof(key), "%lld", (long long)id);
	if (wr_table_put(h->kept, key, v) < 0) {
		value_free(v);
		id = -ENOMEM;
	}
	pthread_mutex_unlock(&h->mu);
	return id;
}

int
wr_handlers_fetch(struct wr_handlers *h, int64_t id, json_t **result,
		  void **blob, size_t *len)
{
	char key[32];
	struct value *v;
	int rc = -ENOENT;

	snprintf(key, sizeof(key), "%lld", (long long)id);
	pthread_mutex_lock(&h->mu);
	v = wr_table_get(h->kept, key);
	if (v != NULL) {
		rc = copy_out(v, result, blob, len);
	}
	pthread_mutex_unlock(&h->mu);
	return rc;
}

int
wr_handlers_release(struct wr_handlers *h, int64_t id)
{
	char key[32];
	int rc;

	snprintf(key, sizeof(key), "%lld", (long long)id);
	pthread_mutex_lock(&h->mu);
	rc = wr_table_del(h->kept, key);
	pthread_mutex_unlock(&h->mu);
	return rc;
}

void
wr_handlers_run(struct wr_handler *x, const json_t *args, const void *blob,
		size_t len, void **own, struct wr_answer *out)
{
	struct world_reply reply = { out, own };
	json_t *none = NULL;

	*out = (struct wr_answer){ 0 };
	if (args == NULL) {
		none = json_null();
		args = none;
	}
	if (x->flags & WORLD_SERIAL) {
		pthread_mutex_lock(&x->serial);
	}
	out->rc = x->fn(x->ctx, args, blob, len, &reply);
	if (x->flags & WORLD_SERIAL) {
		pthread_mutex_unlock(&x->serial);
	}
	if (out->rc > 0) {
		out->rc = -out->rc; /* a handler's code is negative, as ours are */
	}
	json_decref(none);
}

void
wr_answer_finish(struct wr_answer *a)
{
	json_decref(a->result);
	free(a->blob);
	a->result = NULL;
	a->blob = NULL;
}

int
world_reply_result_new(struct world_reply *reply, json_t *result_new)
{
	if (result_new == NULL) {
		return -EINVAL;
	}
	json_decref(reply->a->result);
	reply->a->result = result_new;
	return 0;
}

int
world_reply_blob(struct world_reply *reply, const void *blob, size_t len)
{
	void *copy = len > 0 ? malloc(len) : NULL;

	if (len > 0 && copy == NULL) {
		return -ENOMEM;
	}
	if (len > 0) {
		memcpy(copy, blob, len);
	}
	free(reply->a->blob);
	reply->a->blob = copy;
	reply->a->len = len;
	return 0;
}

void *
world_reply_take_blob(struct world_reply *reply)
{
	void *blob = reply->own != NULL ? *reply->own : NULL;

	if (blob != NULL) {
		*reply->own = NULL;
	}
	return blob;
}

int
world_reply_error(struct world_reply *reply, int code, const char *message)
{
	snprintf(reply->a->message, sizeof(reply->a->message), "%s",
		 message != NULL ? message : "");
	return code;
}
