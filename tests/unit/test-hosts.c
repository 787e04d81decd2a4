/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for hosts: hostfiles in both forms with comments, blank
 * lines and names given twice; -H lists; errors that name the file, the
 * line and what is wrong; and where ranks go, by slot and by node, with
 * --ppn, --oversubscribe and max_slots.
 */
#include "hosts.h"
#include "map.h"
#include "tap.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[] = "/tmp/wr-test-hosts-XXXXXX";

/* A hostfile holding @len bytes of @text; its path (static). */
static const char *
file_of(const char *text, size_t len)
{
	static char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/hosts", dir);
	f = fopen(path, "w");
	if (f != NULL) {
		fwrite(text, 1, len, f);
		fclose(f);
	}
	return path;
}

/* What reading a hostfile of @text gives, its message in @err. */
static int
read_text(const char *text, struct wr_hosts *h, char err[WR_HOSTS_ERR_MAX])
{
	*h = (struct wr_hosts){0};
	err[0] = '\0';
	return wr_hosts_read_file(h, file_of(text, strlen(text)), err);
}

static void
test_forms(void)
{
	char err[WR_HOSTS_ERR_MAX];
	struct wr_hosts h;
	int rc = read_text("# the cluster\n"
			   "node-a slots=2 max_slots=4   # Open MPI's form\n"
			   "\n"
			   "   node-b\n"
			   "198.18.0.3:3\r\n"
			   "node-a:1\n"
			   "\tnode_d slots=1\n",
			   &h, err);

	is_int(rc, 0, "a hostfile in both forms reads");
	is_int(h.n, 4, "four nodes: a name given twice is one node");
	ok(h.n == 4 && strcmp(h.v[0].name, "node-a") == 0 && h.v[0].slots == 3 &&
		   h.v[0].max_slots == 5,
	   "node-a: 2 + 1 slots, and its bound 4 grows by the 1 of a line without one");
	ok(h.n == 4 && strcmp(h.v[1].name, "node-b") == 0 && h.v[1].slots == 1,
	   "a line without a count is one slot");
	ok(h.n == 4 && strcmp(h.v[2].name, "198.18.0.3") == 0 && h.v[2].slots == 3,
	   "MPICH's host:N, with a carriage return");
	is_int(h.slots, 8, "8 slots in all");
	wr_hosts_finish(&h);
	rc = read_text("a slots=2 max_slots=3\nb max-slots=2\n", &h, err);
	ok(rc == 0 && h.n == 2 && h.v[0].max_slots == 3 && h.v[1].slots == 1 &&
		   h.v[1].max_slots == 2,
	   "max_slots and max-slots");
	wr_hosts_finish(&h);
}

static void
test_file_errors(void)
{
	static const struct {
		const char *text, *want, *what;
	} bad[] = {
		{"a\nb slots=x\n", ":2: slots=x is not a count", "a count that is not a number"},
		{"a slots=0\n", ":1: slots=0 is not a count", "zero slots"},
		{"a slots=65537\n", ":1: slots=65537 is not a count", "too many slots"},
		{"a cpus=2\n", ":1: unknown 'cpus=2'", "an unknown key"},
		{"a slots=4 max_slots=2\n", ":1: max_slots=2 is below slots=4", "max below slots"},
		{"a:0\n", ":1: '0' is not a count", "host:0"},
		{"a:\n", ":1: '' is not a count", "host: with nothing"},
		{"a:2 slots=3\n", ":1: nothing may follow host:N", "words after host:N"},
		{"a/b\n", ":1: 'a/b' is not a host name", "a slash in a name"},
		{"-oProxyCommand=x\n", ":1: '-oProxyCommand=x' is not a host name",
		 "a leading dash, which ssh would read as an option"},
		{"# only a comment\n\n", ": no host in it", "no host"},
		{"", ": no host in it", "an empty file"},
		{"a slots=65536\na:1\n", ":2: more than 65536 slots for one host in all",
		 "a name given twice past 65536 slots"},
	};
	char err[WR_HOSTS_ERR_MAX];
	struct wr_hosts h;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = read_text(bad[i].text, &h, err);

		ok(rc == -EINVAL && strstr(err, bad[i].want) != NULL &&
			   strstr(err, "/hosts") != NULL,
		   "hostfile refused: %s (%s)", bad[i].what, err);
		wr_hosts_finish(&h);
	}
	{
		static const char nul[] = "a\nb\0c\n";

		h = (struct wr_hosts){0};
		ok(wr_hosts_read_file(&h, file_of(nul, sizeof(nul) - 1), err) == -EINVAL &&
			   strstr(err, ":2: a NUL byte") != NULL,
		   "hostfile refused: a NUL byte (%s)", err);
		wr_hosts_finish(&h);
	}
	{
		size_t n = 5000;
		char *long_line = malloc(n + 2);

		memset(long_line, 'a', n);
		long_line[n] = '\n';
		long_line[n + 1] = '\0';
		ok(read_text(long_line, &h, err) == -EINVAL &&
			   strstr(err, ":1: a line over 4096 bytes") != NULL,
		   "hostfile refused: a line over 4096 bytes");
		wr_hosts_finish(&h);
		free(long_line);
	}
	h = (struct wr_hosts){0};
	ok(wr_hosts_read_file(&h, dir, err) == -EISDIR &&
		   strstr(err, ": Is a directory") != NULL,
	   "a directory is -EISDIR, said so (%s)", err);
	wr_hosts_finish(&h);
	is_int(wr_hosts_read_file(&h, "/nonexistent/hosts", err), -ENOENT,
	       "a missing hostfile is -ENOENT");
	ok(strstr(err, "/nonexistent/hosts: No such file or directory") != NULL,
	   "and its message names the file (%s)", err);
	wr_hosts_finish(&h);
}

static void
test_lists(void)
{
	char err[WR_HOSTS_ERR_MAX];
	struct wr_hosts h = {0};

	ok(wr_hosts_read_list(&h, "a:2,b,c", err) == 0 && h.n == 3 && h.slots == 4 &&
		   h.v[0].slots == 2 && strcmp(h.v[2].name, "c") == 0,
	   "-H a:2,b,c: three hosts, four slots");
	wr_hosts_finish(&h);
	is_int(wr_hosts_read_list(&h, "", err), -EINVAL, "-H refused: empty");
	wr_hosts_finish(&h);
	ok(wr_hosts_read_list(&h, "a,,b", err) == -EINVAL && strstr(err, "an empty entry"),
	   "-H refused: an empty entry (%s)", err);
	wr_hosts_finish(&h);
	ok(wr_hosts_read_list(&h, "a:x", err) == -EINVAL && strstr(err, "'x' is not a count"),
	   "-H refused: a bad count (%s)", err);
	wr_hosts_finish(&h);
	ok(wr_hosts_read_list(&h, "a,", err) == -EINVAL, "-H refused: a trailing comma");
	wr_hosts_finish(&h);
}

/* Place @n ranks on the hosts of -H @list; the nodes as digits in @out. */
static int
place(const char *list, int n, enum wr_map_by map, int ppn, bool over, char *out,
      char err[WR_HOSTS_ERR_MAX])
{
	struct wr_place_cfg cfg = {.nranks = n, .map = map, .ppn = ppn,
				   .oversubscribe = over};
	struct wr_hosts h = {0};
	int node[64], rc;

	out[0] = '\0';
	rc = wr_hosts_read_list(&h, list, err);
	if (rc == 0) {
		rc = wr_hosts_place(&h, &cfg, node, err);
	}
	for (int i = 0; rc == 0 && i < n; i++) {
		out[i] = (char)('0' + node[i]);
		out[i + 1] = '\0';
	}
	wr_hosts_finish(&h);
	return rc;
}

static void
test_place(void)
{
	char err[WR_HOSTS_ERR_MAX], got[65];
	struct wr_hosts h = {0};
	struct wr_place_cfg cfg = {.nranks = 3, .oversubscribe = true};
	int node[3];

	ok(place("a:2,b:2", 4, WR_MAP_SLOT, 0, false, got, err) == 0 &&
		   strcmp(got, "0011") == 0, "by slot: 0011 (%s)", got);
	ok(place("a:2,b:2", 4, WR_MAP_NODE, 0, false, got, err) == 0 &&
		   strcmp(got, "0101") == 0, "by node: 0101 (%s)", got);
	ok(place("a:2,b:2", 3, WR_MAP_SLOT, 0, false, got, err) == 0 &&
		   strcmp(got, "001") == 0, "fewer ranks than slots: 001 (%s)", got);
	ok(place("a:2,b:2", 5, WR_MAP_SLOT, 0, false, got, err) == -EINVAL &&
		   strstr(err, "5 ranks do not fit in the 4 slots of 2 hosts") != NULL &&
		   strstr(err, "--oversubscribe") != NULL,
	   "more ranks than slots is refused, naming --oversubscribe (%s)", err);
	ok(place("a:2,b:2", 6, WR_MAP_SLOT, 0, true, got, err) == 0 &&
		   strcmp(got, "001101") == 0,
	   "--oversubscribe: the rest go round the hosts (%s)", got);
	ok(place("a:3,b:3", 4, WR_MAP_SLOT, 1, true, got, err) == 0 &&
		   strcmp(got, "0101") == 0, "--ppn 1 over two hosts: 0101 (%s)", got);
	ok(place("a:1,b:1,c:1", 3, WR_MAP_NODE, 0, false, got, err) == 0 &&
		   strcmp(got, "012") == 0, "by node over three hosts: 012 (%s)", got);
	is_int(wr_hosts_read_file(&h, file_of("a slots=1 max_slots=1\nb\n", 23), err), 0,
	       "a hostfile with max_slots");
	is_int(wr_hosts_place(&h, &cfg, node, err), 0, "three ranks, one past a's max_slots");
	ok(node[0] == 0 && node[1] == 1 && node[2] == 1,
	   "the rank past a's max_slots goes to b");
	wr_hosts_finish(&h);
	read_text("a slots=2 max_slots=2\na\nb slots=4\n", &h, err);
	ok(h.n == 2 && h.v[0].slots == 3 && h.v[0].max_slots == 3 &&
		   wr_hosts_room(&h, 0) == 7 && wr_hosts_room(&h, 5) == 8,
	   "a bound grows by a later line's slots; room: 7 slots, or 3 + 5 at --ppn 5");
	wr_hosts_finish(&h);
	read_text("a slots=1 max_slots=1\n", &h, err);
	cfg.nranks = 2;
	ok(wr_hosts_place(&h, &cfg, node, err) == -EINVAL &&
		   strstr(err, "max_slots") != NULL,
	   "past every max_slots even --oversubscribe is refused (%s)", err);
	wr_hosts_finish(&h);
}

/* A spawn's ranks fill the free slots from the asker's node on, then
 * stay beside it; they join the map with their nodes' next local ranks. */
static void
test_place_spawn(void)
{
	int node[4] = {0, 1, 1, 2}, local[4] = {0, 0, 1, 0}, size[3] = {1, 2, 1};
	int slots[3] = {2, 2, 2}, place[4], one = INT_MAX;
	struct wr_map m = {.nranks = 4, .nnodes = 3, .local_size = size, .slots = slots};

	m.node = malloc(sizeof(node));
	m.local_rank = malloc(sizeof(local));
	memcpy(m.node, node, sizeof(node));
	memcpy(m.local_rank, local, sizeof(local));
	wr_map_place_spawn(&m, 1, 4, place);
	ok(place[0] == 2 && place[1] == 0 && place[2] == 1 && place[3] == 1,
	   "spawn of 4 from node 1 (full): node 2's slot, node 0's, then beside the asker");
	ok(wr_map_grow(&m, place, 4) == 0 && m.nranks == 8 && m.node[4] == 2 &&
		   m.local_rank[4] == 1 && m.local_rank[6] == 2 && m.local_rank[7] == 3 &&
		   size[1] == 4 && size[0] == 2,
	   "they join the map with their nodes' next local ranks");
	free(m.node);
	free(m.local_rank);
	m = (struct wr_map){.nranks = 1, .nnodes = 1, .local_size = size, .slots = &one};
	wr_map_place_spawn(&m, 0, 3, place);
	ok(place[0] == 0 && place[1] == 0 && place[2] == 0, "one node without a bound takes all");
	size[0] = size[1] = 1;
	slots[0] = slots[1] = 2;
	m = (struct wr_map){.nranks = 2, .nnodes = 2, .local_size = size, .slots = slots,
			    .by_node = true};
	wr_map_place_spawn(&m, 1, 3, place);
	ok(place[0] == 1 && place[1] == 0 && place[2] == 1,
	   "by node: one a node from the asker's, then beside it once all are full");
	size[0] = size[1] = 0;
	wr_map_place_spawn(&m, 1, 4, place);
	ok(place[0] == 1 && place[1] == 0 && place[2] == 1 && place[3] == 0,
	   "by node with two free slots a node: one each in turn");
}

int
main(void)
{
	if (mkdtemp(dir) == NULL) {
		skip_all("no temporary directory");
	}
	plan(7 + 14 + 4 + 5 + 12 + 5);
	test_forms();
	test_file_errors();
	test_lists();
	test_place();
	test_place_spawn();
	unlink(file_of("", 0));
	rmdir(dir);
	return done_testing();
}
