/* SPDX-License-Identifier: MIT */
#include "spell.h"

#include <string.h>

#include "torchrun.h"

#define RANKFILE "not supported: give the hosts with --hosts FILE and place " \
		 "the ranks with --map-by slot|node or --ppn N"
#define PER_NODE "use --ppn N (ranks per host) with --hosts FILE or -H LIST"
#define PLACE "not supported: worldrun places ranks on hosts (--map-by " \
	      "slot|node, --ppn N) and binds them to CPUs with --bind-to LEVEL " \
	      "and --cpus-per-rank N"
#define LAUNCH "not supported: worldrun starts its agents on other hosts " \
	       "at its own path there, with ssh, --rsh CMD or srun (--launcher)"
#define OUT_FILES "use --output-dir DIR (each rank's output in DIR/RANK/stdout " \
		  "and DIR/RANK/stderr)"
#define SOME_ENV "use --env-none and -x NAME for each name to forward"
#define RDZV "worldrun is the job's rendezvous: drop it (static and c10d " \
	     "are accepted)"
#define START "worldrun starts each rank with exec: drop it"
#define EVENTS "worldrun's events are in --report FILE: drop it"
#define FILTER "not supported: every rank's output is shown (-l labels " \
	       "it, --output-dir DIR keeps each rank's apart)"
#define LOCAL_ADDR "worldrun finds each host's address itself: drop it"
#define SIGNALS "worldrun forwards SIGINT, SIGTERM, SIGHUP, SIGUSR1, " \
		"SIGUSR2, SIGTSTP and SIGCONT, and SIGQUIT with --forward-quit: " \
		"drop it"

#define MCA "Open MPI's MCA parameters mean nothing to worldrun: give " \
	    "one to an Open MPI program with -x OMPI_MCA_NAME=VALUE"
#define STAMP "not supported: worldrun does not timestamp lines (-l " \
	      "labels them with the rank)"
#define MERGE "use the shell's 2>&1: lines stay whole in one stream"
#define MPMD "not supported: every rank runs the same program (branch " \
	     "on WORLD_RANK)"
#define NODES "worldrun runs on the hosts of --hosts FILE, -H LIST or the " \
	      "Slurm allocation: give the hosts there, and --ppn N ranks each"
#define TIME "use --timeout S (the job's limit in seconds; status 124)"
#define WAIT "worldrun stops the other ranks at once when one fails; " \
	     "--keep-going lets them finish"
#define NODE0 "only 0 is supported: worldrun starts every node's ranks from " \
	      "this one command (give the hosts with --hosts FILE, -H LIST " \
	      "or a Slurm allocation)"

/* What each spelling means there is in worldrun(1), in the same order. */
static const struct wr_spell spell_table[] = {
	/* Open MPI and MPICH: the same as worldrun's own option. */
	{ "-wd", 1, "wdir", NULL, NULL, 0 },
	{ "-genv", 2, "env", NULL, NULL, 0 },
	{ "-env", 2, "env", NULL, NULL, 0 },
	{ "-prepend-rank", 0, "label", NULL, NULL, 0 },
	{ "-hostfile", 1, "hosts", NULL, NULL, 0 },
	{ "-machinefile", 1, "hosts", NULL, NULL, 0 },
	{ "-default-hostfile", 1, "hosts", NULL, NULL, 0 },
	{ "--default-hostfile", 1, "hosts", NULL, NULL, 0 },
	{ "-f", 1, "hosts", NULL, NULL, 0 },
	{ "-host", 1, "host", NULL, NULL, 0 },
	{ "-hosts", 1, "host", NULL, NULL, 0 },
	{ "-ppn", 1, "ppn", NULL, NULL, 0 },
	{ "-npernode", 1, "ppn", NULL, NULL, 0 },
	{ "--npernode", 1, "ppn", NULL, NULL, 0 },
	{ "-N", 1, "ppn", NULL, NULL, 0 },
	{ "-map-by", 1, "map-by", NULL, NULL, 0 },
	{ "-display-map", 0, "display-map", NULL, NULL, 0 },
	{ "-oversubscribe", 0, "oversubscribe", NULL, NULL, 0 },
	{ "-genvnone", 0, "env-none", NULL, NULL, 0 },
	{ "-envnone", 0, "env-none", NULL, NULL, 0 },
	/* Accepted, and nothing to do in worldrun. */
	{ "-genvall", 0, NULL, NULL, NULL, 0 },
	{ "-envall", 0, NULL, NULL, NULL, 0 },
	{ "-allow-run-as-root", 0, NULL, NULL, NULL, 0 },
	{ "--allow-run-as-root", 0, NULL, NULL, NULL, 0 },
	{ "-bind-to", 1, "bind-to", NULL, NULL, 0 },
	/* Slurm's srun, where srun's meaning cannot be misread. */
	{ "--ntasks", 1, "np", NULL, NULL, 0 },
	{ "--ntasks-per-node", 1, "ppn", NULL, NULL, 0 },
	{ "-K", 0, NULL, NULL, NULL, 0 },
	{ "--kill-on-bad-exit", 0, NULL, NULL, NULL, 0 },
	{ "-u", 0, NULL, NULL, NULL, 0 },
	{ "--unbuffered", 0, NULL, NULL, NULL, 0 },
	/* torchrun's, its two spellings each (torchrun.h says what each does). */
	{ "--nproc-per-node", 1, NULL, NULL, NULL, WR_TORCH_NPROC },
	{ "--nproc_per_node", 1, NULL, NULL, NULL, WR_TORCH_NPROC },
	{ "--nnodes", 1, NULL, NULL, NULL, WR_TORCH_NNODES },
	{ "--node-rank", 1, NULL, "0", NODE0, 0 },
	{ "--node_rank", 1, NULL, "0", NODE0, 0 },
	{ "--standalone", 0, NULL, NULL, NULL, WR_TORCH_STANDALONE },
	{ "--role", 1, NULL, NULL, NULL, WR_TORCH_ROLE },
	{ "-m", 0, NULL, NULL, NULL, WR_TORCH_MODULE },
	{ "--module", 0, NULL, NULL, NULL, WR_TORCH_MODULE },
	{ "--no-python", 0, NULL, NULL, NULL, WR_TORCH_NO_PYTHON },
	{ "--no_python", 0, NULL, NULL, NULL, WR_TORCH_NO_PYTHON },
	{ "--run-path", 0, NULL, NULL, NULL, WR_TORCH_RUN_PATH },
	{ "--run_path", 0, NULL, NULL, NULL, WR_TORCH_RUN_PATH },
	{ "--master-addr", 1, NULL, NULL, NULL, WR_TORCH_MASTER_ADDR },
	{ "--master_addr", 1, NULL, NULL, NULL, WR_TORCH_MASTER_ADDR },
	{ "--master-port", 1, NULL, NULL, NULL, WR_TORCH_MASTER_PORT },
	{ "--master_port", 1, NULL, NULL, NULL, WR_TORCH_MASTER_PORT },
	{ "--rdzv-id", 1, NULL, NULL, NULL, WR_TORCH_RDZV_ID },
	{ "--rdzv_id", 1, NULL, NULL, NULL, WR_TORCH_RDZV_ID },
	{ "--monitor-interval", 1, NULL, NULL, NULL, WR_TORCH_MONITOR },
	{ "--monitor_interval", 1, NULL, NULL, NULL, WR_TORCH_MONITOR },
	/* Accepted, and nothing to do: worldrun is the rendezvous, and it
	 * execs each rank (no multiprocessing start). */
	{ "--rdzv-backend", 1, NULL, "static|c10d", RDZV, 0 },
	{ "--rdzv_backend", 1, NULL, "static|c10d", RDZV, 0 },
	{ "--rdzv-endpoint", 1, NULL, NULL, NULL, 0 },
	{ "--rdzv_endpoint", 1, NULL, NULL, NULL, 0 },
	{ "--rdzv-conf", 1, NULL, NULL, NULL, 0 },
	{ "--rdzv_conf", 1, NULL, NULL, NULL, 0 },
	{ "--start-method", 1, NULL, "spawn|fork|forkserver", START, 0 },
	{ "--start_method", 1, NULL, "spawn|fork|forkserver", START, 0 },
	{ "--event-log-handler", 1, NULL, "null", EVENTS, 0 },
	{ "--event_log_handler", 1, NULL, "null", EVENTS, 0 },
	{ "--redirects", 1, NULL, "0", OUT_FILES, 0 },
	{ "-r", 1, NULL, "0", OUT_FILES, 0 },
	{ "--tee", 1, NULL, "0", OUT_FILES, 0 },
	/* Refused, with what to use instead. */
	{ "-rf", 0, NULL, NULL, RANKFILE, 0 },
	{ "--rankfile", 0, NULL, NULL, RANKFILE, 0 },
	{ "-pernode", 0, NULL, NULL, PER_NODE, 0 },
	{ "--pernode", 0, NULL, NULL, PER_NODE, 0 },
	{ "--ppr", 0, NULL, NULL, PER_NODE, 0 },
	{ "-rank-by", 0, NULL, NULL, PLACE, 0 },
	{ "--rank-by", 0, NULL, NULL, PLACE, 0 },
	{ "-cpu-list", 0, NULL, NULL, PLACE, 0 },
	{ "--cpu-list", 0, NULL, NULL, PLACE, 0 },
	{ "-report-bindings", 0, "report-bindings", NULL, NULL, 0 },
	{ "-mca", 0, NULL, NULL, MCA, 0 },
	{ "--mca", 0, NULL, NULL, MCA, 0 },
	{ "-launcher", 1, "launcher", NULL, NULL, 0 },
	{ "-launcher-exec", 1, "rsh", NULL, NULL, 0 },
	{ "-bootstrap-exec", 1, "rsh", NULL, NULL, 0 },
	{ "-bootstrap", 1, "launcher", NULL, NULL, 0 },
	{ "--launch-agent", 0, NULL, NULL, LAUNCH, 0 },
	{ "-prefix", 0, NULL, NULL, LAUNCH, 0 },
	{ "--prefix", 0, NULL, NULL, LAUNCH, 0 },
	{ "-output-filename", 0, NULL, NULL, OUT_FILES, 0 },
	{ "--output-filename", 0, NULL, NULL, OUT_FILES, 0 },
	{ "-outfile-pattern", 0, NULL, NULL, OUT_FILES, 0 },
	{ "-errfile-pattern", 0, NULL, NULL, OUT_FILES, 0 },
	{ "--log-dir", 0, NULL, NULL, OUT_FILES, 0 },
	{ "--log_dir", 0, NULL, NULL, OUT_FILES, 0 },
	{ "--logs-specs", 0, NULL, NULL, OUT_FILES, 0 },
	{ "--logs_specs", 0, NULL, NULL, OUT_FILES, 0 },
	{ "--local-ranks-filter", 0, NULL, NULL, FILTER, 0 },
	{ "--local_ranks_filter", 0, NULL, NULL, FILTER, 0 },
	{ "--local-addr", 0, NULL, NULL, LOCAL_ADDR, 0 },
	{ "--local_addr", 0, NULL, NULL, LOCAL_ADDR, 0 },
	{ "--numa-binding", 0, NULL, NULL, PLACE, 0 },
	{ "--numa_binding", 0, NULL, NULL, PLACE, 0 },
	{ "--signals-to-handle", 0, NULL, NULL, SIGNALS, 0 },
	{ "--signals_to_handle", 0, NULL, NULL, SIGNALS, 0 },
	{ "-timestamp-output", 0, NULL, NULL, STAMP, 0 },
	{ "--timestamp-output", 0, NULL, NULL, STAMP, 0 },
	{ "-merge-stderr-to-stdout", 0, NULL, NULL, MERGE, 0 },
	{ "--merge-stderr-to-stdout", 0, NULL, NULL, MERGE, 0 },
	{ "-genvlist", 0, NULL, NULL, SOME_ENV, 0 },
	{ "-envlist", 0, NULL, NULL, SOME_ENV, 0 },
	{ "-configfile", 0, NULL, NULL, MPMD, 0 },
	{ "--app", 0, NULL, NULL, MPMD, 0 },
	{ "-print-all-exitcodes", 0, NULL, NULL, "use --report FILE: it holds "
	  "every rank's status", 0 },
	{ "-iface", 0, NULL, NULL, LOCAL_ADDR, 0 },
	{ "--nodes", 0, NULL, NULL, NODES, 0 },
	{ "-c", 1, "cpus-per-rank", NULL, NULL, 0 },
	{ "--cpus-per-task", 1, "cpus-per-rank", NULL, NULL, 0 },
	{ "-t", 0, NULL, NULL, TIME, 0 },
	{ "--time", 0, NULL, NULL, TIME, 0 },
	{ "-o", 0, NULL, NULL, OUT_FILES, 0 },
	{ "--output", 0, NULL, NULL, OUT_FILES, 0 },
	{ "-W", 0, NULL, NULL, WAIT, 0 },
	{ "--wait", 0, NULL, NULL, WAIT, 0 },
	{ "--max_restarts", 1, "max-restarts", NULL, NULL, 0 },
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
