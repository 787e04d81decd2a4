/* SPDX-License-Identifier: MIT */
/*
 * limits: a job started with WORLD_MSG_MAX=8K and WORLD_BLOB_MAX=64K
 * (see meson.build). The ranks see worldrun's values; a value or a call
 * at the limits goes through, one byte over is -EMSGSIZE at the sender,
 * for the registry as for a peer; the job goes on after each refusal.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wtap.h"

#define T 60000
#define BLOB_MAX (64u << 10)
#define MSG_MAX (8u << 10)

/* The length of what came, as the result. */
static int
measure(void *ctx, const json_t *args, const void *blob, size_t len,
	struct world_reply *reply)
{
	return world_reply_result_new(reply, json_integer((json_int_t)len));
}

/* Rank 0 calls rank 1's "measure" with @len bytes of blob and @text as args. */
static int
call_with(struct world_group *g, size_t len, const char *text, json_int_t *got)
{
	unsigned char *blob = calloc(1, len ? len : 1);
	json_t *args = json_pack("{s:s}", "text", text), *res = NULL;
	int rc = world_call(g, "measure", args, blob, len, T, &res, NULL, NULL);

	*got = json_integer_value(res);
	json_decref(res);
	json_decref(args);
	free(blob);
	return rc;
}

static void
test_kv(struct world *w)
{
	unsigned char *v = calloc(1, BLOB_MAX + 1);
	void *back = NULL;
	size_t len = 0;

	check(world_kv_set(w, "at.limit", v, BLOB_MAX) == 0 &&
		      world_kv_get(w, "at.limit", &back, &len, T) == 0 && len == BLOB_MAX,
	      "kv: a value of WORLD_BLOB_MAX bytes goes and comes back");
	check(world_kv_set(w, "over.limit", v, BLOB_MAX + 1) == -EMSGSIZE,
	      "kv: one byte more is -EMSGSIZE");
	free(back);
	back = NULL;
	check(world_kv_get(w, "at.limit", &back, &len, T) == 0 && len == BLOB_MAX,
	      "kv: and the registry connection goes on");
	free(back);
	free(v);
}

static void
test_calls(struct world *w, struct world_group *g)
{
	char *text = malloc(MSG_MAX + 1);
	json_int_t got = -1;

	memset(text, 'x', MSG_MAX);
	text[MSG_MAX] = '\0';
	if (world_rank(w) == 0) {
		check(call_with(g, BLOB_MAX, "", &got) == 0 && got == BLOB_MAX,
		      "call: a blob of WORLD_BLOB_MAX bytes reaches the peer");
		check(call_with(g, BLOB_MAX + 1, "", &got) == -EMSGSIZE,
		      "call: one byte more is -EMSGSIZE");
		check(call_with(g, 0, text, &got) == -EMSGSIZE,
		      "call: arguments over WORLD_MSG_MAX bytes of JSON are -EMSGSIZE");
		check(call_with(g, 16, "", &got) == 0 && got == 16,
		      "call: and the peer connection goes on");
	}
	free(text);
}

int
main(void)
{
	const char *all[] = { "0", "1" };
	struct world_group *g = NULL;
	struct world *w = NULL;
	const char *msg = getenv("WORLD_MSG_MAX"), *blob = getenv("WORLD_BLOB_MAX");
	int rc = world_open(&w);

	if (rc < 0) {
		fprintf(stderr, "world_open: %s\n", world_strerror(rc));
		return 1;
	}
	/* Rank 0's checks: 1 + 3 + 4. */
	wtap_start(world_rank(w), 8);
	check(msg != NULL && blob != NULL && strcmp(msg, "8192") == 0 &&
		      strcmp(blob, "65536") == 0,
	      "the ranks get worldrun's WORLD_MSG_MAX and WORLD_BLOB_MAX in bytes");
	test_kv(w);
	rc = world_group_create(w, "limits", all, 2, T, &g);
	if (rc == 0 && world_rank(w) == 1) {
		rc = world_register(g, "measure", measure, NULL, 0);
	}
	if (rc == 0) {
		rc = world_group_barrier(g, T);
	}
	if (rc < 0) {
		fprintf(stderr, "rank %d: setup: %s\n", world_rank(w), world_strerror(rc));
		return 1;
	}
	test_calls(w, g);
	world_group_barrier(g, T);
	world_group_destroy(g);
	world_stop(w, T);
	return wtap_done();
}
