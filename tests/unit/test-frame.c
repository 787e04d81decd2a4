/* SPDX-License-Identifier: MIT */
/*
 * frame: round trips with and without a blob, frames split at every byte,
 * and every kind of bad input (zero or oversized lengths, 0xFFFFFFFF,
 * garbage, invalid UTF-8, deep nesting, a non-object, a bad blob field)
 * refused before anything is allocated for it, with refcounts checked;
 * and frames whose JSON the caller wrote itself.
 */
#include "frame.h"

#include <string.h>

#include "tap.h"
#include "world_errors.h"

static void
put_raw(struct evbuffer *b, const char *json, uint32_t len)
{
	unsigned char hdr[4] = { len >> 24, len >> 16, len >> 8, len };

	evbuffer_add(b, hdr, 4);
	evbuffer_add(b, json, strlen(json));
}

/* Feed @raw as a frame; return what wr_frame_read() says. */
static int
read_raw(const char *json, uint32_t len, const struct wr_frame_limits *lim)
{
	struct evbuffer *b = evbuffer_new();
	struct wr_frame_reader r;
	json_t *msg = NULL;
	void *blob = NULL;
	size_t blen;
	int rc;

	wr_frame_reader_init(&r, lim);
	put_raw(b, json, len);
	rc = wr_frame_read(&r, b, &msg, &blob, &blen);
	json_decref(msg);
	free(blob);
	wr_frame_reader_finish(&r);
	evbuffer_free(b);
	return rc;
}

static void
test_round_trip(void)
{
	struct evbuffer *b = evbuffer_new();
	struct wr_frame_reader r;
	json_t *msg = json_pack("{s:s, s:i}", "op", "get", "id", 7), *got = NULL;
	char blob[5000];
	void *gb = NULL;
	size_t glen = 0;

	memset(blob, 'b', sizeof(blob));
	wr_frame_reader_init(&r, NULL);
	is_int(wr_frame_write(b, NULL, msg, NULL, 0), 0, "frame: writes a message");
	is_int(wr_frame_write(b, NULL, msg, blob, sizeof(blob)), 0,
	       "frame: writes a message with a blob");
	is_int(json_integer_value(json_object_get(msg, "blob")), sizeof(blob),
	       "frame: write sets the blob length in the message");
	is_int(wr_frame_read(&r, b, &got, &gb, &glen), 1, "frame: reads the first");
	is_str(json_string_value(json_object_get(got, "op")), "get",
	       "frame: the message comes back whole");
	ok(gb == NULL && glen == 0, "frame: no blob when none was sent");
	is_int(got->refcount, 1, "frame: read returns a new reference");
	json_decref(got);
	is_int(wr_frame_read(&r, b, &got, &gb, &glen), 1, "frame: reads the second");
	ok(glen == sizeof(blob) && gb != NULL && memcmp(gb, blob, glen) == 0,
	   "frame: the blob comes back byte for byte");
	json_decref(got);
	free(gb);
	is_int(wr_frame_read(&r, b, &got, &gb, &glen), 0,
	       "frame: an empty buffer needs more bytes");
	is_int(msg->refcount, 1, "frame: write borrows the message");
	json_decref(msg);
	wr_frame_reader_finish(&r);
	evbuffer_free(b);
}

/* A frame trickling in one byte at a time is read once, whole. */
static void
test_byte_by_byte(void)
{
	struct evbuffer *all = evbuffer_new(), *in = evbuffer_new();
	struct wr_frame_reader r;
	json_t *msg = json_pack("{s:s}", "op", "set"), *got = NULL;
	void *gb = NULL;
	size_t glen = 0, total;
	int early = 0, done = 0;

	wr_frame_reader_init(&r, NULL);
	wr_frame_write(all, NULL, msg, "0123456789", 10);
	total = evbuffer_get_length(all);
	for (size_t i = 0; i < total; i++) {
		char c;
		int rc;

		evbuffer_remove(all, &c, 1);
		evbuffer_add(in, &c, 1);
		rc = wr_frame_read(&r, in, &got, &gb, &glen);
		if (rc == 1) {
			done += 1;
			early += i + 1 < total;
		} else if (rc != 0) {
			early += 100;
		}
	}
	ok(done == 1 && early == 0, "frame: one byte at a time gives one frame at the end");
	ok(glen == 10 && gb != NULL && memcmp(gb, "0123456789", 10) == 0,
	   "frame: and its blob");
	json_decref(got);
	free(gb);
	json_decref(msg);
	wr_frame_reader_finish(&r);
	evbuffer_free(all);
	evbuffer_free(in);
}

static void
test_bad_input(void)
{
	struct wr_frame_limits small = { .json_max = 64, .blob_max = 16 };
	char deep[8200];

	is_int(read_raw("", 0, NULL), WORLD_EFRAME, "frame: refuses a length of 0");
	is_int(read_raw("{}", 0xFFFFFFFFu, NULL), WORLD_EFRAME,
	       "frame: refuses a length of 0xFFFFFFFF before waiting for it");
	is_int(read_raw("{}", (1u << 20) + 1, NULL), WORLD_EFRAME,
	       "frame: refuses a length just over 1 MiB");
	is_int(read_raw("{\"a\":\"0123456789012345678901234567890123456789012345678901234567\"}",
			70, &small),
	       WORLD_EFRAME, "frame: refuses a length over a configured limit");
	is_int(read_raw("{\"op\":", 6, NULL), WORLD_EFRAME,
	       "frame: refuses truncated JSON");
	is_int(read_raw("garbage!", 8, NULL), WORLD_EFRAME, "frame: refuses garbage");
	is_int(read_raw("{\"op\":\"\xff\xfe\"}", 11, NULL), WORLD_EFRAME,
	       "frame: refuses invalid UTF-8");
	is_int(read_raw("[1,2,3]", 7, NULL), WORLD_EPROTO,
	       "frame: refuses JSON that is not an object");
	is_int(read_raw("{\"a\":1,\"a\":2}", 13, NULL), WORLD_EFRAME,
	       "frame: refuses duplicate keys");
	is_int(read_raw("{\"blob\":\"x\"}", 12, NULL), WORLD_EPROTO,
	       "frame: refuses a blob length that is not a number");
	is_int(read_raw("{\"blob\":-1}", 11, NULL), WORLD_EPROTO,
	       "frame: refuses a negative blob length");
	is_int(read_raw("{\"blob\":17}", 11, &small), WORLD_EPROTO,
	       "frame: refuses a blob over its limit before reading it");
	memset(deep, '[', 4096);
	memset(deep + 4096, ']', 4096);
	deep[0] = '{';
	memcpy(deep + 1, "\"a\":", 4);
	deep[8191] = '}';
	deep[8192] = '\0';
	ok(read_raw(deep, 8192, NULL) < 0, "frame: refuses deep nesting");
	is_int(read_raw("{\"op\":\"get\"}", 12, NULL), 1,
	       "frame: and still reads a good one");
}

/* WORLD_MSG_MAX and WORLD_BLOB_MAX, and a writer that keeps to them. */
static void
test_limits(void)
{
	struct wr_frame_limits lim;
	struct evbuffer *b = evbuffer_new();
	json_t *msg = json_pack("{s:s}", "op", "x");
	const char *bad;
	char blob[2048] = { 0 };

	is_int(wr_frame_limits_parse(&lim, NULL, "", &bad), 0, "limits: unset keeps the defaults");
	ok(lim.json_max == WR_FRAME_JSON_MAX && lim.blob_max == WR_FRAME_BLOB_MAX,
	   "limits: 1 MiB and 1 GiB");
	is_int(wr_frame_limits_parse(&lim, "64K", "1024G", &bad), 0, "limits: 64K and 1024G");
	ok(lim.json_max == 65536 && lim.blob_max == (size_t)1 << 40, "limits: in bytes");
	is_int(wr_frame_limits_parse(&lim, "4096", "0", &bad), 0, "limits: the lowest allowed");
	is_int(wr_frame_limits_parse(&lim, "4095", NULL, &bad), -EINVAL, "limits: JSON below 4K");
	ok(bad != NULL && strcmp(bad, "WORLD_MSG_MAX") == 0, "limits: names the setting");
	is_int(wr_frame_limits_parse(&lim, "2G", NULL, &bad), -EINVAL, "limits: JSON over 1G");
	is_int(wr_frame_limits_parse(&lim, NULL, "1025G", &bad), -EINVAL, "limits: blob over 1024G");
	ok(bad != NULL && strcmp(bad, "WORLD_BLOB_MAX") == 0, "limits: names that one");
	is_int(wr_frame_limits_parse(&lim, NULL, "-1", &bad), -EINVAL, "limits: no negatives");
	is_int(wr_frame_limits_parse(&lim, NULL, "1T", &bad), -EINVAL, "limits: no T");
	is_int(wr_frame_limits_parse(&lim, "8K ", NULL, &bad), -EINVAL, "limits: no trailing bytes");
	is_int(wr_frame_limits_parse(&lim, NULL, "99999999999999999999", &bad), -EINVAL,
	       "limits: no overflow");
	lim = (struct wr_frame_limits){ .json_max = 4096, .blob_max = 1024 };
	is_int(wr_frame_write(b, &lim, msg, blob, 1025), WORLD_EFRAME,
	       "write: a blob over the writer's limit is refused");
	is_int(wr_frame_write(b, &lim, msg, blob, 1024), 0, "write: one at the limit is not");
	evbuffer_free(b);
	json_decref(msg);
}

/* A frame whose JSON the caller wrote: small (one piece) and large. */
static void
test_text(void)
{
	static const char small[] = "{\"id\":3,\"result\":{},\"blob\":3}";
	struct wr_frame_limits lim = { .json_max = 4096, .blob_max = 8192 };
	struct evbuffer *b = evbuffer_new();
	struct wr_frame_reader r;
	char big[6000], json[64];
	json_t *got = NULL;
	void *gb = NULL;
	size_t glen = 0;

	memset(big, 'x', sizeof(big));
	wr_frame_reader_init(&r, &lim);
	is_int(wr_frame_write_text(b, &lim, small, strlen(small), "abc", 3), 0,
	       "text: writes a frame with a small blob");
	snprintf(json, sizeof(json), "{\"id\":4,\"blob\":%zu}", sizeof(big));
	is_int(wr_frame_write_text(b, &lim, json, strlen(json), big, sizeof(big)), 0,
	       "text: writes one with a large blob");
	is_int(wr_frame_read(&r, b, &got, &gb, &glen), 1, "text: the first reads back");
	ok(json_integer_value(json_object_get(got, "id")) == 3 && glen == 3 &&
	   memcmp(gb, "abc", 3) == 0, "text: with its JSON and its blob");
	json_decref(got);
	free(gb);
	is_int(wr_frame_read(&r, b, &got, &gb, &glen), 1, "text: the second reads back");
	ok(json_integer_value(json_object_get(got, "id")) == 4 && glen == sizeof(big) &&
	   memcmp(gb, big, glen) == 0, "text: whole");
	json_decref(got);
	free(gb);
	is_int(wr_frame_write_text(b, &lim, small, 0, NULL, 0), WORLD_EFRAME,
	       "text: no empty JSON");
	is_int(wr_frame_write_text(b, &lim, json, strlen(json), big, 8193), WORLD_EFRAME,
	       "text: a blob over the limit is refused");
	is_int(evbuffer_get_length(b), 0, "text: and nothing was appended");
	wr_frame_reader_finish(&r);
	evbuffer_free(b);
}

int
main(void)
{
	plan(52);
	test_round_trip();
	test_text();
	test_byte_by_byte();
	test_bad_input();
	test_limits();
	return done_testing();
}
