/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for wire: every command and event survives a frame and
 * comes back field for field, bytes included; messages that are not such
 * a command or event (unknown names, missing or mistyped fields, values
 * out of range, bytes where none belong) are WORLD_EPROTO and leave the
 * struct zeroed; nothing leaks a reference.
 */
#include "wire.h"
#include "tap.h"

#include <errno.h>
#include <math.h>

#include "frame.h"
#include "world_errors.h"

/* One frame through an evbuffer: the message (a new reference) and blob. */
struct got {
	json_t *msg;
	void *blob;
	size_t len;
};

static bool
read_one(struct evbuffer *b, struct got *g)
{
	struct wr_frame_reader r;
	int rc;

	wr_frame_reader_init(&r, NULL);
	rc = wr_frame_read(&r, b, &g->msg, &g->blob, &g->len);
	wr_frame_reader_finish(&r);
	return rc == 1 && evbuffer_get_length(b) == 0;
}

static void
got_free(struct got *g)
{
	json_decref(g->msg);
	free(g->blob);
}

static bool
cmd_round_trip(const struct wr_cmd *in, struct wr_cmd *out, struct got *g)
{
	struct evbuffer *b = evbuffer_new();
	bool good = wr_wire_cmd_write(b, in) == 0 && read_one(b, g) &&
		    wr_wire_cmd_read(g->msg, g->blob, g->len, out) == 0;

	evbuffer_free(b);
	return good;
}

static bool
ev_round_trip(const struct wr_ev *in, struct wr_ev *out, struct got *g)
{
	struct evbuffer *b = evbuffer_new();
	bool good = wr_wire_ev_write(b, in) == 0 && read_one(b, g) &&
		    wr_wire_ev_read(g->msg, g->blob, g->len, out) == 0;

	evbuffer_free(b);
	return good;
}

static void
test_commands(void)
{
	static const char chunk[] = "line one\nline two\n";
	struct wr_cmd in[] = {
		{.kind = WR_CMD_START, .first = 3, .count = 5},
		{.kind = WR_CMD_SIGNAL, .rank = -1, .sig = 15},
		{.kind = WR_CMD_PAUSE, .rank = 7, .stream = -1},
		{.kind = WR_CMD_RESUME, .rank = 0, .stream = WR_ERR},
		{.kind = WR_CMD_STDIN, .data = chunk, .len = sizeof(chunk) - 1},
		{.kind = WR_CMD_STDIN_EOF},
	};

	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		struct wr_cmd out;
		struct got g = {0};
		bool good = cmd_round_trip(&in[i], &out, &g);

		ok(good && out.kind == in[i].kind && out.rank == in[i].rank &&
			   out.stream == in[i].stream && out.sig == in[i].sig &&
			   out.first == in[i].first && out.count == in[i].count &&
			   out.len == in[i].len &&
			   (in[i].len == 0 || memcmp(out.data, in[i].data, in[i].len) == 0),
		   "command %s survives a frame", wr_wire_cmd_name(in[i].kind));
		ok(g.msg != NULL && g.msg->refcount == 1, "command %s: one reference",
		   wr_wire_cmd_name(in[i].kind));
		got_free(&g);
	}
}

static void
test_events(void)
{
	static const char line[] = "rank 3 says hello\n";
	struct wr_ev in[] = {
		{.kind = WR_EV_STARTED, .rank = 3, .pid = 4242, .mono = 12.5},
		{.kind = WR_EV_START_FAILED, .rank = 1, .err = ENOENT, .stage = 2},
		{.kind = WR_EV_OUTPUT, .rank = 3, .stream = WR_ERR, .data = line,
		 .len = sizeof(line) - 1, .partial = false, .eof = false},
		{.kind = WR_EV_OUTPUT, .rank = 2, .stream = WR_OUT, .data = "x",
		 .len = 1, .partial = true, .eof = true},
		{.kind = WR_EV_OUTPUT, .rank = 2, .stream = WR_OUT, .eof = true},
		{.kind = WR_EV_EXITED, .rank = 5, .pid = 99, .wstatus = 3 << 8,
		 .maxrss_kib = 123456, .mono = 13.25},
		{.kind = WR_EV_FINISHED, .rank = 5, .forced = true},
		{.kind = WR_EV_STDIN_TAKEN},
	};

	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		struct wr_ev out;
		struct got g = {0};
		bool good = ev_round_trip(&in[i], &out, &g);

		ok(good && out.kind == in[i].kind && out.rank == in[i].rank &&
			   out.pid == in[i].pid && out.stream == in[i].stream &&
			   out.len == in[i].len &&
			   (in[i].len == 0 || memcmp(out.data, in[i].data, in[i].len) == 0) &&
			   out.partial == in[i].partial && out.eof == in[i].eof &&
			   out.wstatus == in[i].wstatus &&
			   out.maxrss_kib == in[i].maxrss_kib &&
			   out.mono == in[i].mono && out.err == in[i].err &&
			   out.stage == in[i].stage && out.forced == in[i].forced,
		   "event %s (%zu) survives a frame", wr_wire_ev_name(in[i].kind), i);
		got_free(&g);
	}
}

static int
cmd_code(const char *json, const char *blob)
{
	json_t *msg = json_loads(json, 0, NULL);
	struct wr_cmd c;
	int rc;

	if (msg == NULL) {
		return -999;
	}
	rc = wr_wire_cmd_read(msg, blob, blob ? strlen(blob) : 0, &c);
	if (rc != 0 && (c.kind != 0 || c.rank != 0 || c.first != 0 || c.data != NULL)) {
		rc = -998; /* a refused message must leave nothing behind */
	}
	json_decref(msg);
	return rc;
}

static int
ev_code(const char *json, const char *blob)
{
	json_t *msg = json_loads(json, 0, NULL);
	struct wr_ev e;
	int rc;

	if (msg == NULL) {
		return -999;
	}
	rc = wr_wire_ev_read(msg, blob, blob ? strlen(blob) : 0, &e);
	if (rc != 0 && (e.kind != 0 || e.rank != 0 || e.pid != 0 || e.data != NULL)) {
		rc = -998;
	}
	json_decref(msg);
	return rc;
}

static void
test_bad_commands(void)
{
	static const struct {
		const char *json, *blob, *what;
	} bad[] = {
		{"{}", NULL, "no name"},
		{"{\"cmd\": 3}", NULL, "a name that is not a string"},
		{"{\"cmd\": \"reboot\"}", NULL, "an unknown command"},
		{"{\"ev\": \"started\"}", NULL, "an event is no command"},
		{"{\"cmd\": \"start\", \"first\": 0}", NULL, "start without a count"},
		{"{\"cmd\": \"start\", \"first\": \"0\", \"count\": 1}", NULL, "a count that is a string"},
		{"{\"cmd\": \"start\", \"first\": -1, \"count\": 1}", NULL, "a negative first"},
		{"{\"cmd\": \"start\", \"first\": 1048570, \"count\": 100}", NULL, "ranks past the limit"},
		{"{\"cmd\": \"start\", \"first\": 0, \"count\": 9223372036854775807}", NULL, "a count beyond int"},
		{"{\"cmd\": \"signal\", \"rank\": -2, \"sig\": 15}", NULL, "rank -2"},
		{"{\"cmd\": \"signal\", \"rank\": 0, \"sig\": 0}", NULL, "signal 0"},
		{"{\"cmd\": \"signal\", \"rank\": 0, \"sig\": 65}", NULL, "signal 65"},
		{"{\"cmd\": \"signal\", \"rank\": 1.5, \"sig\": 9}", NULL, "a rank that is a real"},
		{"{\"cmd\": \"pause\", \"rank\": 0, \"stream\": 2}", NULL, "stream 2"},
		{"{\"cmd\": \"stdin\"}", NULL, "a stdin chunk without bytes"},
		{"{\"cmd\": \"stdin_eof\"}", "x", "bytes on stdin_eof"},
		{"{\"cmd\": \"signal\", \"rank\": 0, \"sig\": 9}", "x", "bytes on a signal"},
		{"[1, 2]", NULL, "an array"},
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = cmd_code(bad[i].json, bad[i].blob);

		ok(rc == WORLD_EPROTO, "command refused: %s (%d)", bad[i].what, rc);
	}
	is_int(cmd_code("{\"cmd\": \"signal\", \"rank\": 0, \"sig\": 9, \"later\": 1}", NULL),
	       0, "a field this version does not know is ignored");
}

static void
test_bad_events(void)
{
	static const struct {
		const char *json, *blob, *what;
	} bad[] = {
		{"{\"ev\": \"died\"}", NULL, "an unknown event"},
		{"{\"ev\": \"started\", \"rank\": 0, \"pid\": 0, \"mono\": 1}", NULL, "pid 0"},
		{"{\"ev\": \"started\", \"rank\": 0, \"pid\": 4294967296, \"mono\": 1}", NULL, "a pid beyond int"},
		{"{\"ev\": \"started\", \"rank\": -1, \"pid\": 5, \"mono\": 1}", NULL, "rank -1 in an event"},
		{"{\"ev\": \"started\", \"rank\": 0, \"pid\": 5, \"mono\": -1}", NULL, "a negative time"},
		{"{\"ev\": \"started\", \"rank\": 0, \"pid\": 5}", NULL, "started without a time"},
		{"{\"ev\": \"start_failed\", \"rank\": 0, \"err\": 5000, \"stage\": 0}", NULL, "errno 5000"},
		{"{\"ev\": \"output\", \"rank\": 0, \"stream\": 2, \"partial\": false, \"eof\": false}", "x", "stream 2"},
		{"{\"ev\": \"output\", \"rank\": 0, \"stream\": 0, \"partial\": 0, \"eof\": false}", "x", "partial that is no boolean"},
		{"{\"ev\": \"exited\", \"rank\": 0, \"pid\": 5, \"wstatus\": 65536, \"maxrss_kib\": 0, \"mono\": 1}", NULL, "a wait status over 16 bits"},
		{"{\"ev\": \"exited\", \"rank\": 0, \"pid\": 5, \"wstatus\": 0, \"maxrss_kib\": -1, \"mono\": 1}", NULL, "a negative peak memory"},
		{"{\"ev\": \"finished\", \"rank\": 0}", NULL, "finished without forced"},
		{"{\"ev\": \"stdin_taken\"}", "x", "bytes on stdin_taken"},
		{"{\"ev\": \"finished\", \"rank\": 0, \"forced\": true}", "x", "bytes on finished"},
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = ev_code(bad[i].json, bad[i].blob);

		ok(rc == WORLD_EPROTO, "event refused: %s (%d)", bad[i].what, rc);
	}
}

static void
test_bad_writes(void)
{
	struct evbuffer *b = evbuffer_new();
	struct wr_cmd c = {.kind = WR_CMD_STDIN};
	struct wr_ev e = {.kind = WR_EV_STARTED, .rank = 0, .pid = 1, .mono = NAN};

	is_int(wr_wire_cmd_write(b, &c), -EINVAL, "a stdin chunk of no bytes is not written");
	c.kind = WR_CMD_NKINDS;
	is_int(wr_wire_cmd_write(b, &c), -EINVAL, "an unknown command is not written");
	is_int(wr_wire_ev_write(b, &e), -EINVAL, "a time that is not finite is not written");
	is_int((int)evbuffer_get_length(b), 0, "nothing was appended");
	evbuffer_free(b);
}

int
main(void)
{
	plan(6 * 2 + 8 + 19 + 14 + 4);
	test_commands();
	test_events();
	test_bad_commands();
	test_bad_events();
	test_bad_writes();
	return done_testing();
}
