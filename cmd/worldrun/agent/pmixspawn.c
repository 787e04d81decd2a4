/* SPDX-License-Identifier: MIT */
/*
 * pmixspawn: PMIx's spawn (MPI_Comm_spawn). The apps PMIx hands over are
 * copied and given to the host's agent, which has the launcher number
 * the new ranks (the job's next indices) and starts them; here they
 * become a namespace of their own, each a client, and the rank that
 * asked is answered with that namespace. Every other host of the job
 * serves that namespace too, without clients (wr_pmixsrv_joined), so
 * that its ranks can connect to the new ones. Where the new ranks run
 * and what they are told of the job is the agent's and launcher's
 * business.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pmixint.h"
#include "pmixns.h"
#include "world_errors.h"

/* At most this many ranks in one spawn: what the wire's ranks allow. */
#define SPAWN_MAX (1 << 16)

static char **
strv_dup(char **v)
{
	size_t n = 0;
	char **out;

	while (v != NULL && v[n] != NULL) {
		n++;
	}
	out = calloc(n + 1, sizeof(*out));
	for (size_t i = 0; out != NULL && i < n; i++) {
		out[i] = strdup(v[i]);
		if (out[i] == NULL) {
			for (size_t j = 0; j < i; j++) {
				free(out[j]);
			}
			free(out);
			return NULL;
		}
	}
	return out;
}

static void
strv_free(char **v)
{
	for (size_t i = 0; v != NULL && v[i] != NULL; i++) {
		free(v[i]);
	}
	free(v);
}

static void
spawn_free(struct wr_pmixsrv_spawn *sp)
{
	for (size_t i = 0; sp->apps != NULL && i < sp->napps; i++) {
		free(sp->apps[i].cmd);
		strv_free(sp->apps[i].argv);
		strv_free(sp->apps[i].env);
		free(sp->apps[i].cwd);
	}
	free(sp->apps);
	free(sp);
}

/* Copy PMIx's @app into @to. A command without arguments runs as
 * argv[0] itself. */
static pmix_status_t
app_copy(struct wr_spawn_app *to, const pmix_app_t *app)
{
	const char *wdir = app->cwd != NULL && app->cwd[0] != '\0' ? app->cwd : NULL;

	if (app->cmd == NULL || app->cmd[0] == '\0' || app->maxprocs < 1 ||
	    app->maxprocs > SPAWN_MAX) {
		return PMIX_ERR_BAD_PARAM;
	}
	to->maxprocs = app->maxprocs;
	to->cmd = strdup(app->cmd);
	to->argv = app->argv != NULL && app->argv[0] != NULL ? strv_dup(app->argv)
							      : strv_dup((char *[]){ app->cmd, NULL });
	to->env = strv_dup(app->env);
	to->cwd = wdir != NULL ? strdup(wdir) : NULL;
	if (to->cmd == NULL || to->argv == NULL || to->env == NULL ||
	    (wdir != NULL && to->cwd == NULL)) {
		return PMIX_ERR_NOMEM;
	}
	return PMIX_SUCCESS;
}

/* On PMIx's thread: the apps, for the loop. Directives of placement
 * (hosts, mapping) are not read: the new ranks run beside the rank
 * that asked. */
pmix_status_t
wr_pmixspawn_request(const pmix_proc_t *proc, const pmix_info_t job_info[], size_t ninfo,
		     const pmix_app_t apps[], size_t napps, pmix_spawn_cbfunc_t cbfunc,
		     void *cbdata)
{
	struct wr_pmixsrv_spawn *sp;
	struct ask *a;
	pmix_status_t st = PMIX_SUCCESS;

	if (!wr_pmixsrv_ours(proc) || napps == 0) {
		return napps == 0 ? PMIX_ERR_BAD_PARAM : PMIX_ERR_NOT_FOUND;
	}
	sp = calloc(1, sizeof(*sp));
	if (sp == NULL || (sp->apps = calloc(napps, sizeof(*sp->apps))) == NULL) {
		free(sp);
		return PMIX_ERR_NOMEM;
	}
	sp->napps = napps;
	for (size_t i = 0; st == PMIX_SUCCESS && i < napps; i++) {
		st = app_copy(&sp->apps[i], &apps[i]);
		sp->count += apps[i].maxprocs;
		if (st == PMIX_SUCCESS && sp->count > SPAWN_MAX) {
			st = PMIX_ERR_BAD_PARAM;
		}
	}
	a = st == PMIX_SUCCESS ? wr_pmixsrv_ask_new(ASK_SPAWN, proc) : NULL;
	if (a == NULL) {
		spawn_free(sp);
		return st != PMIX_SUCCESS ? st : PMIX_ERR_NOMEM;
	}
	sp->rank = a->rank;
	sp->first = -1;
	sp->answer_ = (void *)cbfunc;
	sp->answer_arg_ = cbdata;
	a->spawn = sp;
	return wr_pmixsrv_hand_over(a);
}

/* On the loop: the agent decides (a host without one refuses). */
void
wr_pmixspawn_start(struct wr_pmixsrv *s, struct ask *a)
{
	struct wr_pmixsrv_spawn *sp = a->spawn;

	a->spawn = NULL;
	wr_pmixsrv_ask_free(a);
	if (s->cfg.spawn == NULL || wr_pmixsrv_client(s, sp->rank) == NULL) {
		wr_pmixsrv_spawn_answer(sp, -ENOTSUP);
		return;
	}
	s->cfg.spawn(s->cfg.arg, sp);
}

/* @place as a PMI_process_mapping: a block of one node a run (malloc'd). */
static char *
place_mapping(const int *place, int count)
{
	size_t room = 16 + (size_t)count * 28, at;
	char *m = malloc(room);

	if (m == NULL) {
		return NULL;
	}
	at = (size_t)snprintf(m, room, "(vector");
	for (int i = 0; i < count;) {
		int k = 1;

		while (i + k < count && place[i + k] == place[i]) {
			k++;
		}
		at += (size_t)snprintf(m + at, room - at, ",(%d,1,%d)", place[i], k);
		i += k;
	}
	snprintf(m + at, room - at, ")");
	return m;
}

/* The info of a spawn's namespace: @count ranks on the nodes of @place;
 * its clients those on this host's. */
static int
spawn_info(struct wr_pmixsrv *s, const char *name, int count, const int *place,
	   pmix_info_t **info, size_t *n, char *why, size_t size)
{
	struct wr_pmixsrv_cfg cfg = s->cfg;
	char *mapping = place_mapping(place, count);
	int *ranks = calloc((size_t)count, sizeof(*ranks));
	int rc = -ENOMEM;

	cfg.nlocal = 0;
	for (int i = 0; ranks != NULL && i < count; i++) {
		if (place[i] == cfg.node) {
			ranks[cfg.nlocal++] = i;
		}
	}
	cfg.jobid = name;
	cfg.size = count;
	cfg.ranks = ranks;
	cfg.mapping = mapping;
	cfg.node_name = s->names;
	if (ranks != NULL && mapping != NULL) {
		rc = wr_pmixns_info(&cfg, info, n, why, size);
	}
	free(ranks);
	free(mapping);
	return rc;
}

/* Room for @more clients and one namespace more. */
static int
make_room(struct wr_pmixsrv *s, int more)
{
	struct client *c = realloc(s->clients,
				   ((size_t)s->nclients + (size_t)more) * sizeof(*c));
	struct ns *ns;

	if (c == NULL) {
		return -ENOMEM;
	}
	s->clients = c;
	memset(&c[s->nclients], 0, (size_t)more * sizeof(*c));
	pthread_mutex_lock(&s->lock);
	ns = realloc(s->ns, ((size_t)s->nns + 1) * sizeof(*ns));
	if (ns != NULL) {
		s->ns = ns;
	}
	pthread_mutex_unlock(&s->lock);
	return ns != NULL ? 0 : -ENOMEM;
}

/*
 * Serve the job's indices @first to @first + @count - 1, a spawn's ranks
 * on the nodes of @place, as a namespace of their own, with a client each
 * for those of this host. Every host names it after @first, so the name
 * the asker hands its peers means the same ranks everywhere. Spawns come
 * in the launcher's order (it has one under way at a time), so namespaces
 * and clients rise.
 */
static int
ns_add(struct wr_pmixsrv *s, int first, int count, const int *place, char *name, char *why,
       size_t size)
{
	const struct ns *last = &s->ns[s->nns - 1];
	struct ns ns = { .base = first, .size = count };
	pmix_info_t *info = NULL;
	size_t n = 0;
	int from = s->nclients, more = 0;
	int rc;

	why[0] = '\0';
	for (int i = 0; i < count; i++) {
		if (place[i] < 0 || place[i] >= s->cfg.nnodes) {
			return -EINVAL;
		}
		more += place[i] == s->cfg.node;
	}
	if (count < 1 || first < last->base + last->size ||
	    (s->nclients > 0 && first <= s->clients[s->nclients - 1].rank)) {
		return -EINVAL;
	}
	snprintf(ns.name, sizeof(ns.name), "%.200s-%d", s->nspace, first);
	if (name != NULL) {
		snprintf(name, PMIX_MAX_NSLEN + 1, "%s", ns.name);
	}
	rc = make_room(s, more);
	if (rc == 0) {
		rc = spawn_info(s, ns.name, count, place, &info, &n, why, size);
	}
	if (rc < 0) {
		return rc;
	}
	for (int i = 0; i < count; i++) {
		if (place[i] == s->cfg.node) {
			s->clients[s->nclients++].rank = first + i;
		}
	}
	/* Known to PMIx's thread before any of them can connect. */
	pthread_mutex_lock(&s->lock);
	s->ns[s->nns++] = ns;
	pthread_mutex_unlock(&s->lock);
	return wr_pmixsrv_register(s, &ns, info, n, from, s->nclients, why, size);
}

int
wr_pmixsrv_spawn_add(struct wr_pmixsrv *s, struct wr_pmixsrv_spawn *sp, int first,
		     const int *place, char *why, size_t size)
{
	int rc = ns_add(s, first, sp->count, place, sp->nspace, why, size);

	sp->first = rc == 0 ? first : -1;
	return rc;
}

int
wr_pmixsrv_joined(struct wr_pmixsrv *s, int first, int count, int node, const int *place,
		  char *why, size_t size)
{
	if (s == NULL) {
		why[0] = '\0';
		return 0;
	}
	if (node < 0 || node >= s->cfg.nnodes || node == s->cfg.node) {
		why[0] = '\0';
		return -EINVAL;
	}
	return ns_add(s, first, count, place, NULL, why, size);
}

void
wr_pmixsrv_spawn_answer(struct wr_pmixsrv_spawn *sp, int rc)
{
	pmix_spawn_cbfunc_t cb;

	if (sp == NULL) {
		return;
	}
	cb = (pmix_spawn_cbfunc_t)sp->answer_;
	if (cb != NULL) {
		cb(rc == 0 ? PMIX_SUCCESS
		   : rc == -ENOTSUP ? PMIX_ERR_NOT_SUPPORTED
		   : rc == -ENOENT ? PMIX_ERR_NOT_FOUND
		   : rc == -ENOMEM ? PMIX_ERR_NOMEM
				   : PMIX_ERR_JOB_FAILED_TO_LAUNCH,
		   sp->nspace, sp->answer_arg_);
	}
	spawn_free(sp);
}
