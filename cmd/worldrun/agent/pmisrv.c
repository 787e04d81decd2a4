/* SPDX-License-Identifier: MIT */
#include "pmisrv.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "listen.h"
#include "pmireg.h"
#include "pmiwire.h"
#include "regproto.h"
#include "world_errors.h"

/* The lines of one multi-line request that are read before it is refused. */
#define MCMD_LINES_MAX 4096
#define CONNECT_MS 10000
/* On a port: connections that have not said who they are yet, and how
 * long each has to say it. */
#define STRANGERS_MAX 64
#define INITACK_S 10
/*
 * A client is not read while this many of its requests wait for the
 * registry, or while this much of what we answered waits for it to read:
 * a rank that sends without reading its answers fills its own socket,
 * not our memory. MPICH has one request out at a time.
 */
#define ASKS_MAX 16
#define OWED_MAX (64 * 1024)

struct client {
	struct wr_pmisrv *s;
	struct bufferevent *bev;
	unsigned serial;    /* names it in requests under way */
	int rank;           /* -1: on a port, before its initack */
	bool spoke;         /* it sent a request: a PMI client, not a bystander */
	bool finalized;
	bool aborted;
	bool in_barrier;
	int mcmd_lines;     /* > 0: inside a multi-line request */
	int asks;           /* its requests that wait for the registry */
	bool reaped;        /* its rank is gone: read what it left, whatever is owed */
	struct client *next_dead;
};

struct wr_pmisrv {
	struct wr_pmisrv_cfg cfg;
	char kvsname[32];
	struct wr_pmireg *reg;
	struct client **clients;
	int nclients;
	int cap;
	int lfd;            /* with cfg.port: the listener */
	struct event *accept_ev;
	int port;
	int *ranks;         /* with cfg.port: [nlocal], and which are claimed */
	bool *claimed;
	int strangers;
	/* Dropped clients are freed once the callback that dropped them is
	 * over: until then, code up the stack may still hold them (bev NULL). */
	struct client *dead;
	struct event *sweep;
	/* The ranks that sent a request, kept past their connection (which
	 * MPICH closes at finalize): [nspoke] of at most cfg.nlocal. */
	int *spoke;
	int nspoke;
	unsigned next_serial;
};

/* What an answer from the registry goes back to. */
struct pending {
	struct wr_pmisrv *s;
	unsigned serial;
	char key[WR_PMI_VAL_MAX + 1]; /* a key, or the port a publish asks for */
};

static void drop(struct client *c, const char *why);

static struct client *
by_serial(struct wr_pmisrv *s, unsigned serial)
{
	for (int i = 0; i < s->nclients; i++) {
		if (s->clients[i]->serial == serial) {
			return s->clients[i];
		}
	}
	return NULL;
}

/* Answer @c with "cmd=@cmd" and @n words. */
static void
say(struct client *c, const char *cmd, int n, const char *const *keys,
    const char *const *vals)
{
	char line[WR_PMI_LINE_MAX + 64];
	int len = wr_pmi_format(line, sizeof(line), cmd, n, keys, vals);

	if (c->bev == NULL) {
		return;
	}
	if (len < 0 || bufferevent_write(c->bev, line, (size_t)len) < 0) {
		drop(c, "unable to answer its PMI request");
	}
}

static void
say_rc(struct client *c, const char *cmd, int rc, const char *msg)
{
	say(c, cmd, 2, (const char *[]){ "rc", "msg" },
	    (const char *[]){ rc == 0 ? "0" : "-1", msg });
}

static struct pending *
pending_of(struct client *c, const char *key)
{
	struct pending *p = calloc(1, sizeof(*p));

	if (p != NULL) {
		p->s = c->s;
		p->serial = c->serial;
		snprintf(p->key, sizeof(p->key), "%s", key != NULL ? key : "");
	}
	return p;
}

/* The registry, connected at the first request that needs it. */
static int
registry(struct wr_pmisrv *s)
{
	struct wr_pmireg_cfg rc = {
		.base = s->cfg.base, .endpoints = s->cfg.registry, .secret = s->cfg.secret,
		.rank = s->cfg.rep, .timeout_ms = CONNECT_MS,
	};

	return wr_pmireg_once(&rc, &s->reg);
}

static bool
stalled(const struct client *c)
{
	return !c->reaped && (c->asks >= ASKS_MAX ||
	       evbuffer_get_length(bufferevent_get_output(c->bev)) > OWED_MAX);
}

/* Read @c again if it was stalled (its reading off) and may be now; what
 * it sent meanwhile is taken from the loop, not from inside the callback
 * that made room. */
static void
unstall(struct client *c)
{
	if (c->bev != NULL && !(bufferevent_get_enabled(c->bev) & EV_READ) && !stalled(c)) {
		bufferevent_enable(c->bev, EV_READ);
		bufferevent_trigger(c->bev, EV_READ,
				    BEV_TRIG_IGNORE_WATERMARKS | BEV_TRIG_DEFER_CALLBACKS);
	}
}

/* An answer from the registry for @p: its client, if it is still there. */
static struct client *
answered(struct pending *p)
{
	struct client *c = by_serial(p->s, p->serial);

	if (c != NULL) {
		c->asks--;
	}
	return c;
}

/* Send @req_new for @c, answered to @cb with a pending for @key. */
static void
ask(struct client *c, json_t *req_new, const char *value, wr_pmireg_cb *cb,
    const char *key, const char *cmd)
{
	struct pending *p = pending_of(c, key);
	int rc = p == NULL ? -ENOMEM : registry(c->s);

	if (rc == 0) {
		rc = wr_pmireg_call(c->s->reg, req_new, value, value != NULL ? strlen(value) : 0,
				    cb, p);
		req_new = NULL;
		c->asks += rc == 0;
	}
	json_decref(req_new);
	if (rc < 0) {
		free(p);
		say_rc(c, cmd, -1, "the_job's_registry_cannot_be_reached");
	}
}

static void
on_put(void *arg, int rc, json_t *result, const void *blob, size_t len)
{
	struct pending *p = arg;
	struct client *c = answered(p);

	if (c != NULL) {
		say_rc(c, "put_result", rc, rc == 0 ? "success" : "the_registry_refused_it");
		unstall(c);
	}
	free(p);
}

static void
on_get(void *arg, int rc, json_t *result, const void *blob, size_t len)
{
	struct pending *p = arg;
	struct client *c = answered(p);
	char value[WR_PMI_VAL_MAX + 1], msg[WR_PMI_KEY_MAX + 32];

	/* A value another client (libworld, worldctl) set may hold bytes that
	 * a PMI line cannot: a newline would end the answer and forge the
	 * next one, a NUL would cut it. Such a value is not served. */
	if (c != NULL && rc == 0 && len <= WR_PMI_VAL_MAX &&
	    (memchr(blob, '\n', len) != NULL || memchr(blob, '\r', len) != NULL ||
	     memchr(blob, '\0', len) != NULL)) {
		say_rc(c, "get_result", -1, "the_value_holds_a_byte_pmi_cannot_carry");
	} else if (c != NULL && rc == 0 && len <= WR_PMI_VAL_MAX) {
		memcpy(value, blob, len);
		value[len] = '\0';
		say(c, "get_result", 4, (const char *[]){ "rc", "msg", "value", "found" },
		    (const char *[]){ "0", "success", value, "TRUE" });
	} else if (c != NULL) {
		snprintf(msg, sizeof(msg), "key_%.64s_not_found", p->key);
		say(c, "get_result", 4, (const char *[]){ "rc", "msg", "value", "found" },
		    (const char *[]){ "-1", msg, "unknown", "FALSE" });
	}
	if (c != NULL) {
		unstall(c);
	}
	free(p);
}

static void
on_barrier(void *arg, int rc, json_t *result, const void *blob, size_t len)
{
	struct pending *p = arg;
	struct client *c = answered(p);

	if (c != NULL) {
		c->in_barrier = false;
		say_rc(c, "barrier_out", rc, rc == 0 ? "success" : "the_barrier_failed");
		unstall(c);
	}
	free(p);
}

/* The registry's key for a PMI key. */
static void
kv_key(const struct wr_pmisrv *s, const char *key, char out[WR_PMI_KEY_MAX + 32])
{
	snprintf(out, WR_PMI_KEY_MAX + 32, "pmi/%s/%s", s->cfg.jobid, key);
}

/* put and get: their kvsname, key and value checked against the maxima. */
static void
put_or_get(struct client *c, const struct wr_pmi_msg *m, bool put)
{
	const char *kvs = wr_pmi_arg(m, "kvsname"), *key = wr_pmi_arg(m, "key");
	const char *val = wr_pmi_arg(m, "value");
	const char *cmd = put ? "put_result" : "get_result";
	char k[WR_PMI_KEY_MAX + 32];

	if (kvs == NULL || key == NULL || (put && val == NULL)) {
		say_rc(c, cmd, -1, "kvsname,_key_and_value_are_needed");
	} else if (strcmp(kvs, c->s->kvsname) != 0) {
		say_rc(c, cmd, -1, "unknown_kvsname");
	} else if (strlen(key) > WR_PMI_KEY_MAX || (put && strlen(val) > WR_PMI_VAL_MAX)) {
		say_rc(c, cmd, -1, "key_or_value_too_long_(see_get_maxes)");
	} else if (!put && strcmp(key, "PMI_process_mapping") == 0 && c->s->cfg.mapping == NULL) {
		say(c, cmd, 4, (const char *[]){ "rc", "msg", "value", "found" },
		    (const char *[]){ "-1", "the_map_is_too_long_to_tell", "unknown", "FALSE" });
	} else if (!put && strcmp(key, "PMI_process_mapping") == 0) {
		say(c, cmd, 4, (const char *[]){ "rc", "msg", "value", "found" },
		    (const char *[]){ "0", "success", c->s->cfg.mapping, "TRUE" });
	} else {
		kv_key(c->s, key, k);
		ask(c, wr_regproto_key(put ? WR_OP_KV_SET : WR_OP_KV_GET, k), put ? val : NULL,
		    put ? on_put : on_get, key, cmd);
	}
}

/* Each rank enters the registry's barrier itself, so that the hang
 * report sees who waits in it and for whom. */
static void
barrier_in(struct client *c)
{
	char name[64];

	if (c->in_barrier) {
		drop(c, "it entered a PMI barrier twice");
		return;
	}
	c->in_barrier = true;
	snprintf(name, sizeof(name), "pmi/%s", c->s->cfg.jobid);
	ask(c, wr_regproto_barrier_as(name, NULL, c->rank), NULL, on_barrier, NULL, "barrier_out");
}

static void
abort_job(struct client *c, const struct wr_pmi_msg *m)
{
	const char *code = wr_pmi_arg(m, "exitcode"), *msg = wr_pmi_arg(m, "message");
	char *end = NULL;
	long n;

	errno = 0;
	n = code != NULL ? strtol(code, &end, 10) : 1;
	/* A code that is not a number (or not an int) counts as 1. */
	if (code != NULL && (*end != '\0' || end == code || errno != 0 ||
			     n < INT_MIN || n > INT_MAX)) {
		n = 1;
	}
	c->aborted = true;
	c->s->cfg.abort(c->s->cfg.arg, c->rank, (int)n, msg != NULL ? msg : "");
}

/* A name service answer: MPICH 4 reads rc (and lookup's port), older
 * clients info=ok. */
static void
say_name(struct client *c, const char *cmd, const char *msg, const char *port)
{
	bool good = strcmp(msg, "success") == 0;

	say(c, cmd, port != NULL ? 4 : 3, (const char *[]){ "rc", "msg", "info", "port" },
	    (const char *[]){ good ? "0" : "-1", msg, good ? "ok" : "fail", port });
}

/* A value that a PMI line can carry (no line end, no NUL). */
static bool
carried(const void *v, size_t len)
{
	return len <= WR_PMI_VAL_MAX && memchr(v, '\n', len) == NULL &&
	       memchr(v, '\r', len) == NULL && memchr(v, '\0', len) == NULL;
}

/* publish: the registry kept our port unless the name had one already. */
static void
on_publish(void *arg, int rc, json_t *result, const void *blob, size_t len)
{
	struct pending *p = arg;
	struct client *c = answered(p);

	if (c != NULL) {
		say_name(c, "publish_result",
			 rc < 0 ? "the_registry_refused_it"
			 : len == strlen(p->key) && memcmp(blob, p->key, len) == 0
				 ? "success" : "the_service_name_is_published_already",
			 NULL);
		unstall(c);
	}
	free(p);
}

static void
on_unpublish(void *arg, int rc, json_t *result, const void *blob, size_t len)
{
	struct pending *p = arg;
	struct client *c = answered(p);

	if (c != NULL) {
		say_name(c, "unpublish_result",
			 rc < 0 ? "the_registry_refused_it"
			 : json_is_true(json_object_get(result, "deleted"))
				 ? "success" : "the_service_name_is_not_published",
			 NULL);
		unstall(c);
	}
	free(p);
}

static void
on_lookup(void *arg, int rc, json_t *result, const void *blob, size_t len)
{
	struct pending *p = arg;
	struct client *c = answered(p);
	char port[WR_PMI_VAL_MAX + 1];

	if (c != NULL && rc == 0 && len > 0 && carried(blob, len)) {
		memcpy(port, blob, len);
		port[len] = '\0';
		say_name(c, "lookup_result", "success", port);
	} else if (c != NULL) {
		say_name(c, "lookup_result", rc == 0 && len > 0
			 ? "the_port_holds_a_byte_pmi_cannot_carry"
			 : "the_service_name_is_not_published", NULL);
	}
	if (c != NULL) {
		unstall(c);
	}
	free(p);
}

/*
 * publish_name, unpublish_name and lookup_name: the job's name service,
 * on its registry (pmi/JOBID/service/NAME), so that MPI_Publish_name and
 * MPI_Lookup_name work as under Hydra. A name is published once, until
 * unpublished; lookup does not wait for it.
 */
static void
name_service(struct client *c, const struct wr_pmi_msg *m)
{
	const char *svc = wr_pmi_arg(m, "service"), *port = wr_pmi_arg(m, "port");
	bool publish = strcmp(m->cmd, "publish_name") == 0;
	bool lookup = strcmp(m->cmd, "lookup_name") == 0;
	const char *res = publish ? "publish_result" : lookup ? "lookup_result"
			  : "unpublish_result";
	char k[WR_PMI_VAL_MAX + 64];

	if (svc == NULL || svc[0] == '\0' || (publish && (port == NULL || port[0] == '\0'))) {
		say_name(c, res, publish ? "a_service_and_its_port_are_needed"
			 : "a_service_is_needed", NULL);
		return;
	}
	if (strlen(svc) > WR_PMI_VAL_MAX || (publish && strlen(port) > WR_PMI_VAL_MAX)) {
		say_name(c, res, "the_service_or_port_is_too_long", NULL);
		return;
	}
	snprintf(k, sizeof(k), "pmi/%s/service/%s", c->s->cfg.jobid, svc);
	if (publish) {
		/* Stored only where there is none yet: the answer is what is. */
		ask(c, wr_regproto_kv_cas(k, 0), port, on_publish, port, res);
	} else {
		ask(c, wr_regproto_key(lookup ? WR_OP_KV_GET : WR_OP_KV_DEL, k), NULL,
		    lookup ? on_lookup : on_unpublish, NULL, res);
	}
}

static void
info(struct client *c, const struct wr_pmi_msg *m)
{
	char a[16], b[48];
	const struct wr_pmisrv *s = c->s;

	if (strcmp(m->cmd, "init") == 0) {
		say(c, "response_to_init", 3, (const char *[]){ "pmi_version", "pmi_subversion", "rc" },
		    (const char *[]){ "1", "1", "0" });
	} else if (strcmp(m->cmd, "get_maxes") == 0) {
		say(c, "maxes", 4, (const char *[]){ "rc", "kvsname_max", "keylen_max", "vallen_max" },
		    (const char *[]){ "0", "256", "64", "1024" });
	} else if (strcmp(m->cmd, "get_appnum") == 0) {
		say(c, "appnum", 2, (const char *[]){ "rc", "appnum" }, (const char *[]){ "0", "0" });
	} else if (strcmp(m->cmd, "get_my_kvsname") == 0) {
		say(c, "my_kvsname", 2, (const char *[]){ "rc", "kvsname" },
		    (const char *[]){ "0", s->kvsname });
	} else if (strcmp(m->cmd, "get_universe_size") == 0) {
		snprintf(a, sizeof(a), "%d", s->cfg.size);
		say(c, "universe_size", 2, (const char *[]){ "rc", "size" },
		    (const char *[]){ "0", a });
	} else if (strcmp(m->cmd, "publish_name") == 0 || strcmp(m->cmd, "lookup_name") == 0 ||
		   strcmp(m->cmd, "unpublish_name") == 0) {
		name_service(c, m);
	} else {
		/* Anything else: an answer, never silence. */
		snprintf(b, sizeof(b), "%.32s_result", m->cmd);
		say_rc(c, b, -1, "not_supported_by_worldrun");
	}
}

/* The first line on a port: "cmd=initack pmiid=RANK", each rank once. */
static void
initack(struct client *c, const struct wr_pmi_msg *m)
{
	struct wr_pmisrv *s = c->s;
	const char *id = strcmp(m->cmd, "initack") == 0 ? wr_pmi_arg(m, "pmiid") : NULL;
	char size[16], rank[16], *end = NULL;
	long r = id != NULL ? strtol(id, &end, 10) : -1;
	int i = 0;

	while (id != NULL && *end == '\0' && i < s->cfg.nlocal && s->ranks[i] != r) {
		i++;
	}
	if (id == NULL || *end != '\0' || i == s->cfg.nlocal || s->claimed[i]) {
		drop(c, "");
		return;
	}
	s->claimed[i] = true;
	s->strangers--;
	c->rank = (int)r;
	bufferevent_set_timeouts(c->bev, NULL, NULL);
	snprintf(size, sizeof(size), "size=%d", s->cfg.size);
	snprintf(rank, sizeof(rank), "rank=%ld", r);
	say(c, "initack", 0, NULL, NULL);
	say(c, "set", 1, (const char *[]){ "size" }, (const char *[]){ size + 5 });
	say(c, "set", 1, (const char *[]){ "rank" }, (const char *[]){ rank + 5 });
	say(c, "set", 1, (const char *[]){ "debug" }, (const char *[]){ "0" });
}

static void
handle(struct client *c, const struct wr_pmi_msg *m)
{
	if (c->rank < 0) {
		initack(c, m);
		return;
	}
	if (!c->spoke && c->s->spoke != NULL && c->s->nspoke < c->s->cfg.nlocal) {
		c->s->spoke[c->s->nspoke++] = c->rank;
	}
	c->spoke = true;
	if (m->mcmd) {
		c->mcmd_lines = 1; /* read to its endcmd, then refused */
	} else if (strcmp(m->cmd, "put") == 0 || strcmp(m->cmd, "get") == 0) {
		put_or_get(c, m, m->cmd[0] == 'p');
	} else if (strcmp(m->cmd, "barrier_in") == 0) {
		barrier_in(c);
	} else if (strcmp(m->cmd, "finalize") == 0) {
		c->finalized = true;
		say(c, "finalize_ack", 1, (const char *[]){ "rc" }, (const char *[]){ "0" });
	} else if (strcmp(m->cmd, "abort") == 0) {
		abort_job(c, m);
	} else {
		info(c, m);
	}
}

/* A line inside a multi-line request: its end is answered. */
static void
mcmd_line(struct client *c, const char *line)
{
	if (strcmp(line, "endcmd") == 0) {
		c->mcmd_lines = 0;
		say(c, "spawn_result", 2, (const char *[]){ "rc", "errmsg" },
		    (const char *[]){ "-1", "spawn_is_not_supported_by_worldrun" });
	} else if (++c->mcmd_lines > MCMD_LINES_MAX) {
		drop(c, "a multi-line PMI request without its endcmd");
	}
}

static void
on_read(struct bufferevent *bev, void *arg)
{
	struct client *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	struct wr_pmi_msg m;
	size_t n;
	char *line;

	while (c->bev != NULL) {
		struct evbuffer_ptr eol = evbuffer_search_eol(in, NULL, NULL, EVBUFFER_EOL_LF);

		if (stalled(c)) {
			bufferevent_disable(bev, EV_READ);
			return;
		}
		if ((eol.pos < 0 && evbuffer_get_length(in) > WR_PMI_LINE_MAX) ||
		    eol.pos > (ssize_t)WR_PMI_LINE_MAX) {
			drop(c, "a PMI line longer than the maxima allow");
			return;
		}
		if (eol.pos < 0 || (line = evbuffer_readln(in, &n, EVBUFFER_EOL_LF)) == NULL) {
			return;
		}
		if (c->mcmd_lines > 0) {
			mcmd_line(c, line);
		} else if (wr_pmi_parse(line, n, &m) < 0) {
			say_rc(c, "error", -1, "not_a_PMI-1_request");
			drop(c, "a line that is not a PMI-1 request");
		} else {
			handle(c, &m);
		}
		free(line);
	}
}

static void
on_written(struct bufferevent *bev, void *arg)
{
	unstall(arg);
}

/* Close @c's connection; before finalize or abort, the rank has left. */
static void
drop(struct client *c, const char *why)
{
	struct wr_pmisrv *s = c->s;
	int i = 0;

	if (c->bev == NULL) {
		return;
	}
	/* What is queued for it goes out first, as far as the socket takes it
	 * (the bufferevent keeps its output's front frozen for itself). */
	evbuffer_unfreeze(bufferevent_get_output(c->bev), 1);
	evbuffer_write(bufferevent_get_output(c->bev), bufferevent_getfd(c->bev));
	bufferevent_free(c->bev);
	c->bev = NULL;
	while (i < s->nclients && s->clients[i] != c) {
		i++;
	}
	s->clients[i] = s->clients[--s->nclients];
	if (c->rank < 0) {
		s->strangers--;
	}
	/* A rank that never spoke PMI (not an MPI program) leaves nothing. */
	if (c->rank >= 0 && (c->spoke || why[0] != '\0') && !c->finalized && !c->aborted) {
		s->cfg.left(s->cfg.arg, c->rank, why);
	}
	c->next_dead = s->dead;
	s->dead = c;
	event_active(s->sweep, EV_TIMEOUT, 0);
}

static void
on_sweep(evutil_socket_t fd, short what, void *arg)
{
	struct wr_pmisrv *s = arg;
	struct client *c;

	while ((c = s->dead) != NULL) {
		s->dead = c->next_dead;
		free(c);
	}
}

static void
on_event(struct bufferevent *bev, short what, void *arg)
{
	struct client *c = arg;

	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT)) {
		drop(c, "");
	}
}

/*
 * Whether the peer of @fd, a connection to our loopback listener, is a
 * process of our user, as the kernel's socket table says. Anyone else,
 * or one the kernel cannot place, is refused before it is read.
 */
static bool
ours(int fd)
{
	uid_t uid;

	return wr_listen_peer_uid(fd, &uid) == 0 && uid == geteuid();
}

static void
on_accept(evutil_socket_t lfd, short what, void *arg)
{
	struct wr_pmisrv *s = arg;
	struct timeval tv = { INITACK_S, 0 };
	int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

	if (fd < 0) {
		return;
	}
	if (s->strangers >= STRANGERS_MAX || !ours(fd) ||
	    wr_pmisrv_attach(s, -1, fd) < 0) {
		close(fd);
		return;
	}
	s->strangers++;
	bufferevent_set_timeouts(s->clients[s->nclients - 1]->bev, &tv, NULL);
}

/* 127.0.0.1, a port of the kernel's choice: the one endpoint that takes
 * no secret (PMI-1 has no place for one), so only our user, once per rank. */
static int
listen_port(struct wr_pmisrv *s)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);

	s->ranks = calloc((size_t)s->cfg.nlocal, sizeof(*s->ranks));
	s->claimed = calloc((size_t)s->cfg.nlocal, sizeof(*s->claimed));
	if (s->ranks == NULL || s->claimed == NULL) {
		return -ENOMEM;
	}
	memcpy(s->ranks, s->cfg.ranks, (size_t)s->cfg.nlocal * sizeof(*s->ranks));
	s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->lfd < 0 || bind(s->lfd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    listen(s->lfd, 64) < 0 || getsockname(s->lfd, (struct sockaddr *)&a, &len) < 0) {
		return -errno;
	}
	s->port = ntohs(a.sin_port);
	s->accept_ev = event_new(s->cfg.base, s->lfd, EV_READ | EV_PERSIST, on_accept, s);
	if (s->accept_ev == NULL || event_add(s->accept_ev, NULL) < 0) {
		return -ENOMEM;
	}
	return 0;
}

int
wr_pmisrv_open(const struct wr_pmisrv_cfg *cfg, struct wr_pmisrv **out)
{
	struct wr_pmisrv *s = calloc(1, sizeof(*s));
	int rc;

	*out = NULL;
	if (s == NULL) {
		return -ENOMEM;
	}
	s->lfd = -1;
	s->cap = (cfg->nlocal > 0 ? cfg->nlocal : 1) + (cfg->port ? STRANGERS_MAX : 0);
	s->clients = calloc((size_t)s->cap, sizeof(*s->clients));
	s->spoke = calloc((size_t)(cfg->nlocal > 0 ? cfg->nlocal : 1), sizeof(*s->spoke));
	if (s->clients == NULL || s->spoke == NULL) {
		free(s->clients);
		free(s->spoke);
		free(s);
		return -ENOMEM;
	}
	s->cfg = *cfg;
	/* The environment they come from may change under us. */
	s->cfg.registry = cfg->registry != NULL ? strdup(cfg->registry) : NULL;
	s->cfg.secret = cfg->secret != NULL ? strdup(cfg->secret) : NULL;
	snprintf(s->kvsname, sizeof(s->kvsname), "kvs_%s", cfg->jobid);
	s->sweep = event_new(cfg->base, -1, 0, on_sweep, s);
	rc = s->sweep == NULL ? -ENOMEM : cfg->port ? listen_port(s) : 0;
	if (rc < 0) {
		wr_pmisrv_close(s);
		return rc;
	}
	*out = s;
	return 0;
}

int
wr_pmisrv_port(const struct wr_pmisrv *s)
{
	return s != NULL ? s->port : 0;
}

int
wr_pmisrv_pair(int fds[2])
{
	return socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) < 0 ? -errno : 0;
}

int
wr_pmisrv_attach(struct wr_pmisrv *s, int rank, int fd)
{
	struct client *c = s->nclients < s->cap ? calloc(1, sizeof(*c)) : NULL;

	if (c == NULL) {
		close(fd);
		return -ENOMEM;
	}
	c->bev = evutil_make_socket_nonblocking(fd) == 0
		 ? bufferevent_socket_new(s->cfg.base, fd, BEV_OPT_CLOSE_ON_FREE) : NULL;
	if (c->bev == NULL) {
		close(fd);
		free(c);
		return -ENOMEM;
	}
	c->s = s;
	c->rank = rank;
	c->serial = ++s->next_serial;
	/* At most a line and a bit is read ahead: the rest waits in the socket. */
	bufferevent_setwatermark(c->bev, EV_READ, 0, 2 * WR_PMI_LINE_MAX);
	/* Its answers, once it has read them down to half: read it again. */
	bufferevent_setwatermark(c->bev, EV_WRITE, OWED_MAX / 2, 0);
	bufferevent_setcb(c->bev, on_read, on_written, on_event, c);
	bufferevent_enable(c->bev, EV_READ);
	s->clients[s->nclients++] = c;
	return 0;
}

bool
wr_pmisrv_reaped(struct wr_pmisrv *s, int rank)
{
	struct client *c = NULL;
	bool spoke = false;

	for (int i = 0; s != NULL && i < s->nspoke; i++) {
		spoke |= s->spoke[i] == rank;
	}
	for (int i = 0; s != NULL && i < s->nclients && c == NULL; i++) {
		c = s->clients[i]->rank == rank ? s->clients[i] : NULL;
	}
	if (c == NULL) {
		return spoke;
	}
	/* Its last lines (finalize, abort) count even if it was stalled.
	 * The bufferevent keeps its input's end frozen for itself, so it is
	 * thawed for these reads. Bounded: a grandchild may hold the socket
	 * and write on. */
	c->reaped = true;
	evbuffer_unfreeze(bufferevent_get_input(c->bev), 0);
	for (int i = 0; i < 64 && c->bev != NULL &&
			evbuffer_read(bufferevent_get_input(c->bev), bufferevent_getfd(c->bev),
				      4096) > 0; i++) {
		on_read(c->bev, c);
	}
	if (c->bev != NULL) {
		on_read(c->bev, c);
	}
	/* Dropping it may free it. */
	spoke |= c->spoke;
	if (c->bev != NULL) {
		drop(c, "");
	}
	return spoke;
}

void
wr_pmisrv_close(struct wr_pmisrv *s)
{
	if (s == NULL) {
		return;
	}
	for (int i = 0; i < s->nclients; i++) {
		bufferevent_free(s->clients[i]->bev);
		free(s->clients[i]);
	}
	/* The answers still owed then find no client, and free their own. */
	s->nclients = 0;
	wr_pmireg_close(s->reg);
	s->reg = NULL;
	if (s->accept_ev != NULL) {
		event_free(s->accept_ev);
	}
	on_sweep(-1, 0, s);
	if (s->sweep != NULL) {
		event_free(s->sweep);
	}
	if (s->lfd >= 0) {
		close(s->lfd);
	}
	free(s->ranks);
	free(s->claimed);
	free(s->spoke);
	free((char *)s->cfg.registry);
	free((char *)s->cfg.secret);
	free(s->clients);
	free(s);
}
