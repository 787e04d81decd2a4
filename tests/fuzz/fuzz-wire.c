/* SPDX-License-Identifier: MIT */
/*
 * fuzz-wire: the agent's wire messages (cmd/worldrun/agent/wire.c)
 * from frames on the wire. Each frame is read as a command, as an event
 * and as a setup; whatever one of them accepts must be written again and
 * read back the same, bytes included.
 *
 * Input: a stream of frames (frame.h), read with the default limits.
 */
#include <stdlib.h>
#include <string.h>

#include "frame.h"
#include "fuzz.h"
#include "wire.h"
#include "world_errors.h"

/* The one frame @b holds, read back: its message (a new reference) and
 * blob; @b is freed. */
static void
reread(struct evbuffer *b, json_t **msg, void **blob, size_t *len)
{
	struct wr_frame_reader r;

	wr_frame_reader_init(&r, NULL);
	FUZZ_CHECK(wr_frame_read(&r, b, msg, blob, len) == 1);
	wr_frame_reader_finish(&r);
	evbuffer_free(b);
}

static void
check_cmd(json_t *msg, const void *blob, size_t len)
{
	struct evbuffer *b = evbuffer_new();
	struct wr_cmd c, d;
	json_t *again = NULL;
	void *blob2 = NULL;
	size_t len2 = 0;

	FUZZ_CHECK(b != NULL);
	if (wr_wire_cmd_read(msg, blob, len, &c) != 0) {
		evbuffer_free(b);
		return;
	}
	FUZZ_CHECK(wr_wire_cmd_write(b, &c) == 0);
	reread(b, &again, &blob2, &len2);
	FUZZ_CHECK(wr_wire_cmd_read(again, blob2, len2, &d) == 0);
	FUZZ_CHECK(c.kind == d.kind && c.rank == d.rank && c.stream == d.stream &&
		   c.sig == d.sig && c.first == d.first && c.count == d.count &&
		   c.len == d.len && (c.len == 0 || memcmp(c.data, d.data, c.len) == 0));
	json_decref(again);
	free(blob2);
}

static void
check_ev(json_t *msg, const void *blob, size_t len)
{
	struct evbuffer *b = evbuffer_new();
	struct wr_ev e, f;
	json_t *again = NULL;
	void *blob2 = NULL;
	size_t len2 = 0;

	FUZZ_CHECK(b != NULL);
	if (wr_wire_ev_read(msg, blob, len, &e) != 0) {
		evbuffer_free(b);
		return;
	}
	FUZZ_CHECK(wr_wire_ev_write(b, &e) == 0);
	reread(b, &again, &blob2, &len2);
	FUZZ_CHECK(wr_wire_ev_read(again, blob2, len2, &f) == 0);
	/* A time goes as a JSON real, which keeps every bit of a double. */
	FUZZ_CHECK(e.kind == f.kind && e.rank == f.rank && e.pid == f.pid &&
		   e.stream == f.stream && e.partial == f.partial && e.eof == f.eof &&
		   e.wstatus == f.wstatus && e.maxrss_kib == f.maxrss_kib &&
		   e.mono == f.mono && e.err == f.err && e.stage == f.stage &&
		   e.forced == f.forced && e.count == f.count && e.len == f.len &&
		   (e.len == 0 || memcmp(e.data, f.data, e.len) == 0));
	json_decref(again);
	free(blob2);
}

static void
check_setup(json_t *msg, const void *blob, size_t len)
{
	struct evbuffer *b = evbuffer_new();
	struct wr_setup s, t;
	json_t *again = NULL;
	void *blob2 = NULL;
	size_t len2 = 0;

	FUZZ_CHECK(b != NULL);
	if (wr_wire_setup_read(msg, blob, len, &s) != 0) {
		evbuffer_free(b);
		return;
	}
	FUZZ_CHECK(wr_wire_setup_write(b, &s) == 0);
	reread(b, &again, &blob2, &len2);
	FUZZ_CHECK(wr_wire_setup_read(again, blob2, len2, &t) == 0);
	/* The blob holds the strings as they were read. */
	FUZZ_CHECK(len2 == len && memcmp(blob, blob2, len) == 0);
	FUZZ_CHECK(s.size == t.size && s.node == t.node && s.nranks == t.nranks &&
		   memcmp(s.ranks, t.ranks, (size_t)s.nranks * sizeof(int)) == 0 &&
		   s.stdin_rank == t.stdin_rank && s.kill_grace == t.kill_grace &&
		   s.nofile_cur == t.nofile_cur && s.nofile_max == t.nofile_max);
	wr_wire_setup_finish(&s);
	wr_wire_setup_finish(&t);
	json_decref(again);
	free(blob2);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct evbuffer *in = evbuffer_new();
	struct wr_frame_reader r;
	json_t *msg;
	void *blob;
	size_t len;

	if (in == NULL) {
		return 0;
	}
	evbuffer_add(in, data, size);
	wr_frame_reader_init(&r, NULL);
	while (wr_frame_read(&r, in, &msg, &blob, &len) == 1) {
		check_cmd(msg, blob, len);
		check_ev(msg, blob, len);
		check_setup(msg, blob, len);
		json_decref(msg);
		free(blob);
	}
	wr_frame_reader_finish(&r);
	evbuffer_free(in);
	return 0;
}
