/* SPDX-License-Identifier: MIT */
#include "map.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "ranklist.h"
#include "slurm.h"

bool
wr_map_is_local(const char *name)
{
	struct in_addr a;

	if (strcmp(name, "localhost") == 0) {
		return true;
	}
	/* An IPv4 address in 127.0.0.0/8, not a name that begins "127.". */
	return inet_pton(AF_INET, name, &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
}

static int
alloc(struct wr_map *m, int nodes)
{
	m->node = calloc((size_t)m->nranks, sizeof(*m->node));
	m->local_rank = calloc((size_t)m->nranks, sizeof(*m->local_rank));
	m->local_size = calloc((size_t)nodes, sizeof(*m->local_size));
	m->slots = calloc((size_t)nodes, sizeof(*m->slots));
	m->host = calloc((size_t)nodes, sizeof(*m->host));
	m->node_name = calloc((size_t)nodes, sizeof(*m->node_name));
	return m->node && m->local_rank && m->local_size && m->slots && m->host &&
			       m->node_name
		       ? 0
		       : -ENOMEM;
}

/* Hosts that got no rank are no nodes: number the others densely, each
 * with its host's slots (@ppn each, if given). */
static int
number_nodes(struct wr_map *m, int ppn)
{
	int *dense = calloc((size_t)m->hosts.n, sizeof(*dense));

	if (dense == NULL) {
		return -ENOMEM;
	}
	for (int i = 0; i < m->hosts.n; i++) {
		dense[i] = -1;
	}
	for (int r = 0; r < m->nranks; r++) {
		int h = m->node[r];

		if (dense[h] < 0) {
			dense[h] = m->nnodes;
			m->slots[m->nnodes] = wr_hosts_capacity(&m->hosts, ppn, h);
			m->host[m->nnodes++] = m->hosts.v[h].name;
			m->remote = m->remote || !wr_map_is_local(m->hosts.v[h].name);
		}
		m->node[r] = dense[h];
		m->local_rank[r] = m->local_size[dense[h]]++;
	}
	free(dense);
	return 0;
}

static int
fail_ppn(char err[WR_HOSTS_ERR_MAX], int n, long ppn)
{
	snprintf(err, WR_HOSTS_ERR_MAX, "%d ranks do not fit in --ppn %ld on this "
		 "machine (--oversubscribe allows more)", n, ppn);
	return -EINVAL;
}

/*
 * Which launcher starts the agents (opts.h), and where the host list comes
 * from: 0, or -EINVAL with @err saying why the choice cannot hold.
 */
static int
choose(struct wr_map *m, const struct wr_opts *o, const struct wr_slurm_env *se,
       char err[WR_HOSTS_ERR_MAX])
{
	bool listed = o->hosts_file != NULL || o->hosts_list != NULL;
	enum wr_launcher l = o->launcher;

	if (l == WR_LAUNCH_AUTO) {
		l = listed || (se->job_id != NULL && o->rsh != NULL) ? WR_LAUNCH_SSH
		    : se->job_id != NULL ? WR_LAUNCH_SLURM : WR_LAUNCH_LOCAL;
	}
	if (l == WR_LAUNCH_LOCAL && listed) {
		snprintf(err, WR_HOSTS_ERR_MAX, "--launcher local runs every rank on this "
			 "machine: it takes no --hosts or -H");
		return -EINVAL;
	}
	if (l == WR_LAUNCH_SLURM && se->job_id == NULL) {
		snprintf(err, WR_HOSTS_ERR_MAX, "--launcher slurm: not inside a Slurm "
			 "allocation (SLURM_JOB_ID is not set): start worldrun under "
			 "salloc or sbatch");
		return -EINVAL;
	}
	if (l == WR_LAUNCH_SSH && !listed && se->job_id == NULL) {
		snprintf(err, WR_HOSTS_ERR_MAX, "--launcher ssh: no hosts: give --hosts "
			 "FILE or -H LIST, or start worldrun inside a Slurm allocation");
		return -EINVAL;
	}
	m->launcher = l;
	m->from_slurm = !listed && l != WR_LAUNCH_LOCAL;
	return 0;
}

/* The allocation's nodes and slots as the host list. */
static int
read_allocation(struct wr_map *m, const struct wr_slurm_env *se, char err[WR_HOSTS_ERR_MAX])
{
	const struct wr_slurm_alloc *a = &se->alloc;

	if (a->nodelist == NULL || a->counts == NULL) {
		snprintf(err, WR_HOSTS_ERR_MAX, "inside a Slurm allocation (SLURM_JOB_ID=%s), "
			 "but %s is not set", se->job_id,
			 a->nodelist == NULL ? a->nodelist_var : a->counts_var);
		return -EINVAL;
	}
	return wr_slurm_hosts(&m->hosts, a, err);
}

/* -n from the allocation: the tasks it was asked for, which may be fewer
 * than its slots (salloc -n 64 --ntasks-per-node=22 has 66). */
static int
slurm_tasks(struct wr_map *m, const struct wr_slurm_env *se, char err[WR_HOSTS_ERR_MAX])
{
	long n;

	if (se->ntasks == NULL) {
		return 0;
	}
	if (wr_opts_parse_count(se->ntasks, &n) < 0) {
		snprintf(err, WR_HOSTS_ERR_MAX, "SLURM_NTASKS=%.64s: not a task count "
			 "(1 to 1048576)", se->ntasks);
		return -EINVAL;
	}
	m->nranks = (int)n;
	return 0;
}

/*
 * The node whose agent runs in this process: in local mode the one node;
 * for Slurm's nodes, the one this machine is (SLURMD_NODENAME, on a node
 * of the allocation: an sbatch script, an srun task); else the first host
 * that names this machine. -1: none (salloc on a login node).
 */
static int
find_here(const struct wr_map *m, const struct wr_slurm_env *se)
{
	bool slurm_names = m->from_slurm || m->launcher == WR_LAUNCH_SLURM;

	if (m->hosts.n == 0) {
		return 0;
	}
	for (int i = 0; i < m->nnodes; i++) {
		if (slurm_names ? se->nodename != NULL && strcmp(m->host[i], se->nodename) == 0
				: wr_map_is_local(m->host[i])) {
			return i;
		}
	}
	return -1;
}

/*
 * The nodes' names for PMIx: the host list's, and this machine's own name
 * for the first of its aliases (localhost, 127.x) where no node has it
 * already. Two nodes never share a name: PMIx would take them for one.
 */
static void
name_nodes(struct wr_map *m, const char *here)
{
	bool taken = false;

	for (int i = 0; i < m->nnodes; i++) {
		taken = taken || strcmp(m->host[i], here) == 0;
	}
	for (int i = 0; i < m->nnodes; i++) {
		bool alias = !taken && wr_map_is_local(m->host[i]);

		m->node_name[i] = alias ? here : m->host[i];
		taken = taken || alias;
	}
}

/* Local mode: one node, no slot limit but --ppn's. */
static int
local_map(struct wr_map *m, const struct wr_opts *o, const char *here,
	  char err[WR_HOSTS_ERR_MAX])
{
	int rc;

	m->nranks = o->np_given || o->ppn == 0 ? (int)o->np : (int)o->ppn;
	if (o->ppn > 0 && m->nranks > o->ppn && !o->oversubscribe) {
		return fail_ppn(err, m->nranks, o->ppn);
	}
	rc = alloc(m, 1);
	for (int r = 0; rc == 0 && r < m->nranks; r++) {
		m->local_rank[r] = r;
	}
	if (rc < 0) {
		snprintf(err, WR_HOSTS_ERR_MAX, "%s", strerror(-rc));
		return rc;
	}
	m->nnodes = 1;
	m->local_size[0] = m->nranks;
	m->slots[0] = o->ppn > 0 ? (int)o->ppn : INT_MAX;
	m->host[0] = here;
	m->node_name[0] = here;
	return 0;
}

/*
 * torchrun's count: --nproc-per-node ranks on each of --nnodes hosts (all
 * of them when not given), as --ppn would place them. 0, or -EINVAL with
 * why in @err.
 */
static int
torch_counts(const struct wr_map *m, const struct wr_opts *o, long *np, int *ppn,
	     char err[WR_HOSTS_ERR_MAX])
{
	long nnodes = o->torch.nnodes > 0 ? o->torch.nnodes : m->hosts.n;

	if (o->torch.nproc == 0 || o->ppn > 0) {
		return 0;
	}
	if (m->hosts.n == 0 && o->torch.nnodes > 1) {
		snprintf(err, WR_HOSTS_ERR_MAX, "--nnodes %ld: worldrun starts every "
			 "node's ranks from this one command: give the hosts with "
			 "--hosts FILE, -H LIST or a Slurm allocation", o->torch.nnodes);
		return -EINVAL;
	}
	if (m->hosts.n == 0) {
		return 0;
	}
	if (nnodes > m->hosts.n) {
		snprintf(err, WR_HOSTS_ERR_MAX, "--nnodes %ld: only %d host%s given",
			 nnodes, m->hosts.n, m->hosts.n == 1 ? " is" : "s are");
		return -EINVAL;
	}
	*ppn = (int)o->torch.nproc;
	*np = nnodes * o->torch.nproc;
	return 0;
}

int
wr_map_build(struct wr_map *m, const struct wr_opts *o, const char *here,
	     const struct wr_slurm_env *se, char err[WR_HOSTS_ERR_MAX])
{
	struct wr_place_cfg cfg = {.map = o->map_by_node ? WR_MAP_NODE : WR_MAP_SLOT,
				   .oversubscribe = o->oversubscribe};
	char why[WR_HOSTS_ERR_MAX];
	int ppn = (int)o->ppn;
	long room, np = o->np;
	int rc = 0;

	*m = (struct wr_map){ .by_node = o->map_by_node };
	rc = choose(m, o, se, err);
	if (rc == 0 && o->hosts_file != NULL) {
		rc = wr_hosts_read_file(&m->hosts, o->hosts_file, err);
	} else if (rc == 0 && o->hosts_list != NULL) {
		rc = wr_hosts_read_list(&m->hosts, o->hosts_list, err);
	} else if (rc == 0 && m->from_slurm) {
		rc = read_allocation(m, se, err);
	}
	if (rc == 0) {
		rc = torch_counts(m, o, &np, &ppn, err);
	}
	if (rc < 0) {
		return rc;
	}
	if (m->hosts.n == 0) {
		return local_map(m, o, here, err);
	}
	cfg.ppn = ppn;
	room = wr_hosts_room(&m->hosts, ppn);
	m->nranks = o->np_given ? (int)np : (int)(room < 1048576 ? room : 1048576);
	rc = m->from_slurm && !o->np_given && ppn == 0 ? slurm_tasks(m, se, err) : 0;
	if (rc < 0) {
		return rc;
	}
	cfg.nranks = m->nranks;
	rc = alloc(m, m->hosts.n);
	if (rc < 0) {
		snprintf(err, WR_HOSTS_ERR_MAX, "%s", strerror(-rc));
		return rc;
	}
	rc = wr_hosts_place(&m->hosts, &cfg, m->node, err);
	if (rc == -EINVAL && m->from_slurm) {
		/* One line that says whose slots they are. */
		snprintf(why, sizeof(why), "%s", err);
		snprintf(err, WR_HOSTS_ERR_MAX, "the Slurm allocation (%s=%.64s): %.400s",
			 se->alloc.counts_var, se->alloc.counts, why);
	}
	if (rc == 0 && number_nodes(m, ppn) < 0) {
		snprintf(err, WR_HOSTS_ERR_MAX, "%s", strerror(ENOMEM));
		rc = -ENOMEM;
	}
	m->here = rc == 0 ? find_here(m, se) : -1;
	if (rc == 0) {
		name_nodes(m, here);
	}
	return rc;
}

/* Runs of ranks on one node, then runs of nodes that follow each other
 * with as many ranks, as (NODE,NODES,RANKS) blocks; -1 when too long. */
static int
blocks(const struct wr_map *m, int (*b)[3], int max)
{
	int n = 0;

	for (int r = 0; r < m->nranks;) {
		int node = m->node[r], k = 0;

		while (r < m->nranks && m->node[r] == node) {
			r++;
			k++;
		}
		if (n > 0 && b[n - 1][0] + b[n - 1][1] == node && b[n - 1][2] == k) {
			b[n - 1][1]++;
		} else if (n == max) {
			return -1;
		} else {
			b[n][0] = node;
			b[n][1] = 1;
			b[n][2] = k;
			n++;
		}
	}
	return n;
}

/* The shortest prefix of @b whose repetition is @b (a round robin is one). */
static int
period(int (*b)[3], int n)
{
	for (int p = 1; p < n; p++) {
		bool same = n % p == 0;

		for (int i = p; same && i < n; i++) {
			same = memcmp(b[i], b[i - p], sizeof(b[i])) == 0;
		}
		if (same) {
			return p;
		}
	}
	return n;
}

int
wr_map_pmi(struct wr_map *m)
{
	enum { MAX = 1024 / 8 };
	int (*b)[3] = malloc(MAX * sizeof(*b));
	size_t at;
	int n;

	m->pmi_mapping = malloc(1025);
	if (b == NULL || m->pmi_mapping == NULL) {
		free(b);
		return -ENOMEM;
	}
	n = blocks(m, b, MAX);
	n = n > 0 ? period(b, n) : n;
	at = (size_t)snprintf(m->pmi_mapping, 1025, "(vector");
	for (int i = 0; i < n && at < 1025; i++) {
		at += (size_t)snprintf(m->pmi_mapping + at, 1025 - at, ",(%d,%d,%d)", b[i][0],
				       b[i][1], b[i][2]);
	}
	if (n < 0 || at + 1 >= 1025) {
		free(m->pmi_mapping);
		m->pmi_mapping = NULL;
	} else {
		strcat(m->pmi_mapping, ")");
	}
	free(b);
	return 0;
}

void
wr_map_place_spawn(const struct wr_map *m, int asker, int count, int *node)
{
	long *room = calloc((size_t)m->nnodes, sizeof(*room));
	int r = 0;

	for (int n = 0; room != NULL && n < m->nnodes; n++) {
		room[n] = (long)m->slots[n] - m->local_size[n];
	}
	/* By slot each node fills up before the next; by node one each, in
	 * turn, until a whole turn finds no room. */
	for (int k = 0, idle = 0; room != NULL && r < count && idle < m->nnodes; k++) {
		int n = (asker + k) % m->nnodes;

		if (room[n] <= 0) {
			idle++;
			continue;
		}
		idle = 0;
		for (int take = m->by_node ? 1 : count; take > 0 && room[n] > 0 && r < count;
		     take--) {
			node[r++] = n;
			room[n]--;
		}
	}
	for (; r < count; r++) {
		node[r] = asker;
	}
	free(room);
}

int
wr_map_grow(struct wr_map *m, const int *node, int count)
{
	int n = m->nranks + count;
	int *nodes = realloc(m->node, (size_t)n * sizeof(*nodes));
	int *local;

	if (nodes == NULL) {
		return -ENOMEM;
	}
	m->node = nodes;
	local = realloc(m->local_rank, (size_t)n * sizeof(*local));
	if (local == NULL) {
		return -ENOMEM;
	}
	m->local_rank = local;
	for (int r = m->nranks; r < n; r++) {
		m->node[r] = node[r - m->nranks];
		m->local_rank[r] = m->local_size[m->node[r]]++;
	}
	m->nranks = n;
	return 0;
}

const char *
wr_map_host(const struct wr_map *m, int rank)
{
	return m->host[m->node[rank]];
}

void
wr_map_print(const struct wr_map *m, FILE *f)
{
	int *ranks = malloc((size_t)(m->nranks > 0 ? m->nranks : 1) * sizeof(*ranks));
	char text[256];

	for (int n = 0; ranks != NULL && n < m->nnodes; n++) {
		size_t k = 0;

		for (int r = 0; r < m->nranks; r++) {
			if (m->node[r] == n) {
				ranks[k++] = r;
			}
		}
		wr_ranklist_text(ranks, k, text, sizeof(text));
		fprintf(f, "worldrun: node %d (%s): rank%s %s\n", n, m->host[n],
			k == 1 ? "" : "s", text);
	}
	free(ranks);
}

void
wr_map_finish(struct wr_map *m)
{
	free(m->node);
	free(m->local_rank);
	free(m->local_size);
	free(m->slots);
	free(m->host);
	free(m->node_name);
	free(m->pmi_mapping);
	wr_hosts_finish(&m->hosts);
	*m = (struct wr_map){0};
}
