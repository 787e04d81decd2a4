/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for policy-spawn, without processes (policyfx.h's fake
 * agent): a spawn's ranks are numbered after the job's, placed, carry
 * their apps back to the asker's host, are ranks of the job like the
 * others, and a spawn that cannot be served stops the job with 125.
 */
#include "policyfx.h"

#include <stdlib.h>
#include <string.h>

/* As run.c does: the map and the output make room for a spawn's ranks. */
static int
fake_grow(void *arg, const int *node, int count)
{
	struct fx *f = arg;

	f->grown_node = node[0];
	f->grown = count;
	for (int i = 0; i < count; i++) {
		f->node[f->map.nranks + i] = node[i];
	}
	f->map.nranks += count;
	return wr_output_grow(f->out, f->map.nranks);
}

/* A SPAWN of @count ranks of one app, "kid", as an agent sends it; with
 * @apps false, one whose apps the agent could not send. */
static void
emit_spawn(struct fx *f, int rank, int count, int id, bool apps)
{
	json_t *shape = json_pack("[[i, i, i, b]]", count, 1, 0, 0);
	static const char strings[] = "kid\0kid";

	emit(f, (struct wr_ev){ .kind = WR_EV_SPAWN, .rank = rank, .count = count, .id = id,
				.apps = apps ? shape : NULL, .data = apps ? strings : NULL,
				.len = apps ? sizeof(strings) : 0 });
	json_decref(shape);
}

/* The SPAWN command the policy answered with, or NULL. */
static const struct wr_cmd *
spawn_answer(const struct fx *f)
{
	for (int i = 0; i < f->ncmds; i++) {
		if (f->cmds[i].kind == WR_CMD_SPAWN) {
			return &f->cmds[i];
		}
	}
	return NULL;
}

/* A spawn's ranks join the job after its own, and are ranks like them:
 * the job ends when they have, and a failure of theirs is the job's. */
static void
test_spawn(void)
{
	struct fx f;
	struct wr_policy_outcome o;
	const struct wr_cmd *c;
	char said[4096];
	bool ended;

	open_fx(&f, 3, (struct wr_policy_cfg){ .grow = fake_grow, .grow_arg = &f });
	start_all(&f);
	emit_spawn(&f, 1, 2, 5, true);
	c = spawn_answer(&f);
	ok(c != NULL && c->id == 5 && c->rank == 1 && c->first == 3 && c->count == 2,
	   "spawn: answered to the asker's node with its id and ranks 3-4");
	is_int(f.spawn_apps, 1, "spawn: the answer carries the asker's apps back");
	ok(f.grown_node == 0 && f.grown == 2, "spawn: the launcher grew by 2 ranks on its node");
	start(&f, 3);
	start(&f, 4);
	for (int i = 0; i < 4; i++) {
		end(&f, i, W_EXITCODE(0, 0), 11.0);
	}
	event_base_loop(f.base, EVLOOP_NONBLOCK);
	ok(!event_base_got_exit(f.base) && wr_policy_ranks(f.p)[4].state == WR_RANK_RUNNING,
	   "spawn: the job waits for the spawned ranks too");
	end(&f, 4, W_EXITCODE(4, 0), 11.0);
	ended = run(&f);
	close_fx(&f, &o, said, sizeof(said));
	ok(ended, "spawn: the job ends when the spawned ranks have");
	is_int(o.status, 4, "spawn: a spawned rank's failure is the job's");
	is_int(o.failed_rank, 4, "spawn: and it is named");
	ok(says(said, "worldrun: rank 4 (pid 1004 on hostA) exited with status 4"),
	   "spawn: its failure line");
}

/* The SPAWN commands the policy sent, and the JOINED ones. */
static int
count_cmds(const struct fx *f, enum wr_cmd_kind kind)
{
	int n = 0;

	for (int i = 0; i < f->ncmds; i++) {
		n += f->cmds[i].kind == kind;
	}
	return n;
}

/* In a job of several hosts, every other host serves a spawn's ranks
 * before the asker's starts them, one spawn at a time. */
static void
test_spawn_hosts(void)
{
	struct fx f;
	struct wr_policy_outcome o;
	const struct wr_cmd *c;
	char said[4096];

	open_fx(&f, 4, (struct wr_policy_cfg){ .grow = fake_grow, .grow_arg = &f });
	start_all(&f);
	emit_spawn(&f, 3, 2, 7, true);
	emit_spawn(&f, 0, 1, 8, true);
	c = &f.cmds[f.ncmds - 1];
	ok(count_cmds(&f, WR_CMD_JOINED) == 1 && c->kind == WR_CMD_JOINED && c->first == 4 &&
	   c->count == 2 && c->node == 1,
	   "spawn of hosts: the other hosts are told of ranks 4-5 on node 1, first");
	ok(f.grown_node == 0 && f.grown == 1 && f.map.nranks == 7,
	   "spawn of hosts: both spawns are numbered at once");
	is_int(count_cmds(&f, WR_CMD_SPAWN), 0, "spawn of hosts: none starts before its answer");
	emit(&f, (struct wr_ev){ .kind = WR_EV_JOINED, .rank = 6 });
	is_int(count_cmds(&f, WR_CMD_SPAWN), 0, "spawn of hosts: an answer for another is not it");
	emit(&f, (struct wr_ev){ .kind = WR_EV_JOINED, .rank = 4 });
	c = spawn_answer(&f);
	ok(c != NULL && c->rank == 3 && c->id == 7 && c->first == 4 && c->count == 2,
	   "spawn of hosts: answered, the asker's host starts ranks 4-5");
	c = &f.cmds[f.ncmds - 1];
	ok(c->kind == WR_CMD_JOINED && c->first == 6 && c->node == 0,
	   "spawn of hosts: then the next spawn's hosts are told");
	emit(&f, (struct wr_ev){ .kind = WR_EV_JOINED, .rank = 6 });
	is_int(count_cmds(&f, WR_CMD_SPAWN), 2, "spawn of hosts: and it starts once they answer");
	is_int(f.spawn_apps, 2, "spawn of hosts: each with its apps");
	for (int i = 4; i < 7; i++) {
		start(&f, i);
	}
	for (int i = 0; i < 7; i++) {
		end(&f, i, W_EXITCODE(0, 0), 11.0);
	}
	ok(run(&f), "spawn of hosts: the job ends when all seven have");
	close_fx(&f, &o, said, sizeof(said));
}

/* A spawn that cannot be served is refused, and the job stops with 125. */
static void
test_spawn_refused(void)
{
	struct fx f;
	struct wr_policy_outcome o;
	const struct wr_cmd *c;
	char said[4096];

	/* One rank past what the wire numbers is refused before anything grows. */
	open_fx(&f, 3, (struct wr_policy_cfg){ .grow = fake_grow, .grow_arg = &f });
	start_all(&f);
	emit_spawn(&f, 0, WR_WIRE_RANK_MAX - 2, 0, true);
	c = spawn_answer(&f);
	ok(c != NULL && c->count == 0 && f.grown == 0, "spawn past the limit: refused, nothing grew");
	run(&f);
	close_fx(&f, &o, said, sizeof(said));
	is_int(o.status, 125, "spawn past the limit: status 125");
	ok(says(said, "(MPI_Comm_spawn): the job would have too many ranks: stopping the job\n"),
	   "spawn past the limit: the line");
	/* Apps the agent could not send. */
	open_fx(&f, 3, (struct wr_policy_cfg){ .grow = fake_grow, .grow_arg = &f });
	start_all(&f);
	emit_spawn(&f, 2, 1, 0, false);
	c = spawn_answer(&f);
	ok(c != NULL && c->count == 0 && f.grown == 0, "spawn without apps: refused, nothing grew");
	run(&f);
	close_fx(&f, &o, said, sizeof(said));
	is_int(o.status, 125, "spawn without apps: status 125");
	ok(says(said, "worldrun: rank 2 asked to start 1 rank more (MPI_Comm_spawn): more programs, "
		      "or longer arguments and variables, than worldrun carries (64 programs, 64 KiB): "
		      "stopping the job\n"),
	   "spawn without apps: the line");
}

int
main(void)
{
	plan(23);
	test_spawn();
	test_spawn_hosts();
	test_spawn_refused();
	return done_testing();
}
