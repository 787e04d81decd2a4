/* SPDX-License-Identifier: MIT */
/*
 * stacks: the real tool gives a sleeping child's frames and leaves it
 * asleep; with no tool on PATH, -ENOENT; fake tools on PATH show the
 * rest: one that hangs is killed with its group at the timeout and
 * reaped, its output so far kept; a failure is -EIO, a ptrace refusal
 * -EPERM, a flood is cut; and no SIGCHLD and no wait4(-1) sees the tool.
 */
#include "stacks.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "procinfo.h"
#include "tap.h"

static volatile sig_atomic_t sigchld_seen;
static volatile int stealing, stolen;

static void
on_sigchld(int sig)
{
	sigchld_seen = 1;
}

/* Up to 5 s for @pid to be in @state ('-': gone), in 1 ms naps. */
static bool
await_state(pid_t pid, char state)
{
	const struct timespec nap = { 0, 1000 * 1000 };
	struct wr_procinfo pi;

	for (int i = 0; i < 5000; i++) {
		int rc = wr_procinfo_read(pid, &pi);

		if ((rc == 0 && pi.state == state) || (rc == -ESRCH && state == '-')) {
			return true;
		}
		nanosleep(&nap, NULL);
	}
	return false;
}

/* A fake eu-stack in @dir running @body. */
static void
fake_tool(const char *dir, const char *body)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/eu-stack", dir);
	f = fopen(path, "w");
	if (f != NULL) {
		fprintf(f, "#!/bin/sh\nPATH=/usr/bin:/bin\n%s\n", body);
		fclose(f);
		chmod(path, 0755);
	}
}

/* The tool found now (@who) gives @sleeper's stack, with frame #0. */
static void
check_frames(pid_t sleeper, const char *who)
{
	char *text = NULL;
	int rc = wr_stacks_capture(sleeper, 60000, &text);

	is_int(rc, 0, who);
	ok(text != NULL && strstr(text, "#0") != NULL, "stacks: its text has frame #0");
	if (rc != 0 && text != NULL) {
		printf("# %s\n", text);
	}
	free(text);
}

static void
check_real(pid_t sleeper)
{
	if (wr_stacks_tool() == NULL) {
		skip(3, "neither eu-stack nor gdb is installed");
		return;
	}
	check_frames(sleeper, "stacks: the stack of a sleeping child");
	ok(await_state(sleeper, 'S'), "stacks: the child sleeps on after it");
}

/* gdb, when it is the only tool on PATH. */
static void
check_gdb(const char *dir, pid_t sleeper)
{
	char link[256];

	snprintf(link, sizeof(link), "%s/gdb", dir);
	if (access("/usr/bin/gdb", X_OK) < 0 || symlink("/usr/bin/gdb", link) < 0) {
		skip(3, "no /usr/bin/gdb");
		return;
	}
	setenv("PATH", dir, 1);
	is_str(wr_stacks_tool(), "gdb", "stacks: gdb when there is no eu-stack");
	check_frames(sleeper, "stacks: gdb gives the sleeping child's stack");
	unlink(link);
}

/* As nobody, our own stack: refused ptrace. Run in a child of ours. */
static void
check_refused(void)
{
	pid_t parent = getpid(), pid;
	int status = -1;

	if (wr_stacks_tool() == NULL || getuid() != 0) {
		skip(1, "needs root (to become nobody) and eu-stack or gdb");
		return;
	}
	pid = fork();
	if (pid == 0) {
		char *text = NULL;

		if (setgid(65534) < 0 || setuid(65534) < 0) {
			_exit(2);
		}
		_exit(wr_stacks_capture(parent, 60000, &text) == -EPERM ? 0 : 1);
	}
	waitpid(pid, &status, 0);
	ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	   "stacks: ptrace refused is -EPERM");
}

static void
check_missing(const char *dir, pid_t sleeper)
{
	char *text = (char *)"unset";

	setenv("PATH", dir, 1);
	is_str(wr_stacks_tool(), NULL, "stacks: no tool on an empty PATH");
	is_int(wr_stacks_capture(sleeper, 1000, &text), -ENOENT,
	       "stacks: no tool is -ENOENT");
	ok(text == NULL, "stacks: and no text");
}

static void
check_timeout(const char *dir, pid_t sleeper)
{
	char body[512], bgfile[256], *text = NULL;
	long long t0 = wr_clock_ms();
	int bg = 0, rc;
	FILE *f;

	snprintf(bgfile, sizeof(bgfile), "%s/bg", dir);
	snprintf(body, sizeof(body),
		 "sleep 1000 &\necho $! > %s\necho partial\nexec sleep 1000", bgfile);
	fake_tool(dir, body);
	rc = wr_stacks_capture(sleeper, 300, &text);
	is_int(rc, -ETIMEDOUT, "stacks: a tool that hangs is -ETIMEDOUT");
	ok(wr_clock_ms() - t0 < 100000, "stacks: returned long before the tool would end");
	ok(text != NULL && strstr(text, "partial") != NULL,
	   "stacks: with what it wrote before the timeout");
	free(text);
	errno = 0;
	ok(waitpid(-1, NULL, WNOHANG | __WCLONE) < 0 && errno == ECHILD,
	   "stacks: the tool was reaped");
	f = fopen(bgfile, "r");
	if (f == NULL || fscanf(f, "%d", &bg) != 1) {
		bg = 0;
	}
	if (f != NULL) {
		fclose(f);
	}
	/* Reparented, it is someone else's zombie at most. */
	ok(bg > 0 && (await_state(bg, '-') || await_state(bg, 'Z')),
	   "stacks: the tool's group was killed with it");
}

static void *
steal(void *arg)
{
	const struct timespec nap = { 0, 1000 * 1000 };

	while (__atomic_load_n(&stealing, __ATOMIC_ACQUIRE)) {
		if (wait4(-1, NULL, WNOHANG, NULL) > 0) {
			__atomic_store_n(&stolen, 1, __ATOMIC_RELEASE);
		}
		nanosleep(&nap, NULL);
	}
	return NULL;
}

/* What worldrun's agent does: SIGCHLD, and wait4(-1) in a loop. */
static void
check_not_stolen(const char *dir, pid_t sleeper)
{
	struct sigaction sa = { .sa_handler = on_sigchld };
	char *text = NULL;
	pthread_t thread;
	int rc, started;

	sigaction(SIGCHLD, &sa, NULL);
	fake_tool(dir, "sleep 0.2\necho '#0  0x1 fake'");
	stealing = 1;
	started = pthread_create(&thread, NULL, steal, NULL) == 0;
	rc = wr_stacks_capture(sleeper, 60000, &text);
	__atomic_store_n(&stealing, 0, __ATOMIC_RELEASE);
	if (started) {
		pthread_join(thread, NULL);
	}
	is_int(rc, 0, "stacks: a tool's exit status reaches us with a wait4(-1) loop running");
	is_str(text, "#0  0x1 fake\n", "stacks: and its text");
	ok(started && !stolen, "stacks: wait4(-1) never saw the tool");
	ok(!sigchld_seen, "stacks: no SIGCHLD for it");
	free(text);
	signal(SIGCHLD, SIG_DFL);
}

/* A fake tool running @body gives @want and a text holding @has. */
static void
check_fake(const char *dir, pid_t sleeper, const char *body, int want,
	   const char *has, const char *what)
{
	char *text = NULL;

	fake_tool(dir, body);
	is_int(wr_stacks_capture(sleeper, 60000, &text), want, what);
	ok(text != NULL && strstr(text, has) != NULL, "stacks: with its text: %s", has);
	free(text);
}

static void
check_cut(const char *dir, pid_t sleeper)
{
	char *text = NULL;
	size_t note = strlen("... (cut)\n");

	fake_tool(dir, "yes '#0 frame' | head -c 200000");
	is_int(wr_stacks_capture(sleeper, 60000, &text), 0, "stacks: a long stack");
	ok(text != NULL && strlen(text) == WR_STACKS_MAX + note &&
	   strcmp(text + WR_STACKS_MAX, "... (cut)\n") == 0,
	   "stacks: is cut at WR_STACKS_MAX, with '... (cut)'");
	free(text);
}

static void
remove_dir(const char *dir)
{
	const char *files[] = { "eu-stack", "bg" };
	char path[256];

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		unlink(path);
	}
	rmdir(dir);
}

int
main(void)
{
	char dir[] = "/tmp/test-stacks.XXXXXX", *text = NULL;
	pid_t sleeper, gone;

	plan(26);
	sleeper = fork();
	if (sleeper == 0) {
		for (;;) {
			pause();
		}
	}
	gone = fork();
	if (gone == 0) {
		_exit(0);
	}
	waitpid(gone, NULL, 0);
	if (sleeper < 0 || mkdtemp(dir) == NULL || !await_state(sleeper, 'S')) {
		skip_all("cannot start a sleeping child or make a directory");
	}
	is_int(wr_stacks_capture(gone, 1000, &text), -ESRCH, "stacks: a pid gone is -ESRCH");
	check_real(sleeper);
	check_refused();
	check_missing(dir, sleeper);
	check_gdb(dir, sleeper);
	check_timeout(dir, sleeper);
	check_not_stolen(dir, sleeper);
	check_fake(dir, sleeper, "echo 'eu-stack: broken' >&2; exit 1", -EIO, "broken",
		   "stacks: a tool's failure is -EIO");
	check_fake(dir, sleeper, "echo 'ptrace: Operation not permitted.'", -EPERM,
		   "not permitted", "stacks: a refusal though it exits 0 is -EPERM");
	check_cut(dir, sleeper);
	kill(sleeper, SIGKILL);
	waitpid(sleeper, NULL, 0);
	remove_dir(dir);
	return done_testing();
}
