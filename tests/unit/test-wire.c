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
#include <stdio.h>

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

/* Two apps, 3 ranks: their shape (a new reference) and strings. */
static const char apps_strings[] = "a.out\0a.out\0-x\0K=V\0/tmp\0b\0b";
#define APPS_LEN sizeof(apps_strings)
#define APPS_JSON "[[2, 2, 1, true], [1, 1, 0, false]]"

static bool
apps_same(json_t *a, json_t *b)
{
	return a == NULL ? b == NULL : b != NULL && json_equal(a, b);
}

static void
test_commands(void)
{
	static const char chunk[] = "line one\nline two\n";
	struct wr_cmd in[] = {
		{.kind = WR_CMD_START, .first = 3, .count = 5},
		{.kind = WR_CMD_START, .first = 0, .count = 2, .addr = "198.18.0.7"},
		{.kind = WR_CMD_SIGNAL, .rank = -1, .sig = 15},
		{.kind = WR_CMD_PAUSE, .rank = 7, .stream = -1},
		{.kind = WR_CMD_RESUME, .rank = 0, .stream = WR_ERR},
		{.kind = WR_CMD_STDIN, .data = chunk, .len = sizeof(chunk) - 1},
		{.kind = WR_CMD_STDIN_EOF},
		{.kind = WR_CMD_BEAT},
		{.kind = WR_CMD_STACK, .rank = 6},
		{.kind = WR_CMD_SPAWN, .id = 7, .first = 12, .count = 3, .data = apps_strings,
		 .len = APPS_LEN},
		{.kind = WR_CMD_SPAWN, .id = 0},
		{.kind = WR_CMD_JOINED, .first = 12, .count = 3, .node = 2, .data = apps_strings,
		 .len = APPS_LEN},
		{.kind = WR_CMD_AGAIN},
	};
	json_t *apps = json_loads(APPS_JSON, 0, NULL), *place = json_loads("[0, 2, 0]", 0, NULL);

	in[9].apps = in[11].apps = apps;
	in[9].place = in[11].place = place;
	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		struct wr_cmd out;
		struct got g = {0};
		bool good = cmd_round_trip(&in[i], &out, &g);

		ok(good && out.kind == in[i].kind && out.rank == in[i].rank &&
			   out.stream == in[i].stream && out.sig == in[i].sig &&
			   out.first == in[i].first && out.count == in[i].count &&
			   out.id == in[i].id && out.node == in[i].node && out.len == in[i].len &&
			   apps_same(in[i].apps, out.apps) && apps_same(in[i].place, out.place) &&
			   (in[i].len == 0 || memcmp(out.data, in[i].data, in[i].len) == 0) &&
			   (in[i].addr == NULL ? out.addr == NULL
					       : out.addr != NULL && strcmp(out.addr, in[i].addr) == 0),
		   "command %s survives a frame", wr_wire_cmd_name(in[i].kind));
		ok(g.msg != NULL && g.msg->refcount == 1, "command %s: one reference",
		   wr_wire_cmd_name(in[i].kind));
		got_free(&g);
	}
	ok(apps->refcount == 1 && place->refcount == 1,
	   "a spawn's apps and place keep their one reference");
	json_decref(apps);
	json_decref(place);
}

static void
test_events(void)
{
	static const char line[] = "rank 3 says hello\n";
	struct wr_ev in[] = {
		{.kind = WR_EV_STARTED, .rank = 3, .pid = 4242, .mono = 12.5},
		{.kind = WR_EV_START_FAILED, .rank = 1, .err = ENOENT, .stage = 2},
		{.kind = WR_EV_START_FAILED, .rank = 9, .err = ENOENT, .stage = 3,
		 .data = "./spawned", .len = 9},
		{.kind = WR_EV_OUTPUT, .rank = 3, .stream = WR_ERR, .data = line,
		 .len = sizeof(line) - 1, .partial = false, .eof = false},
		{.kind = WR_EV_OUTPUT, .rank = 2, .stream = WR_OUT, .data = "x",
		 .len = 1, .partial = true, .eof = true},
		{.kind = WR_EV_OUTPUT, .rank = 2, .stream = WR_OUT, .eof = true},
		{.kind = WR_EV_EXITED, .rank = 5, .pid = 99, .wstatus = 3 << 8,
		 .maxrss_kib = 123456, .mono = 13.25},
		{.kind = WR_EV_FINISHED, .rank = 5, .forced = true},
		{.kind = WR_EV_STDIN_TAKEN},
		{.kind = WR_EV_START_DONE, .count = 3, .err = EAGAIN},
		{.kind = WR_EV_READY},
		{.kind = WR_EV_READY, .status = 127, .data = "./app: program not found",
		 .len = 24},
		{.kind = WR_EV_BEAT},
		{.kind = WR_EV_GAVE_UP},
		{.kind = WR_EV_ABORT, .rank = 2, .status = 1, .code = 256, .data = "bye",
		 .len = 3},
		{.kind = WR_EV_STACK, .rank = 4, .tool = "eu-stack", .data = "#0 pause\n",
		 .len = 9},
		{.kind = WR_EV_STACK, .rank = 4, .tool = "", .err = ESRCH},
		{.kind = WR_EV_LEFT, .rank = 3, .data = "it closed its connection", .len = 24},
		{.kind = WR_EV_ALONE, .rank = 1, .data = "libmpi.so.40", .len = 12},
		{.kind = WR_EV_SPAWN, .rank = 1, .count = 3, .id = 2, .data = apps_strings,
		 .len = APPS_LEN},
		{.kind = WR_EV_SPAWN, .rank = 1, .count = 4, .id = 3},
		{.kind = WR_EV_JOINED, .rank = 12},
		{.kind = WR_EV_AGAIN},
		{.kind = WR_EV_STARTED, .rank = 2, .pid = 7, .mono = 1.5, .data = "core 1 (cpu 1)",
		 .len = 14},
	};
	json_t *apps = json_loads(APPS_JSON, 0, NULL);

	in[19].apps = apps;

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
			   out.stage == in[i].stage && out.forced == in[i].forced &&
			   out.count == in[i].count && out.status == in[i].status &&
			   out.code == in[i].code && out.id == in[i].id &&
			   apps_same(in[i].apps, out.apps) &&
			   (in[i].tool == NULL ? out.tool == NULL
					       : out.tool != NULL && strcmp(out.tool, in[i].tool) == 0),
		   "event %s (%zu) survives a frame", wr_wire_ev_name(in[i].kind), i);
		got_free(&g);
	}
	json_decref(apps);
}

/* @blob, with its NUL, into @to (256 bytes), each '|' a NUL too. */
static void
nuls(char *to, const char *blob)
{
	snprintf(to, 256, "%s", blob != NULL ? blob : "");
	for (char *p = to; *p != '\0'; p++) {
		*p = *p == '|' ? '\0' : *p;
	}
}

static int
cmd_code(const char *json, const char *blob)
{
	json_t *msg = json_loads(json, 0, NULL);
	char bytes[256];

	nuls(bytes, blob);
	struct wr_cmd c;
	int rc;

	if (msg == NULL) {
		return -999;
	}
	rc = wr_wire_cmd_read(msg, blob ? bytes : NULL, blob ? strlen(blob) + 1 : 0, &c);
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
	char bytes[256];

	nuls(bytes, blob);
	struct wr_ev e;
	int rc;

	if (msg == NULL) {
		return -999;
	}
	rc = wr_wire_ev_read(msg, blob ? bytes : NULL, blob ? strlen(blob) + 1 : 0, &e);
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
		{"{\"cmd\": \"start\", \"first\": 0, \"count\": 1, \"addr\": \"host\"}", NULL, "an address that is no IPv4 one"},
		{"{\"cmd\": \"start\", \"first\": 0, \"count\": 1, \"addr\": 7}", NULL, "an address that is no string"},
		{"{\"cmd\": \"signal\", \"rank\": -2, \"sig\": 15}", NULL, "rank -2"},
		{"{\"cmd\": \"signal\", \"rank\": 0, \"sig\": 0}", NULL, "signal 0"},
		{"{\"cmd\": \"signal\", \"rank\": 0, \"sig\": 65}", NULL, "signal 65"},
		{"{\"cmd\": \"signal\", \"rank\": 1.5, \"sig\": 9}", NULL, "a rank that is a real"},
		{"{\"cmd\": \"pause\", \"rank\": 0, \"stream\": 2}", NULL, "stream 2"},
		{"{\"cmd\": \"stdin\"}", NULL, "a stdin chunk without bytes"},
		{"{\"cmd\": \"stdin_eof\"}", "x", "bytes on stdin_eof"},
		{"{\"cmd\": \"signal\", \"rank\": 0, \"sig\": 9}", "x", "bytes on a signal"},
		{"{\"cmd\": \"stack\", \"rank\": -1}", NULL, "the stack of every rank"},
		{"{\"cmd\": \"spawn\", \"first\": 2, \"count\": 1, \"apps\": [[1, 1, 0, false]], \"place\": [0]}", "a|a", "a spawn's answer without its id"},
		{"{\"cmd\": \"spawn\", \"id\": -1, \"first\": 2, \"count\": 1, \"apps\": [[1, 1, 0, false]], \"place\": [0]}", "a|a", "a negative spawn id"},
		{"{\"cmd\": \"spawn\", \"id\": 0, \"first\": 1048570, \"count\": 100, \"apps\": [[100, 1, 0, false]]}", "a|a", "spawned ranks past the limit"},
		{"{\"cmd\": \"spawn\", \"id\": 0, \"first\": 2, \"count\": 1}", NULL, "a spawn's answer without its apps"},
		{"{\"cmd\": \"spawn\", \"id\": 0, \"first\": 2, \"count\": 1}", "x", "bytes on a spawn's answer without apps"},
		{"{\"cmd\": \"spawn\", \"id\": 0, \"first\": 0, \"count\": 0, \"apps\": [[1, 1, 0, false]]}", "a|a", "apps on a refusal"},
		{"{\"cmd\": \"spawn\", \"id\": 0, \"first\": 0, \"count\": 0}", "x", "bytes on a refusal"},
		{"{\"cmd\": \"spawn\", \"id\": 0, \"first\": 0, \"count\": 0, \"place\": [0]}", NULL, "a place on a refusal"},
		{"{\"cmd\": \"spawn\", \"id\": 0, \"first\": 2, \"count\": 2, \"apps\": [[1, 1, 0, false]], \"place\": [0, 0]}", "a|a", "apps of fewer ranks than the answer's"},
		{"{\"cmd\": \"spawn\", \"id\": 0, \"first\": 2, \"count\": 1, \"apps\": [[1, 2, 0, false]], \"place\": [0]}", "a|a", "apps with fewer strings than they say"},
		{"{\"cmd\": \"spawn\", \"id\": 0, \"first\": 2, \"count\": 1, \"apps\": {}, \"place\": [0]}", "a|a", "apps that are no array"},
		{"{\"cmd\": \"spawn\", \"id\": 0, \"first\": 2, \"count\": 1, \"apps\": [[1, 1, 0, false]]}", "a|a", "apps without their place"},
		{"{\"cmd\": \"spawn\", \"id\": 0, \"first\": 2, \"count\": 1, \"apps\": [[1, 1, 0, false]], \"place\": [0, 1]}", "a|a", "a place of more ranks"},
		{"{\"cmd\": \"spawn\", \"id\": 0, \"first\": 2, \"count\": 1, \"apps\": [[1, 1, 0, false]], \"place\": [-1]}", "a|a", "a rank on node -1"},
		{"{\"cmd\": \"spawn\", \"id\": 0, \"first\": 2, \"count\": 1, \"apps\": [[1, 1, 0, false]], \"place\": [\"0\"]}", "a|a", "a node that is a string"},
		{"{\"cmd\": \"joined\", \"first\": 2, \"count\": 1, \"apps\": [[1, 1, 0, false]], \"place\": [0]}", "a|a", "joined ranks without their node"},
		{"{\"cmd\": \"joined\", \"first\": 2, \"count\": 0, \"node\": 1, \"apps\": [[1, 1, 0, false]], \"place\": []}", "a|a", "no joined rank"},
		{"{\"cmd\": \"joined\", \"first\": 2, \"count\": 1, \"node\": -1, \"apps\": [[1, 1, 0, false]], \"place\": [0]}", "a|a", "joined ranks on node -1"},
		{"{\"cmd\": \"joined\", \"first\": 1048570, \"count\": 100, \"node\": 1, \"apps\": [[100, 1, 0, false]], \"place\": [0]}", "a|a", "joined ranks past the limit"},
		{"{\"cmd\": \"joined\", \"first\": 2, \"count\": 1, \"node\": 1, \"place\": [0]}", NULL, "joined ranks without their apps"},
		{"{\"cmd\": \"joined\", \"first\": 2, \"count\": 1, \"node\": 1, \"apps\": [[1, 1, 0, false]]}", "a|a", "joined ranks without their place"},
		{"{\"cmd\": \"joined\", \"first\": 2, \"count\": 1, \"node\": 1, \"apps\": [[1, 1, 0, false]], \"place\": [0]}", "a|a|b", "joined apps with a string more"},
		{"[1, 2]", NULL, "an array"},
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = cmd_code(bad[i].json, bad[i].blob);

		ok(rc == WORLD_EPROTO, "command refused: %s (%d)", bad[i].what, rc);
	}
	is_int(cmd_code("{\"cmd\": \"signal\", \"rank\": 0, \"sig\": 9, \"later\": 1}", NULL),
	       0, "a field this version does not know is ignored");
	is_int(cmd_code("{\"cmd\": \"spawn\", \"id\": 0, \"first\": 2, \"count\": 1, "
			"\"apps\": [[1, 1, 0, false]], \"place\": [0]}", "a|a"),
	       0, "the spawn's answer the refusals above differ from is taken");
	is_int(cmd_code("{\"cmd\": \"joined\", \"first\": 2, \"count\": 1, \"node\": 1, "
			"\"apps\": [[1, 1, 0, false]], \"place\": [0]}", "a|a"),
	       0, "the JOINED the refusals above differ from is taken");
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
		{"{\"ev\": \"start_done\", \"count\": -1, \"err\": 0}", NULL, "a negative count"},
		{"{\"ev\": \"start_done\", \"count\": 2}", NULL, "start_done without err"},
		{"{\"ev\": \"ready\", \"status\": 1}", "why", "ready with a status that is none of 0, 125-127"},
		{"{\"ev\": \"ready\"}", NULL, "ready without a status"},
		{"{\"ev\": \"stack\", \"rank\": 0, \"err\": 0}", "#0", "a stack without its tool"},
		{"{\"ev\": \"stack\", \"rank\": 0, \"err\": 0, \"tool\": \"/bin/sh -c x\"}", NULL, "a tool that is no name"},
		{"{\"ev\": \"stack\", \"rank\": 0, \"err\": 5000, \"tool\": \"gdb\"}", NULL, "a stack's errno 5000"},
		{"{\"ev\": \"spawn\", \"rank\": 0, \"count\": 0, \"id\": 0}", NULL, "a spawn of no rank"},
		{"{\"ev\": \"spawn\", \"rank\": 0, \"count\": 1048577, \"id\": 0}", NULL, "a spawn past the limit"},
		{"{\"ev\": \"spawn\", \"rank\": 0, \"count\": 1}", NULL, "a spawn without its id"},
		{"{\"ev\": \"spawn\", \"rank\": 0, \"count\": 1, \"id\": 0}", "x", "bytes on a spawn without apps"},
		{"{\"ev\": \"spawn\", \"rank\": 0, \"count\": 1, \"id\": 0, \"apps\": [[1, 1, 0, false]]}", NULL, "apps without their strings"},
		{"{\"ev\": \"spawn\", \"rank\": 0, \"count\": 2, \"id\": 0, \"apps\": [[1, 1, 0, false]]}", "a|a", "apps of fewer ranks than the spawn's"},
		{"{\"ev\": \"spawn\", \"rank\": 0, \"count\": 1, \"id\": 0, \"apps\": [[1, 1, 1, false]]}", "a|a", "apps with fewer variables than they say"},
		{"{\"ev\": \"joined\"}", NULL, "joined, without the first rank"},
		{"{\"ev\": \"joined\", \"rank\": 1048576}", NULL, "joined, past the limit"},
		{"{\"ev\": \"joined\", \"rank\": 3}", "x", "bytes on joined"},
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = ev_code(bad[i].json, bad[i].blob);

		ok(rc == WORLD_EPROTO, "event refused: %s (%d)", bad[i].what, rc);
	}
	is_int(ev_code("{\"ev\": \"spawn\", \"rank\": 0, \"count\": 1, \"id\": 0, "
		       "\"apps\": [[1, 1, 0, false]]}", "a|a"),
	       0, "the spawn the refusals above differ from is taken");
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
	c = (struct wr_cmd){.kind = WR_CMD_START, .count = 1, .addr = "::1"};
	is_int(wr_wire_cmd_write(b, &c), -EINVAL, "a START whose address is no IPv4 one is not written");
	is_int(wr_wire_ev_write(b, &e), -EINVAL, "a time that is not finite is not written");
	is_int((int)evbuffer_get_length(b), 0, "nothing was appended");
	evbuffer_free(b);
}

/* A setup of 2 of 6 ranks on node 1 of 3, strings of any bytes but NUL. */
static char *good_argv[] = {"./app", "--name=\xff\xfe odd bytes", "", NULL};
static char *good_env[] = {"PATH=/bin", "WORLD_SECRET=abc", "EMPTY=", "X=\x80", NULL};
static int good_ranks[] = {1, 4};
static char *good_names[] = {"vm", "node-b", "198.18.0.13", NULL};

static struct wr_setup
good_setup(void)
{
	struct wr_setup s = {
		.jobid = "0123456789ab", .size = 6, .nnodes = 3, .node = 1,
		.nranks = 2, .ranks = good_ranks, .argv = good_argv, .argc = 3,
		.env = good_env, .envc = 4, .wdir = "/tmp/\xffwork", .wdir_soft = true,
		.pty = true,
		.stdin_rank = 4, .kill_grace = 0.25, .host_timeout = 7.5,
		.master_addr = "198.18.0.1",
		.master_port = 29500, .nofile_cur = 1024, .nofile_max = ~0ULL,
		.pmi = true, .pmi_port = false, .pmix = true, .pmi_mapping = "(vector,(0,3,2))",
		.node_name = good_names, .bind = 2, .cpus_per_rank = 3, .report_bindings = true,
	};

	return s;
}

static bool
same_strings(char *const *a, char *const *b, int n)
{
	for (int i = 0; i < n; i++) {
		if (strcmp(a[i], b[i]) != 0) {
			return false;
		}
	}
	return a[n] == NULL && b[n] == NULL;
}

static bool
same_setup(const struct wr_setup *a, const struct wr_setup *b)
{
	return strcmp(a->jobid, b->jobid) == 0 && a->size == b->size &&
	       a->nnodes == b->nnodes && a->node == b->node &&
	       a->nranks == b->nranks &&
	       memcmp(a->ranks, b->ranks, (size_t)a->nranks * sizeof(int)) == 0 &&
	       a->argc == b->argc && same_strings(a->argv, b->argv, a->argc) &&
	       a->envc == b->envc && same_strings(a->env, b->env, a->envc) &&
	       (a->wdir == NULL ? b->wdir == NULL
				: b->wdir != NULL && strcmp(a->wdir, b->wdir) == 0) &&
	       a->wdir_soft == b->wdir_soft &&
	       a->pty == b->pty && a->stdin_rank == b->stdin_rank &&
	       a->kill_grace == b->kill_grace && a->host_timeout == b->host_timeout &&
	       strcmp(a->master_addr, b->master_addr) == 0 &&
	       a->master_port == b->master_port && a->nofile_cur == b->nofile_cur &&
	       a->nofile_max == b->nofile_max && a->pmi == b->pmi && a->pmi_port == b->pmi_port &&
	       a->pmix == b->pmix && a->bind == b->bind &&
	       a->cpus_per_rank == b->cpus_per_rank && a->report_bindings == b->report_bindings &&
	       (a->pmi_mapping == NULL ? b->pmi_mapping == NULL
				       : b->pmi_mapping != NULL &&
					 strcmp(a->pmi_mapping, b->pmi_mapping) == 0) &&
	       (a->node_name == NULL ? b->node_name == NULL
				     : b->node_name != NULL &&
				       same_strings(a->node_name, b->node_name, a->nnodes));
}

/* @s written and read back into @out (to finish); @g keeps the frame. */
static bool
setup_round_trip(const struct wr_setup *s, struct wr_setup *out, struct got *g)
{
	struct evbuffer *b = evbuffer_new();
	bool good = wr_wire_setup_write(b, s) == 0 && read_one(b, g) &&
		    wr_wire_setup_read(g->msg, g->blob, g->len, out) == 0;

	evbuffer_free(b);
	return good;
}

static void
test_setup(void)
{
	struct wr_setup s = good_setup(), back;
	struct got g = {0};

	ok(setup_round_trip(&s, &back, &g) && same_setup(&s, &back),
	   "a setup survives a frame, odd bytes, no limit and all");
	wr_wire_setup_finish(&back);
	got_free(&g);
	s.wdir = NULL;
	s.envc = 0;
	s.env = good_env + 4;
	s.stdin_rank = WR_SETUP_STDIN_ALL;
	s.node_name = NULL;
	g = (struct got){0};
	ok(setup_round_trip(&s, &back, &g) && same_setup(&s, &back) && back.wdir == NULL,
	   "a setup without a working directory, environment or node names survives too");
	wr_wire_setup_finish(&back);
	got_free(&g);
}

/* What writing @s gives. */
static int
setup_write_code(const struct wr_setup *s)
{
	struct evbuffer *b = evbuffer_new();
	int rc = wr_wire_setup_write(b, s);

	if (rc != 0 && evbuffer_get_length(b) != 0) {
		rc = -998;
	}
	evbuffer_free(b);
	return rc;
}

static void
test_bad_setup_writes(void)
{
	static int falling[] = {4, 1}, outside[] = {1, 6};
	static char *no_eq[] = {"PATH=/bin", "NOEQUALS", NULL};
	struct wr_setup s;

	s = good_setup(), s.ranks = falling;
	is_int(setup_write_code(&s), -EINVAL, "setup refused: ranks that do not rise");
	s = good_setup(), s.ranks = outside;
	is_int(setup_write_code(&s), -EINVAL, "setup refused: a rank outside the job");
	s = good_setup(), s.env = no_eq, s.envc = 2;
	is_int(setup_write_code(&s), -EINVAL, "setup refused: a variable without =");
	s = good_setup(), s.stdin_rank = 2;
	is_int(setup_write_code(&s), -EINVAL, "setup refused: stdin for a rank of another host");
	s = good_setup(), memcpy(s.jobid, "0123456789AB", 13);
	is_int(setup_write_code(&s), -EINVAL, "setup refused: a job id that is not lower-case hex");
	s = good_setup(), s.node = 3;
	is_int(setup_write_code(&s), -EINVAL, "setup refused: node 3 of 3");
	s = good_setup(), s.host_timeout = -1;
	is_int(setup_write_code(&s), -EINVAL, "setup refused: a negative host timeout");
	s = good_setup();
	s.node_name = (char *[]){"vm", "node,b", "c", NULL};
	is_int(setup_write_code(&s), -EINVAL, "setup refused: a node name with a comma");
}

/* The good setup's frame with its JSON changed by @edit (a member and a
 * value, or NULL), its blob cut by @cut bytes or grown by @more. */
static int
setup_read_code(const char *key, json_t *value_new, size_t cut, const char *more)
{
	struct wr_setup s = good_setup(), back;
	struct evbuffer *b = evbuffer_new();
	struct got g = {0};
	unsigned char *blob;
	size_t len;
	int rc = -999;

	if (wr_wire_setup_write(b, &s) == 0 && read_one(b, &g)) {
		if (key != NULL && value_new != NULL) {
			json_object_set(g.msg, key, value_new);
		} else if (key != NULL) {
			json_object_del(g.msg, key);
		}
		len = g.len - cut + (more ? strlen(more) : 0);
		blob = malloc(len);
		memcpy(blob, g.blob, g.len - cut);
		if (more != NULL) {
			memcpy(blob + g.len - cut, more, strlen(more));
		}
		rc = wr_wire_setup_read(g.msg, blob, len, &back);
		if (rc != 0 && (back.ranks != NULL || back.argv != NULL || back.size != 0)) {
			rc = -998;
		}
		if (rc == 0) {
			wr_wire_setup_finish(&back);
		}
		free(blob);
	}
	json_decref(value_new);
	got_free(&g);
	evbuffer_free(b);
	return rc;
}

static void
test_bad_setup_reads(void)
{
	char long_name[WR_SETUP_NAME_MAX + 2] = "";

	is_int(setup_read_code(NULL, NULL, 0, NULL), 0, "the good setup reads");
	is_int(setup_read_code("setup", json_integer(1), 0, NULL), WORLD_EPROTO,
	       "setup refused: another version (one without a host timeout)");
	is_int(setup_read_code("ranks", json_pack("[i,i]", 1, 9), 0, NULL), WORLD_EPROTO,
	       "setup refused: a rank past the job's size");
	is_int(setup_read_code("ranks", json_pack("[]"), 0, NULL), WORLD_EPROTO,
	       "setup refused: no rank");
	is_int(setup_read_code("ranks", json_pack("[s]", "1"), 0, NULL), WORLD_EPROTO,
	       "setup refused: a rank that is a string");
	is_int(setup_read_code("argc", json_integer(4), 0, NULL), WORLD_EPROTO,
	       "setup refused: one argument more than the blob holds");
	is_int(setup_read_code("envc", json_integer(3), 0, NULL), WORLD_EPROTO,
	       "setup refused: strings left over after the environment");
	is_int(setup_read_code(NULL, NULL, 1, NULL), WORLD_EPROTO,
	       "setup refused: the last string not terminated");
	is_int(setup_read_code(NULL, NULL, 0, "X=1"), WORLD_EPROTO,
	       "setup refused: bytes after the last string");
	is_int(setup_read_code("node", json_integer(3), 0, NULL), WORLD_EPROTO,
	       "setup refused: node 3 of 3");
	is_int(setup_read_code("master_port", json_integer(65536), 0, NULL), WORLD_EPROTO,
	       "setup refused: port 65536");
	is_int(setup_read_code("nofile", json_pack("[i,i]", 10, 5), 0, NULL), WORLD_EPROTO,
	       "setup refused: a soft limit over the hard one");
	is_int(setup_read_code("kill_grace", json_real(-1), 0, NULL), WORLD_EPROTO,
	       "setup refused: a negative grace");
	is_int(setup_read_code("host_timeout", json_real(-0.5), 0, NULL), WORLD_EPROTO,
	       "setup refused: a negative host timeout");
	is_int(setup_read_code("host_timeout", NULL, 0, NULL), WORLD_EPROTO,
	       "setup refused: no host timeout");
	is_int(setup_read_code("pmix", NULL, 0, NULL), WORLD_EPROTO,
	       "setup refused: not saying whether PMIx is served");
	is_int(setup_read_code("pmix", json_string("yes"), 0, NULL), WORLD_EPROTO,
	       "setup refused: PMIx served \"yes\"");
	is_int(setup_read_code("jobid", NULL, 0, NULL), WORLD_EPROTO,
	       "setup refused: no job id");
	is_int(setup_read_code("stdin_rank", json_integer(2), 0, NULL), WORLD_EPROTO,
	       "setup refused: stdin for a rank of another host");
	is_int(setup_read_code("node_name", NULL, 0, NULL), WORLD_EPROTO,
	       "setup refused: no node names, not even null");
	is_int(setup_read_code("bind", NULL, 0, NULL), WORLD_EPROTO,
	       "setup refused: no binding");
	is_int(setup_read_code("bind", json_pack("[i,i,b]", 6, 1, 0), 0, NULL), WORLD_EPROTO,
	       "setup refused: a binding level past the last");
	is_int(setup_read_code("bind", json_pack("[i,i,b]", 2, 4097, 0), 0, NULL), WORLD_EPROTO,
	       "setup refused: more CPUs per rank than WR_BIND_CPUS_MAX");
	is_int(setup_read_code("bind", json_pack("[i,i,b]", 5, 4096, 1), 0, NULL), 0,
	       "a binding of WR_BIND_CPUS_MAX CPUs per rank at the last level reads");
	is_int(setup_read_code("node_name", json_pack("[s,s]", "a", "b"), 0, NULL), WORLD_EPROTO,
	       "setup refused: 2 node names for 3 nodes");
	is_int(setup_read_code("node_name", json_pack("[s,s,s,s]", "a", "b", "c", "d"), 0, NULL),
	       WORLD_EPROTO, "setup refused: 4 node names for 3 nodes");
	is_int(setup_read_code("node_name", json_pack("[s,s,s]", "a", "b c", "d"), 0, NULL),
	       WORLD_EPROTO, "setup refused: a node name with a space");
	is_int(setup_read_code("node_name", json_pack("[s,s,s]", "a", "", "d"), 0, NULL),
	       WORLD_EPROTO, "setup refused: an empty node name");
	memset(long_name, 'n', WR_SETUP_NAME_MAX);
	is_int(setup_read_code("node_name", json_pack("[s,s,s]", "a", long_name, "d"), 0, NULL),
	       0, "a node name of WR_SETUP_NAME_MAX bytes reads");
	long_name[WR_SETUP_NAME_MAX] = 'n';
	is_int(setup_read_code("node_name", json_pack("[s,s,s]", "a", long_name, "d"), 0, NULL),
	       WORLD_EPROTO, "setup refused: a node name one byte past WR_SETUP_NAME_MAX");
	is_int(setup_read_code("node_name", json_pack("[s,i,s]", "a", 2, "d"), 0, NULL),
	       WORLD_EPROTO, "setup refused: a node name that is a number");
	is_int(setup_read_code("node_name", json_null(), 0, NULL), 0,
	       "a setup without node names reads");
}

int
main(void)
{
	plan(13 * 2 + 1 + 24 + 38 + 4 + 2 + 1 + 1 + 38 + 5 + 2 + 8 + 26);
	test_commands();
	test_events();
	test_bad_commands();
	test_bad_events();
	test_bad_writes();
	test_setup();
	test_bad_setup_writes();
	test_bad_setup_reads();
	return done_testing();
}
