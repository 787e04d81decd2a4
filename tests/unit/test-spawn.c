/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for spawn: a child gets exactly the fds, environment, working
 * directory, limits, signal state and session it is given; failures before
 * exec arrive on err_fd with their stage and errno; exit statuses follow
 * wr_wire_start_status. All of it twice: with vfork, and through slots (clone
 * with a shared fd table), there also from 4 threads at once.
 */
#include "spawn.h"
#include "tap.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define WAIT_MS 20000 /* bound on every wait; the machine may be loaded */

extern char **environ;

#define PLAN 47

static char top[] = "/tmp/wr-test-spawn-XXXXXX";

/* NULL: starts vfork; else they go through these slots (a second pass). */
static struct wr_spawn_slots *slots;

/* What to start; unset fields get defaults in run(). */
struct job {
	const char *path;
	char *const *argv;
	char *const *envp;
	const char *wdir;
	const char *input;          /* written to the child's stdin */
	const sigset_t *nondefault; /* NULL: empty set */
	const struct rlimit *nofile;
	pid_t parent;               /* 0: us */
	int rank;
};

/* What came back. */
struct outcome {
	int rc;             /* of wr_spawn_start */
	pid_t pid;
	int status;         /* wait status, -1 if it did not end in time */
	bool failed;        /* a wr_spawn_failure arrived */
	struct wr_spawn_failure f;
	char out[4096];
	char err[4096];
};

static void
sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/* Read @fd to EOF into @buf (NUL-terminated), each wait bounded. */
static void
slurp(int fd, char *buf, size_t size)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	size_t len = 0;

	while (len < size - 1 && poll(&pfd, 1, WAIT_MS) == 1) {
		ssize_t n = read(fd, buf + len, size - 1 - len);

		if (n <= 0) {
			break;
		}
		len += (size_t)n;
	}
	buf[len] = '\0';
}

/* waitpid with a bound: SIGKILL and -1 if the child does not end. */
static int
wait_child(pid_t pid)
{
	int status;

	for (int i = 0; i < WAIT_MS / 10; i++) {
		if (waitpid(pid, &status, WNOHANG) == pid) {
			return status;
		}
		sleep_ms(10);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return -1;
}

static void
run(const struct job *j, struct outcome *o)
{
	char *sh_argv[] = { "/bin/sh", (char *)j->path, NULL };
	sigset_t none;
	int in[2], out[2], err[2], fail[2];
	struct wr_spawn sp = {
		.rank = j->rank, .path = j->path, .argv = j->argv,
		.sh_argv = sh_argv, .envp = j->envp ? j->envp : environ,
		.wdir = j->wdir, .nondefault = j->nondefault, .nofile = j->nofile,
		.parent = j->parent ? j->parent : getpid(),
	};
	ssize_t n;

	*o = (struct outcome){ .status = -1 };
	sigemptyset(&none);
	if (sp.nondefault == NULL) {
		sp.nondefault = &none;
	}
	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 ||
	    pipe2(err, O_CLOEXEC) < 0 || pipe2(fail, O_CLOEXEC) < 0) {
		printf("# pipe2: %s\n", strerror(errno));
		return;
	}
	sp.fd[0] = in[0];
	sp.fd[1] = out[1];
	sp.fd[2] = err[1];
	sp.err_fd = fail[1];
	o->rc = wr_spawn_start_slots(&sp, slots, &o->pid);
	close(in[0]);
	close(out[1]);
	close(err[1]);
	close(fail[1]);
	if (j->input != NULL &&
	    write(in[1], j->input, strlen(j->input)) != (ssize_t)strlen(j->input)) {
		printf("# write to the child's stdin: %s\n", strerror(errno));
	}
	close(in[1]);
	/* EOF on the failure pipe: the child exec'd or exited. */
	n = poll(&(struct pollfd){ .fd = fail[0], .events = POLLIN }, 1, WAIT_MS);
	n = n == 1 ? read(fail[0], &o->f, sizeof(o->f)) : -1;
	o->failed = n == (ssize_t)sizeof(o->f);
	close(fail[0]);
	slurp(out[0], o->out, sizeof(o->out));
	slurp(err[0], o->err, sizeof(o->err));
	close(out[0]);
	close(err[0]);
	if (o->rc == 0) {
		o->status = wait_child(o->pid);
	}
}

static bool
exited(int status, int code)
{
	return status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == code;
}

#define SH(script) ((char *const[]){ "sh", "-c", script, NULL })

static void
test_runs(void)
{
	struct outcome o;

	run(&(struct job){ .path = "/bin/sh",
			   .argv = SH("read l; echo \"out $l\"; "
				      "echo \"err $l\" >&2; exit 7"),
			   .input = "hello\n" },
	    &o);
	is_int(o.rc, 0, "spawn: start succeeds");
	ok(!o.failed, "spawn: a successful exec reports no failure");
	ok(exited(o.status, 7), "spawn: the child's exit status comes back");
	is_str(o.out, "out hello\n",
	       "spawn: fd[0] and fd[1] become the child's stdin and stdout");
	is_str(o.err, "err hello\n", "spawn: fd[2] becomes the child's stderr");

	run(&(struct job){ .path = "/bin/sh",
			   .argv = SH("echo \"$FOO ${HOME-unset}\""),
			   .envp = (char *const[]){ "FOO=bar", NULL } },
	    &o);
	is_str(o.out, "bar unset\n",
	       "spawn: the child gets exactly the given environment");

	run(&(struct job){ .path = "/bin/sh", .argv = SH("pwd"), .wdir = top },
	    &o);
	is_str(strtok(o.out, "\n"), top, "spawn: the child starts in wdir");

	run(&(struct job){ .path = "/bin/sh", .argv = SH("ulimit -n"),
			   .nofile = &(struct rlimit){ 77, 77 } },
	    &o);
	is_str(o.out, "77\n", "spawn: the child gets the given RLIMIT_NOFILE");
}

static void
test_failures(void)
{
	char noexec[PATH_MAX];
	struct outcome o;
	int fd;

	run(&(struct job){ .path = "/nonexistent/prog",
			   .argv = (char *const[]){ "prog", NULL }, .rank = 5 },
	    &o);
	ok(o.failed && o.f.stage == WR_SPAWN_EXEC && o.f.err == ENOENT &&
		   o.f.rank == 5,
	   "spawn: a missing program reports stage EXEC, ENOENT and its rank");
	ok(exited(o.status, 127), "spawn: a missing program exits 127");

	snprintf(noexec, sizeof(noexec), "%s/noexec", top);
	fd = open(noexec, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	close(fd);
	run(&(struct job){ .path = noexec,
			   .argv = (char *const[]){ "noexec", NULL } },
	    &o);
	ok(o.failed && o.f.stage == WR_SPAWN_EXEC && o.f.err == EACCES,
	   "spawn: a file without x bits reports stage EXEC, EACCES");
	ok(exited(o.status, 126), "spawn: a file without x bits exits 126");

	run(&(struct job){ .path = "/bin/sh", .argv = SH("echo ran"),
			   .wdir = "/nonexistent" },
	    &o);
	ok(o.failed && o.f.stage == WR_SPAWN_CHDIR && o.f.err == ENOENT,
	   "spawn: a bad wdir reports stage CHDIR, ENOENT");
	ok(exited(o.status, 125) && o.out[0] == '\0',
	   "spawn: a bad wdir exits 125 without running the program");

	run(&(struct job){ .path = "/bin/sh", .argv = SH("echo ran"),
			   .parent = 1 },
	    &o);
	ok(!o.failed && exited(o.status, 125) && o.out[0] == '\0',
	   "spawn: a child whose launcher is already gone exits 125 "
	   "without running the program");
}

static void
test_script_without_shebang(void)
{
	char script[PATH_MAX];
	struct outcome o;
	int fd;

	snprintf(script, sizeof(script), "%s/script", top);
	fd = open(script, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	if (fd < 0 || write(fd, "echo \"no shebang $1\"\n", 21) != 21) {
		printf("# cannot write %s\n", script);
	}
	close(fd);
	run(&(struct job){ .path = script,
			   .argv = (char *const[]){ "script", NULL } },
	    &o);
	ok(!o.failed && exited(o.status, 0) &&
		   strcmp(o.out, "no shebang \n") == 0,
	   "spawn: a script without #! runs with /bin/sh, as execvp does");
}

/* Parse "pid (comm) state ppid pgrp session" from a /proc/PID/stat line. */
static bool
parse_stat(const char *line, int *pid, int *ppid, int *pgrp, int *sid)
{
	const char *close_paren = strrchr(line, ')');

	return sscanf(line, "%d", pid) == 1 && close_paren != NULL &&
	       sscanf(close_paren + 1, " %*c %d %d %d", ppid, pgrp, sid) == 3;
}

static void
test_process_state(void)
{
	struct outcome o;
	struct sigaction ign = { .sa_handler = SIG_IGN }, old_usr2;
	sigset_t usr1, reset, old_mask;
	int pid = 0, ppid = 0, pgrp = 0, sid = 0;
	unsigned long long blocked = 1, ignored = 1;
	int extra;

	run(&(struct job){ .path = "/bin/sh",
			   .argv = SH("read -r l < /proc/$$/stat; echo \"$l\"") },
	    &o);
	ok(parse_stat(o.out, &pid, &ppid, &pgrp, &sid) && pid == o.pid &&
		   pgrp == pid && sid == pid,
	   "spawn: the child is a session and process group leader");
	is_int(ppid, getpid(), "spawn: the child's parent is the launcher");

	/* A stray fd without close-on-exec must not reach the child. */
	extra = fcntl(0, F_DUPFD, 40);
	run(&(struct job){ .path = "/bin/sh",
			   .argv = SH("for f in 3 4 5 6 7 8 9 40; do "
				      "[ -e /proc/$$/fd/$f ] && echo $f; done; "
				      "true") },
	    &o);
	is_str(o.out, "", "spawn: the child has no fd beyond 0-2");
	close(extra);

	/* Blocked and ignored signals in the launcher. */
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigprocmask(SIG_BLOCK, &usr1, &old_mask);
	sigaction(SIGUSR2, &ign, &old_usr2);
	sigemptyset(&reset);
	sigaddset(&reset, SIGUSR2);
	run(&(struct job){ .path = "/bin/sh",
			   .argv = SH("while read -r k v; do case $k in "
				      "SigBlk:|SigIgn:) echo $v;; esac; "
				      "done < /proc/$$/status"),
			   .nondefault = &reset },
	    &o);
	sigprocmask(SIG_SETMASK, &old_mask, NULL);
	sigaction(SIGUSR2, &old_usr2, NULL);
	ok(sscanf(o.out, "%llx %llx", &blocked, &ignored) == 2 && blocked == 0,
	   "spawn: the child starts with an empty signal mask");
	ok((ignored & 1ull << (SIGUSR2 - 1)) == 0,
	   "spawn: a signal in nondefault is reset to its default disposition");
}

static void
test_parent_death(void)
{
	char *const argv[] = { "sleep", "60", NULL };
	int sync[2], null, status = -1;
	pid_t launcher, rank = 0;

	/* A launcher that starts a rank and dies: the rank must follow. */
	if (pipe(sync) < 0) {
		printf("# pipe: %s\n", strerror(errno));
	}
	launcher = fork();
	if (launcher == 0) {
		struct wr_spawn sp = {
			.path = "/bin/sleep", .argv = argv, .envp = environ,
			.err_fd = -1, .parent = getpid(),
		};
		sigset_t none;

		sigemptyset(&none);
		sp.nondefault = &none;
		null = open("/dev/null", O_RDWR | O_CLOEXEC);
		sp.fd[0] = sp.fd[1] = sp.fd[2] = null;
		if (wr_spawn_start(&sp, &rank) < 0 ||
		    write(sync[1], &rank, sizeof(rank)) != sizeof(rank)) {
			_exit(1);
		}
		/* Let the rank arm PDEATHSIG before we go: wait for its exec. */
		for (int i = 0; i < WAIT_MS / 10; i++) {
			char path[64], exe[PATH_MAX];
			ssize_t n;

			snprintf(path, sizeof(path), "/proc/%d/exe", (int)rank);
			n = readlink(path, exe, sizeof(exe) - 1);
			if (n > 0 && (exe[n] = '\0', strstr(exe, "sleep") != NULL)) {
				break;
			}
			sleep_ms(10);
		}
		_exit(0);
	}
	close(sync[1]);
	if (launcher < 0 || read(sync[0], &rank, sizeof(rank)) != sizeof(rank)) {
		rank = 0;
	}
	close(sync[0]);
	waitpid(launcher, NULL, 0);
	for (int i = 0; rank > 0 && i < WAIT_MS / 10; i++) {
		/* As subreaper, the orphaned rank is ours to reap. */
		if (waitpid(rank, &status, WNOHANG) == rank) {
			break;
		}
		sleep_ms(10);
	}
	ok(rank > 0 && status != -1 && WIFSIGNALED(status) &&
		   WTERMSIG(status) == SIGKILL,
	   "spawn: the child gets SIGKILL when its launcher dies");
	if (rank > 0 && status == -1) {
		kill(rank, SIGKILL);
		waitpid(rank, NULL, 0);
	}
}

static void
test_status(void)
{
	ok(wr_wire_start_status(WR_SPAWN_EXEC, ENOENT) == 127 &&
		   wr_wire_start_status(WR_SPAWN_EXEC, ENOTDIR) == 127,
	   "spawn: status 127 when exec finds nothing (ENOENT, ENOTDIR)");
	ok(wr_wire_start_status(WR_SPAWN_EXEC, EACCES) == 126 &&
		   wr_wire_start_status(WR_SPAWN_EXEC, ENOEXEC) == 126,
	   "spawn: status 126 when exec finds something it cannot run");
	ok(wr_wire_start_status(WR_SPAWN_CHDIR, ENOENT) == 125 &&
		   wr_wire_start_status(WR_SPAWN_SETUP, EMFILE) == 125,
	   "spawn: status 125 when the child fails before exec");
}

/* Threads that start children at once, more than there are slot sets. */
static void *
start_many(void *arg)
{
	long *bad = arg;
	char word[32];
	struct outcome o;

	for (int i = 0; i < 15; i++) {
		snprintf(word, sizeof(word), "w%d", i);
		run(&(struct job){ .path = "/bin/echo",
				   .argv = (char *const[]){ "echo", word, NULL } }, &o);
		*bad += o.rc != 0 || o.failed || !exited(o.status, 0) ||
			strncmp(o.out, word, strlen(word)) != 0;
	}
	return NULL;
}

static void
test_slots_shared(void)
{
	pthread_t t[4];
	long bad[4] = { 0 };

	for (int i = 0; i < 4; i++) {
		pthread_create(&t[i], NULL, start_many, &bad[i]);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
	}
	is_int(bad[0] + bad[1] + bad[2] + bad[3], 0,
	       "spawn: 4 threads start 60 children through 2 sets of slots");
}

static void
remove_tree(void)
{
	static const char *const files[] = { "noexec", "script" };
	char path[PATH_MAX];

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", top, files[i]);
		unlink(path);
	}
	rmdir(top);
}

int
main(void)
{
	if (mkdtemp(top) == NULL) {
		skip_all("mkdtemp under /tmp failed");
	}
	/* An orphaned rank comes to us, so we can see how it died. */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0) {
		skip_all("cannot become a child subreaper");
	}
	plan(PLAN);
	test_runs();
	test_failures();
	test_script_without_shebang();
	test_process_state();
	test_parent_death();
	test_status();
	if (wr_spawn_slots_open(2, &slots) < 0) {
		skip(PLAN - tap.run, "no slots in this build (ThreadSanitizer)");
		remove_tree();
		return done_testing();
	}
	printf("# again, through slots (clone with a shared fd table)\n");
	test_runs();
	test_failures();
	test_script_without_shebang();
	test_process_state();
	test_slots_shared();
	wr_spawn_slots_close(slots);
	remove_tree();
	return done_testing();
}
