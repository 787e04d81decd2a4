/* SPDX-License-Identifier: MIT */
/*
 * hosts: a job's host list and where its ranks go. The list comes from a
 * hostfile, in Open MPI's form ("host slots=N [max_slots=M]") or MPICH's
 * ("host:N"), with # comments and blank lines, or from -H's "a:2,b,c". A
 * node is an entry of the list, numbered in order; a name given twice is
 * one node whose slots add up, as mpirun has it (and a max_slots bound
 * grows by the later entries' slots or bounds). It reads the file it is
 * given and nothing else: no name is resolved here.
 */
#ifndef WR_HOSTS_H
#define WR_HOSTS_H

#include <stdbool.h>
#include <stddef.h>

#define WR_HOSTS_NAME_MAX 253   /* a DNS name */
#define WR_HOSTS_SLOTS_MAX 65536 /* per host */
#define WR_HOSTS_MAX 16384       /* hosts in a list (names merge in n^2) */
#define WR_HOSTS_ERR_MAX 512

struct wr_host {
	char *name;
	int slots;
	int max_slots; /* 0: no bound beyond --oversubscribe */
};

struct wr_hosts {
	struct wr_host *v;
	int n;
	long slots; /* the sum */
};

/*
 * Add the hosts of file @path (or of the -H list @list) to @h, which
 * starts zeroed. Returns 0, or -EINVAL with @err saying where and what
 * ("hosts.txt:3: slots=x is not a count from 1 to 65536"), or another
 * -errno (the file could not be read, -ENOMEM) with @err saying so.
 */
int wr_hosts_read_file(struct wr_hosts *h, const char *path,
		       char err[WR_HOSTS_ERR_MAX]);
int wr_hosts_read_list(struct wr_hosts *h, const char *list,
		       char err[WR_HOSTS_ERR_MAX]);

/* Add host @name with @slots (merged as a list's entries are), checked
 * as a hostfile's are: 0, or -EINVAL with @err naming @where. */
int wr_hosts_add(struct wr_hosts *h, const char *name, int slots, const char *where,
		 char err[WR_HOSTS_ERR_MAX]);

/* Accepts a zeroed @h. */
void wr_hosts_finish(struct wr_hosts *h);

enum wr_map_by {
	WR_MAP_SLOT, /* fill each host's slots in order (the default) */
	WR_MAP_NODE, /* one rank per host in turn */
};

struct wr_place_cfg {
	int nranks;
	enum wr_map_by map;
	int ppn;           /* ranks per node; 0: by slots */
	bool oversubscribe; /* more ranks than slots (never past max_slots) */
};

/* The ranks host @i takes before oversubscription: its slots, or @ppn
 * when @ppn > 0, never past its max_slots. */
int wr_hosts_capacity(const struct wr_hosts *h, int ppn, int i);

/* The ranks the hosts take before oversubscription: their slots, or
 * @ppn each when @ppn > 0, never past a max_slots. */
long wr_hosts_room(const struct wr_hosts *h, int ppn);

/*
 * The node of each of @cfg->nranks ranks into @node (nranks entries).
 * Ranks beyond the slots go round the hosts again in the same order, one
 * each, only with oversubscribe. Returns 0, or -EINVAL with @err saying
 * why the hosts cannot hold the job.
 */
int wr_hosts_place(const struct wr_hosts *h, const struct wr_place_cfg *cfg,
		   int *node, char err[WR_HOSTS_ERR_MAX]);

#endif
