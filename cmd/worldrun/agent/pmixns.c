/* SPDX-License-Identifier: MIT */
#include "pmixns.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "world_errors.h"

/* The blocks of a PMI_process_mapping that are read: worldrun's own
 * mappings have at most 1024 / 8 (map.c). */
#define BLOCKS_MAX 128
/* The job's keys, at most; then one PROC_DATA per rank. */
#define JOB_KEYS 16
#define RANK_KEYS 8

struct nsmap {
	int *node_of;   /* [size]: -1 where not known */
	int *local_of;  /* [size]: the rank's index among its node's */
	char **names;   /* [nnodes] */
	int *per_node;  /* [nnodes]: its ranks */
	int nused;      /* nodes with ranks */
	bool known;     /* every rank's node is known */
};

static int
parse_vector(const char *m, int (*b)[3], int max)
{
	int n = 0;

	if (strncmp(m, "(vector", 7) != 0) {
		return -EINVAL;
	}
	m += 7;
	while (*m == ',') {
		int used = 0;

		if (n == max || sscanf(m, ",(%d,%d,%d)%n", &b[n][0], &b[n][1], &b[n][2],
				       &used) != 3 || used == 0) {
			return -EINVAL;
		}
		m += used;
		n++;
	}
	return strcmp(m, ")") == 0 && n > 0 ? n : -EINVAL;
}

int
wr_pmixns_nodes_of(const char *mapping, int size, int nnodes, int *node_of)
{
	int b[BLOCKS_MAX][3];
	int n = parse_vector(mapping, b, BLOCKS_MAX), r = 0;

	if (n < 0) {
		return n;
	}
	for (int i = 0; i < n; i++) {
		if (b[i][0] < 0 || b[i][1] < 1 || b[i][2] < 1 || b[i][0] > nnodes - b[i][1]) {
			return -EINVAL;
		}
	}
	/* The vector repeats until every rank has its node. */
	while (r < size) {
		for (int i = 0; i < n && r < size; i++) {
			for (int k = 0; k < b[i][1] && r < size; k++) {
				for (int j = 0; j < b[i][2] && r < size; j++) {
					node_of[r++] = b[i][0] + k;
				}
			}
		}
	}
	return 0;
}

static void
nsmap_finish(struct nsmap *m, int nnodes)
{
	for (int i = 0; m->names != NULL && i < nnodes; i++) {
		free(m->names[i]);
	}
	free(m->names);
	free(m->node_of);
	free(m->local_of);
	free(m->per_node);
}

/*
 * Which node each rank is on: from the mapping when it parses, else only
 * this host's ranks. This host is named as it names itself; the others,
 * whose names it does not know, by their node rank.
 */
static int
nsmap_init(struct nsmap *m, const struct wr_pmixsrv_cfg *cfg)
{
	int *count = calloc((size_t)cfg->nnodes, sizeof(*count));
	char host[HOST_NAME_MAX + 1] = "localhost";

	m->per_node = count;
	m->node_of = malloc((size_t)cfg->size * sizeof(*m->node_of));
	m->local_of = malloc((size_t)cfg->size * sizeof(*m->local_of));
	m->names = calloc((size_t)cfg->nnodes, sizeof(*m->names));
	if (count == NULL || m->node_of == NULL || m->local_of == NULL || m->names == NULL) {
		return -ENOMEM;
	}
	m->known = cfg->mapping != NULL &&
		   wr_pmixns_nodes_of(cfg->mapping, cfg->size, cfg->nnodes, m->node_of) == 0;
	if (!m->known) {
		for (int r = 0; r < cfg->size; r++) {
			m->node_of[r] = -1;
		}
		for (int i = 0; i < cfg->nlocal; i++) {
			m->node_of[cfg->ranks[i]] = cfg->node;
		}
	}
	for (int r = 0; r < cfg->size; r++) {
		m->local_of[r] = m->node_of[r] >= 0 ? count[m->node_of[r]]++ : -1;
	}
	for (int i = 0; i < cfg->nnodes; i++) {
		m->nused += count[i] > 0;
	}
	gethostname(host, sizeof(host) - 1);
	for (int i = 0; i < cfg->nnodes; i++) {
		char other[32];

		snprintf(other, sizeof(other), "worldrun-node-%d", i);
		m->names[i] = strdup(cfg->node_name != NULL ? cfg->node_name[i]
				     : i == cfg->node ? host : other);
		if (m->names[i] == NULL) {
			return -ENOMEM;
		}
	}
	return 0;
}

/* A list of @n items of @each bytes at most, or NULL. */
static char *
list_alloc(size_t n, size_t each)
{
	return malloc(n * each + 1);
}

/* The names of the nodes with ranks after @head, comma-separated, or
 * NULL. (A spawn's namespace is on some of the job's nodes only; PMIx
 * wants no node without ranks in its maps.) */
static char *
names_list(const struct wr_pmixsrv_cfg *cfg, const struct nsmap *m, const char *head)
{
	size_t len = strlen(head) + 1, at;
	const char *sep = "";
	char *nodes;

	for (int i = 0; i < cfg->nnodes; i++) {
		len += strlen(m->names[i]) + 1;
	}
	nodes = malloc(len);
	at = nodes != NULL ? (size_t)snprintf(nodes, len, "%s", head) : 0;
	for (int i = 0; nodes != NULL && i < cfg->nnodes; i++) {
		if (m->per_node[i] > 0) {
			at += (size_t)snprintf(nodes + at, len - at, "%s%s", sep, m->names[i]);
			sep = ",";
		}
	}
	return nodes;
}

/*
 * Whether OpenPMIx 4.2 can make its regular expression of these names:
 * it copies each name's leading letters into a buffer of 50 bytes on its
 * stack, unbounded (preg/native's PMIX_MAX_NODE_PREFIX). Longer runs go
 * as its "raw:" list instead, which every PMIx reads as it is.
 */
static bool
regex_safe(const struct wr_pmixsrv_cfg *cfg, const struct nsmap *m)
{
	for (int i = 0; i < cfg->nnodes; i++) {
		size_t letters = 0;

		while (isalpha((unsigned char)m->names[i][letters])) {
			letters++;
		}
		if (letters >= 40) {
			return false;
		}
	}
	return true;
}

/* PMIX_NODE_MAP and PMIX_PROC_MAP, as PMIx's own regular expressions. */
static int
add_maps(const struct wr_pmixsrv_cfg *cfg, const struct nsmap *m, pmix_info_t *info,
	 size_t *k, char *why, size_t size)
{
	bool raw = !regex_safe(cfg, m);
	char *nodes = names_list(cfg, m, raw ? "raw:" : "");
	char *ppn = list_alloc((size_t)cfg->size + (size_t)cfg->nnodes, 12);
	char *regex = NULL;
	size_t at = 0;
	int rc = nodes == NULL || ppn == NULL ? -ENOMEM : 0;

	for (int i = 0, used = 0; rc == 0 && i < cfg->nnodes; i++) {
		const char *sep = used > 0 ? ";" : "";

		if (m->per_node[i] == 0) {
			continue;
		}
		used++;
		for (int r = 0; r < cfg->size; r++) {
			if (m->node_of[r] == i) {
				at += (size_t)sprintf(ppn + at, "%s%d", sep, r);
				sep = ",";
			}
		}
		ppn[at] = '\0';
	}
	if (rc == 0 && raw) {
		PMIX_INFO_LOAD(&info[(*k)++], PMIX_NODE_MAP, nodes, PMIX_REGEX);
	} else if (rc == 0 && PMIx_generate_regex(nodes, &regex) == PMIX_SUCCESS) {
		PMIX_INFO_LOAD(&info[(*k)++], PMIX_NODE_MAP, regex, PMIX_REGEX);
		free(regex);
		regex = NULL;
	} else if (rc == 0) {
		snprintf(why, size, "PMIx could not make a map of the nodes");
		rc = WORLD_EPROTO;
	}
	if (rc == 0 && PMIx_generate_ppn(ppn, &regex) == PMIX_SUCCESS) {
		PMIX_INFO_LOAD(&info[(*k)++], PMIX_PROC_MAP, regex, PMIX_REGEX);
		free(regex);
	} else if (rc == 0) {
		snprintf(why, size, "PMIx could not make a map of the ranks");
		rc = WORLD_EPROTO;
	}
	free(nodes);
	free(ppn);
	return rc;
}

/* What this host has: its ranks, the lowest of them (none for a spawn's
 * namespace of another host), the job's directory. */
static int
add_local(const struct wr_pmixsrv_cfg *cfg, pmix_info_t *info, size_t *k)
{
	char *peers = list_alloc((size_t)cfg->nlocal, 12);
	uint32_t n = (uint32_t)cfg->nlocal;
	pmix_rank_t leader = cfg->nlocal > 0 ? (pmix_rank_t)cfg->ranks[0] : 0;
	size_t at = 0;

	if (peers == NULL) {
		return -ENOMEM;
	}
	PMIX_INFO_LOAD(&info[(*k)++], PMIX_TMPDIR, cfg->dir, PMIX_STRING);
	PMIX_INFO_LOAD(&info[(*k)++], PMIX_NSDIR, cfg->dir, PMIX_STRING);
	if (cfg->nlocal == 0) {
		free(peers);
		return 0;
	}
	peers[0] = '\0';
	for (int i = 0; i < cfg->nlocal; i++) {
		at += (size_t)sprintf(peers + at, "%s%d", i > 0 ? "," : "", cfg->ranks[i]);
	}
	PMIX_INFO_LOAD(&info[(*k)++], PMIX_LOCAL_PEERS, peers, PMIX_STRING);
	PMIX_INFO_LOAD(&info[(*k)++], PMIX_LOCALLDR, &leader, PMIX_PROC_RANK);
	PMIX_INFO_LOAD(&info[(*k)++], PMIX_LOCAL_SIZE, &n, PMIX_UINT32);
	PMIX_INFO_LOAD(&info[(*k)++], PMIX_NODE_SIZE, &n, PMIX_UINT32);
	free(peers);
	return 0;
}

/* One rank's own keys, as one PMIX_PROC_DATA array (which @info owns). */
static int
add_rank(const struct nsmap *m, int r, pmix_info_t *info)
{
	pmix_data_array_t *a;
	pmix_info_t *in;
	pmix_rank_t rank = (pmix_rank_t)r;
	uint32_t u = (uint32_t)r, node = (uint32_t)m->node_of[r], zero = 0;
	uint16_t local = (uint16_t)m->local_of[r];

	PMIX_DATA_ARRAY_CREATE(a, RANK_KEYS, PMIX_INFO);
	if (a == NULL) {
		return -ENOMEM;
	}
	in = a->array;
	PMIX_INFO_LOAD(&in[0], PMIX_RANK, &rank, PMIX_PROC_RANK);
	PMIX_INFO_LOAD(&in[1], PMIX_APPNUM, &zero, PMIX_UINT32);
	PMIX_INFO_LOAD(&in[2], PMIX_GLOBAL_RANK, &u, PMIX_PROC_RANK);
	PMIX_INFO_LOAD(&in[3], PMIX_APP_RANK, &u, PMIX_PROC_RANK);
	PMIX_INFO_LOAD(&in[4], PMIX_LOCAL_RANK, &local, PMIX_UINT16);
	PMIX_INFO_LOAD(&in[5], PMIX_NODE_RANK, &local, PMIX_UINT16);
	PMIX_INFO_LOAD(&in[6], PMIX_NODEID, &node, PMIX_UINT32);
	PMIX_INFO_LOAD(&in[7], PMIX_HOSTNAME, m->names[m->node_of[r]], PMIX_STRING);
	PMIX_LOAD_KEY(info->key, PMIX_PROC_DATA);
	info->value.type = PMIX_DATA_ARRAY;
	info->value.data.darray = a;
	return 0;
}

int
wr_pmixns_info(const struct wr_pmixsrv_cfg *cfg, pmix_info_t **info, size_t *n,
	       char *why, size_t size)
{
	struct nsmap m = { 0 };
	uint32_t job = (uint32_t)cfg->size, nodes, zero = 0;
	size_t k = 0;
	int rc = nsmap_init(&m, cfg);

	*info = NULL;
	*n = 0;
	if (rc == 0) {
		PMIX_INFO_CREATE(*info, JOB_KEYS + (size_t)cfg->size);
		rc = *info == NULL ? -ENOMEM : 0;
	}
	if (rc == 0) {
		PMIX_INFO_LOAD(&(*info)[k++], PMIX_JOBID, cfg->jobid, PMIX_STRING);
		PMIX_INFO_LOAD(&(*info)[k++], PMIX_UNIV_SIZE, &job, PMIX_UINT32);
		PMIX_INFO_LOAD(&(*info)[k++], PMIX_JOB_SIZE, &job, PMIX_UINT32);
		PMIX_INFO_LOAD(&(*info)[k++], PMIX_MAX_PROCS, &job, PMIX_UINT32);
		PMIX_INFO_LOAD(&(*info)[k++], PMIX_APP_SIZE, &job, PMIX_UINT32);
		PMIX_INFO_LOAD(&(*info)[k++], PMIX_APPNUM, &zero, PMIX_UINT32);
		nodes = (uint32_t)(m.known ? m.nused : cfg->nnodes);
		PMIX_INFO_LOAD(&(*info)[k++], PMIX_NUM_NODES, &nodes, PMIX_UINT32);
		rc = add_local(cfg, *info, &k);
	}
	if (rc == 0 && m.known) {
		rc = add_maps(cfg, &m, *info, &k, why, size);
	}
	for (int r = 0; rc == 0 && r < cfg->size; r++) {
		if (m.node_of[r] >= 0) {
			rc = add_rank(&m, r, &(*info)[k++]);
		}
	}
	nsmap_finish(&m, cfg->nnodes);
	if (rc < 0 && *info != NULL) {
		PMIX_INFO_FREE(*info, JOB_KEYS + (size_t)cfg->size);
		*info = NULL;
		return rc;
	}
	*n = k;
	return rc;
}
