/* SPDX-License-Identifier: MIT */
/*
 * pmisrv: the PMI-1 server of one host's ranks, as Hydra's proxy is:
 * each rank gets one end of a socket pair (PMI_FD), and what it asks
 * becomes registry operations (pmireg.h) on the job's registry: put and
 * get on the key/value space under "pmi/JOBID/", the registry's barrier
 * entered for each rank, and the answers MPICH expects. abort and a connection closed
 * before finalize go to the agent, whose launcher decides. Everything
 * runs on the agent's loop; a bad line closes that rank's connection.
 */
#ifndef WR_PMISRV_H
#define WR_PMISRV_H

#include <stdbool.h>

#include <event2/event.h>

struct wr_pmisrv;

struct wr_pmisrv_cfg {
	struct event_base *base;
	const char *jobid;
	int size;             /* ranks in the job */
	int nlocal;           /* ranks on this host: each a client */
	const char *mapping;  /* PMI_process_mapping's value; borrowed */
	int rep;              /* this host's first rank: whom it acts for */
	const int *ranks;     /* with port: this host's ranks, [nlocal] */
	bool port;            /* serve on a loopback port (PMI_PORT, PMI_ID) */
	const char *registry; /* WORLD_REGISTRY */
	const char *secret;
	/* A rank called abort with @code and @msg (may be ""). */
	void (*abort)(void *arg, int rank, int code, const char *msg);
	/* A rank is gone from PMI without finalize: why, in words, or ""
	 * when its connection just closed (it ended, or closed it). */
	void (*left)(void *arg, int rank, const char *why);
	void *arg;
};

/* A server for @cfg (copied, strings borrowed). 0 or -ENOMEM. */
int wr_pmisrv_open(const struct wr_pmisrv_cfg *cfg, struct wr_pmisrv **out);

/* With cfg.port, the port of 127.0.0.1 it listens on; else 0. */
int wr_pmisrv_port(const struct wr_pmisrv *s);

/* A socket pair for one rank: fds[0] the server's, fds[1] the rank's,
 * both close-on-exec. Safe on any thread. 0 or -errno. */
int wr_pmisrv_pair(int fds[2]);

/* Serve @rank on @fd (the server's end, owned from now on, even on
 * failure). On the loop's thread. 0 or -ENOMEM. */
int wr_pmisrv_attach(struct wr_pmisrv *s, int rank, int fd);

/*
 * @rank was reaped: what it wrote before its end is read and answered,
 * then its connection closes, and without finalize (or abort) it has
 * left. So left() comes before the caller tells of its end. Returns
 * whether it ever sent a request. Accepts a NULL @s and a rank without
 * a connection.
 */
bool wr_pmisrv_reaped(struct wr_pmisrv *s, int rank);

/* Close every connection. Accepts NULL. */
void wr_pmisrv_close(struct wr_pmisrv *s);

#endif
