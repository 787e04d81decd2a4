/* SPDX-License-Identifier: MIT */
/*
 * fuzz-frame: the frame reader (frame.c) on bytes from the wire, fed in
 * chunks of sizes the input chooses, with tiny limits or the defaults.
 * Every frame it accepts must be an object whose blob is within the
 * limits, must be written again (each of the three writers in turn) and
 * read back equal, and jsonout must write it as jansson does.
 *
 * Input: one byte of settings (bit 0: tiny limits; bits 1-2: which
 * writer; bits 3-7: how the rest is cut into chunks), then the stream.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"
#include "fuzz.h"
#include "jsonout.h"
#include "world.h"

static const struct wr_frame_limits tiny = { .json_max = 64, .blob_max = 16 };

/* jsonout writes what json_dumpb(JSON_COMPACT) writes, or declines. */
static void
check_jsonout(const json_t *msg)
{
	size_t want = json_dumpb(msg, NULL, 0, JSON_COMPACT);
	char *a = malloc(want + 1), *b = malloc(want + 1);
	size_t got;

	FUZZ_CHECK(a != NULL && b != NULL);
	json_dumpb(msg, a, want, JSON_COMPACT);
	got = wr_jsonout_dump(msg, b, want + 1);
	FUZZ_CHECK(got == 0 || (got == want && memcmp(a, b, want) == 0));
	free(a);
	free(b);
}

/* Write @msg and its blob with writer @how, as a frame into @out. */
static int
write_again(struct evbuffer *out, const struct wr_frame_limits *lim, int how,
	    json_t *msg, const void *blob, size_t len)
{
	void *copy;
	char *text;
	int rc;

	switch (how) {
	case 1:
		copy = malloc(len > 0 ? len : 1);
		FUZZ_CHECK(copy != NULL);
		if (len > 0) {
			memcpy(copy, blob, len);
		}
		return wr_frame_write_attach(out, lim, msg, copy, len);
	case 2:
		if (len > 0) {
			json_object_set_new(msg, "blob", json_integer((json_int_t)len));
		} else {
			json_object_del(msg, "blob");
		}
		text = json_dumps(msg, JSON_COMPACT);
		FUZZ_CHECK(text != NULL);
		rc = wr_frame_write_text(out, lim, text, strlen(text), blob, len);
		free(text);
		return rc;
	default:
		return wr_frame_write(out, lim, msg, blob, len);
	}
}

/* A frame that was read is written again and read back the same. */
static void
round_trip(const struct wr_frame_limits *lim, int how, json_t *msg,
	   const void *blob, size_t len)
{
	struct evbuffer *b = evbuffer_new();
	struct wr_frame_reader r;
	json_t *again = NULL;
	void *blob2 = NULL;
	size_t len2 = 0;
	int rc;

	FUZZ_CHECK(b != NULL);
	FUZZ_CHECK(json_is_object(msg) && len <= lim->blob_max);
	FUZZ_CHECK(len == 0 || blob != NULL);
	check_jsonout(msg);
	rc = write_again(b, lim, how, msg, blob, len);
	/* Written out again, a real may take more room than the peer used. */
	FUZZ_CHECK(rc == 0 || rc == WORLD_EFRAME);
	if (rc == 0) {
		wr_frame_reader_init(&r, lim);
		FUZZ_CHECK(wr_frame_read(&r, b, &again, &blob2, &len2) == 1);
		FUZZ_CHECK(evbuffer_get_length(b) == 0);
		FUZZ_CHECK(json_equal(msg, again) && len2 == len);
		FUZZ_CHECK(len == 0 || memcmp(blob, blob2, len) == 0);
		wr_frame_reader_finish(&r);
	} else {
		FUZZ_CHECK(evbuffer_get_length(b) == 0); /* all or nothing */
	}
	json_decref(again);
	free(blob2);
	evbuffer_free(b);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct wr_frame_limits *lim;
	struct evbuffer *in = evbuffer_new();
	struct wr_frame_reader r;
	uint32_t cut;
	size_t at = 1;
	int rc = 0, how;

	if (size == 0 || in == NULL) {
		evbuffer_free(in);
		return 0;
	}
	lim = data[0] & 1 ? &tiny : NULL;
	how = (data[0] >> 1) & 3;
	cut = data[0] >> 3;
	wr_frame_reader_init(&r, lim);
	lim = &r.lim;
	while (at < size && rc >= 0) {
		/* 0: all at once; else pieces of 1 to 2 * cut bytes. */
		size_t n = size - at;

		if (cut != 0) {
			cut = cut * 1103515245u + 12345u;
			n = 1 + (cut >> 16) % (2 * (data[0] >> 3));
			n = n < size - at ? n : size - at;
		}
		evbuffer_add(in, data + at, n);
		at += n;
		for (;;) {
			json_t *msg;
			void *blob;
			size_t len;

			rc = wr_frame_read(&r, in, &msg, &blob, &len);
			if (rc <= 0) {
				break;
			}
			round_trip(lim, how, msg, blob, len);
			json_decref(msg);
			free(blob);
		}
		FUZZ_CHECK(rc == 0 || rc == WORLD_EFRAME || rc == WORLD_EPROTO ||
		       rc == -ENOMEM);
	}
	wr_frame_reader_finish(&r);
	evbuffer_free(in);
	return 0;
}
