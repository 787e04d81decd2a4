/* SPDX-License-Identifier: MIT */
#include "spell.h"

#include <string.h>

#define RANKFILE "not supported: give the hosts with --hosts FILE and place " \
		 "the ranks with --map-by slot|node or --ppn N"
#define PER_NODE "use --ppn N (ranks per host) with --hosts FILE or -H LIST"
#define PLACE "not supported: worldrun places ranks on hosts (--map-by " \
	      "slot|node, --ppn N) but does not bind them (--bind-to none is " \
	      "accepted)"
#define LAUNCH "not supported: worldrun starts its agents on other hosts " \
	       "at its own path there, with ssh, --rsh CMD or srun (--launcher)"
#define OUT_FILES "use --output-dir DIR (each rank's output in DIR/RANK/stdout " \
		  "and DIR/RANK/stderr)"
#define SOME_ENV "use --env-none and -x NAME for each name to forward"
#define MASTER "worldrun sets MASTER_ADDR (127.0.0.1) and MASTER_PORT (a free " \
	       "port) itself"

#define MCA "Open MPI's MCA parameters mean nothing to worldrun: give " \
	    "one to an Open MPI program with -x OMPI_MCA_NAME=VALUE"
#define STAMP "not supported: worldrun does not timestamp lines (-l " \
	      "labels them with the rank)"
#define MERGE "use the shell's 2>&1: lines stay whole in one stream"
#define MPMD "not supported: every rank runs the same program (branch " \
	     "on WORLD_RANK)"
#define RESTART "not supported: worldrun does not restart ranks"
#define NODE0 "only 0 is supported: torchrun's spelling places every rank " \
	      "on this machine (other hosts: --hosts FILE)"

/* What each spelling means there is in worldrun(1), in the same order. */
static const struct wr_spell spell_table[] = {
	/* Open MPI and MPICH: the same as worldrun's own option. */
	{ "-wd", 1, "wdir", NULL, NULL },
	{ "-genv", 2, "env", NULL, NULL },
	{ "-env", 2, "env", NULL, NULL },
	{ "-prepend-rank", 0, "label", NULL, NULL },
	{ "-hostfile", 1, "hosts", NULL, NULL },
	{ "-machinefile", 1, "hosts", NULL, NULL },
	{ "-default-hostfile", 1, "hosts", NULL, NULL },
	{ "--default-hostfile", 1, "hosts", NULL, NULL },
	{ "-f", 1, "hosts", NULL, NULL },
	{ "-host", 1, "host", NULL, NULL },
	{ "-hosts", 1, "host", NULL, NULL },
	{ "-ppn", 1, "ppn", NULL, NULL },
	{ "-npernode", 1, "ppn", NULL, NULL },
	{ "--npernode", 1, "ppn", NULL, NULL },
	{ "-N", 1, "ppn", NULL, NULL },
	{ "-map-by", 1, "map-by", NULL, NULL },
	{ "-display-map", 0, "display-map", NULL, NULL },
	{ "-oversubscribe", 0, "oversubscribe", NULL, NULL },
	{ "-genvnone", 0, "env-none", NULL, NULL },
	{ "-envnone", 0, "env-none", NULL, NULL },
	/* Accepted, and nothing to do in worldrun. */
	{ "-genvall", 0, NULL, NULL, NULL },
	{ "-envall", 0, NULL, NULL, NULL },
	{ "-allow-run-as-root", 0, NULL, NULL, NULL },
	{ "--allow-run-as-root", 0, NULL, NULL, NULL },
	{ "-bind-to", 1, NULL, "none", PLACE },
	{ "--bind-to", 1, NULL, "none", PLACE },
	/* torchrun, in local mode. */
	{ "--nproc-per-node", 1, "np", NULL, NULL },
	{ "--nproc_per_node", 1, "np", NULL, NULL },
	{ "--nnodes", 1, NULL, "1|1:1", "only 1 is supported: torchrun's "
	  "spelling places every rank on this machine (other hosts: --hosts "
	  "FILE)" },
	{ "--node-rank", 1, NULL, "0", NODE0 },
	{ "--node_rank", 1, NULL, "0", NODE0 },
	{ "--standalone", 0, NULL, NULL, NULL },
	/* Refused, with what to use instead. */
	{ "-rf", 0, NULL, NULL, RANKFILE },
	{ "--rankfile", 0, NULL, NULL, RANKFILE },
	{ "-pernode", 0, NULL, NULL, PER_NODE },
	{ "--pernode", 0, NULL, NULL, PER_NODE },
	{ "--ppr", 0, NULL, NULL, PER_NODE },
	{ "-rank-by", 0, NULL, NULL, PLACE },
	{ "--rank-by", 0, NULL, NULL, PLACE },
	{ "-cpu-list", 0, NULL, NULL, PLACE },
	{ "--cpu-list", 0, NULL, NULL, PLACE },
	{ "-report-bindings", 0, NULL, NULL, PLACE },
	{ "--report-bindings", 0, NULL, NULL, PLACE },
	{ "-mca", 0, NULL, NULL, MCA },
	{ "--mca", 0, NULL, NULL, MCA },
	{ "-launcher", 1, "launcher", NULL, NULL },
	{ "-launcher-exec", 1, "rsh", NULL, NULL },
	{ "-bootstrap-exec", 1, "rsh", NULL, NULL },
	{ "-bootstrap", 1, "launcher", NULL, NULL },
	{ "--launch-agent", 0, NULL, NULL, LAUNCH },
	{ "-prefix", 0, NULL, NULL, LAUNCH },
	{ "--prefix", 0, NULL, NULL, LAUNCH },
	{ "-output-filename", 0, NULL, NULL, OUT_FILES },
	{ "--output-filename", 0, NULL, NULL, OUT_FILES },
	{ "-outfile-pattern", 0, NULL, NULL, OUT_FILES },
	{ "-errfile-pattern", 0, NULL, NULL, OUT_FILES },
	{ "--log-dir", 0, NULL, NULL, OUT_FILES },
	{ "--log_dir", 0, NULL, NULL, OUT_FILES },
	{ "-timestamp-output", 0, NULL, NULL, STAMP },
	{ "--timestamp-output", 0, NULL, NULL, STAMP },
	{ "-merge-stderr-to-stdout", 0, NULL, NULL, MERGE },
	{ "--merge-stderr-to-stdout", 0, NULL, NULL, MERGE },
	{ "-genvlist", 0, NULL, NULL, SOME_ENV },
	{ "-envlist", 0, NULL, NULL, SOME_ENV },
	{ "-configfile", 0, NULL, NULL, MPMD },
	{ "--app", 0, NULL, NULL, MPMD },
	{ "-print-all-exitcodes", 0, NULL, NULL, "use --report FILE: it holds "
	  "every rank's status" },
	{ "--master-addr", 0, NULL, NULL, MASTER },
	{ "--master_addr", 0, NULL, NULL, MASTER },
	{ "--master-port", 0, NULL, NULL, MASTER },
	{ "--master_port", 0, NULL, NULL, MASTER },
	{ "--rdzv-backend", 0, NULL, NULL, MASTER },
	{ "--rdzv_backend", 0, NULL, NULL, MASTER },
	{ "--rdzv-endpoint", 0, NULL, NULL, MASTER },
	{ "--rdzv_endpoint", 0, NULL, NULL, MASTER },
	{ "--rdzv-id", 0, NULL, NULL, MASTER },
	{ "--rdzv_id", 0, NULL, NULL, MASTER },
	{ "--max-restarts", 0, NULL, NULL, RESTART },
	{ "--max_restarts", 0, NULL, NULL, RESTART },
};

const struct wr_spell *
wr_spell_find(const char *word, size_t len)
{
	for (size_t i = 0; i < sizeof(spell_table) / sizeof(spell_table[0]); i++) {
		const char *name = spell_table[i].name;

		if (strlen(name) == len && strncmp(name, word, len) == 0) {
			return &spell_table[i];
		}
	}
	return NULL;
}

bool
wr_spell_ok(const struct wr_spell *sp, const char *value)
{
	size_t len = value != NULL ? strlen(value) : 0;

	for (const char *p = sp->ok; p != NULL && value != NULL; p = strchr(p, '|')) {
		p += *p == '|';
		if (strncmp(p, value, len) == 0 && (p[len] == '|' || p[len] == '\0')) {
			return true;
		}
	}
	return false;
}

int
wr_spell_distance(const char *a, size_t alen, const char *b)
{
	size_t blen = strlen(b);
	int d[33][33];

	if (alen > 32 || blen > 32) {
		return 99;
	}
	for (size_t i = 0; i <= alen; i++) {
		for (size_t j = 0; j <= blen; j++) {
			int best = (int)(i > j ? i : j);

			if (i > 0 && j > 0) {
				int sub = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
				int del = d[i - 1][j] + 1, ins = d[i][j - 1] + 1;

				best = sub < del ? sub : del;
				best = ins < best ? ins : best;
				if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
				    a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < best) {
					best = d[i - 2][j - 2] + 1;
				}
			}
			d[i][j] = i == 0 || j == 0 ? (int)(i + j) : best;
		}
	}
	return d[alen][blen];
}
