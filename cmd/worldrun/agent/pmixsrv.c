/* SPDX-License-Identifier: MIT */
#include "pmixsrv.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sched.h>
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
#include "listen.h"
#include "pmireg.h"
#include "pmixint.h"
#include "pmixns.h"
#include "regproto.h"
#include "world_errors.h"

#define CONNECT_MS 10000
/* How long PMIx has to register the job and its clients. */
#define REGISTER_S 30
/* How long it has to let go of them and stop, at the job's end. */
#define STOP_S 5

/*
 * PMIx has one server per process, and its fence, unlike the client
 * callbacks, carries no pointer of ours: this is the one it calls into,
 * set before PMIx_server_init and cleared after PMIx_server_finalize
 * (which ends PMIx's thread).
 */
static struct wr_pmixsrv *the_server;

/*
 * LeakSanitizer's own calls, in a build that has it (weak: NULL in the
 * others). What PMIx_server_init allocates and libpmix keeps after
 * PMIx_server_finalize is not ours to free (tests/lsan.supp): left out
 * of the leak check, it costs no symbolizing at every exit of an ASan
 * build, which took a third of a second a worldrun.
 */
void __lsan_disable(void) __attribute__((weak));
void __lsan_enable(void) __attribute__((weak));

/*
 * OpenPMIx 4.2 accepts its clients on a thread of its own with accept(2),
 * then reads each connection's first bytes on its progress thread,
 * blocking, for as long as the other end takes: another user of the host
 * who connected to its loopback port and said nothing would stop the
 * job's PMIx server, and its ranks would wait in MPI_Init for good. 4.2
 * has no way for its host to accept for it (pmix_server_module_t's
 * listener is never called), so this executable defines accept(2): the
 * dynamic linker binds every library's accept() to the executable's
 * definition first, PMIx's included. A connection whose other end is
 * another user's process is closed at once, before PMIx sees it, and
 * PMIx's listener, told the connection was aborted, takes the next.
 * Nothing of ours calls accept() (our listeners take accept4).
 */
int
accept(int fd, struct sockaddr *sa, socklen_t *len)
{
	/* Close-on-exec: an agent or a launcher that starts again (a
	 * restart) takes no client of this server along. */
	int c = accept4(fd, sa, len, SOCK_CLOEXEC);
	uid_t uid;

	if (c < 0 || wr_listen_peer_uid(c, &uid) != 0 || uid == geteuid()) {
		return c;
	}
	close(c);
	errno = ECONNABORTED;
	return -1;
}

struct wr_pmixsrv *
wr_pmixsrv_current(void)
{
	return the_server;
}

struct client *
wr_pmixsrv_client(struct wr_pmixsrv *s, int rank)
{
	int lo = 0, hi = s->nclients;

	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;

		if (s->clients[mid].rank == rank) {
			return &s->clients[mid];
		}
		if (s->clients[mid].rank < rank) {
			lo = mid + 1;
		} else {
			hi = mid;
		}
	}
	return NULL;
}

void
wr_pmixsrv_ask_free(struct ask *a)
{
	if (a != NULL) {
		free(a->msg);
		free(a->members);
		free(a->data);
		for (size_t i = 0; i < a->nkeys; i++) {
			free(a->keys[i]);
			free(a->values != NULL ? a->values[i] : NULL);
		}
		free(a->keys);
		free(a->values);
		free(a->lens);
		wr_pmixsrv_spawn_answer(a->spawn, -ECANCELED);
		free(a);
	}
}

/* On PMIx's thread: queue @a for the loop. */
pmix_status_t
wr_pmixsrv_hand_over(struct ask *a)
{
	struct wr_pmixsrv *s = the_server;
	bool was_empty;

	if (s == NULL) {
		wr_pmixsrv_ask_free(a);
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

int
wr_pmixsrv_index(const pmix_proc_t *proc, int *base, int *size)
{
	struct wr_pmixsrv *s = the_server;
	int index = -1;

	*base = *size = -1;
	if (s == NULL) {
		return -1;
	}
	pthread_mutex_lock(&s->lock);
	for (int i = 0; i < s->nns; i++) {
		if (PMIX_CHECK_NSPACE(proc->nspace, s->ns[i].name)) {
			*base = s->ns[i].base;
			*size = s->ns[i].size;
			break;
		}
	}
	pthread_mutex_unlock(&s->lock);
	if (*base >= 0 && proc->rank < (pmix_rank_t)*size) {
		index = *base + (int)proc->rank;
	}
	return index;
}

const struct ns *
wr_pmixsrv_ns_of(const struct wr_pmixsrv *s, int rank)
{
	/* The loop is the one writer: it reads without the lock. */
	for (int i = 0; i < s->nns; i++) {
		if (rank >= s->ns[i].base && rank - s->ns[i].base < s->ns[i].size) {
			return &s->ns[i];
		}
	}
	return NULL;
}

bool
wr_pmixsrv_ours(const pmix_proc_t *proc)
{
	int base, size;

	wr_pmixsrv_index(proc, &base, &size);
	return base >= 0;
}

struct ask *
wr_pmixsrv_ask_new(enum ask_kind kind, const pmix_proc_t *proc)
{
	struct ask *a = calloc(1, sizeof(*a));

	int base, size;

	if (a != NULL) {
		a->kind = kind;
		a->rank = proc != NULL ? wr_pmixsrv_index(proc, &base, &size) : -1;
	}
	return a;
}

static pmix_status_t
op_ask(enum ask_kind kind, const pmix_proc_t *proc, pmix_op_cbfunc_t cbfunc, void *cbdata)
{
	struct ask *a;

	if (!wr_pmixsrv_ours(proc)) {
		return PMIX_ERR_NOT_FOUND;
	}
	a = wr_pmixsrv_ask_new(kind, proc);
	if (a == NULL) {
		return PMIX_ERR_NOMEM;
	}
	a->op_cb = cbfunc;
	a->cbdata = cbdata;
	return wr_pmixsrv_hand_over(a);
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

	if (!wr_pmixsrv_ours(proc)) {
		return PMIX_ERR_NOT_FOUND;
	}
	a = wr_pmixsrv_ask_new(ASK_ABORT, proc);
	if (a == NULL || (msg != NULL && (a->msg = strdup(msg)) == NULL)) {
		wr_pmixsrv_ask_free(a);
		return PMIX_ERR_NOMEM;
	}
	a->status = status;
	a->op_cb = cbfunc;
	a->cbdata = cbdata;
	return wr_pmixsrv_hand_over(a);
}

/* The registry, connected at the first need. */
int
wr_pmixsrv_registry(struct wr_pmixsrv *s)
{
	struct wr_pmireg_cfg rc = {
		.base = s->cfg.base, .endpoints = s->cfg.registry, .secret = s->cfg.secret,
		.rank = s->clients[0].rank, .timeout_ms = CONNECT_MS,
	};

	return wr_pmireg_once(&rc, &s->reg);
}

static void
carry_out(struct wr_pmixsrv *s, struct ask *a)
{
	struct client *c = wr_pmixsrv_client(s, a->rank);

	switch (a->kind) {
	case ASK_CONNECTED:
	case ASK_FINALIZED:
		if (c != NULL && !c->spoke) {
			wr_pmixdmx_watch(s, c->rank);
		}
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
	case ASK_CONNECT:
	case ASK_DISCONNECT:
		wr_pmixfence_start(s, a);
		return;
	case ASK_PUBLISH:
	case ASK_LOOKUP:
	case ASK_UNPUBLISH:
		wr_pmixname_start(s, a);
		return;
	case ASK_DMX_PUT:
	case ASK_DMX_GET:
		wr_pmixdmx_start(s, a);
		return;
	case ASK_SPAWN:
		wr_pmixspawn_start(s, a);
		return;
	}
	if (a->op_cb != NULL) {
		a->op_cb(c != NULL ? PMIX_SUCCESS : PMIX_ERR_NOT_FOUND, a->cbdata);
	}
	wr_pmixsrv_ask_free(a);
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
	.fence_nb = wr_pmixfence_nb,
	.connect = wr_pmixfence_connect,
	.disconnect = wr_pmixfence_disconnect,
	.publish = wr_pmixname_publish,
	.lookup = wr_pmixname_lookup,
	.unpublish = wr_pmixname_unpublish,
	.direct_modex = wr_pmixdmx_request,
	.spawn = wr_pmixspawn_request,
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

/* Wait @secs for every answer; with the answers, free @w. */
static pmix_status_t
wait_registered(struct waiter *w, int secs)
{
	struct timespec until;
	pmix_status_t st;
	int rc = 0;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += secs;
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

static int setup_forks(struct wr_pmixsrv *s, const struct ns *ns, int from, int to,
		       char *why, size_t size);

int
wr_pmixsrv_register(struct wr_pmixsrv *s, const struct ns *ns, pmix_info_t *info, size_t n,
		    int from, int to, char *why, size_t size)
{
	struct waiter *w = waiter_new(1 + to - from);
	pmix_status_t st;

	if (w == NULL) {
		PMIX_INFO_FREE(info, n);
		return -ENOMEM;
	}
	registering(w, PMIx_server_register_nspace(ns->name, to - from, info, n,
						   on_registered, w));
	for (int i = from; i < to; i++) {
		pmix_proc_t proc;

		PMIX_LOAD_PROCID(&proc, ns->name, (pmix_rank_t)(s->clients[i].rank - ns->base));
		registering(w, PMIx_server_register_client(&proc, getuid(), getgid(), NULL,
							   on_registered, w));
	}
	/* PMIx reads the info until it answers. */
	st = wait_registered(w, REGISTER_S);
	if (st != PMIX_ERR_TIMEOUT) {
		PMIX_INFO_FREE(info, n);
	}
	s->registered = s->registered || st == PMIX_SUCCESS;
	if (st != PMIX_SUCCESS) {
		return refused(st, "register the ranks with PMIx", why, size);
	}
	return setup_forks(s, ns, from, to, why, size);
}

/* The job's namespace and each rank of this host as a client. */
static int
register_job(struct wr_pmixsrv *s, char *why, size_t size)
{
	pmix_info_t *info = NULL;
	size_t n = 0;
	int rc = wr_pmixns_info(&s->cfg, &info, &n, why, size);

	if (rc < 0) {
		return rc;
	}
	return wr_pmixsrv_register(s, &s->ns[0], info, n, 0, s->nclients, why, size);
}

/* Whether this host's ranks outnumber the CPUs they may run on. */
static bool
oversubscribed(int nlocal)
{
	cpu_set_t cpus;

	return sched_getaffinity(0, sizeof(cpus), &cpus) == 0 && nlocal > CPU_COUNT(&cpus);
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
 * same names. And where the ranks outnumber the CPUs, Open MPI is told,
 * as mpirun tells it: its waits then yield the CPU instead of spinning
 * on it (else 3 ranks on 2 CPUs take minutes where they take seconds).
 */
static int
setup_forks(struct wr_pmixsrv *s, const struct ns *ns, int from, int to, char *why,
	    size_t size)
{
	for (int i = from; i < to; i++) {
		pmix_proc_t proc;
		pmix_status_t st;
		int rc = 0;

		PMIX_LOAD_PROCID(&proc, ns->name, (pmix_rank_t)(s->clients[i].rank - ns->base));
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
		if (s->cfg.ompi && rc == 0 && s->oversub) {
			rc = env_add(&s->clients[i].env, "OMPI_MCA_mpi_oversubscribe=1");
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
	pmix_info_t info[6];
	pmix_rank_t node = (pmix_rank_t)s->cfg.node;
	size_t n = 5;
	bool no = false;
	pmix_status_t st;

	PMIX_INFO_LOAD(&info[0], PMIX_SERVER_TMPDIR, s->cfg.dir, PMIX_STRING);
	PMIX_INFO_LOAD(&info[1], PMIX_SYSTEM_TMPDIR, s->cfg.dir, PMIX_STRING);
	PMIX_INFO_LOAD(&info[2], PMIX_SERVER_TOOL_SUPPORT, &no, PMIX_BOOL);
	PMIX_INFO_LOAD(&info[3], PMIX_SERVER_SYSTEM_SUPPORT, &no, PMIX_BOOL);
	PMIX_INFO_LOAD(&info[4], PMIX_SERVER_RANK, &node, PMIX_PROC_RANK);
	/* This node's name as the node map has it, for PMIx and its clients. */
	if (s->cfg.node_name != NULL) {
		PMIX_INFO_LOAD(&info[n], PMIX_HOSTNAME, s->cfg.node_name[s->cfg.node], PMIX_STRING);
		n++;
	}
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
	if (__lsan_disable != NULL) {
		__lsan_disable();
	}
	st = PMIx_server_init(&module, info, n);
	if (__lsan_enable != NULL) {
		__lsan_enable();
	}
	for (size_t i = 0; i < n; i++) {
		PMIX_INFO_DESTRUCT(&info[i]);
	}
	if (st != PMIX_SUCCESS) {
		the_server = NULL;
		return refused(st, "start the PMIx server", why, size);
	}
	s->inited = true;
	return 0;
}

static void
names_free(char **names, int n)
{
	for (int i = 0; names != NULL && i < n; i++) {
		free(names[i]);
	}
	free(names);
}

/* A copy of the @n nodes' @names, or NULL (none given, or no memory). */
static char **
names_dup(char *const *names, int n)
{
	char **out = names != NULL ? calloc((size_t)n, sizeof(*out)) : NULL;

	for (int i = 0; out != NULL && i < n; i++) {
		out[i] = strdup(names[i]);
		if (out[i] == NULL) {
			names_free(out, n);
			return NULL;
		}
	}
	return out;
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
	/* The environment they come from may change under us. */
	s->cfg.dir = strdup(cfg->dir);
	s->cfg.registry = cfg->registry != NULL ? strdup(cfg->registry) : NULL;
	s->cfg.secret = strdup(cfg->secret);
	s->wake[0] = s->wake[1] = -1;
	s->tail = &s->head;
	pthread_mutex_init(&s->lock, NULL);
	PMIX_LOAD_NSPACE(s->nspace, ns);
	snprintf(s->vader, sizeof(s->vader), "OMPI_MCA_btl_vader_backing_directory=%s", cfg->dir);
	s->oversub = oversubscribed(cfg->nlocal);
	s->clients = calloc((size_t)cfg->nlocal, sizeof(*s->clients));
	s->nclients = s->clients != NULL ? cfg->nlocal : 0;
	s->ns = calloc(1, sizeof(*s->ns));
	if (s->ns != NULL) {
		PMIX_LOAD_NSPACE(s->ns[0].name, ns);
		s->ns[0].size = cfg->size;
		s->nns = 1;
	}
	s->names = names_dup(cfg->node_name, cfg->nnodes);
	if (s->clients == NULL || s->ns == NULL || s->cfg.dir == NULL || s->cfg.secret == NULL ||
	    (cfg->registry != NULL && s->cfg.registry == NULL) ||
	    (cfg->node_name != NULL && s->names == NULL)) {
		rc = -ENOMEM;
	} else if (pipe2(s->wake, O_CLOEXEC | O_NONBLOCK) < 0) {
		rc = -errno;
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
	if (rc < 0) {
		if (why[0] == '\0') {
			snprintf(why, size, "unable to start the PMIx server: %s", strerror(-rc));
		}
		wr_pmixsrv_close(s);
		return rc;
	}
	s->cfg.ranks = NULL; /* the caller's, copied into the clients */
	s->cfg.node_name = NULL; /* the caller's, copied into names */
	*out = s;
	return 0;
}

char *const *
wr_pmixsrv_env(const struct wr_pmixsrv *s, int rank)
{
	struct client *c = s != NULL ? wr_pmixsrv_client((struct wr_pmixsrv *)s, rank) : NULL;

	return c != NULL ? c->env : NULL;
}


bool
wr_pmixsrv_reaped(struct wr_pmixsrv *s, int rank)
{
	struct client *c = s != NULL ? wr_pmixsrv_client(s, rank) : NULL;

	/* What PMIx handed over before the rank's end is carried out first:
	 * its finalize, say. */
	if (s != NULL) {
		on_wake(s->wake[0], EV_READ, s);
	}
	if (c != NULL && c->spoke && !c->finalized && !c->forgotten && !c->lost) {
		c->lost = true;
		s->lost++;
	}
	if (c != NULL && c->spoke && !c->finalized && !c->aborted && !c->left) {
		c->left = true;
		s->cfg.left(s->cfg.arg, rank, "");
	}
	return c != NULL && c->spoke;
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
		wr_pmixsrv_ask_free(a);
	}
}

static void *
finalize(void *arg)
{
	PMIx_server_finalize();
	on_registered(PMIX_SUCCESS, arg);
	return NULL;
}

/* Whether @c is one of @ranks (@n) and PMIx still serves it. */
static bool
to_forget(const struct client *c, const int *ranks, int n)
{
	bool listed = false;

	for (int i = 0; i < n && !listed; i++) {
		listed = ranks[i] == c->rank;
	}
	return listed && !c->finalized && !c->forgotten;
}

/*
 * Before a stop signal kills @ranks (@n of them): PMIx forgets those of
 * them that have not finalized, and closes their connections, so that
 * their deaths are no lost connections to it. OpenPMIx 4.2.2 completes a
 * connect of one host's clients again for each participant whose lost
 * connection it finds after the one that completed it, and reads the
 * collective it freed (see finalize_safe): a stop kills them all at
 * once. Waits STOP_S at most, once.
 */
void
wr_pmixsrv_stopping(struct wr_pmixsrv *s, const int *ranks, int nranks)
{
	struct waiter *w;
	int n = 0;

	if (s == NULL || !s->registered || s->stuck || nranks == 0) {
		return;
	}
	/* What PMIx handed over is carried out first: a finalize, say. */
	on_wake(s->wake[0], EV_READ, s);
	for (int i = 0; i < s->nclients; i++) {
		n += to_forget(&s->clients[i], ranks, nranks);
	}
	if (n == 0 || (w = waiter_new(n)) == NULL) {
		return;
	}
	for (int i = 0; i < s->nclients; i++) {
		struct client *c = &s->clients[i];
		const struct ns *ns = wr_pmixsrv_ns_of(s, c->rank);
		pmix_proc_t proc;

		if (!to_forget(c, ranks, nranks)) {
			continue;
		}
		c->forgotten = true;
		if (ns == NULL) {
			on_registered(PMIX_SUCCESS, w);
			continue;
		}
		PMIX_LOAD_PROCID(&proc, ns->name, (pmix_rank_t)(c->rank - ns->base));
		PMIx_server_deregister_client(&proc, on_registered, w);
	}
	s->stuck = wait_registered(w, STOP_S) == PMIX_ERR_TIMEOUT;
}

/*
 * Whether PMIx_server_finalize is safe: at most one client's connection
 * was lost to PMIx (a rank that ended without PMIx_Finalize before any
 * stop signal, which wr_pmixsrv_stopping forgets). Where two were lost
 * at once in a connect under way, OpenPMIx 4.2.2 unlinked it twice, and
 * finalize, emptying that list, walks into its head and crashes.
 */
static bool
finalize_safe(const struct wr_pmixsrv *s)
{
	return s->lost < 2;
}

/*
 * Take the namespaces back, so that what the ranks asked PMIx to remove
 * at their end (Open MPI's shared memory files) goes with them, and stop
 * PMIx, each within STOP_S: a connection that holds PMIx's thread (a
 * process of the job that connected and says nothing) would otherwise
 * keep worldrun from ever exiting. -ETIMEDOUT when PMIx did not stop,
 * -EBUSY when it is left running to the end of this process because
 * stopping it is not safe (finalize_safe).
 */
static int
stop_pmix(struct wr_pmixsrv *s)
{
	struct waiter *w;
	pthread_t t;

	if (s->stuck) {
		return -ETIMEDOUT;
	}
	for (int i = s->nns - 1; s->registered && i >= 0; i--) {
		w = waiter_new(1);
		if (w == NULL) {
			continue;
		}
		PMIx_server_deregister_nspace(s->ns[i].name, on_registered, w);
		if (wait_registered(w, STOP_S) == PMIX_ERR_TIMEOUT) {
			return -ETIMEDOUT;
		}
	}
	drop_asks(s, true);
	if (!finalize_safe(s)) {
		return -EBUSY;
	}
	w = waiter_new(1);
	if (w == NULL || pthread_create(&t, NULL, finalize, w) != 0) {
		free(w);
		PMIx_server_finalize();
	} else if (wait_registered(w, STOP_S) == PMIX_ERR_TIMEOUT) {
		pthread_detach(t);
		return -ETIMEDOUT;
	} else {
		pthread_join(t, NULL);
	}
	the_server = NULL;
	return 0;
}

void
wr_pmixsrv_close(struct wr_pmixsrv *s)
{
	int rc;

	if (s == NULL) {
		return;
	}
	/* Fences under way answer with an error while PMIx is still there. */
	wr_pmireg_close(s->reg);
	s->reg = NULL;
	rc = s->inited ? stop_pmix(s) : 0;
	if (rc == -ETIMEDOUT) {
		fprintf(stderr, "worldrun: the PMIx server did not stop within %d s; "
				"left to the end of this process\n", STOP_S);
	}
	if (rc < 0) {
		/* PMIx's threads still run: what they may touch stays. */
		return;
	}
	drop_asks(s, false);
	event_free(s->wake_ev);
	for (int i = 0; i < 2; i++) {
		if (s->wake[i] >= 0) {
			close(s->wake[i]);
		}
	}
	for (int i = 0; s->clients != NULL && i < s->nclients; i++) {
		for (char **e = s->clients[i].env; e != NULL && *e != NULL; e++) {
			free(*e);
		}
		free(s->clients[i].env);
	}
	free(s->clients);
	free(s->ns);
	names_free(s->names, s->cfg.nnodes);
	while (s->seqs != NULL) {
		struct fence_seq *next = s->seqs->next;

		free(s->seqs);
		s->seqs = next;
	}
	pthread_mutex_destroy(&s->lock);
	free((char *)s->cfg.dir);
	free((char *)s->cfg.registry);
	free((char *)s->cfg.secret);
	free(s);
}
