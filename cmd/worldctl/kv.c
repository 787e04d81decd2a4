/* SPDX-License-Identifier: MIT */
#include "kv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "regproto.h"
#include "world_errors.h"

/* Adds "timeout_ms" to @req unless it is -1 (not given); @req may be NULL. */
static json_t *
with_timeout(json_t *req, int64_t timeout_ms)
{
	return timeout_ms >= 0 ? wr_regproto_timeout(req, timeout_ms) : req;
}

/*
 * Make room after the *cap bytes of *b. One byte past the limit is room
 * enough: it tells "too long" from "exactly the limit".
 */
static int
grow(char **b, size_t *cap)
{
	size_t want = *cap ? *cap * 2 : 65536;
	char *nb;

	if (want > WR_KV_STDIN_MAX + 1) {
		want = WR_KV_STDIN_MAX + 1;
	}
	nb = realloc(*b, want);
	if (nb == NULL) {
		return -ENOMEM;
	}
	*b = nb;
	*cap = want;
	return 0;
}

/*
 * All of standard input into *buf (malloc'd, NULL when empty): 0,
 * -EFBIG past WR_KV_STDIN_MAX bytes, or -errno.
 */
static int
read_stdin(char **buf, size_t *len)
{
	size_t cap = 0, n = 0;
	ssize_t got = 1;
	char *b = NULL;
	int rc = 0;

	while (rc == 0 && got != 0) {
		if (n == cap) {
			rc = grow(&b, &cap);
		}
		if (rc == 0) {
			got = read(STDIN_FILENO, b + n, cap - n);
			if (got < 0 && errno != EINTR) {
				rc = -errno;
			}
			n += got > 0 ? (size_t)got : 0;
		}
		if (n > WR_KV_STDIN_MAX) {
			rc = -EFBIG;
		}
	}
	if (rc < 0 || n == 0) {
		free(b);
		b = NULL;
	}
	*buf = b;
	*len = n;
	return rc;
}

int
wr_kv_set(struct wr_ctl *ctl, const struct wr_args *a)
{
	const char *key = a->pos[0], *value = a->pos[1];
	size_t len = strlen(value);
	char *in = NULL;
	int rc;

	wr_ctl_doing(ctl, "kv set %s", key);
	if (strcmp(value, "-") == 0) {
		rc = read_stdin(&in, &len);
		if (rc == -EFBIG) {
			wr_args_usage("kv set %s: standard input holds more than %zu "
				      "MiB", key, WR_KV_STDIN_MAX >> 20);
			return WR_CTL_USAGE;
		}
		if (rc < 0) {
			wr_ctl_say(ctl, "reading standard input: %s", world_strerror(rc));
			return WR_CTL_FAILED;
		}
		value = in;
	}
	if (wr_ctl_connect(ctl) < 0) {
		free(in);
		return WR_CTL_FAILED;
	}
	rc = wr_ctl_call(ctl, wr_regproto_key(WR_OP_KV_SET, key), value, len,
			 WR_CTL_NOWAIT, NULL, NULL, NULL);
	free(in);
	return wr_ctl_fail(ctl, rc);
}

/* The value, then a newline, on stdout. */
static int
print_value(struct wr_ctl *ctl, const void *v, size_t len)
{
	if ((len > 0 && fwrite(v, 1, len, stdout) != len) || putchar('\n') == EOF ||
	    fflush(stdout) == EOF) {
		wr_ctl_say(ctl, "writing the value: %s", strerror(errno));
		return WR_CTL_FAILED;
	}
	return WR_CTL_OK;
}

int
wr_kv_get(struct wr_ctl *ctl, const struct wr_args *a)
{
	const char *key = a->pos[0];
	void *v = NULL;
	size_t len = 0;
	int rc;

	wr_ctl_doing(ctl, "kv get %s", key);
	if (wr_ctl_connect(ctl) < 0) {
		return WR_CTL_FAILED;
	}
	/* Without --timeout, "timeout_ms" stays out: the registry does not wait. */
	rc = wr_ctl_call(ctl, with_timeout(wr_regproto_key(WR_OP_KV_GET, key),
					   a->timeout_ms),
			 NULL, 0, a->timeout_ms < 0 ? WR_CTL_NOWAIT : a->timeout_ms,
			 NULL, &v, &len);
	if (rc == 0) {
		rc = print_value(ctl, v, len);
		free(v);
		return rc;
	}
	return wr_ctl_fail(ctl, rc);
}

int
wr_kv_add(struct wr_ctl *ctl, const struct wr_args *a)
{
	const char *key = a->pos[0];
	json_t *result = NULL;
	json_int_t value = 0;
	int64_t delta;
	int rc;

	wr_ctl_doing(ctl, "kv add %s", key);
	if (wr_args_integer(a->pos[1], INT64_MIN, INT64_MAX, &delta) < 0) {
		wr_args_usage("kv add %s %s: not a 64-bit integer", key, a->pos[1]);
		return WR_CTL_USAGE;
	}
	if (wr_ctl_connect(ctl) < 0) {
		return WR_CTL_FAILED;
	}
	rc = wr_ctl_call(ctl, wr_regproto_kv_add(key, delta),
			 NULL, 0, WR_CTL_NOWAIT, &result, NULL, NULL);
	if (rc == 0 && json_unpack(result, "{s:I}", "value", &value) < 0) {
		rc = WORLD_EPROTO;
	}
	json_decref(result);
	if (rc == -EINVAL || rc == -ERANGE) {
		wr_ctl_say(ctl, rc == -EINVAL ? "the value is not an integer"
					      : "the sum is out of range");
		return WR_CTL_FAILED;
	}
	if (rc < 0) {
		return wr_ctl_fail(ctl, rc);
	}
	printf("%" JSON_INTEGER_FORMAT "\n", value);
	return fflush(stdout) == EOF ? WR_CTL_FAILED : WR_CTL_OK;
}

/* The keys of @a from @from on, as a JSON array (NULL: no memory). */
static json_t *
keys_from(const struct wr_args *a, int from)
{
	json_t *keys = json_array();

	for (int i = from; keys != NULL && i < a->npos; i++) {
		if (json_array_append_new(keys, json_string(a->pos[i])) < 0) {
			json_decref(keys);
			keys = NULL;
		}
	}
	return keys;
}

int
wr_kv_wait(struct wr_ctl *ctl, const struct wr_args *a)
{
	json_t *keys = keys_from(a, 0);
	int rc;

	wr_ctl_doing(ctl, "kv wait %s%s", a->pos[0], a->npos > 1 ? " ..." : "");
	if (keys == NULL) {
		return wr_ctl_fail(ctl, -ENOMEM);
	}
	if (wr_ctl_connect(ctl) < 0) {
		json_decref(keys);
		return WR_CTL_FAILED;
	}
	/* Without --timeout, -1: the job's default wait, as with barrier. */
	rc = wr_ctl_call(ctl, wr_regproto_timeout(wr_regproto_keys(WR_OP_KV_WAIT, keys),
							a->timeout_ms),
			 NULL, 0, a->timeout_ms, NULL, NULL, NULL);
	return wr_ctl_fail(ctl, rc);
}

/* One answer of kv.mget: the values it holds, a line each; *next is the
 * first key it left out (the answer had no room), or npos. */
static int
print_values(struct wr_ctl *ctl, json_t *result, const char *blob, size_t len,
	     int *next)
{
	json_t *lens = NULL, *lenv;
	json_int_t more = -1;
	size_t at = 0, i;
	int rc = WR_CTL_OK;

	if (json_unpack(result, "{s:o, s?:I}", "lens", &lens, "next", &more) < 0 ||
	    !json_is_array(lens) || json_array_size(lens) == 0 ||
	    (more >= 0 && more != (json_int_t)json_array_size(lens))) {
		return wr_ctl_fail(ctl, WORLD_EPROTO);
	}
	json_array_foreach(lens, i, lenv) {
		json_int_t n = json_integer_value(lenv);

		if (!json_is_integer(lenv) || n < 0 || (size_t)n > len - at) {
			return wr_ctl_fail(ctl, WORLD_EPROTO);
		}
		if (rc == WR_CTL_OK) {
			rc = print_value(ctl, blob + at, (size_t)n);
		}
		at += (size_t)n;
	}
	*next += (int)json_array_size(lens);
	return rc;
}

/*
 * Every value in one round trip (or a few: an answer holds as many as
 * fit, and says where to go on). With --timeout the first request waits
 * for every key; the rest are there by then.
 */
int
wr_kv_mget(struct wr_ctl *ctl, const struct wr_args *a)
{
	int rc = 0, status = WR_CTL_OK, next = 0;

	wr_ctl_doing(ctl, "kv mget %s%s", a->pos[0], a->npos > 1 ? " ..." : "");
	if (wr_ctl_connect(ctl) < 0) {
		return WR_CTL_FAILED;
	}
	while (rc == 0 && status == WR_CTL_OK && next < a->npos) {
		json_t *keys = keys_from(a, next), *req, *result = NULL;
		void *blob = NULL;
		size_t len = 0;

		req = keys != NULL ? wr_regproto_keys(WR_OP_KV_MGET, keys) : NULL;
		if (req == NULL) {
			return wr_ctl_fail(ctl, -ENOMEM);
		}
		rc = wr_ctl_call(ctl, next == 0 ? with_timeout(req, a->timeout_ms) : req,
				 NULL, 0, next == 0 && a->timeout_ms >= 0 ? a->timeout_ms
				 : WR_CTL_NOWAIT, &result, &blob, &len);
		if (rc == 0) {
			status = print_values(ctl, result, blob, len, &next);
		}
		json_decref(result);
		free(blob);
	}
	return rc != 0 ? wr_ctl_fail(ctl, rc) : status;
}

int
wr_kv_del(struct wr_ctl *ctl, const struct wr_args *a)
{
	const char *key = a->pos[0];
	json_t *result = NULL;
	int deleted = 0, rc;

	wr_ctl_doing(ctl, "kv del %s", key);
	if (wr_ctl_connect(ctl) < 0) {
		return WR_CTL_FAILED;
	}
	rc = wr_ctl_call(ctl, wr_regproto_key(WR_OP_KV_DEL, key), NULL, 0,
			 WR_CTL_NOWAIT, &result, NULL, NULL);
	if (rc == 0 && json_unpack(result, "{s:b}", "deleted", &deleted) < 0) {
		rc = WORLD_EPROTO;
	}
	json_decref(result);
	if (rc == 0 && !deleted) {
		rc = -ENOENT;
	}
	return wr_ctl_fail(ctl, rc);
}
