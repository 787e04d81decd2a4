/* SPDX-License-Identifier: MIT */
/*
 * A world without worldrun (world_open_with()): processes forked here
 * each open it with their own rank, as Machin's programs do, at an
 * address on loopback; rank 0's process hosts the registry. Each child
 * runs one part and exits with 0 or the number of the step that failed.
 */
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "embed.h"
#include "tap.h"
#include "world.h"

static char address[64];
static char secret_file[512];
static int port;

/* A port nobody listens on now (a race with other programs is possible,
 * and harmless here: the test would fail, not pass). */
static int
free_port(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sin);
	int fd = socket(AF_INET, SOCK_STREAM, 0), p;

	bind(fd, (struct sockaddr *)&sin, sizeof(sin));
	getsockname(fd, (struct sockaddr *)&sin, &len);
	p = ntohs(sin.sin_port);
	close(fd);
	return p;
}

static void
new_address(void)
{
	port = free_port();
	snprintf(address, sizeof(address), "tcp://localhost:%d", port);
	snprintf(secret_file, sizeof(secret_file), "%s/worldrun/world-127.0.0.1-%d",
		 getenv("XDG_RUNTIME_DIR"), port);
}

static void
pause_ms(int ms)
{
	nanosleep(&(struct timespec){ ms / 1000, (ms % 1000) * 1000000L }, NULL);
}

static struct world *
open_as(int rank, int size)
{
	struct world_options o = { .rank = rank, .size = size, .address = address };
	struct world *w = NULL;

	return world_open_with(&o, &w) == 0 ? w : NULL;
}

/* The world forms, its key/value space and barriers work, every rank
 * names the same job, and it stops well. */
static int
part_form(int rank, int delay_ms)
{
	struct world *w;
	char key[16];
	void *v = NULL;
	size_t len;

	pause_ms(delay_ms);
	w = open_as(rank, 3);
	if (w == NULL || world_rank(w) != rank || world_size(w) != 3) {
		return 1;
	}
	if (strlen(world_jobid(w)) != 12) {
		return 2;
	}
	snprintf(key, sizeof(key), "job.%d", rank);
	if (world_kv_set(w, key, world_jobid(w), 12) < 0 ||
	    world_barrier(w, "set", 60000) < 0) {
		return 3;
	}
	for (int r = 0; r < 3; r++) {
		snprintf(key, sizeof(key), "job.%d", r);
		if (world_kv_get(w, key, &v, &len, 0) < 0 || len != 12 ||
		    memcmp(v, world_jobid(w), 12) != 0) {
			return 4;
		}
		free(v);
	}
	return world_stop(w, 60000) == 0 ? 0 : 5;
}

/* Rank @dies leaves without a word after the first barrier; the others
 * wait in a second one: WORLD_EPEERDEAD naming it, or, for rank 0,
 * WORLD_EREGISTRY saying that rank 0 is gone. */
static int
part_death(int rank, int dies)
{
	struct world *w = open_as(rank, 3);
	const struct world_failure *f;
	int rc = w != NULL ? world_barrier(w, "a", 60000) : -1;

	/* Rank 0 may go before the others hear that "a" is over: then "a" fails. */
	if (rc < 0 && !(dies == 0 && rc == WORLD_EREGISTRY)) {
		return 1;
	}
	if (rank == dies) {
		_exit(0);
	}
	rc = rc < 0 ? rc : world_barrier(w, "b", 60000);
	f = world_last_failure();
	if (dies != 0 && (rc != WORLD_EPEERDEAD || f->rank != dies)) {
		return 2;
	}
	if (dies == 0 && (rc != WORLD_EREGISTRY ||
			  strstr(f->message, "rank 0, which hosted this world's registry, "
					     "is gone") == NULL)) {
		return 3;
	}
	world_abort(w);
	return 0;
}

/* Run @part(rank, @arg(rank)) in @n children; their exit statuses. */
static void
run(int n, int (*part)(int, int), const int *args, int *status)
{
	pid_t pids[8];

	fflush(stdout);
	for (int r = 0; r < n; r++) {
		pids[r] = fork();
		if (pids[r] == 0) {
			alarm(120);
			_exit(part(r, args != NULL ? args[r] : 0));
		}
	}
	for (int r = 0; r < n; r++) {
		int ws = 0;

		waitpid(pids[r], &ws, 0);
		status[r] = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
	}
}

static bool
all_zero(const int *st, int n)
{
	for (int i = 0; i < n; i++) {
		if (st[i] != 0) {
			printf("# rank %d ended with %d\n", i, st[i]);
			return false;
		}
	}
	return true;
}

/* @part in three processes at a new address: all end well. */
static void
three(int (*part)(int, int), const int *args, const char *what)
{
	int st[3];

	new_address();
	run(3, part, args, st);
	ok(all_zero(st, 3), "%s", what);
}

static void
test_forms(void)
{
	int st[3], late[3] = { 500, 0, 0 };
	struct stat sb;

	new_address();
	run(3, part_form, NULL, st);
	ok(all_zero(st, 3), "forms: three processes, one job, barriers, keys, stop");
	ok(stat(secret_file, &sb) < 0 && errno == ENOENT, "forms: the secret file is gone after the stop");
	new_address();
	run(3, part_form, late, st);
	ok(all_zero(st, 3), "forms: the others wait for a rank 0 that comes late");
}

/* A secret file that a dead rank 0 left: the others retry until the new one's. */
static void
test_stale_secret(void)
{
	int st[3], late[3] = { 400, 0, 0 };
	FILE *f;

	new_address();
	f = fopen(secret_file, "w");
	fprintf(f, "0123456789abcdef0123456789abcdef\n");
	fclose(f);
	chmod(secret_file, 0600);
	run(3, part_form, late, st);
	ok(all_zero(st, 3), "stale secret: the others join once rank 0 wrote its own");
}

/* rank 0 writes a 0600 file; with WORLD_SECRET, none at all. */
static int
part_file(int rank, int unused)
{
	struct world *w = open_as(rank, 1);
	struct stat sb;
	int rc = 0;

	if (w == NULL) {
		return 1;
	}
	if (getenv("WORLD_SECRET") == NULL &&
	    (stat(secret_file, &sb) < 0 || (sb.st_mode & 0777) != 0600)) {
		rc = 2;
	}
	if (getenv("WORLD_SECRET") != NULL && stat(secret_file, &sb) == 0) {
		rc = 3;
	}
	world_stop(w, 1000);
	return rc;
}

/* A file a killed rank 0 left is removed by the next rank 0; one of a
 * live process stays. */
static void
test_sweep(void)
{
	char gone[600], alive[600];
	pid_t pid = fork();
	struct stat sb;
	int st[1];
	FILE *f;

	if (pid == 0) {
		_exit(0);
	}
	waitpid(pid, NULL, 0);
	snprintf(gone, sizeof(gone), "%s/worldrun/world-127.0.0.1-1", getenv("XDG_RUNTIME_DIR"));
	snprintf(alive, sizeof(alive), "%s/worldrun/world-127.0.0.1-2", getenv("XDG_RUNTIME_DIR"));
	f = fopen(gone, "w");
	fprintf(f, "0123\n%ld\n", (long)pid);
	fclose(f);
	f = fopen(alive, "w");
	fprintf(f, "0123\n%ld\n", (long)getpid());
	fclose(f);
	chmod(gone, 0600);
	chmod(alive, 0600);
	new_address();
	run(1, part_file, NULL, st);
	ok(stat(gone, &sb) < 0 && errno == ENOENT, "sweep: a gone rank 0's file is removed");
	ok(stat(alive, &sb) == 0, "sweep: a live one's stays");
	unlink(alive);
}

/* Rank 1 with another WORLD_SECRET than rank 0's: WORLD_EAUTH, not a
 * wait for the wait timeout (60 s here; 20 s is the generous bound). */
static int
part_wrong_secret(int rank, int unused)
{
	struct world_options o = { .rank = 1, .size = 2, .address = address };
	struct world *w = NULL;
	time_t t0 = time(NULL);
	int rc;

	if (rank == 0) {
		/* Rank 1 tries while this waits for it (it never joins). */
		w = open_as(0, 2);
		if (w == NULL) {
			return 1;
		}
		world_barrier(w, "never", 10000);
		world_abort(w);
		return 0;
	}
	setenv("WORLD_SECRET", "another", 1);
	rc = world_open_with(&o, &w);
	return rc == WORLD_EAUTH && time(NULL) - t0 < 20 ? 0 : 2;
}

static void
test_secret(void)
{
	int st[3];

	new_address();
	run(1, part_file, NULL, st);
	is_int(st[0], 0, "secret: a 0600 file in the user's runtime directory");
	setenv("WORLD_SECRET", "the-same-in-every-process", 1);
	new_address();
	run(1, part_file, NULL, st);
	is_int(st[0], 0, "secret: WORLD_SECRET given: no file");
	run(3, part_form, NULL, st);
	ok(all_zero(st, 3), "secret: WORLD_SECRET given: the world forms");
	new_address();
	run(2, part_wrong_secret, NULL, st);
	ok(st[0] == 0 && st[1] == 0, "secret: a WORLD_SECRET rank 0 refuses fails at once");
	unsetenv("WORLD_SECRET");
}

static void
test_deaths(void)
{
	int dies[3] = { 2, 2, 2 }, zero[3] = { 0, 0, 0 };

	three(part_death, dies, "death: a rank gone without a word fails its peers' barrier, named");
	three(part_death, zero, "death: rank 0 gone ends the world for the others, saying so");
}

/* Ranks named as Machin's programs name them: groups, members and
 * lookups by name. */
static int
part_names(int rank, int unused)
{
	static const char *const names[] = { "learner", "worker_1", "worker 2 ü" };
	struct world_options o = { .rank = rank, .size = 3, .address = address,
				   .name = names[rank] };
	const char *const members[] = { "learner", "worker 2 ü" };
	struct world_group *g = NULL;
	struct world *w = NULL;
	const char *name = NULL;

	if (world_open_with(&o, &w) < 0 || strcmp(world_name(w), names[rank]) != 0) {
		return 1;
	}
	for (int r = 0; r < 3; r++) {
		if (world_rank_name(w, r, &name) < 0 || strcmp(name, names[r]) != 0 ||
		    world_name_rank(w, names[r]) != r) {
			return 2;
		}
	}
	if (world_name_rank(w, "nobody") != -ENOENT || world_name_rank(w, "1") != 1) {
		return 3;
	}
	if (rank != 1 && (world_group_create(w, "g", members, 2, 60000, &g) < 0 ||
			  strcmp(world_group_member(g, 1), "worker 2 ü") != 0 ||
			  !world_group_is_member(g, "learner") ||
			  world_group_is_member(g, "worker_1") || world_group_destroy(g) < 0)) {
		return 4;
	}
	return world_stop(w, 60000) == 0 ? 0 : 5;
}

/* Two ranks of one name: every rank that named itself is refused, told which. */
static int
part_same_name(int rank, int unused)
{
	struct world_options o = { .rank = rank, .size = 3, .address = address,
				   .name = rank == 0 ? "learner" : "worker" };
	struct world *w = NULL;
	int rc = world_open_with(&o, &w);

	if (rc != -EEXIST || w != NULL ||
	    strcmp(world_last_failure()->message, "ranks 1 and 2 are both named \"worker\"") != 0) {
		return 1;
	}
	return 0;
}

static void
test_names(void)
{
	struct world_options o = { .rank = 0, .size = 2, .address = address };
	struct world *w = NULL;
	char long_name[300];

	three(part_names, NULL, "names: any string names a rank; groups, members and lookups take names");
	three(part_same_name, NULL,
	      "names: two ranks of one name: every rank that named itself is refused");
	o.name = "1";
	is_int(world_open_with(&o, &w), -EINVAL, "names: digits that are another rank's number");
	o.name = "a\nb";
	is_int(world_open_with(&o, &w), -EINVAL, "names: a control character");
	memset(long_name, 'x', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	o.name = long_name;
	is_int(world_open_with(&o, &w), -EINVAL, "names: 256 bytes or more");
}

static void
test_refusals(void)
{
	struct world_options o = { .rank = 0, .size = 2, .address = address };
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct wr_embed_addr a;
	struct world *w = NULL;
	int fd;

	new_address();
	sin.sin_port = htons(port);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	bind(fd, (struct sockaddr *)&sin, sizeof(sin));
	listen(fd, 1);
	is_int(world_open_with(&o, &w), -EADDRINUSE, "refused: rank 0 where another listens");
	ok(w == NULL, "refused: no world");
	close(fd);
	o.rank = 2;
	is_int(world_open_with(&o, &w), -EINVAL, "refused: a rank outside the size");
	o = (struct world_options){ .rank = 0, .size = 0, .address = address };
	is_int(world_open_with(&o, &w), -EINVAL, "refused: size 0");
	o = (struct world_options){ .rank = 1, .size = 2, .address = NULL };
	ok(world_open_with(&o, &w) == 0 && world_size(w) == 1 && world_rank(w) == 0,
	   "no address: the job of the environment, here the singleton; rank and size unread");
	world_abort(w);
	is_int(wr_embed_parse("localhost", &a), -EINVAL, "parse: no port");
	is_int(wr_embed_parse("tcp://localhost:0", &a), -EINVAL, "parse: port 0");
	is_int(wr_embed_parse("tcp://localhost:65536", &a), -EINVAL, "parse: port 65536");
	is_int(wr_embed_parse("tcp://:9101", &a), -EINVAL, "parse: no host");
	is_int(wr_embed_parse("tcp://no-such-host.invalid:9101", &a), -EHOSTUNREACH,
	       "parse: a host with no address");
	ok(wr_embed_parse("tcp://localhost:9101", &a) == 0 && strcmp(a.ip, "127.0.0.1") == 0 &&
	   a.port == 9101, "parse: Machin's default");
	ok(wr_embed_parse("127.0.0.1:80", &a) == 0 && a.port == 80, "parse: HOST:PORT");
}

int
main(void)
{
	char dir[] = "/tmp/wr-test-embed-XXXXXX";

	plan(29);
	/* A runtime directory of the test's own, for the secret files. */
	if (mkdtemp(dir) == NULL) {
		return 1;
	}
	setenv("XDG_RUNTIME_DIR", dir, 1);
	unsetenv("WORLD_SECRET");
	setenv("WORLD_WAIT_TIMEOUT", "60", 1);
	mkdir(strcat(strcpy(secret_file, dir), "/worldrun"), 0700);
	test_forms();
	test_stale_secret();
	test_secret();
	test_sweep();
	test_deaths();
	test_names();
	test_refusals();
	snprintf(secret_file, sizeof(secret_file), "rm -rf %s", dir);
	if (system(secret_file) != 0) {
		printf("# could not remove %s\n", dir);
	}
	return done_testing();
}
