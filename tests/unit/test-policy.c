/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for policy, without processes: a fake agent starts and
 * ends ranks as events, and obeys the policy's signal commands as ranks
 * would (SIGTERM ends them unless they are stubborn, SIGKILL always).
 * Each case checks a row of DESIGN's exit-status contract: the status,
 * its cause, the failure lines worldrun prints (to a file that stands in
 * for stderr), the stop it sends and what the registry is told.
 */
#include "policyfx.h"

/* 0: every rank exited 0; nothing is said and nothing is stopped. */
static void
test_all_well(void)
{
	struct fx f;
	struct wr_policy_outcome o;
	char said[4096];
	bool ended;

	open_fx(&f, 3, (struct wr_policy_cfg){ 0 });
	start_all(&f);
	for (int i = 0; i < 3; i++) {
		end(&f, i, W_EXITCODE(0, 0), 11.0);
	}
	ended = run(&f);
	is_int(wr_reg_rank_life(f.reg.reg, 1), WR_RANK_DONE, "0: the registry is told each rank is done");
	close_fx(&f, &o, said, sizeof(said));
	ok(ended, "0: the policy ends the loop once every rank finished");
	is_int(o.status, -1, "0: no status is decided (worldrun exits 0)");
	is_str(o.cause, NULL, "0: no cause");
	is_int(f.ncmds, 0, "0: no command is sent");
	is_str(said, "", "0: worldrun says nothing");
}

/* N: the first rank to fail exits N; the others are stopped, not failures. */
static void
test_rank_exits(void)
{
	struct fx f;
	struct wr_policy_outcome o;
	char said[4096];
	bool ended;
	const struct wr_rank *r;

	open_fx(&f, 4, (struct wr_policy_cfg){ 0 });
	start_all(&f);
	end(&f, 2, W_EXITCODE(3, 0), 11.5);
	ok(!sent(&f, -1, SIGTERM), "N: the stop waits for the end of the callback");
	ended = run(&f);
	r = wr_policy_ranks(f.p);
	ok(r[0].signaled && r[3].signaled, "N: the others were signalled by worldrun");
	ok(!r[0].failed && !r[1].failed && !r[3].failed, "N: the stopped ranks are no failures");
	ok(r[2].failed && !r[2].signaled, "N: the failed rank is the failure");
	is_int(wr_reg_rank_life(f.reg.reg, 2), WR_RANK_DEAD, "N: the registry is told the rank died");
	close_fx(&f, &o, said, sizeof(said));
	ok(ended, "N: the job ends");
	is_int(o.status, 3, "N: the status is the rank's");
	is_str(o.cause, "rank-exited", "N: cause rank-exited");
	is_int(o.failed_rank, 2, "N: the failed rank");
	ok(sent(&f, -1, SIGTERM), "N: SIGTERM to every rank");
	ok(sent(&f, -1, SIGCONT), "N: SIGCONT after it, for stopped ranks");
	ok(!sent(&f, -1, SIGKILL), "N: no SIGKILL when all end within the grace");
	ok(says(said, "worldrun: rank 2 (pid 1002 on hostA) exited with status 3 after 1.50 s\n"),
	   "N: the failure line, literally");
	ok(says(said, "worldrun: stopped 3 other ranks\n"), "N: the stopped line, literally");
	ok(!says(said, "rank 0 (pid"), "N: no line for a stopped rank");
}

/* What the rank's error file said ends its line, made printable again
 * here: an agent of another host sent it. */
static void
test_exception(void)
{
	static const char data[] = "E: a\x1b[31mb\tc\nTraceback\n  raised\n";
	struct fx f;
	struct wr_policy_outcome o;
	char said[4096];
	const struct wr_rank *r;

	open_fx(&f, 2, (struct wr_policy_cfg){ 0 });
	start_all(&f);
	f.running[1] = false;
	emit(&f, (struct wr_ev){ .kind = WR_EV_EXITED, .rank = 1, .pid = 1001,
				 .wstatus = W_EXITCODE(3, 0), .mono = 11.5, .data = data,
				 .len = sizeof(data) - 1 });
	emit(&f, (struct wr_ev){ .kind = WR_EV_FINISHED, .rank = 1 });
	run(&f);
	r = wr_policy_ranks(f.p);
	is_str(r[1].exception, "E: a?[31mb?c", "exception: control bytes are ? in the kept line");
	is_str(r[1].traceback, "Traceback\n  raised\n", "exception: the traceback is kept whole");
	close_fx(&f, &o, said, sizeof(said));
	ok(says(said, "worldrun: rank 1 (pid 1001 on hostA) exited with status 3 after "
		      "1.50 s: E: a?[31mb?c\n"), "exception: it ends the failure line");
}

/* 128+S: the first rank to fail was killed by signal S. */
static void
test_rank_killed(void)
{
	struct fx f;
	struct wr_policy_outcome o;
	char said[4096];

	open_fx(&f, 4, (struct wr_policy_cfg){ 0 });
	start_all(&f);
	end(&f, 3, W_EXITCODE(0, SIGSEGV), 10.4);
	run(&f);
	close_fx(&f, &o, said, sizeof(said));
	is_int(o.status, 128 + SIGSEGV, "128+S: the status");
	is_str(o.cause, "rank-killed", "128+S: cause rank-killed");
	ok(says(said, "worldrun: rank 3 (pid 1003 on hostB) killed by signal 11 (SIGSEGV) after 0.40 s\n"),
	   "128+S: the failure line names the signal and the rank's host");
}

/* "First" is the first reaped: two failures in one pass, the first wins,
 * and both are failures of their own. */
static void
test_first_reaped(void)
{
	struct fx f;
	struct wr_policy_outcome o;
	char said[4096];

	open_fx(&f, 3, (struct wr_policy_cfg){ 0 });
	start_all(&f);
	end(&f, 2, W_EXITCODE(4, 0), 11.0);
	end(&f, 0, W_EXITCODE(5, 0), 11.0);
	run(&f);
	close_fx(&f, &o, said, sizeof(said));
	is_int(o.status, 4, "first: the first reaped decides");
	is_int(o.failed_rank, 2, "first: its rank");
	ok(says(said, "rank 0 (pid 1000 on hostA) exited with status 5"),
	   "first: a rank that failed in the same pass has its own line");
	ok(says(said, "worldrun: stopped 1 other rank\n"), "first: one rank was stopped");
}

/* A rank that itself exits 124-127 passes its status through. */
static void
test_rank_passes(int code)
{
	struct fx f;
	struct wr_policy_outcome o;
	char said[4096];

	open_fx(&f, 2, (struct wr_policy_cfg){ 0 });
	start_all(&f);
	end(&f, 1, W_EXITCODE(code, 0), 11.0);
	run(&f);
	close_fx(&f, &o, said, sizeof(said));
	is_int(o.status, code, "a rank's own 124-127: passed through");
	is_str(o.cause, "rank-exited", "a rank's own 124-127: the report tells it from ours");
}

/* 124: --timeout, here while a node still starts; the hang report first
 * (here the registry cannot make one), then the stop. */
static void
test_timeout(void)
{
	struct fx f;
	struct wr_policy_outcome o;
	char said[4096];
	bool ended;

	open_fx(&f, 2, (struct wr_policy_cfg){ .timeout = 0.05 });
	start(&f, 0);
	start(&f, 1);
	ended = run(&f);
	close_fx(&f, &o, said, sizeof(said));
	ok(ended, "124: the job ends");
	is_int(o.status, 124, "124: the status");
	is_str(o.cause, "timeout", "124: cause timeout");
	ok(says(said, "worldrun: timed out after 0.05 s\n"), "124: the line");
	ok(says(said, "worldrun: no hang report: the registry cannot make one\n") &&
	   strstr(said, "no hang report") < strstr(said, "stopped 2 ranks"),
	   "124: the hang report is tried before the stop");
	ok(sent(&f, -1, SIGTERM), "124: SIGTERM to every rank");
	ok(says(said, "worldrun: stopped 2 ranks\n"), "124: the stopped ranks are said");
	is_int(f.cancels, 1, "124: a start still under way is cancelled");
}

/* 125: a spawn failure part-way; the ranks already started are stopped. */
static void
test_start_failed(void)
{
	struct fx f;
	struct wr_policy_outcome o;
	char said[4096];

	open_fx(&f, 3, (struct wr_policy_cfg){ 0 });
	start(&f, 0);
	emit(&f, (struct wr_ev){ .kind = WR_EV_START_FAILED, .rank = 1,
				 .stage = 0 /* fork */, .err = EAGAIN });
	start_done(&f, 1);
	run(&f);
	ok(wr_policy_ranks(f.p)[1].start_failed, "125: the rank is marked as never started");
	close_fx(&f, &o, said, sizeof(said));
	is_int(o.status, 125, "125: the status");
	is_str(o.cause, "start-failed", "125: cause start-failed");
	ok(says(said, "worldrun: unable to start rank 1 (./prog): Resource temporarily "
		"unavailable (the process limit, ulimit -u, is reached)\n"), "125: the line");
	ok(sent(&f, -1, SIGTERM), "125: the started rank is stopped");
}

/* 126 and 127: the program cannot be executed, or is not found. */
static void
test_exec_failed(int err, int want, const char *cause)
{
	struct fx f;
	struct wr_policy_outcome o;
	char said[4096], line[256];

	open_fx(&f, 2, (struct wr_policy_cfg){ 0 });
	emit(&f, (struct wr_ev){ .kind = WR_EV_START_FAILED, .rank = 0,
				 .stage = WR_SPAWN_EXEC, .err = err });
	start_done(&f, 0);
	run(&f);
	close_fx(&f, &o, said, sizeof(said));
	snprintf(line, sizeof(line), "worldrun: rank 0: unable to execute ./prog: %s\n",
		 strerror(err));
	is_int(o.status, want, cause);
	is_str(o.cause, cause, "exec: the cause");
	ok(says(said, line), "exec: the line names the program and why");
}

/* A node whose agent finds no program: 127 for the job, its host named. */
static void
test_node_lost(void)
{
	struct fx f;
	struct wr_policy_outcome o;
	char said[4096];

	open_fx(&f, 4, (struct wr_policy_cfg){ 0 });
	f.ncfg.lost(f.ncfg.arg, 1, 127, "./prog: program not found");
	start_all(&f);
	run(&f);
	close_fx(&f, &o, said, sizeof(said));
	is_int(o.status, 127, "node lost: its status");
	is_str(o.cause, "not-found", "node lost: cause not-found");
	ok(says(said, "worldrun: host hostB: ./prog: program not found\n"),
	   "node lost: the line names the host");
}

/* 128+S: worldrun itself stopped by a signal, even if the ranks exit 0. */
static void
test_signalled(int sig)
{
	struct fx f;
	struct wr_policy_outcome o;
	char said[4096], line[128];

	open_fx(&f, 3, (struct wr_policy_cfg){ 0 });
	start_all(&f);
	f.stubborn = true;
	wr_policy_signal(f.p, sig);
	/* The ranks catch it and exit 0. */
	for (int i = 0; i < 3; i++) {
		end(&f, i, W_EXITCODE(0, 0), 11.0);
	}
	run(&f);
	close_fx(&f, &o, said, sizeof(said));
	snprintf(line, sizeof(line), "worldrun: received %s: stopping 3 ranks\n",
		 sig == SIGINT ? "SIGINT" : "SIGTERM");
	is_int(o.status, 128 + sig, "signal: 128+S although the ranks exited 0");
	is_str(o.cause, "signal", "signal: cause signal");
	is_int(o.self_signal, sig, "signal: worldrun ends by the signal");
	ok(sent(&f, -1, sig), "signal: forwarded to every rank");
	ok(says(said, line), "signal: the line");
}

/* A signal while an agent is still starting: the start is cancelled, and
 * a rank that did start is stopped. */
static void
test_signal_during_start(void)
{
	struct fx f;
	struct wr_policy_outcome o;
	char said[4096];
	bool ended;

	open_fx(&f, 2, (struct wr_policy_cfg){ 0 });
	start(&f, 0);
	wr_policy_signal(f.p, SIGTERM);
	ended = run(&f);
	close_fx(&f, &o, said, sizeof(said));
	is_int(f.cancels, 1, "signal in the start: the start is cancelled");
	ok(ended && sent(&f, -1, SIGTERM), "signal in the start: the started rank is stopped");
	is_int(o.status, 128 + SIGTERM, "signal in the start: 143");
}

/* After the start, a signal cancels nothing. */
static void
test_signal_after_start(void)
{
	struct fx f;
	struct wr_policy_outcome o;
	char said[4096];

	open_fx(&f, 2, (struct wr_policy_cfg){ 0 });
	start_all(&f);
	wr_policy_signal(f.p, SIGHUP);
	run(&f);
	close_fx(&f, &o, said, sizeof(said));
	is_int(f.cancels, 0, "signal after the start: nothing to cancel");
	is_int(o.status, 128 + SIGHUP, "signal after the start: SIGHUP is 129");
}

/* A second Ctrl-C: SIGKILL at once, without the grace. */
static void
test_second_interrupt(void)
{
	struct fx f;
	struct wr_policy_outcome o;
	char said[4096];

	open_fx(&f, 2, (struct wr_policy_cfg){ .kill_grace = 60 });
	start_all(&f);
	f.stubborn = true;
	wr_policy_signal(f.p, SIGINT);
	wr_policy_signal(f.p, SIGINT);
	run(&f);
	close_fx(&f, &o, said, sizeof(said));
	ok(sent(&f, -1, SIGKILL), "second SIGINT: SIGKILL to every rank");
	is_int(o.status, 130, "second SIGINT: still 130");
}

/* Ranks that outlive SIGTERM get SIGKILL after --kill-grace, and are
 * still no failures. */
static void
test_grace(void)
{
	struct fx f;
	struct wr_policy_outcome o;
	char said[4096];

	open_fx(&f, 3, (struct wr_policy_cfg){ 0 });
	start_all(&f);
	f.stubborn = true;
	end(&f, 0, W_EXITCODE(2, 0), 11.0);
	run(&f);
	close_fx(&f, &o, said, sizeof(said));
	ok(sent(&f, -1, SIGKILL), "grace: SIGKILL after the grace");
	is_int(o.status, 2, "grace: the status stays the failed rank's");
	ok(says(said, "worldrun: stopped 2 other ranks\n"), "grace: the killed ranks are stopped ones");
	ok(!says(said, "SIGKILL) after"), "grace: no failure line for a rank worldrun killed");
}

/* A remote agent that never tells its ranks' end, even after SIGKILL:
 * its node is given up, and the job ends with the first failure. */
static void
test_give_up(void)
{
	struct fx f;
	struct wr_policy_outcome o;
	char said[4096];
	bool ended;

	open_fx(&f, 4, (struct wr_policy_cfg){ 0 });
	start_all(&f);
	f.stubborn = true;
	f.deaf[3] = true;
	end(&f, 1, W_EXITCODE(2, 0), 11.0);
	ended = run(&f);
	close_fx(&f, &o, said, sizeof(said));
	ok(ended, "give up: the job ends");
	is_int(f.give_ups, 1, "give up: once, after the grace and 2 s more");
	is_int(o.status, 2, "give up: the first failure still decides");
	ok(says(said, "worldrun: host hostB: its agent did not report its ranks' end within "
		"2.05 s of their SIGKILL\n"), "give up: the line names the host");
	ok(says(said, "worldrun: host hostB: lost 1 running rank with it\n"),
	   "give up: and the rank lost with it");
}

/* A host lost while its rank runs: the job fails (125), the host named. */
static void
test_host_lost(void)
{
	struct fx f;
	struct wr_policy_outcome o;
	char said[4096];
	const struct wr_rank *r;

	open_fx(&f, 4, (struct wr_policy_cfg){ .keep_going = true });
	start_all(&f);
	f.ncfg.lost(f.ncfg.arg, 1, 125, "its channel closed");
	r = wr_policy_ranks(f.p);
	ok(r[3].host_lost && r[3].state == WR_RANK_FINISHED, "host lost: its rank is finished, lost");
	is_int(wr_reg_rank_life(f.reg.reg, 3), WR_RANK_DEAD, "host lost: the registry is told");
	run(&f);
	close_fx(&f, &o, said, sizeof(said));
	is_int(o.status, 125, "host lost: 125, --keep-going or not");
	is_str(o.cause, "host-lost", "host lost: its cause");
	ok(says(said, "worldrun: host hostB: its channel closed\n") &&
	   says(said, "worldrun: host hostB: lost 1 running rank with it\n"), "host lost: its lines");
}

/* A START that failed before its ranks could say so is the job's failure. */
static void
test_start_done_error(void)
{
	struct fx f;
	struct wr_policy_outcome o;
	char said[4096];

	open_fx(&f, 2, (struct wr_policy_cfg){ 0 });
	start(&f, 0);
	emit(&f, (struct wr_ev){ .kind = WR_EV_START_DONE, .count = 1, .err = EMFILE });
	run(&f);
	close_fx(&f, &o, said, sizeof(said));
	is_int(o.status, 125, "start done with an error: 125");
	is_str(o.cause, "start-failed", "start done with an error: start-failed");
	ok(says(said, "worldrun: unable to start the ranks: Too many open files\n"),
	   "start done with an error: the line");
}

/* Once worldrun closes, what the parts still call back with says nothing. */
static void
test_end_is_quiet(void)
{
	struct fx f;
	struct wr_policy_outcome o;
	char said[4096];

	open_fx(&f, 4, (struct wr_policy_cfg){ 0 });
	start_all(&f);
	wr_policy_end(f.p);
	f.ncfg.said(f.ncfg.arg, 1, "a line from a closing shell");
	emit(&f, (struct wr_ev){ .kind = WR_EV_ABORT, .rank = 0, .status = 3, .code = 3 });
	f.ncfg.lost(f.ncfg.arg, 1, 125, "its channel closed");
	close_fx(&f, &o, said, sizeof(said));
	is_str(said, "", "after the end: no line");
	is_int(o.status, -1, "after the end: nothing decides the status");
}

/* --keep-going: the first failure decides, the others run on. */
static void
test_keep_going(void)
{
	struct fx f;
	struct wr_policy_outcome o;
	char said[4096];

	open_fx(&f, 3, (struct wr_policy_cfg){ .keep_going = true });
	start_all(&f);
	end(&f, 1, W_EXITCODE(6, 0), 11.0);
	end(&f, 0, W_EXITCODE(0, 0), 12.0);
	end(&f, 2, W_EXITCODE(7, 0), 13.0);
	run(&f);
	close_fx(&f, &o, said, sizeof(said));
	is_int(o.status, 6, "keep going: the first failure decides");
	is_int(f.ncmds, 0, "keep going: nothing is stopped");
	ok(says(said, "rank 2 (pid 1002 on hostA) exited with status 7"),
	   "keep going: every failure has its line");
}

/* MPI_Abort: the job ends with its code; the aborting rank is said once. */
static void
test_abort(void)
{
	struct fx f;
	struct wr_policy_outcome o;
	char said[4096];

	open_fx(&f, 2, (struct wr_policy_cfg){ .keep_going = true });
	start_all(&f);
	emit(&f, (struct wr_ev){ .kind = WR_EV_ABORT, .rank = 1, .status = 17,
				 .code = 17, .data = "oops", .len = 4 });
	run(&f);
	close_fx(&f, &o, said, sizeof(said));
	is_int(o.status, 17, "abort: its code, --keep-going or not");
	is_str(o.cause, "rank-aborted", "abort: cause rank-aborted");
	ok(says(said, "worldrun: rank 1 (pid 1001 on hostA) called abort with exit code 17: oops\n"),
	   "abort: the line");
	ok(!says(said, "rank 1 (pid 1001 on hostA) killed"), "abort: no second line for its end");
}


/*
 * A rank that says it failed (world_fail) is the job's failure, though a
 * peer its death woke exits first; it is not signalled, it ends by
 * itself, and the others are stopped at once.
 */
static void
test_rank_failed(void)
{
	struct fx f;
	struct wr_policy_outcome o;
	char said[4096], fate[128] = "";

	open_fx(&f, 3, (struct wr_policy_cfg){ 0 });
	start_all(&f);
	f.rcfg.rank_failed(f.rcfg.arg, 1, 1, "uncaught ValueError: boom");
	is_int(wr_reg_rank_life(f.reg.reg, 1), WR_RANK_DEAD, "failed: dead to the registry at once");
	f.rcfg.fate(f.rcfg.arg, 1, fate, sizeof(fate));
	is_str(fate, "failed (uncaught ValueError: boom)", "failed: its fate, for the peers");
	ok(sent(&f, 0, SIGTERM) && sent(&f, 2, SIGTERM), "failed: the others are stopped at once");
	end(&f, 0, W_EXITCODE(1, 0), 11.0);
	end(&f, 1, W_EXITCODE(1, 0), 11.5);
	run(&f);
	close_fx(&f, &o, said, sizeof(said));
	ok(!sent(&f, 1, SIGTERM) && !sent(&f, -1, SIGTERM), "failed: it is not signalled");
	is_int(o.status, 1, "failed: its status");
	is_int(o.failed_rank, 1, "failed: it is the failed rank, though rank 0 ended first");
	is_str(o.cause, "rank-failed", "failed: cause rank-failed");
	ok(says(said, "worldrun: rank 1 (pid 1001 on hostA) failed: uncaught ValueError: boom\n"),
	   "failed: the line with its reason");
	ok(says(said, "worldrun: rank 1 (pid 1001 on hostA) exited with status 1 after"),
	   "failed: its failure line at its end");
	ok(!says(said, "rank 0 (pid"), "failed: rank 0 is not blamed");
	ok(says(said, "worldrun: stopped 2 other ranks\n"), "failed: the others were stopped");
}

/* A rank the registry lost is killed after a second, as a failure. */
static void
test_rank_lost(void)
{
	struct fx f;
	struct wr_policy_outcome o;
	char said[4096];

	open_fx(&f, 2, (struct wr_policy_cfg){ 0 });
	start_all(&f);
	f.rcfg.rank_lost(f.rcfg.arg, 1, "its lease lapsed");
	is_int(wr_reg_rank_life(f.reg.reg, 1), WR_RANK_DEAD, "lost: dead to the registry at once");
	run(&f);
	close_fx(&f, &o, said, sizeof(said));
	ok(sent(&f, 1, SIGKILL), "lost: SIGKILL to that rank alone");
	is_int(o.status, 128 + SIGKILL, "lost: 137");
	is_str(o.cause, "rank-lost", "lost: cause rank-lost");
	ok(says(said, "worldrun: rank 1 (pid 1001 on hostA) was lost: its lease lapsed; killed after"),
	   "lost: the line says why");
}

/*
 * A rank the registry lost (its connection dropped) fails the waits of
 * its peers at once: a peer that ends before it, or in its reaping pass,
 * is not blamed; the lost rank's own end decides. If it ends well, the
 * peer's failure stands.
 */
static void
test_lost_decides(void)
{
	struct fx f;
	struct wr_policy_outcome o;
	char said[4096];

	open_fx(&f, 3, (struct wr_policy_cfg){ 0 });
	start_all(&f);
	f.rcfg.rank_lost(f.rcfg.arg, 1, "its connection dropped");
	end(&f, 0, W_EXITCODE(1, 0), 11.0);
	end(&f, 1, W_EXITCODE(3, 0), 11.0);
	run(&f);
	close_fx(&f, &o, said, sizeof(said));
	is_int(o.status, 3, "lost first: its own status, not its woken peer's");
	ok(!says(said, "rank 0 (pid"), "lost first: the woken peer has no line");

	open_fx(&f, 3, (struct wr_policy_cfg){ 0 });
	start_all(&f);
	f.rcfg.rank_lost(f.rcfg.arg, 1, "its connection dropped");
	end(&f, 0, W_EXITCODE(1, 0), 11.0);
	end(&f, 1, W_EXITCODE(0, 0), 11.0);
	run(&f);
	close_fx(&f, &o, said, sizeof(said));
	is_int(o.status, 1, "lost, then ended well: the peer's failure stands");
	ok(says(said, "worldrun: rank 0 (pid 1000 on hostA) exited with status 1"),
	   "and the peer's line comes");

	/* The woken peer says it failed (a Python PeerDeadError nobody
	 * caught) before the lost rank is reaped: still the lost rank's. */
	open_fx(&f, 3, (struct wr_policy_cfg){ 0 });
	start_all(&f);
	f.rcfg.rank_lost(f.rcfg.arg, 1, "its connection dropped");
	f.rcfg.rank_failed(f.rcfg.arg, 0, 1, "uncaught PeerDeadError: rank 1 is dead");
	end(&f, 0, W_EXITCODE(1, 0), 11.0);
	end(&f, 1, W_EXITCODE(3, 0), 11.0);
	run(&f);
	close_fx(&f, &o, said, sizeof(said));
	is_int(o.status, 3, "lost first, a peer then says it failed: the lost rank's status");
	ok(!says(said, "rank 0 (pid"), "and the peer has no line");

	/* Reaped in the same pass after the lost rank, before the stop went
	 * out: a peer whose wait failed for it is not blamed; a rank that
	 * fails on its own in that pass is. */
	open_fx(&f, 3, (struct wr_policy_cfg){ 0 });
	start_all(&f);
	f.rcfg.rank_lost(f.rcfg.arg, 1, "its connection dropped");
	f.rcfg.peer_dead(f.rcfg.arg, 2, 1);
	end(&f, 1, W_EXITCODE(3, 0), 11.0);
	end(&f, 2, W_EXITCODE(1, 0), 11.0);
	end(&f, 0, W_EXITCODE(1, 0), 11.0);
	run(&f);
	close_fx(&f, &o, said, sizeof(said));
	is_int(o.status, 3, "lost, reaped first: its status");
	ok(!says(said, "rank 2 (pid"), "the peer its death woke, reaped after it, has no line");
	ok(says(said, "worldrun: rank 0 (pid 1000 on hostA) exited with status 1"),
	   "a rank that failed on its own in that pass has its line");
}

/* Rank 1 is in world_stop() and fails rank 0's barrier ("rank 1 is
 * stopping"); rank 0 says it failed (an uncaught PeerDeadError). */
static void
stopper_fails_peer(struct fx *f)
{
	open_fx(f, 3, (struct wr_policy_cfg){ 0 });
	start_all(f);
	wr_reg_rank_stopping(f->reg.reg, 1, "world.stop", NULL);
	f->rcfg.peer_dead(f->rcfg.arg, 0, 1);
	f->rcfg.rank_failed(f->rcfg.arg, 0, 1, "uncaught PeerDeadError: rank 1 is stopping");
}

/*
 * A rank that stops while its peers wait for it in a barrier (sys.exit(3)
 * in Python) fails their waits at once: its own end decides the job, not
 * the failure of a peer it woke. A stop that ends well, or fails only
 * because of that peer (status 1, its stop's PeerDeadError), or takes
 * longer than WR_POLICY_STOPPER_S, leaves the peer's failure standing.
 */
static void
test_stopper_decides(void)
{
	struct fx f;
	struct wr_policy_outcome o;
	char said[4096];

	stopper_fails_peer(&f);
	ok(!sent(&f, -1, SIGTERM) && !sent(&f, 2, SIGTERM), "stopper: nobody is stopped yet");
	f.rcfg.peer_dead(f.rcfg.arg, 2, 1);
	f.rcfg.rank_failed(f.rcfg.arg, 2, 1, "uncaught PeerDeadError: rank 1 is stopping");
	end(&f, 0, W_EXITCODE(1, 0), 11.0);
	end(&f, 2, W_EXITCODE(1, 0), 11.0);
	f.rcfg.peer_dead(f.rcfg.arg, 1, 0);
	end(&f, 1, W_EXITCODE(3, 0), 11.1);
	run(&f);
	close_fx(&f, &o, said, sizeof(said));
	is_int(o.status, 3, "stopper: its own status, not the peer's");
	is_int(o.failed_rank, 1, "stopper: it is the failed rank");
	ok(says(said, "worldrun: rank 1 (pid 1001 on hostA) exited with status 3"), "stopper: its line");
	ok(!says(said, "rank 0 (pid"), "stopper: the peer it woke has no line");
	ok(!says(said, "rank 2 (pid"), "stopper: nor the second peer it woke");

	stopper_fails_peer(&f);
	end(&f, 0, W_EXITCODE(1, 0), 11.0);
	end(&f, 1, W_EXITCODE(0, 0), 11.1);
	run(&f);
	close_fx(&f, &o, said, sizeof(said));
	is_int(o.failed_rank, 0, "stopper ended well: the peer's failure stands");
	ok(says(said, "worldrun: rank 0 (pid 1000 on hostA) failed: uncaught PeerDeadError: "
		"rank 1 is stopping\n"), "stopper ended well: the peer's reason");

	stopper_fails_peer(&f);
	end(&f, 0, W_EXITCODE(1, 0), 11.0);
	f.rcfg.peer_dead(f.rcfg.arg, 1, 0);
	end(&f, 1, W_EXITCODE(1, 0), 11.1);
	run(&f);
	close_fx(&f, &o, said, sizeof(said));
	is_int(o.failed_rank, 0, "stop failed by the peer, status 1: the peer's failure stands");
	ok(!says(said, "rank 1 (pid"), "and the stopper has no line");

	stopper_fails_peer(&f);
	end(&f, 0, W_EXITCODE(1, 0), 11.0);
	run(&f);
	close_fx(&f, &o, said, sizeof(said));
	is_int(o.failed_rank, 0, "stopper never ends: the peer's failure stands");
	ok(sent(&f, -1, SIGTERM), "and the stopper is stopped");
}

/* Rank 1's stderr says @line, then it exits with @code: its failure line. */
static void
loader_case(const char *line, int code, char *said, size_t room)
{
	struct fx f;
	struct wr_policy_outcome o;

	open_fx(&f, 2, (struct wr_policy_cfg){ 0 });
	start_all(&f);
	emit(&f, (struct wr_ev){ .kind = WR_EV_OUTPUT, .rank = 1, .stream = WR_ERR,
				 .data = line, .len = strlen(line) });
	end(&f, 1, W_EXITCODE(code, 0), 11.0);
	run(&f);
	close_fx(&f, &o, said, room);
	is_int(o.status, code, "loader: the status passes through");
}

/* A program the dynamic loader could not start for want of a library
 * (status 127, its line on stderr): the failure line names the library;
 * nothing else is read as that. */
static void
test_loader_line(void)
{
	char said[4096];

	loader_case("./app: error while loading shared libraries: libworld.so.0: cannot open "
		    "shared object file: No such file or directory\n", 127, said, sizeof(said));
	ok(says(said, "worldrun: rank 1 (pid 1001 on hostA) exited with status 127 after 1.00 s: "
		"the dynamic loader could not find libworld.so.0 (LD_LIBRARY_PATH; from a build "
		"tree, meson devenv)\n"), "loader: libworld named, and how to find it");
	loader_case("x: error while loading shared libraries: libfoo.so.1: cannot open shared "
		    "object file\n", 127, said, sizeof(said));
	ok(says(said, "127 after 1.00 s: the dynamic loader could not find libfoo.so.1 "
		"(LD_LIBRARY_PATH)\n"), "loader: another library, LD_LIBRARY_PATH only");
	loader_case("x: error while loading shared libraries: libfoo.so.1: cannot open\n", 3,
		    said, sizeof(said));
	ok(says(said, "exited with status 3 after 1.00 s\n"), "loader: only status 127 is the loader's");
	loader_case("error while loading shared libraries: no colon after the name\n", 127, said,
		    sizeof(said));
	ok(says(said, "exited with status 127 after 1.00 s\n"), "loader: a line without a name is not it");
}

/* Gone from PMI without finalize, then exit 0: still a failure. */
static void
test_left_pmi(void)
{
	struct fx f;
	struct wr_policy_outcome o;
	char said[4096];

	open_fx(&f, 2, (struct wr_policy_cfg){ 0 });
	start_all(&f);
	emit(&f, (struct wr_ev){ .kind = WR_EV_LEFT, .rank = 0 });
	end(&f, 0, W_EXITCODE(0, 0), 11.0);
	run(&f);
	close_fx(&f, &o, said, sizeof(said));
	is_int(o.status, 1, "left PMI: exit 0 becomes 1");
	is_str(o.cause, "rank-left-pmi", "left PMI: its cause");
	ok(says(said, "left PMI without finalize, then exited with status 0"), "left PMI: the line");
}

/* SIGQUIT: a hang report, and the job goes on; USR1 goes to the ranks. */
static void
test_quit_and_usr1(void)
{
	struct fx f;
	struct wr_policy_outcome o;
	char said[4096];

	open_fx(&f, 2, (struct wr_policy_cfg){ 0 });
	start_all(&f);
	wr_policy_signal(f.p, SIGQUIT);
	wr_policy_signal(f.p, SIGUSR1);
	end(&f, 0, W_EXITCODE(0, 0), 11.0);
	end(&f, 1, W_EXITCODE(0, 0), 11.0);
	run(&f);
	close_fx(&f, &o, said, sizeof(said));
	is_int(o.status, -1, "SIGQUIT: the job goes on and ends well");
	ok(says(said, "no hang report"), "SIGQUIT: a hang report is tried");
	ok(sent(&f, -1, SIGUSR1), "SIGUSR1: forwarded");
	ok(!sent(&f, -1, SIGQUIT), "SIGQUIT: not forwarded without --forward-quit");
}

int
main(void)
{
	plan(93 - 1 + 3 * 2 + 5 + 5 + 3 + 2 + 11 + 6 + 3 + 7 + 5 + 3 + 3 + 5 - 23 + 3 + 12 + 8);
	test_all_well();
	test_rank_exits();
	test_exception();
	test_rank_killed();
	test_first_reaped();
	for (int code = 124; code <= 127; code++) {
		test_rank_passes(code);
	}
	test_timeout();
	test_start_failed();
	test_exec_failed(EACCES, 126, "not-executable");
	test_exec_failed(ENOENT, 127, "not-found");
	test_node_lost();
	test_signalled(SIGTERM);
	test_signalled(SIGINT);
	test_signal_during_start();
	test_signal_after_start();
	test_second_interrupt();
	test_grace();
	test_give_up();
	test_host_lost();
	test_start_done_error();
	test_end_is_quiet();
	test_keep_going();
	test_abort();
	test_rank_lost();
	test_lost_decides();
	test_rank_failed();
	test_stopper_decides();
	test_loader_line();
	test_left_pmi();
	test_quit_and_usr1();
	return done_testing();
}
