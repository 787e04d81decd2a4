/* SPDX-License-Identifier: MIT */
#include "pmixsrv.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <pmix.h>
#include <pmix_server.h>

#include "auth.h"
#include "pmireg.h"
#include "pmixns.h"
#include "regproto.h"
#include "world_errors.h"

#define CONNECT_MS 10000
/* How long PMIx has to register the job and its clients. */
#define REGISTER_S 30

/* What PMIx asked on its thread, for the loop to carry out. */
enum ask_kind { ASK_CONNECTED, ASK_FINALIZED, ASK_ABORT, ASK_FENCE };

struct ask {
	struct ask *next;
	enum ask_kind kind;
	int rank;                 /* the client's world rank */
	int status;               /* abort's */
	char *msg;                /* abort's, or NULL */
	int *members;             /* a fence's ranks, rising; NULL: all */
	size_t nmembers;
	bool collect;             /* a fence collects the data */
	long long timeout_ms;     /* a fence's; -1: the job's */
	char *data;               /* a fence's contribution of this host */
	size_t ndata;
	pmix_op_cbfunc_t op_cb;   /* connected, finalized, abort */
	pmix_modex_cbfunc_t mdx_cb; /* fence */
	void *cbdata;
};

struct client {
	int rank;
	bool spoke;
	bool finalized;
	bool aborted;
	bool left;
	char **env;               /* from PMIx_server_setup_fork */
};

/* A fence of some ranks under way here: its barrier and its data. */
struct fence {
	struct wr_pmixsrv *s;
	struct ask *a;
	char name[96];
	int due;                  /* registry answers still to come */
	int rc;
};

/* The fences of one set of ranks so far: they are numbered in order. */
struct fence_seq {
	struct fence_seq *next;
	uint64_t sig;
	unsigned long next_seq;
};

struct wr_pmixsrv {
	struct wr_pmixsrv_cfg cfg;
	pmix_nspace_t nspace;
	struct client *clients;   /* [cfg.nlocal] */
	struct wr_pmireg *reg;
	struct fence_seq *seqs;
	/* From PMIx's thread to the loop's. */
	pthread_mutex_t lock;
	struct ask *head, **tail;
	int wake[2];
	struct event *wake_ev;
	bool inited;
	bool registered;
	char vader[PATH_MAX + 64]; /* OMPI_MCA_btl_vader_backing_directory= */
};

/*
 * PMIx has one server per process, and its fence, unlike the client
 * callbacks, carries no pointer of ours: this is the one it calls into,
 * set before PMIx_server_init and cleared after PMIx_server_finalize
 * (which ends PMIx's thread).
 */
static struct wr_pmixsrv *the_server;

static struct client *
client_of(struct wr_pmixsrv *s, int rank)
{
	for (int i = 0; i < s->cfg.nlocal; i++) {
		if (s->clients[i].rank == rank) {
			return &s->clients[i];
		}
	}
	return NULL;
}

static void
ask_free(struct ask *a)
{
	if (a != NULL) {
		free(a->msg);
		free(a->members);
		free(a->data);
		free(a);
	}
}

/* On PMIx's thread: queue @a for the loop. */
static pmix_status_t
hand_over(struct ask *a)
{
	struct wr_pmixsrv *s = the_server;
	bool was_empty;

	if (s == NULL) {
		ask_free(a);
		return PMIX_ERR_NOT_AVAILABLE;
	}
	pthread_mutex_lock(&s->lock);
	was_empty = s->head == NULL;
	*s->tail = a;
	s->tail = &a->next;
	pthread_mutex_unlock(&s->lock);
	if (was_empty) {
		ssize_t w = write(s->wake[1], "", 1);

		(void)w; /* full: a wake-up is pending already */
	}
	return PMIX_SUCCESS;
}

static bool
ours(const pmix_proc_t *proc)
{
	return the_server != NULL && PMIX_CHECK_NSPACE(proc->nspace, the_server->nspace);
}

static struct ask *
ask_new(enum ask_kind kind, const pmix_proc_t *proc)
{
	struct ask *a = calloc(1, sizeof(*a));

	if (a != NULL) {
		a->kind = kind;
		a->rank = proc != NULL ? (int)proc->rank : -1;
	}
	return a;
}

static pmix_status_t
op_ask(enum ask_kind kind, const pmix_proc_t *proc, pmix_op_cbfunc_t cbfunc, void *cbdata)
{
	struct ask *a;

	if (!ours(proc)) {
		return PMIX_ERR_NOT_FOUND;
	}
	a = ask_new(kind, proc);
	if (a == NULL) {
		return PMIX_ERR_NOMEM;
	}
	a->op_cb = cbfunc;
	a->cbdata = cbdata;
	return hand_over(a);
}

static pmix_status_t
on_connected(const pmix_proc_t *proc, void *server_object, pmix_op_cbfunc_t cbfunc,
	     void *cbdata)
{
	return op_ask(ASK_CONNECTED, proc, cbfunc, cbdata);
}

static pmix_status_t
on_finalized(const pmix_proc_t *proc, void *server_object, pmix_op_cbfunc_t cbfunc,
	     void *cbdata)
{
	return op_ask(ASK_FINALIZED, proc, cbfunc, cbdata);
}

static pmix_status_t
on_abort(const pmix_proc_t *proc, void *server_object, int status, const char msg[],
	 pmix_proc_t procs[], size_t nprocs, pmix_op_cbfunc_t cbfunc, void *cbdata)
{
	struct ask *a;

	if (!ours(proc)) {
		return PMIX_ERR_NOT_FOUND;
	}
	a = ask_new(ASK_ABORT, proc);
	if (a == NULL || (msg != NULL && (a->msg = strdup(msg)) == NULL)) {
		ask_free(a);
		return PMIX_ERR_NOMEM;
	}
	a->status = status;
	a->op_cb = cbfunc;
	a->cbdata = cbdata;
	return hand_over(a);
}

static int
by_value(const void *x, const void *y)
{
	int a = *(const int *)x, b = *(const int *)y;

	return (a > b) - (a < b);
}

/* A fence's ranks: all of the job (NULL), or some, rising, each once. */
static pmix_status_t
fence_members(struct ask *a, const pmix_proc_t procs[], size_t nprocs, int size)
{
	size_t n = 0;

	for (size_t i = 0; i < nprocs; i++) {
		if (!ours(&procs[i])) {
			return PMIX_ERR_NOT_SUPPORTED;
		}
		if (procs[i].rank == PMIX_RANK_WILDCARD) {
			return PMIX_SUCCESS;
		}
		if (procs[i].rank >= (pmix_rank_t)size) {
			return PMIX_ERR_BAD_PARAM;
		}
	}
	a->members = malloc((nprocs > 0 ? nprocs : 1) * sizeof(*a->members));
	if (a->members == NULL) {
		return PMIX_ERR_NOMEM;
	}
	for (size_t i = 0; i < nprocs; i++) {
		a->members[i] = (int)procs[i].rank;
	}
	qsort(a->members, nprocs, sizeof(*a->members), by_value);
	for (size_t i = 0; i < nprocs; i++) {
		if (n == 0 || a->members[n - 1] != a->members[i]) {
			a->members[n++] = a->members[i];
		}
	}
	a->nmembers = n;
	return n > 0 ? PMIX_SUCCESS : PMIX_ERR_BAD_PARAM;
}

static pmix_status_t
on_fence(const pmix_proc_t procs[], size_t nprocs, const pmix_info_t info[], size_t ninfo,
	 char *data, size_t ndata, pmix_modex_cbfunc_t cbfunc, void *cbdata)
{
	struct ask *a = ask_new(ASK_FENCE, NULL);
	pmix_status_t st;

	if (a == NULL || the_server == NULL) {
		free(a);
		return PMIX_ERR_NOMEM;
	}
	st = fence_members(a, procs, nprocs, the_server->cfg.size);
	a->timeout_ms = -1;
	for (size_t i = 0; st == PMIX_SUCCESS && i < ninfo; i++) {
		if (PMIX_CHECK_KEY(&info[i], PMIX_COLLECT_DATA)) {
			a->collect = PMIX_INFO_TRUE(&info[i]);
		} else if (PMIX_CHECK_KEY(&info[i], PMIX_TIMEOUT) &&
			   info[i].value.type == PMIX_INT && info[i].value.data.integer > 0) {
			a->timeout_ms = (long long)info[i].value.data.integer * 1000;
		}
	}
	if (st == PMIX_SUCCESS && a->collect && ndata > 0) {
		a->data = malloc(ndata);
		st = a->data == NULL ? PMIX_ERR_NOMEM : PMIX_SUCCESS;
		if (st == PMIX_SUCCESS) {
			memcpy(a->data, data, ndata);
			a->ndata = ndata;
		}
	}
	if (st != PMIX_SUCCESS) {
		ask_free(a);
		return st;
	}
	a->mdx_cb = cbfunc;
	a->cbdata = cbdata;
	return hand_over(a);
}

/* FNV-1a of a fence's ranks: fences of the same ranks share a count. */
static uint64_t
members_sig(const struct ask *a)
{
	uint64_t h = 14695981039346656037ULL;

	for (size_t i = 0; i < a->nmembers; i++) {
		uint32_t r = (uint32_t)a->members[i];

		for (int b = 0; b < 4; b++) {
			h = (h ^ ((r >> (8 * b)) & 255)) * 1099511628211ULL;
		}
	}
	return a->members == NULL ? 0 : h | 1;
}

static unsigned long
next_seq(struct wr_pmixsrv *s, uint64_t sig)
{
	struct fence_seq *f;

	for (f = s->seqs; f != NULL && f->sig != sig; f = f->next) {
	}
	if (f == NULL) {
		f = calloc(1, sizeof(*f));
		if (f == NULL) {
			return ULONG_MAX;
		}
		f->sig = sig;
		f->next = s->seqs;
		s->seqs = f;
	}
	return f->next_seq++;
}

/* The registry, connected at the first fence. */
static int
registry(struct wr_pmixsrv *s)
{
	struct wr_pmireg_cfg rc = {
		.base = s->cfg.base, .endpoints = s->cfg.registry, .secret = s->cfg.secret,
		.rank = s->clients[0].rank, .timeout_ms = CONNECT_MS,
	};

	if (s->reg != NULL) {
		return 0;
	}
	if (s->cfg.registry == NULL || s->cfg.secret == NULL) {
		return WORLD_EREGISTRY;
	}
	return wr_pmireg_open(&rc, &s->reg);
}

static void
release_data(void *cbdata)
{
	free(cbdata);
}

static void
fence_done(struct fence *f, int rc, const void *blob, size_t len)
{
	struct ask *a = f->a;
	char *copy = len > 0 ? malloc(len) : NULL;
	pmix_status_t st = rc == 0 ? PMIX_SUCCESS
			   : rc == -ETIMEDOUT ? PMIX_ERR_TIMEOUT : PMIX_ERROR;

	if (len > 0 && copy == NULL && st == PMIX_SUCCESS) {
		st = PMIX_ERR_NOMEM;
	}
	if (copy != NULL) {
		memcpy(copy, blob, len);
	}
	a->mdx_cb(st, st == PMIX_SUCCESS ? copy : NULL, st == PMIX_SUCCESS ? len : 0,
		  a->cbdata, release_data, st == PMIX_SUCCESS ? copy : NULL);
	if (st != PMIX_SUCCESS) {
		free(copy);
	}
	ask_free(a);
	free(f);
}

static void
on_data(void *arg, int rc, json_t *result, const void *blob, size_t len)
{
	struct fence *f = arg;

	/* No host had data for it: the key was never made. */
	fence_done(f, rc == -ENOENT ? 0 : rc, rc == 0 ? blob : NULL, rc == 0 ? len : 0);
}

static void
on_fence_step(void *arg, int rc, json_t *result, const void *blob, size_t len)
{
	struct fence *f = arg;
	char key[128];

	if (rc < 0 && f->rc == 0) {
		f->rc = rc;
	}
	if (--f->due > 0) {
		return;
	}
	if (f->rc < 0 || !f->a->collect) {
		fence_done(f, f->rc, NULL, 0);
		return;
	}
	snprintf(key, sizeof(key), "%s/data", f->name);
	if (wr_pmireg_call(f->s->reg, wr_regproto_key(WR_OP_KV_GET, key), NULL, 0, on_data,
			   f) < 0) {
		fence_done(f, WORLD_EREGISTRY, NULL, 0);
	}
}

static json_t *
members_json(const struct ask *a)
{
	json_t *m;

	if (a->members == NULL) {
		return NULL;
	}
	m = json_array();
	for (size_t i = 0; m != NULL && i < a->nmembers; i++) {
		json_array_append_new(m, json_integer(a->members[i]));
	}
	return m;
}

/* Enter the fence's barrier for each of this host's ranks in it, so that
 * the hang report sees who waits and for whom. The fence counts itself as
 * one answer due until every barrier is asked, and then drops it. */
static void
fence_enter(struct fence *f)
{
	struct wr_pmixsrv *s = f->s;
	struct ask *a = f->a;
	int rc = 0;

	f->due = 1;
	for (int i = 0; rc == 0 && i < s->cfg.nlocal; i++) {
		int r = s->clients[i].rank;
		json_t *req;

		if (a->members != NULL &&
		    bsearch(&r, a->members, a->nmembers, sizeof(r), by_value) == NULL) {
			continue;
		}
		req = wr_regproto_timeout(wr_regproto_barrier_as(f->name, members_json(a), r),
					  a->timeout_ms);
		rc = wr_pmireg_call(s->reg, req, NULL, 0, on_fence_step, f);
		f->due += rc == 0;
	}
	on_fence_step(f, rc, NULL, NULL, 0);
}

static void
on_appended(void *arg, int rc, json_t *result, const void *blob, size_t len)
{
	struct fence *f = arg;

	if (rc < 0) {
		fence_done(f, rc, NULL, 0);
	} else {
		fence_enter(f);
	}
}

/* A fence: this host's data added to the fence's, its barrier, then all
 * of the data. */
static void
fence_start(struct wr_pmixsrv *s, struct ask *a)
{
	struct fence *f = calloc(1, sizeof(*f));
	uint64_t sig = members_sig(a);
	unsigned long seq = next_seq(s, sig);
	char key[128];
	int rc = f == NULL || seq == ULONG_MAX ? -ENOMEM : registry(s);

	if (rc < 0) {
		free(f);
		a->mdx_cb(rc == -ENOMEM ? PMIX_ERR_NOMEM : PMIX_ERR_UNREACH, NULL, 0, a->cbdata,
			  NULL, NULL);
		ask_free(a);
		return;
	}
	f->s = s;
	f->a = a;
	snprintf(f->name, sizeof(f->name), "pmix/%s/%016llx/%lu", s->cfg.jobid,
		 (unsigned long long)sig, seq);
	if (a->ndata == 0) {
		fence_enter(f);
		return;
	}
	snprintf(key, sizeof(key), "%s/data", f->name);
	rc = wr_pmireg_call(s->reg, wr_regproto_key(WR_OP_KV_APPEND, key), a->data, a->ndata,
			    on_appended, f);
	if (rc < 0) {
		fence_done(f, rc, NULL, 0);
	}
}

static void
carry_out(struct wr_pmixsrv *s, struct ask *a)
{
	struct client *c = client_of(s, a->rank);

	switch (a->kind) {
	case ASK_CONNECTED:
	case ASK_FINALIZED:
		if (c != NULL) {
			c->spoke = true;
			c->finalized = c->finalized || a->kind == ASK_FINALIZED;
		}
		break;
	case ASK_ABORT:
		if (c != NULL) {
			c->spoke = true;
			c->aborted = true;
			s->cfg.abort(s->cfg.arg, a->rank, a->status, a->msg != NULL ? a->msg : "");
		}
		break;
	case ASK_FENCE:
		fence_start(s, a);
		return;
	}
	if (a->op_cb != NULL) {
		a->op_cb(c != NULL ? PMIX_SUCCESS : PMIX_ERR_NOT_FOUND, a->cbdata);
	}
	ask_free(a);
}

static struct ask *
take_all(struct wr_pmixsrv *s)
{
	struct ask *all;

	pthread_mutex_lock(&s->lock);
	all = s->head;
	s->head = NULL;
	s->tail = &s->head;
	pthread_mutex_unlock(&s->lock);
	return all;
}

static void
on_wake(evutil_socket_t fd, short what, void *arg)
{
	struct wr_pmixsrv *s = arg;
	char buf[64];

	while (read(fd, buf, sizeof(buf)) > 0) {
	}
	for (struct ask *a = take_all(s), *next; a != NULL; a = next) {
		next = a->next;
		carry_out(s, a);
	}
}

static pmix_server_module_t module = {
	.client_connected = on_connected,
	.client_finalized = on_finalized,
	.abort = on_abort,
	.fence_nb = on_fence,
};

/* Registrations answer on PMIx's thread; we wait for them here. On the
 * heap: one that PMIx never answers in time is left to it (leaked), not
 * freed under its feet. */
struct waiter {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int due;
	pmix_status_t st;
};

static void
on_registered(pmix_status_t st, void *cbdata)
{
	struct waiter *w = cbdata;

	pthread_mutex_lock(&w->lock);
	if (st != PMIX_SUCCESS && w->st == PMIX_SUCCESS) {
		w->st = st;
	}
	w->due--;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

/* @st, what a registration returned: one that did not start will not
 * answer, and one that was done at once does not. */
static void
registering(struct waiter *w, pmix_status_t st)
{
	if (st == PMIX_SUCCESS) {
		return;
	}
	on_registered(st == PMIX_OPERATION_SUCCEEDED ? PMIX_SUCCESS : st, w);
}

static struct waiter *
waiter_new(int due)
{
	struct waiter *w = calloc(1, sizeof(*w));

	if (w != NULL) {
		pthread_mutex_init(&w->lock, NULL);
		pthread_cond_init(&w->cond, NULL);
		w->due = due;
	}
	return w;
}

/* Wait for every registration; with the answers, free @w. */
static pmix_status_t
wait_registered(struct waiter *w)
{
	struct timespec until;
	pmix_status_t st;
	int rc = 0;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += REGISTER_S;
	pthread_mutex_lock(&w->lock);
	while (w->due > 0 && rc == 0) {
		rc = pthread_cond_timedwait(&w->cond, &w->lock, &until);
	}
	st = w->due > 0 ? PMIX_ERR_TIMEOUT : w->st;
	pthread_mutex_unlock(&w->lock);
	if (st != PMIX_ERR_TIMEOUT) {
		pthread_mutex_destroy(&w->lock);
		pthread_cond_destroy(&w->cond);
		free(w);
	}
	return st;
}

static int
refused(pmix_status_t st, const char *what, char *why, size_t size)
{
	snprintf(why, size, "unable to %s: %s", what, PMIx_Error_string(st));
	return WORLD_EPROTO;
}

/* The job's namespace and each rank of this host as a client. */
static int
register_job(struct wr_pmixsrv *s, char *why, size_t size)
{
	struct waiter *w = waiter_new(1 + s->cfg.nlocal);
	pmix_info_t *info = NULL;
	size_t n = 0;
	pmix_status_t st;
	int rc;

	if (w == NULL) {
		return -ENOMEM;
	}
	rc = wr_pmixns_info(&s->cfg, &info, &n, why, size);
	if (rc < 0) {
		free(w);
		return rc;
	}
	registering(w, PMIx_server_register_nspace(s->nspace, s->cfg.nlocal, info, n,
						   on_registered, w));
	for (int i = 0; i < s->cfg.nlocal; i++) {
		pmix_proc_t proc;

		PMIX_LOAD_PROCID(&proc, s->nspace, (pmix_rank_t)s->clients[i].rank);
		registering(w, PMIx_server_register_client(&proc, getuid(), getgid(), NULL,
							   on_registered, w));
	}
	/* PMIx reads the info until it answers. */
	st = wait_registered(w);
	if (st != PMIX_ERR_TIMEOUT) {
		PMIX_INFO_FREE(info, n);
	}
	s->registered = st == PMIX_SUCCESS;
	return st == PMIX_SUCCESS ? 0 : refused(st, "register the job with PMIx", why, size);
}

/* Add @var to a NULL-terminated array of strings PMIx made. */
static int
env_add(char ***env, const char *var)
{
	size_t n = 0;
	char **more;

	while (*env != NULL && (*env)[n] != NULL) {
		n++;
	}
	more = realloc(*env, (n + 2) * sizeof(*more));
	if (more == NULL) {
		return -ENOMEM;
	}
	*env = more;
	more[n] = strdup(var);
	more[n + 1] = NULL;
	return more[n] == NULL ? -ENOMEM : 0;
}

/*
 * What each rank needs in its environment, from PMIx. Open MPI 4 takes
 * a process that no launcher it knows (its own, Slurm, Flux, LSF) has
 * claimed for a singleton, whatever PMIx says: it is told to take its
 * place from PMIx, as those launchers' detection tells it. Its shared
 * memory files go in the job's private directory, not /dev/shm: there
 * they would outlive a killed job (only mpirun's daemon removes them),
 * and two hosts that share /dev/shm and a host name would take the
 * same names.
 */
static int
setup_forks(struct wr_pmixsrv *s, char *why, size_t size)
{
	for (int i = 0; i < s->cfg.nlocal; i++) {
		pmix_proc_t proc;
		pmix_status_t st;
		int rc = 0;

		PMIX_LOAD_PROCID(&proc, s->nspace, (pmix_rank_t)s->clients[i].rank);
		st = PMIx_server_setup_fork(&proc, &s->clients[i].env);
		if (st != PMIX_SUCCESS) {
			return refused(st, "prepare a rank's PMIx environment", why, size);
		}
		if (s->cfg.ompi) {
			rc = env_add(&s->clients[i].env, "OMPI_MCA_ess=pmi");
		}
		if (s->cfg.ompi && rc == 0) {
			rc = env_add(&s->clients[i].env, "OMPI_MCA_schizo=ompi");
		}
		if (s->cfg.ompi && rc == 0) {
			rc = env_add(&s->clients[i].env, s->vader);
		}
		if (rc < 0) {
			return rc;
		}
	}
	return 0;
}

/* PMIx's server, its files in the job's private directory, and no door
 * for tools or other jobs. */
static int
start_pmix(struct wr_pmixsrv *s, char *why, size_t size)
{
	pmix_info_t info[5];
	pmix_rank_t node = (pmix_rank_t)s->cfg.node;
	bool no = false;
	pmix_status_t st;

	PMIX_INFO_LOAD(&info[0], PMIX_SERVER_TMPDIR, s->cfg.dir, PMIX_STRING);
	PMIX_INFO_LOAD(&info[1], PMIX_SYSTEM_TMPDIR, s->cfg.dir, PMIX_STRING);
	PMIX_INFO_LOAD(&info[2], PMIX_SERVER_TOOL_SUPPORT, &no, PMIX_BOOL);
	PMIX_INFO_LOAD(&info[3], PMIX_SERVER_SYSTEM_SUPPORT, &no, PMIX_BOOL);
	PMIX_INFO_LOAD(&info[4], PMIX_SERVER_RANK, &node, PMIX_PROC_RANK);
	/*
	 * PMIx reads the host's topology as it starts (hwloc), PCI devices,
	 * GPUs and displays included, which takes longer than the rest of a
	 * launch, for clients that never ask for it: it shares none with
	 * them (Open MPI reads its own). So it reads processors and memory
	 * only, unless the user set hwloc's variables. Set before PMIx has
	 * a thread; the ranks' environment is not made from ours.
	 */
	setenv("HWLOC_COMPONENTS", "-linuxio,-pci,-opencl,-gl", 0);
	setenv("HWLOC_PLUGINS_BLACKLIST", "hwloc_gl,hwloc_opencl,hwloc_pci,hwloc_xml_libxml", 0);
	the_server = s;
	st = PMIx_server_init(&module, info, 5);
	for (int i = 0; i < 5; i++) {
		PMIX_INFO_DESTRUCT(&info[i]);
	}
	if (st != PMIX_SUCCESS) {
		the_server = NULL;
		return refused(st, "start the PMIx server", why, size);
	}
	s->inited = true;
	return 0;
}

int
wr_pmixsrv_open(const struct wr_pmixsrv_cfg *cfg, struct wr_pmixsrv **out, char *why,
		size_t size)
{
	struct wr_pmixsrv *s;
	char ns[WR_AUTH_NAME_LEN + 1];
	int rc = 0;

	*out = NULL;
	why[0] = '\0';
	if (the_server != NULL) {
		snprintf(why, size, "this process serves PMIx already");
		return -EBUSY;
	}
	/* Only the job's processes may know the namespace: PMIx takes any
	 * process of this host that names it for that rank (over loopback
	 * TCP, what a client says of itself is all PMIx 4 checks). */
	if (wr_auth_private_name(cfg->secret, cfg->jobid, "pmix", ns) < 0) {
		snprintf(why, size, "the job has no secret to name its PMIx namespace with");
		return WORLD_EAUTH;
	}
	s = calloc(1, sizeof(*s));
	if (s == NULL) {
		return -ENOMEM;
	}
	s->cfg = *cfg;
	s->wake[0] = s->wake[1] = -1;
	s->tail = &s->head;
	pthread_mutex_init(&s->lock, NULL);
	PMIX_LOAD_NSPACE(s->nspace, ns);
	snprintf(s->vader, sizeof(s->vader), "OMPI_MCA_btl_vader_backing_directory=%s", cfg->dir);
	s->clients = calloc((size_t)cfg->nlocal, sizeof(*s->clients));
	if (s->clients == NULL || pipe2(s->wake, O_CLOEXEC | O_NONBLOCK) < 0) {
		rc = s->clients == NULL ? -ENOMEM : -errno;
	}
	for (int i = 0; rc == 0 && i < cfg->nlocal; i++) {
		s->clients[i].rank = cfg->ranks[i];
	}
	if (rc == 0) {
		s->wake_ev = event_new(cfg->base, s->wake[0], EV_READ | EV_PERSIST, on_wake, s);
		rc = s->wake_ev == NULL || event_add(s->wake_ev, NULL) < 0 ? -ENOMEM : 0;
	}
	if (rc == 0) {
		rc = start_pmix(s, why, size);
	}
	if (rc == 0) {
		rc = register_job(s, why, size);
	}
	if (rc == 0) {
		rc = setup_forks(s, why, size);
	}
	if (rc < 0) {
		if (why[0] == '\0') {
			snprintf(why, size, "unable to start the PMIx server: %s", strerror(-rc));
		}
		wr_pmixsrv_close(s);
		return rc;
	}
	s->cfg.ranks = NULL; /* the caller's, copied into the clients */
	*out = s;
	return 0;
}

char *const *
wr_pmixsrv_env(const struct wr_pmixsrv *s, int i)
{
	return s != NULL && i >= 0 && i < s->cfg.nlocal ? s->clients[i].env : NULL;
}

bool
wr_pmixsrv_spoken(const struct wr_pmixsrv *s, int rank)
{
	const struct client *c = s != NULL ? client_of((struct wr_pmixsrv *)s, rank) : NULL;

	return c != NULL && c->spoke;
}

void
wr_pmixsrv_reaped(struct wr_pmixsrv *s, int rank)
{
	struct client *c = s != NULL ? client_of(s, rank) : NULL;

	/* What PMIx handed over before the rank's end is carried out first:
	 * its finalize, say. */
	if (s != NULL) {
		on_wake(s->wake[0], EV_READ, s);
	}
	if (c != NULL && c->spoke && !c->finalized && !c->aborted && !c->left) {
		c->left = true;
		s->cfg.left(s->cfg.arg, rank, "");
	}
}

/* Answer every ask still queued with @st, or (PMIx gone) drop it. */
static void
drop_asks(struct wr_pmixsrv *s, bool answer)
{
	for (struct ask *a = take_all(s), *next; a != NULL; a = next) {
		next = a->next;
		if (answer && a->op_cb != NULL) {
			a->op_cb(PMIX_ERR_UNREACH, a->cbdata);
		} else if (answer && a->mdx_cb != NULL) {
			a->mdx_cb(PMIX_ERR_UNREACH, NULL, 0, a->cbdata, NULL, NULL);
		}
		ask_free(a);
	}
}

void
wr_pmixsrv_close(struct wr_pmixsrv *s)
{
	if (s == NULL) {
		return;
	}
	/* Fences under way answer with an error while PMIx is still there. */
	wr_pmireg_close(s->reg);
	s->reg = NULL;
	/* What the ranks asked PMIx to remove at their end (Open MPI's
	 * shared memory files) goes with the namespace. */
	if (s->registered) {
		struct waiter *w = waiter_new(1);

		if (w != NULL) {
			PMIx_server_deregister_nspace(s->nspace, on_registered, w);
			wait_registered(w);
		}
	}
	if (s->inited) {
		drop_asks(s, true);
		PMIx_server_finalize();
		the_server = NULL;
	}
	drop_asks(s, false);
	event_free(s->wake_ev);
	for (int i = 0; i < 2; i++) {
		if (s->wake[i] >= 0) {
			close(s->wake[i]);
		}
	}
	for (int i = 0; s->clients != NULL && i < s->cfg.nlocal; i++) {
		for (char **e = s->clients[i].env; e != NULL && *e != NULL; e++) {
			free(*e);
		}
		free(s->clients[i].env);
	}
	free(s->clients);
	while (s->seqs != NULL) {
		struct fence_seq *next = s->seqs->next;

		free(s->seqs);
		s->seqs = next;
	}
	pthread_mutex_destroy(&s->lock);
	free(s);
}
