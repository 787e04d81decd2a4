/* SPDX-License-Identifier: MIT */
/*
 * blobs: binary attachments on 2 ranks. A 16 MiB blob goes to a service
 * on the other rank, on this rank, to a direct handler, through a future
 * and an RRef, and comes back changed, with checksums both ways; a
 * handler takes a blob over (world_reply_take_blob()); a blob
 * paired with a value and fetched by get_paired; empty blobs; key/value
 * values holding NUL bytes (set, get, append, compare-and-set).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "wtap.h"

#define T 60000
#define BIG (16u << 20)
#define FLIP 0xa5

/* FNV-1a, 64 bits: as a string, since JSON integers are signed. */
static void
checksum(const void *p, size_t len, char out[17])
{
	const unsigned char *b = p;
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < len; i++) {
		h = (h ^ b[i]) * 0x100000001b3ull;
	}
	snprintf(out, 17, "%016llx", (unsigned long long)h);
}

/* Bytes of every value, NULs among them, different per @seed. */
static unsigned char *
pattern_new(size_t len, uint32_t seed)
{
	unsigned char *b = malloc(len ? len : 1);
	uint32_t x = seed | 1;

	for (size_t i = 0; b != NULL && i < len; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		b[i] = (i % 7 == 0) ? 0 : (unsigned char)x;
	}
	return b;
}

/*
 * flip.R and the direct handler "flip": {"sum": checksum of what came,
 * "len": its length, "rank": R} and the blob with every byte xor FLIP.
 * With args {"none": true}, no blob back; {"empty": true}, an empty one.
 */
static int
flip(void *ctx, const json_t *args, const void *blob, size_t len,
     struct world_reply *reply)
{
	unsigned char *out = malloc(len ? len : 1);
	/* With {"take": true}, from the blob taken over (a call from the
	 * other rank), freed only after the answer is made. */
	void *taken = json_is_true(json_object_get(args, "take"))
		? world_reply_take_blob(reply) : NULL;
	char sum[17];
	int rc;

	if (out == NULL) {
		return world_reply_error(reply, -ENOMEM, "flip: no memory");
	}
	if (taken != NULL && taken != blob) {
		free(taken);
		free(out);
		return world_reply_error(reply, -EINVAL, "flip: took some other bytes");
	}
	checksum(blob, len, sum);
	for (size_t i = 0; i < len; i++) {
		out[i] = ((const unsigned char *)blob)[i] ^ FLIP;
	}
	free(taken);
	rc = world_reply_result_new(reply, json_pack("{s:s, s:I, s:i, s:b}", "sum", sum,
						     "len", (json_int_t)len, "rank",
						     *(int *)ctx, "taken", taken != NULL));
	if (rc == 0 && json_is_true(json_object_get(args, "empty"))) {
		rc = world_reply_blob(reply, out, 0);
	} else if (rc == 0 && !json_is_true(json_object_get(args, "none"))) {
		rc = world_reply_blob(reply, out, len);
	}
	free(out);
	return rc;
}

static const char *
text(const json_t *j)
{
	return json_is_string(j) ? json_string_value(j) : "";
}

/* The handler saw @sent (its checksum and length) and sent it back flipped. */
static bool
flipped_right(const json_t *res, const unsigned char *sent, size_t len,
	      const unsigned char *back, size_t blen)
{
	char sum[17];

	checksum(sent, len, sum);
	if (res == NULL || strcmp(text(json_object_get(res, "sum")), sum) != 0 ||
	    json_integer_value(json_object_get(res, "len")) != (json_int_t)len) {
		return false;
	}
	if (back == NULL || blen != len) {
		return false;
	}
	for (size_t i = 0; i < len; i++) {
		if ((back[i] ^ FLIP) != sent[i]) {
			return false;
		}
	}
	return true;
}

/* Marks a result pointer the call should have overwritten. */
static char unset[] = "unset";

static void
free_unless_unset(void *p)
{
	if (p != unset) {
		free(p);
	}
}

static void
test_big(struct world *w, struct world_group *g, const unsigned char *big)
{
	int r = world_rank(w), other = 1 - r;
	char key[32], me[16], peer[16];
	json_t *res = NULL;
	void *back = NULL;
	size_t blen = 0;
	bool right;

	snprintf(me, sizeof(me), "%d", r);
	snprintf(peer, sizeof(peer), "%d", other);
	snprintf(key, sizeof(key), "flip.%d", other);
	right = world_call(g, key, NULL, big, BIG, T, &res, &back, &blen) == 0 &&
		flipped_right(res, big, BIG, back, blen) &&
		json_integer_value(json_object_get(res, "rank")) == other;
	check(right, "16 MiB to a service on the other rank and back, checksums both ways");
	json_decref(res);
	free(back);
	back = NULL;
	snprintf(key, sizeof(key), "flip.%d", r);
	right = world_call(g, key, NULL, big, BIG, T, &res, &back, &blen) == 0 &&
		flipped_right(res, big, BIG, back, blen);
	check(right, "16 MiB to a service of this very process and back");
	json_decref(res);
	free(back);
	back = NULL;
	right = world_call_direct(g, peer, "flip", NULL, big, BIG, T, &res, &back,
				  &blen) == 0 &&
		flipped_right(res, big, BIG, back, blen);
	check(right, "16 MiB to a direct handler on the other rank and back");
	json_decref(res);
	free(back);
}

/* A handler that takes the blob over: from the other rank it can, from
 * this process (the caller's own bytes) it cannot. */
static void
test_take(struct world *w, struct world_group *g, const unsigned char *big)
{
	json_t *args = json_pack("{s:b}", "take", 1), *res = NULL;
	char key[32];
	void *back = NULL;
	size_t blen = 0;
	bool right;

	for (int to = 1 - world_rank(w), i = 0; i < 2; to = world_rank(w), i++) {
		snprintf(key, sizeof(key), "flip.%d", to);
		right = world_call(g, key, args, big, BIG, T, &res, &back, &blen) == 0 &&
			flipped_right(res, big, BIG, back, blen) &&
			json_is_true(json_object_get(res, "taken")) == (i == 0);
		check(right, i == 0 ? "a handler takes over a blob from the other rank"
				    : "a handler cannot take the blob of a call to itself");
		json_decref(res);
		res = NULL;
		free(back);
		back = NULL;
	}
	json_decref(args);
}

static void
test_big_later(struct world *w, struct world_group *g, const unsigned char *big)
{
	int other = 1 - world_rank(w);
	struct world_future *f = NULL;
	struct world_rref *ref = NULL;
	json_t *res = NULL, *res2 = NULL;
	void *back = NULL, *back2 = NULL;
	size_t blen = 0, blen2 = 0;
	char key[32];
	bool right;

	snprintf(key, sizeof(key), "flip.%d", other);
	right = world_call_async(g, key, NULL, big, BIG, T, &f) == 0 &&
		world_future_wait(f, T, &res, &back, &blen) == 0 &&
		world_future_wait(f, T, &res2, &back2, &blen2) == 0 &&
		flipped_right(res, big, BIG, back, blen) &&
		flipped_right(res2, big, BIG, back2, blen2) && back != back2;
	check(right, "16 MiB through a future, waited on twice: two copies");
	world_future_free(f);
	json_decref(res);
	json_decref(res2);
	free(back);
	free(back2);
	res = res2 = NULL;
	back = back2 = NULL;
	right = world_call_remote(g, key, NULL, big, BIG, T, &ref) == 0 &&
		world_rref_fetch(ref, &res, &back, &blen, T) == 0 &&
		world_rref_fetch(ref, &res2, &back2, &blen2, T) == 0 &&
		flipped_right(res, big, BIG, back, blen) &&
		flipped_right(res2, big, BIG, back2, blen2);
	check(right, "16 MiB kept on the callee by a remote call, fetched twice");
	world_rref_release(ref);
	json_decref(res);
	json_decref(res2);
	free(back);
	free(back2);
}

static void
test_paired(struct world *w, struct world_group *g, const unsigned char *big)
{
	int r = world_rank(w);
	json_t *v = NULL, *meta = json_pack("{s:s}", "name", "model");
	void *blob = NULL;
	size_t len = 0;
	char want[17], got[17] = "";

	checksum(big, BIG, want);
	if (r == 0) {
		check(world_pair(g, "model", meta, big, BIG) == 0,
		      "pair a value with a 16 MiB blob");
		check(world_pair(g, "nothing", meta, NULL, 0) == 0,
		      "pair a value without a blob");
	}
	world_group_barrier(g, T);
	check(world_get_paired(g, "model", &v, &blob, &len, T) == 0 && len == BIG &&
		      strcmp(text(json_object_get(v, "name")), "model") == 0,
	      "get_paired: the value and a blob of 16 MiB (%s)",
	      r == 0 ? "the owner" : "another rank");
	if (blob != NULL) {
		checksum(blob, len, got);
	}
	check(strcmp(got, want) == 0, "get_paired: the blob's checksum matches");
	json_decref(v);
	free(blob);
	v = NULL;
	blob = unset;
	len = 99;
	check(world_get_paired(g, "nothing", &v, &blob, &len, T) == 0 && blob == NULL &&
		      len == 0 && json_is_object(v),
	      "get_paired of a value without a blob: blob NULL, length 0");
	json_decref(v);
	free_unless_unset(blob);
	json_decref(meta);
	world_group_barrier(g, T);
}

static void
test_empty(struct world *w, struct world_group *g)
{
	int other = 1 - world_rank(w);
	json_t *res = NULL, *args;
	void *back = unset;
	size_t blen = 99;
	char key[32], empty_sum[17];

	checksum("", 0, empty_sum);
	snprintf(key, sizeof(key), "flip.%d", other);
	/* A pointer with length 0 is an empty blob, not a read of that pointer. */
	check(world_call(g, key, NULL, "not sent", 0, T, &res, &back, &blen) == 0 &&
		      json_integer_value(json_object_get(res, "len")) == 0 &&
		      strcmp(text(json_object_get(res, "sum")), empty_sum) == 0 &&
		      blen == 0 && back != unset,
	      "an empty blob arrives as length 0 and comes back as length 0");
	json_decref(res);
	free_unless_unset(back);
	res = NULL;
	back = unset;
	blen = 99;
	args = json_pack("{s:b}", "none", 1);
	check(world_call(g, key, args, "abc", 3, T, &res, &back, &blen) == 0 &&
		      json_integer_value(json_object_get(res, "len")) == 3 && back == NULL &&
		      blen == 0,
	      "a reply without a blob gives blob NULL and length 0");
	json_decref(res);
	json_decref(args);
	free_unless_unset(back);
	res = NULL;
	back = unset;
	blen = 99;
	args = json_pack("{s:b}", "empty", 1);
	check(world_call(g, key, args, "abc", 3, T, &res, &back, &blen) == 0 &&
		      blen == 0 && back != unset,
	      "a reply with an empty blob gives length 0");
	json_decref(res);
	json_decref(args);
	free_unless_unset(back);
}

static void
test_kv(struct world *w)
{
	static const char bin[] = { 'a', 0, 'b', 0, 0, 'c' };
	int r = world_rank(w);
	unsigned char all[256];
	void *val = NULL;
	size_t len = 0;

	for (int i = 0; i < 256; i++) {
		all[i] = (unsigned char)i;
	}
	if (r == 1) {
		world_kv_set(w, "bin", bin, sizeof(bin));
		world_kv_set(w, "bytes", all, sizeof(all));
		world_kv_set(w, "empty", "", 0);
	}
	world_barrier(w, "kv.set", T);
	check(world_kv_get(w, "bin", &val, &len, T) == 0 && len == sizeof(bin) &&
		      memcmp(val, bin, len) == 0 && ((char *)val)[len] == '\0',
	      "kv: a value with NUL bytes comes back whole, NUL after it");
	free(val);
	val = NULL;
	check(world_kv_get(w, "bytes", &val, &len, T) == 0 && len == 256 &&
		      memcmp(val, all, 256) == 0, "kv: all 256 byte values");
	free(val);
	val = NULL;
	check(world_kv_get(w, "empty", &val, &len, T) == 0 && len == 0 && val != NULL &&
		      ((char *)val)[0] == '\0', "kv: an empty value exists and is empty");
	free(val);
	val = NULL;
	world_barrier(w, "kv.read", T);
	if (r == 0) {
		world_kv_append(w, "app", "\0x", 2);
		world_kv_append(w, "app", "\0y", 2);
		/* Equal up to the first NUL, different after it: no change. */
		check(world_kv_cas(w, "bin", "a\0c\0\0c", 6, "zz", 2, &val, &len) == 0 &&
			      len == sizeof(bin) && memcmp(val, bin, len) == 0,
		      "kv: cas compares past a NUL byte (mismatch: unchanged)");
		free(val);
		val = NULL;
		check(world_kv_cas(w, "bin", bin, sizeof(bin), "z\0z", 3, &val, &len) == 0 &&
			      len == 3 && memcmp(val, "z\0z", 3) == 0,
		      "kv: cas with a binary expected value stores a binary one");
		free(val);
		val = NULL;
	}
	world_barrier(w, "kv.changed", T);
	check(world_kv_get(w, "app", &val, &len, 0) == 0 && len == 4 &&
		      memcmp(val, "\0x\0y", 4) == 0, "kv: appends of NUL bytes keep them");
	free(val);
	val = NULL;
	check(world_kv_get(w, "bin", &val, &len, 0) == 0 && len == 3 &&
		      memcmp(val, "z\0z", 3) == 0, "kv: every rank sees the cas result");
	free(val);
}

int
main(void)
{
	const char *two[] = { "1", "0" };
	struct world_group *g = NULL;
	struct world *w = NULL;
	unsigned char *big = NULL;
	char key[32];
	int r, rc = world_open(&w);

	if (rc < 0) {
		fprintf(stderr, "world_open: %s\n", world_strerror(rc));
		return 1;
	}
	r = world_rank(w);
	/* Rank 0's checks: 2 + 3 + 2 + 2 + 5 + 3 + 7 + 1 = 25. */
	wtap_start(r, 25);
	big = pattern_new(BIG, 2654435761u);
	rc = world_group_create(w, "pair", two, 2, T, &g);
	check(rc == 0 && big != NULL, "group of 2 and a 16 MiB pattern");
	if (rc < 0 || big == NULL) {
		world_abort(w);
		free(big);
		return 1;
	}
	snprintf(key, sizeof(key), "flip.%d", r);
	check(world_register(g, key, flip, &r, 0) == 0 &&
		      world_export(w, "flip", flip, &r, 0) == 0,
	      "register flip.%d and export flip", r);
	world_group_barrier(g, T);
	test_big(w, g, big);
	test_take(w, g, big);
	test_big_later(w, g, big);
	test_paired(w, g, big);
	test_empty(w, g);
	test_kv(w);
	world_group_barrier(g, T);
	world_group_destroy(g);
	free(big);
	check(world_stop(w, T) == 0, "world: graceful stop");
	return wtap_done();
}
