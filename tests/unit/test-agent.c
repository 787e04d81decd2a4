/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for agent, driven through its messages alone: every command
 * it is given and every event it sends goes through the wire codec
 * (wire.h) and a frame first, as over a remote host's channel. Two ranks
 * of sh start, write a line to each stream and exit; two of sleep are
 * stopped by a signal command; START_DONE closes each START.
 */
#include "agent.h"
#include "tap.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "frame.h"

#define MAX_EVENTS 64

extern char **environ;

/* The events as they came out of the codec, data copied. */
struct record {
	struct wr_ev ev[MAX_EVENTS];
	char data[MAX_EVENTS][64];
	int n;
	int finished;
	bool bad; /* an event that did not survive the codec */
	struct event_base *base;
};

/* The one frame in @b: its message (a new reference) and blob. */
static bool
reread(struct evbuffer *b, json_t **msg, void **blob, size_t *len)
{
	struct wr_frame_reader r;
	bool good;

	wr_frame_reader_init(&r, NULL);
	good = wr_frame_read(&r, b, msg, blob, len) == 1;
	wr_frame_reader_finish(&r);
	return good;
}

/* Through a frame and back: what the launcher of a remote host reads. */
static void
on_event(void *arg, const struct wr_ev *ev)
{
	struct record *rec = arg;
	struct evbuffer *b = evbuffer_new();
	struct wr_ev back;
	json_t *msg = NULL;
	void *blob = NULL;
	size_t len = 0;

	if (wr_wire_ev_write(b, ev) != 0 || !reread(b, &msg, &blob, &len) ||
	    wr_wire_ev_read(msg, blob, len, &back) != 0 || rec->n >= MAX_EVENTS) {
		rec->bad = true;
	} else {
		rec->ev[rec->n] = back;
		snprintf(rec->data[rec->n], sizeof(rec->data[0]), "%.*s",
			 (int)(back.len < 63 ? back.len : 63), back.data ? back.data : "");
		rec->ev[rec->n].data = rec->data[rec->n];
		rec->n++;
		if (back.kind == WR_EV_FINISHED && ++rec->finished == 2) {
			event_base_loopbreak(rec->base);
		}
	}
	json_decref(msg);
	free(blob);
	evbuffer_free(b);
}

/* A command, through a frame and back, then carried out. */
static int
send_cmd(struct wr_agent *a, const struct wr_cmd *cmd)
{
	struct evbuffer *b = evbuffer_new();
	struct wr_cmd back;
	json_t *msg = NULL;
	void *blob = NULL;
	size_t len = 0;
	int rc = -999;

	if (wr_wire_cmd_write(b, cmd) == 0 && reread(b, &msg, &blob, &len) &&
	    wr_wire_cmd_read(msg, blob, len, &back) == 0) {
		rc = wr_agent_send(a, &back);
	}
	json_decref(msg);
	free(blob);
	evbuffer_free(b);
	return rc;
}

static void
on_deadline(evutil_socket_t fd, short what, void *arg)
{
	event_base_loopbreak(arg);
}

/* A job of 2 ranks of sh -c @script, as an agent gets it: a SETUP
 * through the codec, made into the host's job (hostjob.h) and found
 * here. */
struct tjob {
	struct wr_setup setup;
	struct wr_hostjob job;
};

static void
job_init(struct tjob *t, char **argv)
{
	static int ranks[] = { 0, 1 };
	char path[4096];
	char *env[] = { path, "WORLD_TEST=1", NULL };
	struct wr_setup s = {
		.jobid = "0123456789ab", .size = 2, .nnodes = 1, .nranks = 2,
		.ranks = ranks, .argv = argv, .env = env, .envc = 2,
		.stdin_rank = WR_SETUP_STDIN_NONE, .kill_grace = 1.0,
		.master_addr = "", .master_port = 29500,
	};
	struct evbuffer *b = evbuffer_new();
	struct rlimit nofile;
	json_t *msg = NULL;
	void *blob = NULL;
	size_t len = 0;
	char why[256];

	snprintf(path, sizeof(path), "PATH=%s", getenv("PATH"));
	while (argv[s.argc] != NULL) {
		s.argc++;
	}
	getrlimit(RLIMIT_NOFILE, &nofile);
	s.nofile_cur = nofile.rlim_cur;
	s.nofile_max = nofile.rlim_max;
	ok(wr_wire_setup_write(b, &s) == 0 && reread(b, &msg, &blob, &len) &&
	   wr_wire_setup_read(msg, blob, len, &t->setup) == 0,
	   "the SETUP goes through the codec");
	ok(wr_hostjob_init(&t->job, &t->setup, NULL) == 0 &&
	   wr_hostjob_locate(&t->job, NULL, why, sizeof(why)) == 0,
	   "the host's job is made from it, its program found");
	json_decref(msg);
	free(blob);
	evbuffer_free(b);
}

static void
job_finish(struct tjob *t)
{
	wr_hostjob_finish(&t->job);
	wr_wire_setup_finish(&t->setup);
}

/* Run the ranks of @job until both finished (10 s at most), started
 * with @start, with @cmd sent once they started. */
static void
run_job(struct wr_hostjob *job, struct record *rec, const struct wr_cmd *start,
	const struct wr_cmd *cmd)
{
	struct timeval ten = {10, 0};
	struct wr_agent *a = NULL;
	struct event *deadline;

	*rec = (struct record){.base = event_base_new()};
	deadline = evtimer_new(rec->base, on_deadline, rec->base);
	evtimer_add(deadline, &ten);
	struct wr_agent_cfg cfg = {.base = rec->base, .job = job, .stdin_fd = -1,
				   .nranks = 2, .cb = on_event, .arg = rec};

	ok(wr_agent_open(&cfg, &a) == 0, "the agent opens");
	is_int(send_cmd(a, start), 0, "START, through the codec, starts both ranks");
	if (cmd != NULL) {
		is_int(send_cmd(a, cmd), 0, "the command goes through the codec");
	}
	event_base_dispatch(rec->base);
	wr_agent_close(a);
	event_free(deadline);
	event_base_free(rec->base);
}

/* The first event of @kind for @rank (-1: any), or NULL. */
static const struct wr_ev *
find(const struct record *rec, enum wr_ev_kind kind, int rank)
{
	for (int i = 0; i < rec->n; i++) {
		if (rec->ev[i].kind == kind && (rank < 0 || rec->ev[i].rank == rank)) {
			return &rec->ev[i];
		}
	}
	return NULL;
}

/* Whether an event of @a for @rank comes before one of @b. */
static bool
before(const struct record *rec, enum wr_ev_kind a, enum wr_ev_kind b, int rank)
{
	const struct wr_ev *x = find(rec, a, rank), *y = find(rec, b, rank);

	return x != NULL && y != NULL && x < y;
}

static void
test_run(void)
{
	static char *argv[] = {"sh", "-c",
			       "echo out $WORLD_RANK; echo err $WORLD_LOCAL_RANK >&2; "
			       "exit $WORLD_RANK", NULL};
	struct wr_cmd start = {.kind = WR_CMD_START, .first = 0, .count = 2};
	struct tjob t;
	struct record rec;
	const struct wr_ev *e;

	job_init(&t, argv);
	run_job(&t.job, &rec, &start, NULL);
	ok(!rec.bad, "every event survived the codec");
	e = find(&rec, WR_EV_START_DONE, -1);
	ok(e != NULL && e->count == 2 && e->err == 0, "START_DONE: 2 ranks run");
	ok(find(&rec, WR_EV_STARTED, 0) != NULL && find(&rec, WR_EV_STARTED, 1) != NULL &&
		   find(&rec, WR_EV_STARTED, 1)->pid > 0,
	   "STARTED for both ranks, with their pids");
	e = find(&rec, WR_EV_OUTPUT, 1);
	ok(find(&rec, WR_EV_OUTPUT, 0) != NULL, "rank 0's output came");
	for (int i = 0; i < rec.n; i++) {
		if (rec.ev[i].kind == WR_EV_OUTPUT && rec.ev[i].rank == 1 && rec.ev[i].len > 0 &&
		    rec.ev[i].stream == WR_ERR) {
			e = &rec.ev[i];
		}
	}
	ok(e != NULL && e->stream == WR_ERR && strcmp(e->data, "err 1\n") == 0,
	   "rank 1's stderr line, whole, on the error stream");
	e = find(&rec, WR_EV_EXITED, 1);
	ok(e != NULL && WIFEXITED(e->wstatus) && WEXITSTATUS(e->wstatus) == 1,
	   "EXITED: rank 1 with status 1");
	e = find(&rec, WR_EV_EXITED, 0);
	ok(e != NULL && WIFEXITED(e->wstatus) && WEXITSTATUS(e->wstatus) == 0,
	   "EXITED: rank 0 with status 0");
	ok(before(&rec, WR_EV_STARTED, WR_EV_EXITED, 0) &&
		   before(&rec, WR_EV_EXITED, WR_EV_FINISHED, 0) &&
		   before(&rec, WR_EV_EXITED, WR_EV_FINISHED, 1),
	   "each rank: STARTED, EXITED, then FINISHED");
	is_int(rec.finished, 2, "both ranks FINISHED");
	job_finish(&t);
}

static void
test_signal(void)
{
	static char *argv[] = {"sh", "-c", "exec sleep 30", NULL};
	struct wr_cmd start = {.kind = WR_CMD_START, .first = 0, .count = 2};
	struct wr_cmd term = {.kind = WR_CMD_SIGNAL, .rank = -1, .sig = SIGTERM};
	struct tjob t;
	struct record rec;
	const struct wr_ev *e0, *e1;

	job_init(&t, argv);
	run_job(&t.job, &rec, &start, &term);
	e0 = find(&rec, WR_EV_EXITED, 0);
	e1 = find(&rec, WR_EV_EXITED, 1);
	ok(e0 != NULL && e1 != NULL && WIFSIGNALED(e0->wstatus) &&
		   WTERMSIG(e0->wstatus) == SIGTERM && WIFSIGNALED(e1->wstatus),
	   "SIGNAL -1 SIGTERM, through the codec, ends both ranks by SIGTERM");
	is_int(rec.finished, 2, "both ranks FINISHED after the signal");
	job_finish(&t);
}

/* What only START knows, the address the ranks publish, reaches them;
 * the SETUP's environment and MASTER_ADDR do too. */
static void
test_start_addr(void)
{
	static char *argv[] = {"sh", "-c",
			       "echo $WORLD_ADVERTISE $WORLD_TEST $MASTER_ADDR", NULL};
	struct wr_cmd start = {.kind = WR_CMD_START, .first = 0, .count = 2,
			       .addr = "198.18.0.7"};
	struct tjob t;
	struct record rec;
	const struct wr_ev *e;

	job_init(&t, argv);
	run_job(&t.job, &rec, &start, NULL);
	e = find(&rec, WR_EV_OUTPUT, 1);
	ok(e != NULL && strcmp(e->data, "198.18.0.7 1 127.0.0.1\n") == 0,
	   "WORLD_ADVERTISE from START, WORLD_TEST from SETUP, MASTER_ADDR loopback");
	job_finish(&t);
}

int
main(void)
{
	plan(3 * 2 + (2 + 9) + (3 + 2) + (2 + 1));
	test_run();
	test_signal();
	test_start_addr();
	return done_testing();
}
