/* SPDX-License-Identifier: MIT */
/*
 * procinfo: this process reads as running; children stopped by SIGSTOP,
 * exited but not reaped, and asleep read as T, Z and S; a reaped pid is
 * -ESRCH; a name with spaces and ')' parses from the last ')'.
 */
#include "procinfo.h"

#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tap.h"

/* Up to 5 s for @pid to reach @state, in 1 ms naps; its last state. */
static char
await_state(pid_t pid, char state)
{
	const struct timespec nap = { 0, 1000 * 1000 };
	struct wr_procinfo pi = { .state = '?' };

	for (int i = 0; i < 5000; i++) {
		if (wr_procinfo_read(pid, &pi) == 0 && pi.state == state) {
			break;
		}
		nanosleep(&nap, NULL);
	}
	return pi.state;
}

static pid_t
start_sleeper(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		for (;;) {
			pause();
		}
	}
	return pid;
}

static void
check_children(void)
{
	pid_t sleeper = start_sleeper(), stopped = start_sleeper(), zombie = fork();
	struct wr_procinfo pi;
	int rc;

	if (zombie == 0) {
		_exit(0);
	}
	if (!ok(sleeper > 0 && stopped > 0 && zombie > 0, "procinfo: children started")) {
		return;
	}
	is_int(await_state(sleeper, 'S'), 'S', "procinfo: a child in pause() is S");
	rc = wr_procinfo_read(sleeper, &pi);
	ok(rc == 0 && pi.ppid == getpid() && pi.threads == 1 && pi.cpu_s >= 0,
	   "procinfo: with our pid as its parent, one thread, its CPU time");
	kill(stopped, SIGSTOP);
	is_int(await_state(stopped, 'T'), 'T', "procinfo: a child after SIGSTOP is T");
	is_int(await_state(zombie, 'Z'), 'Z', "procinfo: an exited child not yet reaped is Z");
	waitpid(zombie, NULL, 0);
	is_int(wr_procinfo_read(zombie, &pi), -ESRCH, "procinfo: a reaped child is -ESRCH");
	kill(sleeper, SIGKILL);
	kill(stopped, SIGKILL);
	waitpid(sleeper, NULL, 0);
	waitpid(stopped, NULL, 0);
}

static void
check_parse(void)
{
	struct wr_procinfo pi;
	long tck = sysconf(_SC_CLK_TCK);
	const char *line = "42 (a) b) S 7 42 42 0 -1 4194560 100 0 0 0 "
			   "300 200 0 0 20 0 3 0 1000 2000 300\n";

	is_int(wr_procinfo_parse(line, &pi), 0, "procinfo: a name with ') ' parses");
	is_str(pi.comm, "a) b", "procinfo: the name is up to the last ')'");
	ok(pi.state == 'S' && pi.ppid == 7 && pi.pgrp == 42 && pi.threads == 3,
	   "procinfo: state, parent, group and threads after the name");
	ok(pi.cpu_s == 500.0 / (double)tck, "procinfo: CPU is utime + stime in seconds");
	is_int(wr_procinfo_parse("42 (cut", &pi), -EPROTO, "procinfo: no ')' is -EPROTO");
	is_int(wr_procinfo_parse("42 (x) S 1", &pi), -EPROTO,
	       "procinfo: a line cut short is -EPROTO");
}

int
main(void)
{
	struct wr_procinfo pi;

	plan(17);
	is_int(wr_procinfo_read(getpid(), &pi), 0, "procinfo: reads this process");
	ok(pi.state == 'R', "procinfo: reading itself, a process is R (got %c)", pi.state);
	is_str(wr_procinfo_state_name('R'), "running", "procinfo: R is running");
	is_str(wr_procinfo_state_name('t'), "traced", "procinfo: t is traced");
	is_str(wr_procinfo_state_name('?'), "unknown", "procinfo: an unknown letter");
	check_children();
	check_parse();
	return done_testing();
}
