/* SPDX-License-Identifier: MIT */
/*
 * kv: the registry's key/value space, TCPStore's operations on byte values
 * under string keys: set, get, add, compare_set, delete, append, check and
 * wait. A wait on missing keys goes through the watches in core.c. What
 * the space holds is bounded: each value by the largest blob, all keys and
 * values together by a budget. A value's bytes can be held by answers on
 * their way out; a change then writes a new copy, never the held bytes.
 */
#include "core.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coreint.h"
#include "regproto.h"
#include "table.h"

/* A value's bytes, shared with the answers that hold them. */
struct kv_bytes {
	size_t refs; /* atomic: released by whoever sent the answer */
	size_t cap;
	unsigned char data[]; /* the value and a NUL */
};

struct kv_val {
	struct kv_bytes *b; /* NULL only while a fresh value is being made */
	size_t len;
	size_t charge; /* what it counts against the budget */
};

/* What a key costs beyond its bytes: its table entry and value header. */
#define KEY_OVERHEAD 96

void
wr_reg_hold_release(void *hold)
{
	struct kv_bytes *b = hold;

	if (b != NULL && __atomic_sub_fetch(&b->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		free(b);
	}
}

void
wr_reg_drop_kv(void *p)
{
	struct kv_val *v = p;

	wr_reg_hold_release(v->b);
	free(v);
}

/* The capacity for @need bytes: appends grow geometrically, sets fit. */
static size_t
new_cap(const struct kv_val *v, size_t need, bool append)
{
	size_t cap = v->b != NULL ? v->b->cap : 0;

	return append && cap < SIZE_MAX / 2 && cap * 2 > need ? cap * 2 : need;
}

/*
 * Room for @need bytes, the first @keep of them the value's own: in
 * place when nobody else holds its bytes, else in a copy. -ENOSPC when
 * the budget cannot take it.
 */
static int
kv_reserve(struct wr_reg *reg, const char *key, struct kv_val *v, size_t need,
	   size_t keep, bool append)
{
	struct kv_bytes *b = v->b, *nb;
	bool shared = b != NULL && __atomic_load_n(&b->refs, __ATOMIC_ACQUIRE) > 1;
	size_t cap = new_cap(v, need, append), charge;

	if (b != NULL && !shared && need <= b->cap && (append || need >= b->cap / 2)) {
		return 0;
	}
	charge = strlen(key) + KEY_OVERHEAD + cap;
	if (reg->kv_bytes - v->charge + charge > reg->kv_max) {
		return -ENOSPC;
	}
	if (shared || b == NULL) {
		nb = malloc(sizeof(*nb) + cap);
		if (nb != NULL && keep > 0) {
			memcpy(nb->data, b->data, keep);
		}
		if (nb != NULL) {
			wr_reg_hold_release(b);
			nb->refs = 1;
		}
	} else {
		nb = realloc(b, sizeof(*nb) + cap);
	}
	if (nb == NULL) {
		return -ENOMEM;
	}
	nb->cap = cap;
	v->b = nb;
	reg->kv_bytes = reg->kv_bytes - v->charge + charge;
	v->charge = charge;
	return 0;
}

/* Store without waking anyone: the caller fires the watch. */
static int
kv_put(struct wr_reg *reg, const char *key, const void *val, size_t len,
       bool append)
{
	struct kv_val *v = wr_table_get(reg->kv, key);
	bool fresh = v == NULL;
	size_t at = fresh || !append ? 0 : v->len;
	int rc;

	if (len > reg->value_max || at > reg->value_max - len) {
		return -EMSGSIZE;
	}
	if (fresh && (v = calloc(1, sizeof(*v))) == NULL) {
		return -ENOMEM;
	}
	rc = kv_reserve(reg, key, v, at + len + 1, at, append);
	if (rc == 0 && fresh) {
		rc = wr_table_put(reg->kv, key, v);
	}
	if (rc < 0) {
		if (fresh) {
			reg->kv_bytes -= v->charge;
			wr_reg_drop_kv(v);
		}
		return rc;
	}
	if (len > 0) {
		memcpy(v->b->data + at, val, len);
	}
	v->len = at + len;
	v->b->data[v->len] = '\0';
	return 0;
}

static int
kv_store(struct wr_reg *reg, const char *key, const void *val, size_t len,
	 bool append)
{
	int rc = kv_put(reg, key, val, len, append);

	if (rc == 0) {
		wr_reg_watch_fire(reg->kv_watch, key);
	}
	return rc;
}

int
wr_reg_kv_set(struct wr_reg *reg, const char *key, const void *val,
	      size_t len)
{
	if (reg == NULL || key == NULL || (val == NULL && len > 0)) {
		return -EINVAL;
	}
	return kv_store(reg, key, val, len, false);
}

int
wr_reg_kv_append(struct wr_reg *reg, const char *key, const void *val,
		 size_t len)
{
	if (reg == NULL || key == NULL || (val == NULL && len > 0)) {
		return -EINVAL;
	}
	return kv_store(reg, key, val, len, true);
}

int
wr_reg_kv_get(struct wr_reg *reg, const char *key, const void **val,
	      size_t *len)
{
	const struct kv_val *v;

	if (reg == NULL || key == NULL || val == NULL || len == NULL) {
		return -EINVAL;
	}
	v = wr_table_get(reg->kv, key);
	if (v == NULL) {
		return -ENOENT;
	}
	*val = v->b->data;
	*len = v->len;
	return 0;
}

int
wr_reg_rank_name(struct wr_reg *reg, int rank, const void **val, size_t *len)
{
	char key[32];
	size_t digits = 0;
	int rc;

	snprintf(key, sizeof(key), WR_NAME_KEY, rank);
	rc = wr_reg_kv_get(reg, key, val, len);
	/* The value is bytes, not a string: counted within its length. */
	while (rc == 0 && digits < *len && ((const char *)*val)[digits] >= '0' &&
	       ((const char *)*val)[digits] <= '9') {
		digits++;
	}
	return rc < 0 ? rc : digits < *len ? 0 : -ENOENT;
}

int
wr_reg_kv_hold(struct wr_reg *reg, const char *key, const void **val,
	       size_t *len, void **hold)
{
	int rc = wr_reg_kv_get(reg, key, val, len);

	*hold = NULL;
	if (rc == 0) {
		const struct kv_val *v = wr_table_get(reg->kv, key);

		__atomic_add_fetch(&v->b->refs, 1, __ATOMIC_ACQ_REL);
		*hold = v->b;
	}
	return rc;
}

/* An optional sign and decimal digits, nothing else (stricter than stoll). */
static int
parse_int(const unsigned char *p, size_t len, int64_t *out)
{
	const unsigned char *end = p + len;
	bool neg = false;
	int64_t x = 0;

	if (p < end && (*p == '-' || *p == '+')) {
		neg = *p++ == '-';
	}
	if (p == end) {
		return -EINVAL;
	}
	for (; p < end; p++) {
		int d = *p - '0';

		if (d < 0 || d > 9) {
			return -EINVAL;
		}
		/* Negatives accumulate downwards, so INT64_MIN parses. */
		if (__builtin_mul_overflow(x, 10, &x) ||
		    (neg ? __builtin_sub_overflow(x, d, &x)
			 : __builtin_add_overflow(x, d, &x))) {
			return -ERANGE;
		}
	}
	*out = x;
	return 0;
}

int
wr_reg_kv_add(struct wr_reg *reg, const char *key, int64_t delta,
	      int64_t *out)
{
	const struct kv_val *v;
	int64_t cur = 0, sum;
	char text[24];
	int rc, n;

	if (reg == NULL || key == NULL || out == NULL) {
		return -EINVAL;
	}
	v = wr_table_get(reg->kv, key);
	if (v != NULL && (rc = parse_int(v->b->data, v->len, &cur)) < 0) {
		return rc;
	}
	if (__builtin_add_overflow(cur, delta, &sum)) {
		return -ERANGE;
	}
	n = snprintf(text, sizeof(text), "%" PRId64, sum);
	rc = kv_store(reg, key, text, (size_t)n, false);
	if (rc == 0) {
		*out = sum;
	}
	return rc;
}

int
wr_reg_kv_cas(struct wr_reg *reg, const char *key, const void *expected,
	      size_t exp_len, const void *desired, size_t des_len,
	      const void **cur, size_t *cur_len)
{
	const struct kv_val *v;
	int rc;

	if (reg == NULL || key == NULL || cur == NULL || cur_len == NULL ||
	    (expected == NULL && exp_len > 0) ||
	    (desired == NULL && des_len > 0)) {
		return -EINVAL;
	}
	v = wr_table_get(reg->kv, key);
	if (v == NULL && exp_len > 0) {
		/* TCPStore's answer: the caller's own expected value. */
		*cur = expected;
		*cur_len = exp_len;
		return 0;
	}
	if (v == NULL || (v->len == exp_len &&
			  (exp_len == 0 ||
			   memcmp(v->b->data, expected, exp_len) == 0))) {
		rc = kv_store(reg, key, desired, des_len, false);
		if (rc < 0) {
			return rc;
		}
	}
	/*
	 * Look again: woken callbacks may have changed or deleted the key,
	 * and a borrowed pointer must be valid when this call returns.
	 */
	v = wr_table_get(reg->kv, key);
	*cur = v != NULL ? (const void *)v->b->data : desired;
	*cur_len = v != NULL ? v->len : des_len;
	return 0;
}

int
wr_reg_kv_del(struct wr_reg *reg, const char *key)
{
	const struct kv_val *v;

	if (reg == NULL || key == NULL) {
		return -EINVAL;
	}
	v = wr_table_get(reg->kv, key);
	if (v != NULL) {
		reg->kv_bytes -= v->charge;
	}
	return wr_table_del(reg->kv, key);
}

size_t
wr_reg_kv_bytes(const struct wr_reg *reg)
{
	return reg == NULL ? 0 : reg->kv_bytes;
}

void
wr_reg_limit(struct wr_reg *reg, size_t value_max, size_t kv_max)
{
	reg->value_max = value_max;
	reg->kv_max = kv_max;
}

size_t
wr_reg_kv_count(const struct wr_reg *reg)
{
	return reg == NULL ? 0 : wr_table_count(reg->kv);
}

bool
wr_reg_kv_check(const struct wr_reg *reg, const char *const *keys, size_t n)
{
	if (reg == NULL || (keys == NULL && n > 0)) {
		return false;
	}
	for (size_t i = 0; i < n; i++) {
		if (keys[i] == NULL || wr_table_get(reg->kv, keys[i]) == NULL) {
			return false;
		}
	}
	return true;
}

/* Keys are not checked for deletion afterwards, as in TCPStore's wait. */
int
wr_reg_kv_wait(struct wr_reg *reg, const char *const *keys, size_t n,
	       int rank, wr_reg_wait_cb *cb, void *arg,
	       struct wr_reg_wait **w)
{
	const struct req rq = {.kind = WR_REG_WAIT_KV, .rank = rank, .cb = cb,
			       .arg = arg, .out = w};

	if (w != NULL) {
		*w = NULL;
	}
	if (reg == NULL || cb == NULL || (keys == NULL && n > 0) ||
	    rank < -1 || rank >= reg->nranks) {
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		if (keys[i] == NULL) {
			return -EINVAL;
		}
	}
	if (reg->closing) {
		return -ECANCELED;
	}
	return wr_reg_keys_wait(reg, reg->kv_watch, reg->kv, keys, n, &rq);
}
