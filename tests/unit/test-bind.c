/* SPDX-License-Identifier: MIT */
/*
 * bind: the ranks' plans on made-up topologies (HWLOC_SYNTHETIC), larger
 * than this machine, so nothing is applied: which cores each rank takes,
 * the objects of its level, sharing, levels a host lacks, and names.
 */
#include "bind.h"
#include "tap.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Rank @i's words under a plan of @nranks at @level, @cpus each, on the
 * topology @synthetic; or "error: WHY". */
static const char *
words(const char *synthetic, enum wr_bind_level level, int cpus, int nranks, int i)
{
	static char buf[300];
	struct wr_bind *b;
	char err[160];

	setenv("HWLOC_SYNTHETIC", synthetic, 1);
	if (wr_bind_open(level, cpus, nranks, &b, err, sizeof(err)) < 0) {
		snprintf(buf, sizeof(buf), "error: %s", err);
		return buf;
	}
	snprintf(buf, sizeof(buf), "%s", wr_bind_describe(b, i));
	wr_bind_close(b);
	return buf;
}

/* The CPUs of rank @i's set, as "0-3" would list them, for a few. */
static bool
cpus_are(const char *synthetic, enum wr_bind_level level, int cpus, int nranks, int i,
	 const int *want, int n)
{
	struct wr_bind *b;
	char err[160];
	const cpu_set_t *set;
	bool good;

	setenv("HWLOC_SYNTHETIC", synthetic, 1);
	if (wr_bind_open(level, cpus, nranks, &b, err, sizeof(err)) < 0) {
		return false;
	}
	set = wr_bind_cpus(b, i);
	good = set != NULL && CPU_COUNT(set) == n;
	for (int k = 0; good && k < n; k++) {
		good = CPU_ISSET(want[k], set);
	}
	wr_bind_close(b);
	return good;
}

static void
test_cores(void)
{
	const char *t8 = "pack:2 l3:1 core:4 pu:1";

	is_str(words(t8, WR_BIND_CORE, 1, 8, 5), "bound to core 5 (cpu 5)", "rank 5 of 8 takes core 5");
	is_str(words(t8, WR_BIND_CORE, 2, 4, 1), "bound to cores 2-3 (cpus 2-3)",
	       "with 2 CPUs each, rank 1 takes cores 2 and 3");
	is_str(words(t8, WR_BIND_CORE, 3, 2, 1), "bound to cores 3-5 (cpus 3-5)",
	       "with 3 CPUs each, rank 1 takes cores 3 to 5");
	is_str(words(t8, WR_BIND_CORE, 3, 3, 2),
	       "bound to cores 0,6-7 (cpus 0,6-7), shared: more ranks than cores",
	       "the ninth core wraps around to the first, and the plan says it is shared");
	is_str(words(t8, WR_BIND_CORE, 1, 9, 8), "bound to core 0 (cpu 0), shared: more ranks than cores",
	       "rank 8 of 9 on 8 cores shares core 0");
	ok(cpus_are(t8, WR_BIND_CORE, 2, 4, 3, (int[]){ 6, 7 }, 2), "rank 3's set holds CPUs 6 and 7");
}

static void
test_levels(void)
{
	const char *t8 = "pack:2 l3:1 core:4 pu:1";
	const char *smt = "pack:1 core:2 pu:2";

	is_str(words(t8, WR_BIND_PACKAGE, 1, 8, 5), "bound to package 1 (cpus 4-7)",
	       "--bind-to package: rank 5's core is in package 1");
	is_str(words(t8, WR_BIND_PACKAGE, 2, 4, 1), "bound to package 0 (cpus 0-3)",
	       "cores 2-3 are both in package 0");
	is_str(words(t8, WR_BIND_PACKAGE, 4, 2, 0), "bound to package 0 (cpus 0-3)", "cores 0-3: package 0");
	is_str(words("pack:1 l3:2 core:2 pu:1", WR_BIND_L3CACHE, 1, 4, 3),
	       "bound to l3cache 1 (cpus 2-3)",
	       "--bind-to l3cache: the cache above rank 3's core");
	is_str(words("pack:1 l3:2 core:2 pu:1", WR_BIND_L3CACHE, 2, 2, 0), "bound to l3cache 0 (cpus 0-1)",
	       "two cores under one cache: that cache");
	is_str(words("pack:1 l3:2 core:2 pu:1", WR_BIND_L3CACHE, 3, 1, 0),
	       "bound to l3caches 0-1 (cpus 0-3)",
	       "three cores over two caches: both");
	is_str(words("pack:1 numa:2 core:2 pu:1", WR_BIND_NUMA, 1, 4, 2), "bound to numa node 1 (cpus 2-3)",
	       "--bind-to numa: the NUMA node of rank 2's core");
	is_str(words(smt, WR_BIND_CORE, 1, 2, 1), "bound to core 1 (cpus 2-3)",
	       "a core with two hardware threads: both");
	is_str(words(smt, WR_BIND_HWTHREAD, 1, 4, 3), "bound to hwthread 3 (cpu 3)",
	       "--bind-to hwthread takes threads in turn");
	is_str(words(smt, WR_BIND_HWTHREAD, 2, 2, 1), "bound to hwthreads 2-3 (cpus 2-3)",
	       "two threads each: rank 1 takes the second core's");
	is_str(words(smt, WR_BIND_NONE, 1, 2, 1), "not bound (cpus 0-3)",
	       "--bind-to none: what the rank may use, unbound");
	is_str(words("pack:1 core:2 pu:1", WR_BIND_L3CACHE, 1, 2, 0),
	       "error: --bind-to l3cache: this host's topology has no l3cache",
	       "a level the topology lacks is an error in words");
}

static void
test_edges(void)
{
	struct wr_bind *b;
	char err[160];

	setenv("HWLOC_SYNTHETIC", "pack:1 core:2 pu:1", 1);
	is_int(wr_bind_open(WR_BIND_CORE, 1, 2, &b, err, sizeof(err)), 0, "a plan of 2 ranks opens");
	ok(wr_bind_cpus(b, 2) == NULL && wr_bind_describe(b, 2) == NULL &&
		   wr_bind_cpus(b, -1) == NULL,
	   "a rank past the plan (a spawn's) has no set and no words");
	wr_bind_close(b);
	is_int(wr_bind_open(WR_BIND_NONE, 1, 1, &b, err, sizeof(err)), 0, "an unbound plan opens");
	ok(wr_bind_cpus(b, 0) == NULL, "and gives no set to apply");
	wr_bind_close(b);
	is_int(wr_bind_open(WR_BIND_CORE, WR_BIND_CPUS_MAX + 1, 1, &b, err, sizeof(err)), -EINVAL,
	       "more CPUs per rank than WR_BIND_CPUS_MAX: -EINVAL");
	ok(b == NULL, "and no plan");
	is_int(wr_bind_open(WR_BIND_NLEVELS, 1, 1, &b, err, sizeof(err)), -EINVAL,
	       "a level past the last: -EINVAL");
	wr_bind_close(NULL);
	ok(true, "wr_bind_close(NULL) does nothing");
}

static void
test_names(void)
{
	enum wr_bind_level l = WR_BIND_NONE;

	for (int i = 0; i < WR_BIND_NLEVELS; i++) {
		ok(wr_bind_parse(wr_bind_name((enum wr_bind_level)i), &l) == 0 && (int)l == i,
		   "level %s reads back", wr_bind_name((enum wr_bind_level)i));
	}
	ok(wr_bind_parse("socket", &l) == 0 && l == WR_BIND_PACKAGE, "socket is package");
	ok(wr_bind_parse("ldoms", &l) == 0 && l == WR_BIND_NUMA, "srun's ldoms is numa");
	ok(wr_bind_parse("threads", &l) == 0 && l == WR_BIND_HWTHREAD, "srun's threads is hwthread");
	is_int(wr_bind_parse("l2cache", &l), -EINVAL, "l2cache is not a level here");
	ok(wr_bind_name(WR_BIND_NLEVELS) == NULL, "no name past the last level");
}

int
main(void)
{
	plan(6 + 13 + 7 + WR_BIND_NLEVELS + 5);
	test_cores();
	test_levels();
	test_edges();
	test_names();
	return done_testing();
}
