/* SPDX-License-Identifier: MIT */
/*
 * agent-spawn: a rank's spawn (MPI_Comm_spawn through PMIx) on its host.
 * The launcher numbers the new ranks (SPAWN event, SPAWN command), which
 * are then ranks of the job like the others: each app of the spawn runs
 * as an agent of its own under the host's agent, which reaps, signals,
 * pauses and closes them with its own ranks. Their program is found
 * here, in the directory the app names, as a rank's is.
 */
#include "agentint.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env.h"
#include "pmixsrv.h"

/* A spawn waiting for the launcher's numbers. */
struct spawn_wait {
	struct spawn_wait *next;
	int id;
	struct wr_pmixsrv_spawn *sp;
};

void
wr_agent_spawn_ask(void *arg, struct wr_pmixsrv_spawn *sp)
{
	struct wr_agent *a = arg;
	struct spawn_wait *w = calloc(1, sizeof(*w)), **tail = &a->spawns;
	struct wr_ev ev = { .kind = WR_EV_SPAWN, .rank = sp->rank, .count = sp->count };
	char *strings = NULL;

	if (w == NULL) {
		wr_pmixsrv_spawn_answer(sp, -ENOMEM);
		return;
	}
	w->id = a->spawn_ids++;
	w->sp = sp;
	while (*tail != NULL) {
		tail = &(*tail)->next;
	}
	*tail = w;
	ev.id = w->id;
	/* Apps the wire cannot carry go without: the launcher refuses. */
	ev.apps = wr_wire_apps_pack(sp->apps, sp->napps, &strings, &ev.len);
	if (ev.apps != NULL && (sp->napps > WR_SPAWN_APPS_MAX || ev.len > WR_WIRE_DATA_MAX)) {
		json_decref(ev.apps);
		ev.apps = NULL;
	}
	ev.data = ev.apps != NULL ? strings : NULL;
	ev.len = ev.apps != NULL ? ev.len : 0;
	wr_agent_emit(a, &ev);
	json_decref(ev.apps);
	free(strings);
}

/* Set "NAME=VALUE" @var in @env, unless NAME is worldrun's to set. */
static int
set_var(struct wr_env *env, const char *var)
{
	const char *eq = strchr(var, '=');
	char *name;
	int rc;

	if (eq == NULL || eq == var || wr_env_is_contract(var, (size_t)(eq - var))) {
		return 0;
	}
	name = strndup(var, (size_t)(eq - var));
	rc = name != NULL ? wr_env_set(env, name, eq + 1) : -ENOMEM;
	free(name);
	return rc;
}

/* @app as a job of this host: the host's job with the app's program,
 * arguments, directory and variables; stdin /dev/null, no PMI-1. */
static int
kid_job(struct wr_agent *a, const struct wr_spawn_app *app, int size,
	struct wr_hostjob *job, char ***argv, char *why, size_t room)
{
	const struct wr_hostjob *host = a->job;
	size_t argc = 0;
	int rc;

	*job = *host;
	job->size = size;
	job->path = job->wdir = NULL;
	job->sh_argv = NULL;
	job->pmi = job->pmi_port = job->pmix = false;
	job->stdin_mode = WR_STDIN_NONE;
	job->stdin_rank = -1;
	while (app->argv[argc] != NULL) {
		argc++;
	}
	*argv = calloc(argc + 1, sizeof(**argv));
	rc = *argv != NULL ? wr_env_init(&job->env, (char *const[]){ NULL }) : -ENOMEM;
	for (size_t i = 0; rc == 0 && i < argc; i++) {
		(*argv)[i] = strdup(i == 0 ? app->cmd : app->argv[i]);
		rc = (*argv)[i] != NULL ? 0 : -ENOMEM;
	}
	for (size_t i = 0; rc == 0 && i < host->env.n; i++) {
		rc = set_var(&job->env, host->env.vars[i]);
	}
	for (size_t i = 0; rc == 0 && app->env[i] != NULL; i++) {
		rc = set_var(&job->env, app->env[i]);
	}
	job->argv = *argv;
	if (rc < 0) {
		snprintf(why, room, "%s", strerror(-rc));
		return 125;
	}
	return wr_hostjob_locate(job, app->cwd != NULL ? app->cwd : host->wdir, why, room);
}

static void
argv_free(char **argv)
{
	for (size_t i = 0; argv != NULL && argv[i] != NULL; i++) {
		free(argv[i]);
	}
	free(argv);
}

static void
kid_close(struct wr_agent *k)
{
	struct wr_hostjob job = k->kid_job;
	char **argv = k->kid_argv;
	int *ranks = k->kid_ranks;

	wr_agent_close(k);
	wr_hostjob_finish(&job);
	argv_free(argv);
	free(ranks);
}

/* Start the ranks of @app, the job's @first on, that @place (one node a
 * rank of @app) puts on this host, as a new agent under @a. 0, or the
 * exit status a failure calls for, why in @why. */
static int
kid_start(struct wr_agent *a, const struct wr_spawn_app *app, int first, const int *place,
	  int size, char *why, size_t room)
{
	struct wr_hostjob job = { 0 };
	char **argv = NULL;
	int *ranks = calloc((size_t)app->maxprocs, sizeof(*ranks));
	struct wr_agent *k = NULL;
	int count = 0, st = ranks == NULL ? 125 : 0;

	for (int i = 0; st == 0 && i < app->maxprocs; i++) {
		if (place[i] == a->node) {
			ranks[count++] = first + i;
		}
	}
	if (count == 0) {
		free(ranks);
		return st;
	}
	st = st == 0 ? kid_job(a, app, size, &job, &argv, why, room) : st;
	if (st == 0) {
		struct wr_agent_cfg cfg = { .base = a->base, .job = &job, .stdin_fd = -1,
					    .ranks = ranks, .nranks = count, .node = a->node,
					    .cb = a->cb, .arg = a->arg };

		/* The guardian kills them too, while it has slots. */
		if (a->spare_slots != NULL && a->nspare >= count) {
			cfg.guard_slots = a->spare_slots;
			a->spare_slots += count;
			a->nspare -= count;
		}

		st = wr_agent_open_in(&cfg, a, &k) < 0 ? 125 : 0;
	}
	if (st != 0) {
		wr_hostjob_finish(&job);
		argv_free(argv);
		free(ranks);
		return st;
	}
	k->kid_job = job;
	k->job = &k->kid_job;
	k->kid_argv = argv;
	k->kid_ranks = ranks;
	k->paused_all = a->paused_all;
	k->held = a->held;
	k->next_kid = a->kids;
	a->kids = k;
	/* A rank that fails to start says so (START_FAILED), as any does. */
	wr_agent_start(k, 0, count);
	return 0;
}

void
wr_agent_spawned_prog(const struct wr_agent *a, struct wr_ev *ev)
{
	if (a->parent != NULL && a->kid_argv != NULL) {
		ev->data = a->kid_argv[0];
		ev->len = strnlen(a->kid_argv[0], WR_WIRE_WHY_MAX);
	}
}

/* The ranks @from to @to - 1 of @prog that @place puts here (@place[0]
 * is rank @base's; NULL: all of them) did not start (@status: 127, 126
 * or 125, with why): each says so. The launcher's line names the program
 * and the errno; one that says neither is said here. */
static void
not_started(struct wr_agent *a, const int *place, int base, int from, int to, int status,
	    const char *prog, const char *why)
{
	if (status == 125) {
		fprintf(stderr, "worldrun: unable to spawn %s: %s\n", prog, why);
	}
	for (int r = from; r < to; r++) {
		if (place != NULL && place[r - base] != a->node) {
			continue;
		}
		struct wr_ev ev = { .kind = WR_EV_START_FAILED, .rank = r,
				    .err = status == 127 ? ENOENT : status == 126 ? EACCES
										: ECANCELED,
				    .stage = status == 125 ? 0 : WR_SPAWN_EXEC,
				    .data = prog, .len = strnlen(prog, WR_WIRE_WHY_MAX) };

		wr_agent_emit(a, &ev);
	}
}

/*
 * Serve a spawn's ranks (@cmd: SPAWN's answer or JOINED) here and start
 * those placed here; @sp: the spawn this host's rank asked for, or NULL.
 * A failure to start says so for each rank it leaves out (so the job
 * fails). 0, or -errno: the spawn did not go as it should.
 */
static int
spawn_here(struct wr_agent *a, const struct wr_cmd *cmd, struct wr_pmixsrv_spawn *sp)
{
	size_t napps = 0;
	int *place = calloc((size_t)cmd->count, sizeof(*place));
	int first = cmd->first, end = cmd->first + cmd->count, rc = 0;
	struct wr_spawn_app *apps = NULL;
	char why[512] = "";

	/* Both as checked on the wire; a place of nodes past the job's is
	 * the launcher's mistake, and starts nothing. */
	rc = place == NULL ? -ENOMEM : wr_wire_place_get(cmd->place, cmd->count, a->job->nnodes,
							   place);
	if (rc == 0) {
		apps = wr_wire_apps_unpack(cmd->apps, (char *)cmd->data, cmd->len, cmd->count,
					   &napps);
		rc = apps != NULL ? 0 : -errno;
	}
	if (rc == 0 && sp != NULL) {
		rc = wr_pmixsrv_spawn_add(a->pmixsrv, sp, first, place, why, sizeof(why));
	} else if (rc == 0) {
		rc = wr_pmixsrv_joined(a->pmixsrv, first, cmd->count, cmd->node, place, why,
				       sizeof(why));
	}
	if (rc < 0) {
		/* Those placed here will not start: the job ends. */
		if (why[0] == '\0') {
			snprintf(why, sizeof(why), "%s", strerror(-rc));
		}
		fprintf(stderr, "worldrun: unable to serve ranks %d-%d to the ranks of this host: "
				"%s\n", first, end - 1, why);
		if (place != NULL && rc != -EPROTO) {
			not_started(a, place, first, first, end, 125,
				    apps != NULL ? apps[0].cmd : "a spawned program", why);
		}
	}
	for (size_t i = 0; rc == 0 && i < napps; i++) {
		const struct wr_spawn_app *app = &apps[i];
		int st = kid_start(a, app, first, place + (first - cmd->first), end, why,
				   sizeof(why));

		if (st != 0) {
			not_started(a, place, cmd->first, first, end, st, app->cmd, why);
			rc = -ECANCELED;
		}
		first += app->maxprocs;
	}
	free(apps);
	free(place);
	return rc;
}

int
wr_agent_spawn_cmd(struct wr_agent *a, const struct wr_cmd *cmd)
{
	struct spawn_wait **at = &a->spawns, *w;
	struct wr_pmixsrv_spawn *sp;
	int rc = 0;

	while (*at != NULL && (*at)->id != cmd->id) {
		at = &(*at)->next;
	}
	if (*at == NULL || (cmd->count != 0 && cmd->count != (*at)->sp->count)) {
		return -EINVAL;
	}
	w = *at;
	*at = w->next;
	sp = w->sp;
	free(w);
	rc = cmd->count == 0 ? -ECANCELED : spawn_here(a, cmd, sp);
	wr_pmixsrv_spawn_answer(sp, rc);
	return 0;
}

/* The launcher goes on when every host said so, served or not: a host
 * that could not serve them says why, and its ranks' connect to them
 * then fails in their MPI library, which says so too. */
int
wr_agent_spawn_joined(struct wr_agent *a, const struct wr_cmd *cmd)
{
	struct wr_ev ev = { .kind = WR_EV_JOINED, .rank = cmd->first };

	spawn_here(a, cmd, NULL);
	wr_agent_emit(a, &ev);
	return 0;
}

void
wr_agent_spawns_close(struct wr_agent *a)
{
	while (a->spawns != NULL) {
		struct spawn_wait *w = a->spawns;

		a->spawns = w->next;
		wr_pmixsrv_spawn_answer(w->sp, -ECANCELED);
		free(w);
	}
	while (a->kids != NULL) {
		struct wr_agent *k = a->kids;

		a->kids = k->next_kid;
		kid_close(k);
	}
}
