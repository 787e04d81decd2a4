/* SPDX-License-Identifier: MIT */
/*
 * bind: the ranks' CPU sets of one host, planned once from hwloc's view of
 * it before any rank starts (the starts, on several threads, only read
 * them). See bind.h.
 */
#include "bind.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hwloc.h>
#include <hwloc/glibc-sched.h>

/* What one rank gets. */
struct slot {
	cpu_set_t cpus;
	char words[256];
};

struct wr_bind {
	bool bound;
	int nranks;
	struct slot *slot; /* [nranks] */
};

static const char *const level_names[WR_BIND_NLEVELS] = {
	[WR_BIND_NONE] = "none", [WR_BIND_HWTHREAD] = "hwthread", [WR_BIND_CORE] = "core",
	[WR_BIND_L3CACHE] = "l3cache", [WR_BIND_NUMA] = "numa", [WR_BIND_PACKAGE] = "package",
};

/* How a report names one object of a level, and several. */
static const char *const one_name[WR_BIND_NLEVELS] = {
	[WR_BIND_HWTHREAD] = "hwthread", [WR_BIND_CORE] = "core",
	[WR_BIND_L3CACHE] = "l3cache", [WR_BIND_NUMA] = "numa node",
	[WR_BIND_PACKAGE] = "package",
};
static const char *const many_name[WR_BIND_NLEVELS] = {
	[WR_BIND_HWTHREAD] = "hwthreads", [WR_BIND_CORE] = "cores",
	[WR_BIND_L3CACHE] = "l3caches", [WR_BIND_NUMA] = "numa nodes",
	[WR_BIND_PACKAGE] = "packages",
};

static const hwloc_obj_type_t level_type[WR_BIND_NLEVELS] = {
	[WR_BIND_NONE] = HWLOC_OBJ_MACHINE, [WR_BIND_HWTHREAD] = HWLOC_OBJ_PU,
	[WR_BIND_CORE] = HWLOC_OBJ_CORE, [WR_BIND_L3CACHE] = HWLOC_OBJ_L3CACHE,
	[WR_BIND_NUMA] = HWLOC_OBJ_NUMANODE, [WR_BIND_PACKAGE] = HWLOC_OBJ_PACKAGE,
};

/* Other launchers' words for the same levels: Open MPI's and Hydra's
 * socket, srun's --cpu-bind plurals and ldoms. */
static const struct {
	const char *name;
	enum wr_bind_level level;
} aliases[] = {
	{ "socket", WR_BIND_PACKAGE }, { "sockets", WR_BIND_PACKAGE },
	{ "threads", WR_BIND_HWTHREAD }, { "thread", WR_BIND_HWTHREAD },
	{ "cores", WR_BIND_CORE }, { "numanode", WR_BIND_NUMA }, { "ldoms", WR_BIND_NUMA },
	{ "l3", WR_BIND_L3CACHE },
};

const char *
wr_bind_name(enum wr_bind_level level)
{
	return (unsigned)level < WR_BIND_NLEVELS ? level_names[level] : NULL;
}

int
wr_bind_parse(const char *name, enum wr_bind_level *out)
{
	for (int l = 0; l < WR_BIND_NLEVELS; l++) {
		if (strcmp(name, level_names[l]) == 0) {
			*out = (enum wr_bind_level)l;
			return 0;
		}
	}
	for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++) {
		if (strcmp(name, aliases[i].name) == 0) {
			*out = aliases[i].level;
			return 0;
		}
	}
	return -EINVAL;
}

/* The plan's inputs, for each rank. */
struct plan {
	hwloc_topology_t t;
	enum wr_bind_level level;
	hwloc_obj_type_t unit; /* core, or PU */
	int nunits;
	int cpus;
	bool shared; /* more ranks' units than there are */
};

/* Rank @i's units, in turn from its first: (i * cpus + j) mod nunits. */
static void
units_of(const struct plan *p, int i, hwloc_bitmap_t units, hwloc_bitmap_t idx)
{
	for (int j = 0; j < p->cpus; j++) {
		long long k = ((long long)i * p->cpus + j) % p->nunits;
		hwloc_obj_t o = hwloc_get_obj_by_type(p->t, p->unit, (unsigned)k);

		hwloc_bitmap_or(units, units, o->cpuset);
		hwloc_bitmap_set(idx, o->logical_index);
	}
}

/* The objects of the level that hold any of @units: their CPUs, and their
 * numbers in @idx. */
static void
widen(const struct plan *p, hwloc_const_bitmap_t units, hwloc_bitmap_t cpus,
      hwloc_bitmap_t idx)
{
	hwloc_obj_type_t type = level_type[p->level];
	int n = hwloc_get_nbobjs_by_type(p->t, type);

	hwloc_bitmap_zero(idx);
	for (int k = 0; k < n; k++) {
		hwloc_obj_t o = hwloc_get_obj_by_type(p->t, type, (unsigned)k);

		if (o->cpuset != NULL && hwloc_bitmap_intersects(o->cpuset, units)) {
			hwloc_bitmap_or(cpus, cpus, o->cpuset);
			hwloc_bitmap_set(idx, o->logical_index);
		}
	}
}

static int
plan_rank(const struct plan *p, int i, struct slot *s)
{
	hwloc_bitmap_t units = hwloc_bitmap_alloc(), cpus = hwloc_bitmap_alloc(),
		       idx = hwloc_bitmap_alloc();
	char il[64], cl[96];
	int rc = -ENOMEM;

	if (units == NULL || cpus == NULL || idx == NULL) {
		goto out;
	}
	if (p->level == WR_BIND_NONE) {
		hwloc_bitmap_copy(cpus, hwloc_topology_get_topology_cpuset(p->t));
	} else {
		units_of(p, i, units, idx);
		if (p->level == WR_BIND_HWTHREAD || p->level == WR_BIND_CORE) {
			hwloc_bitmap_copy(cpus, units);
		} else {
			widen(p, units, cpus, idx);
		}
	}
	hwloc_bitmap_list_snprintf(il, sizeof(il), idx);
	hwloc_bitmap_list_snprintf(cl, sizeof(cl), cpus);
	if (hwloc_cpuset_to_glibc_sched_affinity(p->t, cpus, &s->cpus, sizeof(s->cpus)) < 0) {
		rc = -EINVAL;
		goto out;
	}
	if (p->level == WR_BIND_NONE) {
		snprintf(s->words, sizeof(s->words), "not bound (cpu%s %s)",
			 hwloc_bitmap_weight(cpus) > 1 ? "s" : "", cl);
	} else {
		snprintf(s->words, sizeof(s->words), "bound to %s %s (cpu%s %s)%s",
			 hwloc_bitmap_weight(idx) > 1 ? many_name[p->level] : one_name[p->level],
			 il, hwloc_bitmap_weight(cpus) > 1 ? "s" : "", cl,
			 p->shared ? ", shared: more ranks than cores" : "");
	}
	rc = 0;
out:
	hwloc_bitmap_free(units);
	hwloc_bitmap_free(cpus);
	hwloc_bitmap_free(idx);
	return rc;
}

/* The units ranks take, and whether the level has any object here. */
static int
plan_init(struct plan *p, char *err, size_t errlen)
{
	p->unit = p->level == WR_BIND_HWTHREAD ? HWLOC_OBJ_PU : HWLOC_OBJ_CORE;
	p->nunits = hwloc_get_nbobjs_by_type(p->t, p->unit);
	if (p->nunits <= 0) {
		/* A topology that shows no cores (some virtual machines). */
		p->unit = HWLOC_OBJ_PU;
		p->nunits = hwloc_get_nbobjs_by_type(p->t, p->unit);
	}
	if (p->nunits <= 0) {
		snprintf(err, errlen, "hwloc sees no CPU this host lets us use");
		return -ENODEV;
	}
	if (p->level > WR_BIND_CORE && hwloc_get_nbobjs_by_type(p->t, level_type[p->level]) <= 0) {
		snprintf(err, errlen, "--bind-to %s: this host's topology has no %s",
			 level_names[p->level], one_name[p->level]);
		return -ENODEV;
	}
	return 0;
}

/* Within the CPUs we may use ourselves: a Slurm step's, a taskset's. A
 * topology that is not this machine's (HWLOC_SYNTHETIC, HWLOC_XMLFILE)
 * is taken whole. */
static int
restrict_to_ours(hwloc_topology_t t)
{
	hwloc_bitmap_t ours;
	int rc = 0;

	if (!hwloc_topology_is_thissystem(t)) {
		return 0;
	}
	ours = hwloc_bitmap_alloc();
	if (ours == NULL || hwloc_get_cpubind(t, ours, HWLOC_CPUBIND_PROCESS) < 0 ||
	    hwloc_topology_restrict(t, ours, 0) < 0) {
		rc = -1;
	}
	hwloc_bitmap_free(ours);
	return rc;
}

int
wr_bind_open(enum wr_bind_level level, int cpus, int nranks, struct wr_bind **out,
	     char *err, size_t errlen)
{
	struct wr_bind *b = calloc(1, sizeof(*b));
	struct plan p = { .t = NULL, .level = level, .cpus = cpus > 0 ? cpus : 1 };
	int rc = -ENOMEM;

	*out = NULL;
	snprintf(err, errlen, "out of memory");
	if ((unsigned)level >= WR_BIND_NLEVELS || nranks < 0 || p.cpus > WR_BIND_CPUS_MAX) {
		free(b);
		snprintf(err, errlen, "a binding that cannot be");
		return -EINVAL;
	}
	if (b == NULL || (b->slot = calloc((size_t)nranks + 1, sizeof(*b->slot))) == NULL) {
		goto fail;
	}
	b->bound = level != WR_BIND_NONE;
	b->nranks = nranks;
	errno = 0;
	if (hwloc_topology_init(&p.t) < 0 || hwloc_topology_load(p.t) < 0 ||
	    restrict_to_ours(p.t) < 0) {
		rc = errno != 0 ? -errno : -EIO;
		snprintf(err, errlen, "unable to read this host's topology (hwloc): %s",
			 strerror(-rc));
		goto fail;
	}
	rc = plan_init(&p, err, errlen);
	p.shared = (long long)nranks * p.cpus > p.nunits;
	for (int i = 0; rc == 0 && i < nranks; i++) {
		rc = plan_rank(&p, i, &b->slot[i]);
	}
	if (rc < 0) {
		goto fail;
	}
	hwloc_topology_destroy(p.t);
	*out = b;
	return 0;
fail:
	if (p.t != NULL) {
		hwloc_topology_destroy(p.t);
	}
	wr_bind_close(b);
	return rc;
}

void
wr_bind_close(struct wr_bind *b)
{
	if (b == NULL) {
		return;
	}
	free(b->slot);
	free(b);
}

const cpu_set_t *
wr_bind_cpus(const struct wr_bind *b, int i)
{
	return b != NULL && b->bound && i >= 0 && i < b->nranks ? &b->slot[i].cpus : NULL;
}

const char *
wr_bind_describe(const struct wr_bind *b, int i)
{
	return b != NULL && i >= 0 && i < b->nranks ? b->slot[i].words : NULL;
}
