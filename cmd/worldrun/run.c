/* SPDX-License-Identifier: MIT */
/*
 * run: the launcher's one context from options to exit status. It reads
 * the options, plans the job (map, job, program), opens the parts in
 * order (guardian, loop, policy, output, registry, nodes), runs the loop,
 * and at the end writes the report and closes them all. What happens
 * while the job runs is policy.c's.
 */
#include "run.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "nodes.h"
#include "output.h"
#include "progress.h"
#include "quote.h"
#include "report.h"
#include "resolve.h"

extern char **environ;

/* Seconds the other hosts' agents have to clean up and say they are
 * ready for the next attempt (restart.h), all of them together. */
#define KEEP_S 5.0

/*
 * worldrun holds about 25 fds of its own (the loop, the guardian, the
 * registry's listeners, the slots ranks start through), and each rank
 * costs a few more: its output pipes, its registry connection, its stdin
 * pipe and --output-dir files. The PMIx server holds about 10 (its
 * threads' loops, its listener) and a connection per rank. Raise the
 * soft limit as far as the hard one goes; ranks get the original back.
 */
static int
check_fd_limit(struct wr_run *run, struct rlimit *orig)
{
	long per_rank = 3 + (run->opts.stdin_mode == WR_STDIN_ALL) +
			(run->opts.output_dir != NULL ? 2 : 0) + !run->opts.no_pmix;
	long need = 32 + (run->opts.no_pmix ? 0 : 12) + per_rank * run->opts.np;
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, orig) < 0) {
		return 0;
	}
	rl = *orig;
	if (rl.rlim_cur != RLIM_INFINITY && (long)rl.rlim_cur < need) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
		getrlimit(RLIMIT_NOFILE, &rl);
	}
	if (rl.rlim_cur != RLIM_INFINITY && (long)rl.rlim_cur < need) {
		fprintf(stderr, "worldrun: %ld rank%s about %ld open files, "
				"but the limit is %ld (ulimit -n)\n", run->opts.np,
			run->opts.np == 1 ? " needs" : "s need", need, (long)rl.rlim_cur);
		return 125;
	}
	return 0;
}

/*
 * Where the ranks go (map.h), and -n and --stdin checked against it: 0,
 * or 125 after one line.
 */
static int
open_map(struct wr_run *run)
{
	char err[WR_HOSTS_ERR_MAX];

	wr_slurm_env_read(&run->slurm);
	if (wr_map_build(&run->map, &run->opts, run->host, &run->slurm, err) < 0) {
		fprintf(stderr, "worldrun: %s\n", err);
		return 125;
	}
	run->opts.np = run->map.nranks;
	if (run->opts.stdin_mode == WR_STDIN_RANK &&
	    run->opts.stdin_rank >= run->map.nranks) {
		fprintf(stderr, "worldrun: --stdin %ld: there are only %d ranks "
				"(see worldrun --help)\n",
			run->opts.stdin_rank, run->map.nranks);
		return 125;
	}
	return 0;
}

/* One line per rank; names and arguments quoted as a shell would read them. */
static int
dry_run(struct wr_run *run)
{
	char q[3][WR_QUOTE_MAX];

	bool agents = run->map.nnodes > 1 || run->map.here < 0;

	printf("worldrun: dry run of job %s: %d rank%s", run->job.jobid,
	       run->map.nranks, run->map.nranks == 1 ? "" : "s");
	/* How the other nodes' agents would start: the launcher chosen. */
	if (agents && run->map.launcher == WR_LAUNCH_SLURM) {
		printf("; agents by srun (Slurm job %s)", run->slurm.job_id);
	} else if (agents) {
		printf("; agents by %s", wr_quote(q[0], sizeof(q[0]),
						  run->opts.rsh != NULL ? run->opts.rsh : "ssh"));
	}
	printf("\n");
	for (int i = 0; i < run->map.nranks; i++) {
		printf("rank %d host %s wdir %s program %s", i,
		       wr_quote(q[0], sizeof(q[0]), wr_map_host(&run->map, i)),
		       wr_quote(q[1], sizeof(q[1]), run->job.wdir != NULL ? run->job.wdir : "."),
		       wr_quote(q[2], sizeof(q[2]), run->job.path));
		for (int a = 1; a < run->opts.argc; a++) {
			printf(" %s", wr_quote(q[0], sizeof(q[0]), run->opts.argv[a]));
		}
		printf("\n");
	}
	return fflush(stdout) == 0 ? 0 : 125;
}

static int
open_registry(struct wr_run *run, struct wr_reghost_cfg *cfg)
{
	int rc = wr_reghost_open(&run->registry, cfg);

	if (rc != 0) {
		return rc;
	}
	wr_reghost_guard(&run->registry, &run->guardian);
	/* The ranks' fabric segments and doorbells, however they end. */
	wr_guardian_remove_job_shm(&run->guardian, run->job.jobid);
	if (wr_reghost_export(&run->registry, &run->job.env) < 0) {
		return -ENOMEM;
	}
	/* Listed once the registry listens, before any rank starts; or said why not. */
	wr_jobfile_write(&run->jobfile, &(struct wr_jobfile_job){
		.jobid = run->job.jobid, .ranks = run->map.nranks, .host = run->host,
		.program = run->job.path, .argc = run->opts.argc, .argv = run->opts.argv,
		.registry = &run->registry, .guardian = &run->guardian });
	return 0;
}

/*
 * libevent warns on stderr when epoll refuses an fd (a regular file as
 * stdin); we handle that case ourselves, so its messages are noise.
 */
static void
quiet_libevent(int severity, const char *msg)
{
}

/* What the policy asks of the agents, once they are open (nodes.h). */
static int
agents_send(void *arg, const struct wr_cmd *cmd)
{
	struct wr_run *run = arg;

	return run->nodes != NULL ? wr_nodes_send(run->nodes, cmd) : 0;
}

static void
agents_cancel(void *arg)
{
	struct wr_run *run = arg;

	if (run->nodes != NULL) {
		wr_nodes_cancel(run->nodes);
	}
}

static void
agents_give_up(void *arg, const char *why)
{
	struct wr_run *run = arg;

	wr_nodes_give_up(run->nodes, why);
}

static void
agents_flush(void *arg)
{
	struct wr_run *run = arg;

	if (run->nodes != NULL) {
		wr_nodes_flush(run->nodes);
	}
}

/* A spawn's @count ranks join the job on @node[i] each: the map, the
 * output, the registry and the agents' bookkeeping make room for them
 * (the policy for itself). */
static int
job_grow(void *arg, const int *node, int count)
{
	struct wr_run *run = arg;
	int rc = wr_map_grow(&run->map, node, count);

	if (rc == 0) {
		rc = wr_output_grow(run->out, run->map.nranks);
	}
	if (rc == 0) {
		rc = wr_reghost_grow(&run->registry, run->map.nranks);
	}
	if (rc == 0) {
		rc = wr_nodes_grow(run->nodes, run->map.nranks);
	}
	return rc;
}

static void
on_signal(void *arg, int sig)
{
	wr_policy_signal(arg, sig);
}

static int
open_policy(struct wr_run *run)
{
	const struct wr_opts *o = &run->opts;
	struct wr_policy_cfg cfg = {
		.base = run->base, .map = &run->map, .jobid = run->job.jobid,
		.host = run->host, .program = run->job.path, .wdir = run->job.wdir,
		.far_wdir = run->job.far_wdir, .t0 = run->t0,
		.kill_grace = o->kill_grace, .timeout = o->timeout,
		.verbose = o->verbose, .keep_going = o->keep_going,
		.forward_quit = o->forward_quit, .timeout_stacks = o->timeout_stacks,
		/* Every rank's copy, or a stdin rank that another node runs. */
		.feed = o->stdin_mode == WR_STDIN_ALL ||
			(o->stdin_mode == WR_STDIN_RANK && run->job.stdin_fd < 0),
		.agents = { .send = agents_send, .cancel = agents_cancel,
			    .give_up = agents_give_up, .flush = agents_flush,
			    .arg = run },
		.grow = job_grow, .grow_arg = run,
	};

	return wr_policy_create(&cfg, &run->policy);
}

static int
open_loop(struct wr_run *run)
{
	struct wr_output_cfg ocfg = {
		.nranks = run->map.nranks, .label = run->opts.label,
		.dir = run->opts.output_dir,
	};
	struct wr_reghost_cfg rcfg = {
		.jobid = run->job.jobid, .size = run->map.nranks, .environ = environ,
		.far = run->map.nnodes > 1 || wr_nodes_inprocess(&run->map) < 0,
	};
	struct wr_nodes_cfg ncfg = {
		.job = &run->job, .map = &run->map, .guardian = &run->guardian,
		.rsh = run->opts.rsh, .connect_timeout = run->opts.connect_timeout,
		.host_timeout = run->opts.host_timeout,
		.slurm = run->map.launcher == WR_LAUNCH_SLURM, .restart = run->restart,
	};
	int rc;

	event_set_log_callback(quiet_libevent);
	run->base = event_base_new();
	if (run->base == NULL) {
		return -ENOMEM;
	}
	ocfg.base = rcfg.base = ncfg.base = run->base;
	rc = open_policy(run);
	if (rc < 0) {
		return rc;
	}
	wr_policy_wire(run->policy, &ocfg, &rcfg, &ncfg);
	rc = wr_signals_start(&run->signals, run->base, on_signal, run->policy);
	if (rc == 0) {
		rc = wr_output_open(&ocfg, &run->out);
		if (rc < 0) {
			return 125; /* wr_output_open() said why */
		}
	}
	if (rc == 0) {
		rc = open_registry(run, &rcfg);
	}
	if (rc == 0) {
		wr_policy_bind(run->policy, run->out, &run->registry);
		ncfg.registry_port = wr_reghost_far_port(&run->registry);
		rc = wr_nodes_open(&ncfg, &run->nodes);
	}
	return rc;
}

/*
 * The program and --wdir, found here for the node this process runs; the
 * agents of the other nodes find them on their hosts, before any rank
 * starts anywhere. Without such a node, the program as given stands in
 * for messages. 0, or the exit status after one line.
 */
static int
locate_here(struct wr_run *run)
{
	char why[WR_RESOLVE_WHY_MAX];
	int node = wr_nodes_inprocess(&run->map);
	struct wr_resolved found;
	int rc;

	if (node < 0) {
		run->job.path = strdup(run->opts.argv[0]);
		return run->job.path != NULL ? 0 : 125;
	}
	rc = wr_resolve_locate(&found, run->opts.argv[0], run->opts.wdir,
			       wr_env_get(&run->job.env, "PATH"), why, sizeof(why));
	run->job.path = found.path;
	run->job.wdir = found.wdir;
	if (rc != 0 && run->map.nnodes > 1) {
		fprintf(stderr, "worldrun: host %s: %s\n", run->map.host[node], why);
	} else if (rc != 0) {
		fprintf(stderr, "worldrun: %s\n", why);
	}
	return rc;
}

/* The options, and what must hold before any plan: 0 or 125 (said). */
static int
parse(struct wr_run *run, int argc, char **argv)
{
	int rc;

	if (wr_opts_parse(&run->opts, argc, argv) < 0) {
		return 125;
	}
	if (run->opts.done) {
		return 0;
	}
	if (wr_torchrun_command(&run->opts.torch, &run->opts.argv, &run->opts.argc,
				run->opts.wdir, environ) < 0) {
		return 125;
	}
	rc = run->opts.report != NULL ? wr_report_check(run->opts.report) : 0;
	if (rc < 0) {
		fprintf(stderr, "worldrun: --report %s: %s\n", run->opts.report,
			strerror(-rc));
		return 125;
	}
	if (gethostname(run->host, sizeof(run->host) - 1) < 0) {
		strcpy(run->host, "localhost");
	}
	return 0;
}

/* The job as every node's agent gets it, from the map and the program
 * found here. */
static int
plan_job(struct wr_run *run)
{
	struct rlimit nofile;
	int rc = check_fd_limit(run, &nofile);

	if (rc == 0) {
		rc = wr_job_init(&run->job, &run->opts, environ, &nofile, run->map.nnodes,
				 run->restart);
	}
	if (rc == 0) {
		rc = locate_here(run);
	}
	/* The stdin rank of another node reads its stdin as data. */
	if (rc == 0 && run->opts.stdin_mode == WR_STDIN_RANK &&
	    run->map.node[run->opts.stdin_rank] != wr_nodes_inprocess(&run->map)) {
		run->job.stdin_fd = -1;
	}
	run->job.pmi = !run->opts.no_pmi;
	run->job.pmi_port = run->opts.pmi_port && !run->opts.no_pmi;
	run->job.pmix = !run->opts.no_pmix;
	run->job.pmi_mapping = run->map.pmi_mapping;
	run->job.node_name = run->map.node_name;
	run->job.bind = run->opts.bind;
	run->job.cpus_per_rank = (int)run->opts.cpus_per_rank;
	run->job.report_bindings = run->opts.report_bindings;
	/* torchrun's MASTER_ADDR: rank 0's host, as the other hosts name it
	 * (srun's agents name it by the address it dialed in from: nodes.h). */
	if (rc == 0 && run->map.nnodes > 1 && run->opts.torch.master_addr == NULL &&
	    run->map.node[0] != wr_nodes_inprocess(&run->map)) {
		run->job.master_addr = wr_map_host(&run->map, 0);
	}
	return rc;
}

/* torchrun's one line when it sets OMP_NUM_THREADS (env.c): with its
 * spelling, or -v; once, not at each restart. */
static void
say_omp(const struct wr_run *run)
{
	bool shared = false;

	for (int i = 0; i < run->map.nnodes; i++) {
		shared |= run->map.local_size[i] > 1;
	}
	if (shared && (run->opts.torch.used || run->opts.verbose > 0) && run->restart->count == 0 &&
	    wr_env_get(&run->job.env, "OMP_NUM_THREADS") == NULL) {
		fprintf(stderr, "worldrun: OMP_NUM_THREADS=1 in ranks that share a host, "
				"as torchrun sets it; set OMP_NUM_THREADS to choose\n");
	}
}

/* Where the ranks go and what they run, or the --dry-run of it: 0 or
 * the exit status after one line. */
static int
plan(struct wr_run *run)
{
	int rc = open_map(run);

	if (rc != 0) {
		return rc;
	}
	if ((!run->opts.no_pmi || !run->opts.no_pmix) && wr_map_pmi(&run->map) < 0) {
		fprintf(stderr, "worldrun: %s\n", strerror(ENOMEM));
		return 125;
	}
	/* From here on, every exit path writes --report: it needs the ranks. */
	run->report_ranks = true;
	rc = plan_job(run);
	if (rc != 0) {
		run->setup_cause = rc == 127 ? "not-found" : rc == 126 ? "not-executable"
									: "usage";
		return rc;
	}
	say_omp(run);
	if (run->opts.display_map) {
		wr_map_print(&run->map, stderr);
	}
	if (run->opts.dry_run) {
		run->opts.done = true;
		return dry_run(run);
	}
	return 0;
}

/* The guardian, the loop and every part on it: 0 or 125 (said). */
static int
open_parts(struct wr_run *run)
{
	/* Before any thread: the guardian is a plain fork of this process.
	 * A slot per rank here, one per node for its remote shell, and the
	 * spare ones for ranks spawns start. */
	int rc = wr_guardian_open(&run->guardian,
				  (size_t)(run->map.nranks + run->map.nnodes) + WR_GUARD_SPARE);

	if (rc == 0) {
		rc = open_loop(run);
	}
	if (rc < 0) {
		fprintf(stderr, "worldrun: unable to set up: %s\n", strerror(-rc));
		rc = 125;
	}
	if (rc != 0) {
		run->setup_cause = "setup-failed";
	}
	return rc;
}

int
wr_run_open(struct wr_run *run, int argc, char **argv, struct wr_restart *restart)
{
	int rc;

	*run = (struct wr_run){ .guardian = { .pid = -1, .fd = -1 }, .restart = restart };
	run->t0 = wr_clock_mono();
	run->t_epoch = wr_clock_epoch();
	restart->started = run->t0;
	rc = parse(run, argc, argv);
	if (rc == 0 && !run->opts.done) {
		restart->max = (int)run->opts.max_restarts;
		restart->interval = run->opts.torch.monitor > 0 ? run->opts.torch.monitor : 1.0;
	}
	if (rc == 0 && !run->opts.done) {
		rc = plan(run);
	}
	if (rc == 0 && !run->opts.done) {
		rc = open_parts(run);
	}
	run->setup_status = rc;
	return rc;
}

/* What the start's live line says (progress.h). */
static void
count_start(void *arg, struct wr_progress_counts *c)
{
	struct wr_run *run = arg;

	c->hosts = run->map.nnodes;
	c->hosts_ready = wr_nodes_ready(run->nodes);
	c->ranks = run->map.nranks;
	c->started = wr_policy_started(run->policy, &c->done);
}

void
wr_run_loop(struct wr_run *run)
{
	if (run->opts.verbose) {
		char q[WR_QUOTE_MAX], where[WR_QUOTE_MAX + 32];

		/* Where they run: this machine, or the hosts of the map. */
		if (run->map.nnodes == 1 && run->map.here == 0) {
			snprintf(where, sizeof(where), "%s", run->host);
		} else if (run->map.nnodes == 1) {
			snprintf(where, sizeof(where), "%s", run->map.host[0]);
		} else {
			snprintf(where, sizeof(where), "%d hosts", run->map.nnodes);
		}
		wr_output_say(run->out, "job %s: starting %d rank%s of %s on %s",
			      run->job.jobid, run->map.nranks,
			      run->map.nranks == 1 ? "" : "s",
			      wr_quote(q, sizeof(q), run->job.path), where);
	}
	wr_policy_begin(run->policy);
	/* Without it the start is only silent. */
	wr_progress_start(run->base, run->out,
			  &(struct wr_progress_src){ .count = count_start, .arg = run },
			  &run->progress);
	/* Its events, START_DONE last, may come before this returns (local
	 * mode) or later: the loop below waits for them either way. */
	wr_nodes_start(run->nodes);
	event_base_dispatch(run->base);
}

/* How the job ended: the policy's outcome, unless setup failed first. */
static void
outcome(const struct wr_run *run, struct wr_policy_outcome *o)
{
	*o = (struct wr_policy_outcome){ .status = -1, .failed_rank = -1,
					 .file_rank = -1 };
	if (run->policy != NULL) {
		wr_policy_outcome(run->policy, o);
	}
	if (run->setup_status != 0) {
		o->status = run->setup_status;
		o->cause = run->setup_cause;
	}
}

static void
write_report(struct wr_run *run, const struct wr_policy_outcome *o, int status)
{
	static const struct wr_rank pending;
	int nranks = run->map.nranks;
	struct wr_report_rank *ranks = calloc((size_t)nranks + 1, sizeof(*ranks));
	const struct wr_rank *table = run->policy != NULL ? wr_policy_ranks(run->policy)
							  : NULL;
	char path[4096];
	struct wr_report rep = {
		.jobid = run->job.jobid, .status = status, .attempts = run->restart->attempts,
		.cause = o->cause != NULL ? o->cause : "success",
		.failed_rank = o->failed_rank, .ranks = ranks, .nranks = nranks,
		.output_file = { .rank = o->file_rank, .err = o->file_err,
				 .path = o->file_rank >= 0 ? path : NULL,
				 .stream = o->file_stream == WR_OUT ? "stdout" : "stderr" },
		.hang = o->hang,
	};
	int rc;

	snprintf(path, sizeof(path), "%s/%d/%s", run->opts.output_dir != NULL
		 ? run->opts.output_dir : "", o->file_rank, rep.output_file.stream);
	if (ranks == NULL) {
		rep.nranks = 0;
	}
	for (int i = 0; i < rep.nranks; i++) {
		const struct wr_rank *r = table != NULL ? &table[i] : &pending;
		bool ended = r->state >= WR_RANK_EXITED;

		ranks[i] = (struct wr_report_rank){
			.rank = i, .host = wr_map_host(&run->map, i), .pid = r->pid,
			.exit_code = ended && !r->host_lost && WIFEXITED(r->wstatus)
				     ? WEXITSTATUS(r->wstatus) : -1,
			.signal = ended && !r->host_lost && WIFSIGNALED(r->wstatus)
				  ? WTERMSIG(r->wstatus) : 0,
			.start = r->start_epoch, .end = ended ? r->end_epoch : 0,
			.maxrss_kib = r->maxrss_kib, .killed_by_worldrun = r->signaled,
			.exception = r->exception, .traceback = r->traceback,
		};
	}
	rc = wr_report_write(run->opts.report, &rep);
	if (rc < 0) {
		fprintf(stderr, "worldrun: unable to write the report %s: %s\n",
			run->opts.report, strerror(-rc));
	}
	free(ranks);
}

/* This attempt's end, for the restarts' record; true: start again, and
 * @why says for what, in words. */
static bool
record_attempt(struct wr_run *run, const struct wr_policy_outcome *o, int status,
	       char *why, size_t room)
{
	const struct wr_rank *table = run->policy != NULL ? wr_policy_ranks(run->policy)
							  : NULL;
	const struct wr_rank *r = table != NULL && o->failed_rank >= 0 &&
				  o->failed_rank < run->map.nranks ? &table[o->failed_rank]
								   : NULL;
	char fate[256] = "";
	struct wr_restart_end end = {
		.status = status, .cause = o->cause != NULL ? o->cause : "success",
		.failed_rank = o->failed_rank, .exception = r != NULL ? r->exception : NULL,
		.start_epoch = run->t_epoch, .end_epoch = wr_clock_epoch(),
	};

	if (r != NULL) {
		wr_policy_rank_fate(run->policy, o->failed_rank, fate, sizeof(fate));
		snprintf(why, room, "rank %d %s", o->failed_rank, fate[0] != '\0' ? fate : "failed");
	} else {
		snprintf(why, room, "%s", end.cause);
	}
	return !run->opts.done && !run->opts.dry_run && wr_restart_record(run->restart, &end);
}

int
wr_run_close(struct wr_run *run, bool *again)
{
	struct wr_policy_outcome o;
	char why[320];
	int status;
	bool abandon;

	/*
	 * The loop is over: a SIGINT from here on must not go to libevent's
	 * handler, which nothing reads now. It waits, blocked in this thread,
	 * for the wait before a restart (restart.h); one that a thread of a
	 * library takes ends worldrun at once, by its default action.
	 */
	wr_signals_hold();
	wr_signals_stop(&run->signals);
	outcome(run, &o);
	status = o.status >= 0 ? o.status : 0;
	abandon = run->out != NULL && (wr_output_error(run->out) != 0 || o.abandon);
	if (run->policy != NULL) {
		wr_policy_end(run->policy);
	}
	/* A stop the user asked for is never restarted, even one that came
	 * while a failure stopped the job. */
	*again = record_attempt(run, &o, status, why, sizeof(why)) && !o.interrupted &&
		 o.self_signal == 0 && !abandon;
	if (run->opts.report != NULL && !run->opts.dry_run && run->report_ranks) {
		write_report(run, &o, status);
	}
	wr_progress_stop(run->progress);
	wr_output_close(run->out, abandon);
	if (*again) {
		fprintf(stderr, "worldrun: restart %d of %d: %s\n", run->restart->count,
			run->restart->max, why);
		/* The other hosts' agents wait on their channels for the next
		 * attempt, which costs no new ssh then. */
		wr_nodes_keep(run->nodes, run->restart, KEEP_S);
	}
	wr_nodes_close(run->nodes);
	wr_jobfile_remove(&run->jobfile);
	wr_reghost_close(&run->registry);
	/* The guardian kills what is left of the ranks' groups, then we go. */
	wr_guardian_close(&run->guardian);
	wr_policy_destroy(run->policy);
	if (run->base != NULL) {
		event_base_free(run->base);
	}
	wr_job_finish(&run->job);
	wr_map_finish(&run->map);
	wr_opts_finish(&run->opts);
	if (o.self_signal != 0) {
		wr_signals_die(o.self_signal);
	}
	return status;
}
