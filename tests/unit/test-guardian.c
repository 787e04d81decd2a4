/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for guardian: at close it SIGKILLs every watched process group
 * (a rank and its grandchild; their zombies do not hold it up), spares a
 * group it was told to forget, and
 * removes the job directory it was given with what is in it (a link is
 * removed, not followed); it ignores signals in its own session.
 */
#include "guardian.h"
#include "jobdir.h"
#include "tap.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define WAIT_MS 20000 /* bound on every wait; the machine may be loaded */

static void
sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* In a forked child: become "sleep 60" with no fd of ours but 0-2. */
static void __attribute__((noreturn))
exec_sleep(void)
{
	int null = open("/dev/null", O_RDWR);

	for (int i = 0; i < 3 && null >= 0; i++) {
		dup2(null, i);
	}
	execl("/bin/sleep", "sleep", "60", (char *)NULL);
	_exit(127);
}

/*
 * Start a rank-like process: a session leader (so its pgid is its pid),
 * with a grandchild in its group if @grandchild is not NULL. Returns once
 * both exist, or -1.
 */
static pid_t
start_group(pid_t *grandchild)
{
	int sync[2];
	pid_t pid, gc = 0;

	if (pipe2(sync, O_CLOEXEC) < 0) {
		return -1;
	}
	pid = fork();
	if (pid == 0) {
		setsid();
		if (grandchild != NULL) {
			gc = fork();
			if (gc == 0) {
				exec_sleep();
			}
		}
		if (write(sync[1], &gc, sizeof(gc)) != sizeof(gc)) {
			_exit(126);
		}
		exec_sleep();
	}
	close(sync[1]);
	if (pid > 0 && read(sync[0], &gc, sizeof(gc)) != sizeof(gc)) {
		pid = -1;
	}
	close(sync[0]);
	if (grandchild != NULL) {
		*grandchild = gc;
	}
	return pid;
}

/*
 * Wait for @pid to end and return its wait status, or -1 after WAIT_MS.
 * As subreaper we also reap an orphaned grandchild once it is ours.
 */
static int
reap(pid_t pid)
{
	int status;

	for (int i = 0; i < WAIT_MS / 10; i++) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid) {
			return status;
		}
		if (r < 0 && errno != ECHILD) {
			return -1;
		}
		sleep_ms(10);
	}
	return -1;
}

static bool
killed(int status)
{
	return status != -1 && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
}

/* The guardian's mask of ignored signals, from /proc; 0 if unreadable. */
static unsigned long long
ignored_mask(pid_t pid)
{
	char path[64], line[256];
	unsigned long long mask = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
		if (sscanf(line, "SigIgn: %llx", &mask) == 1) {
			break;
		}
	}
	if (f != NULL) {
		fclose(f);
	}
	return mask;
}

static bool
stdout_is_devnull(pid_t pid)
{
	char path[64], target[PATH_MAX];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/fd/1", (int)pid);
	n = readlink(path, target, sizeof(target) - 1);
	if (n < 0) {
		return false;
	}
	target[n] = '\0';
	return strcmp(target, "/dev/null") == 0;
}

static void
test_setup(const struct wr_guardian *g)
{
	const unsigned long long want = 1ull << (SIGHUP - 1) |
					1ull << (SIGINT - 1) |
					1ull << (SIGTERM - 1) |
					1ull << (SIGPIPE - 1);
	bool ready = false;

	/* The guardian sets itself up after fork: wait for it, bounded. */
	for (int i = 0; i < WAIT_MS / 10 && !ready; i++) {
		ready = (ignored_mask(g->pid) & want) == want &&
			getsid(g->pid) == g->pid && stdout_is_devnull(g->pid);
		if (!ready) {
			sleep_ms(10);
		}
	}
	ok((ignored_mask(g->pid) & want) == want,
	   "guardian: ignores SIGHUP, SIGINT, SIGTERM and SIGPIPE");
	ok(getsid(g->pid) == g->pid,
	   "guardian: runs in its own session, out of reach of our group");
	ok(stdout_is_devnull(g->pid),
	   "guardian: does not hold our stdout (its fd 1 is /dev/null)");
}

static void
test_close(void)
{
	char dir[] = "/tmp/wr-test-guardian-XXXXXX";
	char file[PATH_MAX], sub[PATH_MAX], link[PATH_MAX];
	struct wr_guardian g = { .pid = -1, .fd = -1 };
	struct wr_jobdir job = { 0 }, toolong = { 0 };
	pid_t rank, grandchild = 0, spared, other;
	double t0;
	int fd;

	if (mkdtemp(dir) == NULL) {
		printf("# mkdtemp: %s\n", strerror(errno));
	}
	/* The job directory holds a subdirectory and a link to a file outside. */
	snprintf(file, sizeof(file), "%s/outside", dir);
	fd = open(file, O_WRONLY | O_CREAT, 0600);
	close(fd);
	wr_jobdir_make(&job, dir, "test");
	if (snprintf(sub, sizeof(sub), "%s/sub", job.path) < PATH_MAX &&
	    snprintf(link, sizeof(link), "%s/link", sub) < PATH_MAX) {
		mkdir(sub, 0700);
		symlink(file, link);
	}
	memset(toolong.path, 'a', PIPE_BUF);
	toolong.path[0] = '/';

	is_int(wr_guardian_open(&g, 4), 0, "guardian: opens with 4 slots");
	test_setup(&g);
	spared = start_group(NULL);
	rank = start_group(&grandchild);
	other = start_group(NULL);
	ok(spared > 0 && rank > 0 && grandchild > 0 && other > 0,
	   "guardian: test groups started (a rank with a grandchild, two more)");
	ok(wr_guardian_watch(&g, 0, spared) == 0 && wr_guardian_watch(&g, 1, rank) == 0 &&
		   wr_guardian_forget(&g, 0) == 0,
	   "guardian: watch and forget succeed");
	/* As a rank does before its exec: straight into the shared slot. */
	ok(wr_guardian_slot(&g, 3) != NULL && wr_guardian_slot(&g, 4) == NULL,
	   "guardian: a slot per rank, none beyond");
	__atomic_store_n(wr_guardian_slot(&g, 3), other, __ATOMIC_SEQ_CST);
	is_int(wr_guardian_watch(&g, 4, other), -ERANGE,
	       "guardian: watch refuses a slot beyond the table");
	is_int(wr_guardian_remove_dir(&g, &job), 0,
	       "guardian: remove_dir succeeds for a job directory");
	is_int(wr_guardian_remove_dir(&g, &toolong), -ENAMETOOLONG,
	       "guardian: remove_dir refuses a path that does not fit in PIPE_BUF");
	ok(access(link, F_OK) == 0, "guardian: the directory stays while we are alive");

	t0 = now_s();
	wr_guardian_close(&g);
	/* The killed rank and grandchild stay zombies until we reap them
	 * below: they must not hold the guardian for its 2 s of waiting. */
	ok(now_s() - t0 < 1.5, "guardian: zombies of its groups do not hold its close up");
	ok(g.fd == -1 && g.pid == -1, "guardian: close resets the handle");
	ok(killed(reap(rank)), "guardian: kills a watched rank at close");
	ok(killed(reap(grandchild)),
	   "guardian: kills the watched rank's grandchild in its group");
	ok(killed(reap(other)),
	   "guardian: kills a group a process stored in its slot itself");
	ok(waitpid(spared, NULL, WNOHANG) == 0 && kill(spared, 0) == 0,
	   "guardian: spares a group it was told to forget");
	kill(spared, SIGKILL);
	reap(spared);
	ok(access(job.path, F_OK) < 0 && errno == ENOENT,
	   "guardian: removes the job directory with what it holds at close");
	ok(access(file, F_OK) == 0, "guardian: a link's target outside stays");
	is_int(wr_guardian_watch(&g, 1, 1), -EBADF,
	       "guardian: watch after close fails with EBADF");
	wr_guardian_close(&g);
	wr_guardian_close(NULL);
	ok(g.fd == -1 && g.pid == -1,
	   "guardian: close accepts a closed handle and NULL");
	wr_jobdir_remove(&job); /* left only if a test above failed */
	unlink(file);
	rmdir(dir);
}

int
main(void)
{
	/* Orphaned grandchildren come to us, so we can see how they died. */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0) {
		skip_all("cannot become a child subreaper");
	}
	plan(21);
	test_close();
	return done_testing();
}
