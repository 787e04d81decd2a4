/* SPDX-License-Identifier: MIT */
/*
 * wire: the commands a launcher gives an agent and the events an agent
 * sends back, the contract between the two sides, and their form as
 * frames (frame.h): a JSON object {"cmd": NAME, ...} or {"ev": NAME, ...}
 * whose bytes (a stdin chunk, a piece of output) are the frame's blob.
 * In local mode the structs are handed over as they are; over a channel
 * they go through this codec, which checks every message it reads and
 * knows nothing of what the messages cause.
 */
#ifndef WR_WIRE_H
#define WR_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <event2/buffer.h>
#include <jansson.h>

#include "frame.h"

/* Ranks on the wire are below this (the transport's 20 source bits). */
#define WR_WIRE_RANK_MAX (1 << 20)

/* What a channel's frames may hold towards an agent: a SETUP of many
 * ranks and variables; and towards the launcher: an event, whose data is
 * at most WR_WIRE_DATA_MAX bytes (a piece of a line). */
extern const struct wr_frame_limits wr_wire_limits;
extern const struct wr_frame_limits wr_wire_event_limits;
#define WR_WIRE_DATA_MAX (64u << 10)
/* The longest reason a READY gives. */
#define WR_WIRE_WHY_MAX 1024

/*
 * An agent that dials its launcher (srun's, dialin.h) says hello as a
 * registry client would (regclient.h), with this role and the rank of its
 * node in the step, wants the launcher to prove itself as WR_WIRE_DIAL_WHO,
 * and then names its node: {"op": WR_WIRE_DIAL_OP, "name": NAME, "node":
 * ID}. The channel starts after that frame, with the launcher's SETUP.
 */
#define WR_WIRE_DIAL_ROLE "agent"
#define WR_WIRE_DIAL_WHO "launcher"
#define WR_WIRE_DIAL_OP "agent"

/* Who reads the launcher's stdin: what SETUP's stdin_rank says. */
enum wr_stdin_mode {
	WR_STDIN_RANK, /* one rank (rank 0 by default) reads our stdin */
	WR_STDIN_ALL,  /* every rank reads a copy */
	WR_STDIN_NONE, /* every rank reads /dev/null */
};

enum wr_stream_id {
	WR_OUT = 0,
	WR_ERR = 1,
};

/* Where a rank's start failed (START_FAILED's stage; 0: in the agent,
 * before the fork). */
enum wr_spawn_stage {
	WR_SPAWN_SETUP = 1, /* setsid, prctl, dup2, setrlimit */
	WR_SPAWN_CHDIR,
	WR_SPAWN_EXEC,
};

/* The exit status a start that failed at @stage with @err calls for:
 * 127 (not found) or 126 (not executable) at exec, else 125. */
int wr_wire_start_status(int stage, int err);

enum wr_ev_kind {
	WR_EV_STARTED,      /* rank, pid, mono; data, len: with
			     * --report-bindings, what it is bound to */
	WR_EV_START_FAILED, /* rank, err, stage (enum wr_spawn_stage); data,
			     * len: the program, for a spawn's rank */
	WR_EV_OUTPUT,       /* rank, stream, data, len, partial, eof */
	WR_EV_EXITED,       /* rank, pid, wstatus, maxrss_kib, mono; data,
			     * len: what its error file says (errfile.h),
			     * a line, "\n", its traceback; or none */
	WR_EV_FINISHED,     /* rank: reaped and both streams closed; forced */
	WR_EV_STDIN_TAKEN,  /* every live reader took the last stdin chunk */
	WR_EV_START_DONE,   /* count: the ranks of START that run; err: why
			     * the rest did not start (0: all did) */
	WR_EV_READY,        /* the answer to SETUP: status 0 (ready for
			     * START) or the exit status it calls for (125,
			     * 126, 127), with data and len: why, in words */
	WR_EV_ABORT,        /* rank asked its PMI server to end the job
			     * with code, which calls for status (1-255);
			     * data, len: its message */
	WR_EV_LEFT,         /* rank left PMI without finalize: data, len: why */
	WR_EV_BEAT,         /* the agent is there (every quarter of the
			     * setup's host_timeout, once READY) */
	WR_EV_GAVE_UP,      /* the agent heard nothing from the launcher
			     * for host_timeout: it stops its ranks */
	WR_EV_STACK,        /* the answer to STACK: rank, err (0, or why
			     * there is none: ESRCH, ETIMEDOUT...), tool,
			     * data, len: the tool's text, cut to
			     * WR_WIRE_DATA_MAX */
	WR_EV_ALONE,        /* rank exited 0 without a word to either PMI
			     * server, though its program links an MPI
			     * library: data, len: the library's name */
	WR_EV_SPAWN,        /* rank asks for count new ranks on its host
			     * (MPI_Comm_spawn): the launcher numbers them
			     * (WR_CMD_SPAWN with the same id) */
	WR_EV_JOINED,       /* the answer to JOINED: rank, the first of its
			     * ranks, which this host now serves */
	WR_EV_AGAIN,        /* the answer to AGAIN, the last event of this
			     * agent: what follows on the channel is the
			     * next attempt's agent */
	WR_EV_NKINDS,
};

/*
 * One event. pid, wstatus (a Linux wait status) and err (a Linux errno)
 * are the agent's host's; mono is its CLOCK_MONOTONIC in seconds, so only
 * differences of one agent's times mean anything.
 */
struct wr_ev {
	enum wr_ev_kind kind;
	int rank;
	pid_t pid;
	int stream;
	const char *data; /* valid during the callback only */
	size_t len;
	bool partial; /* data does not end with a newline */
	bool eof;     /* the stream ended after data */
	int wstatus;
	long maxrss_kib;
	double mono;
	int err;      /* errno */
	int stage;    /* enum wr_spawn_stage */
	bool forced;  /* the streams closed only after the group was killed */
	int count;
	int status;   /* READY, ABORT, LEFT */
	int code;     /* ABORT: the exit code the rank gave */
	const char *addr; /* READY: the launcher's IPv4 address as this host
			   * reached it (its ssh connection), or NULL */
	const char *tool; /* STACK: "eu-stack", "gdb", or "" (none there) */
	int id;       /* SPAWN: the agent's number for it, from 0 up */
	json_t *apps; /* SPAWN: the apps' shape (borrowed), their strings
		       * in data and len; NULL: too many or too large to
		       * send, which the launcher refuses */
};

/*
 * A spawn's apps (MPI_Comm_spawn_multiple has several) travel with its
 * SPAWN, both ways: an array in the JSON of [maxprocs, argc, envc,
 * has_cwd] for each app, and their strings in the blob, each
 * NUL-terminated, app after app: the program, argc arguments (argv[0]
 * first), envc "NAME=VALUE" that it adds to the job's environment, and
 * its directory if it has one.
 */
#define WR_SPAWN_APPS_MAX 64

struct wr_spawn_app {
	char *cmd;
	char **argv;     /* NULL-terminated, 1 or more; argv[0] may differ from cmd */
	char **env;      /* "NAME=VALUE", NULL-terminated: what it adds */
	char *cwd;       /* NULL: the job's */
	int maxprocs;
};

/* The shape of @napps @apps (a new reference) and their strings
 * (malloc'd, *@len bytes, in *@strings); NULL: no memory. */
json_t *wr_wire_apps_pack(const struct wr_spawn_app *apps, size_t napps, char **strings,
			  size_t *len);

/*
 * The apps of @shape with their strings in the @len bytes at @strings, of
 * @ranks ranks in all, in one malloc'd block (free() it) whose strings
 * point into @strings (which they never write); *@napps of them. NULL
 * with errno EPROTO when they are not such apps (no app or more than
 * WR_SPAWN_APPS_MAX, counts that do not add up to @ranks or to the
 * strings there are, an empty program, a variable without "="), or
 * ENOMEM.
 */
struct wr_spawn_app *wr_wire_apps_unpack(json_t *shape, char *strings, size_t len, int ranks,
					 size_t *napps);

/* The node of each of a spawn's @count ranks from its @place (an array of
 * @count node numbers, each below @nnodes) into @node (@count entries;
 * NULL: only check). 0 or -EPROTO. */
int wr_wire_place_get(json_t *place, int count, int nnodes, int *node);

enum wr_cmd_kind {
	WR_CMD_START,     /* first, count; addr: what the ranks publish */
	WR_CMD_SIGNAL,    /* rank (-1: all), sig: to each unfinished group */
	WR_CMD_PAUSE,     /* rank (-1: all), stream (-1: both): stop reading */
	WR_CMD_RESUME,    /* undoes WR_CMD_PAUSE */
	WR_CMD_STDIN,     /* data, len: a chunk for every stdin reader */
	WR_CMD_STDIN_EOF, /* close every stdin reader's pipe */
	WR_CMD_BEAT,      /* the launcher is there (as WR_EV_BEAT) */
	WR_CMD_STACK,     /* rank: its stack, for the hang report (the
			   * answer: WR_EV_STACK) */
	WR_CMD_SPAWN,     /* id: the answer to a SPAWN event: its ranks are
			   * the job's first to first+count-1, of the apps
			   * (apps, data, len) they run, on the nodes of
			   * place; the asker's host starts its own; count 0:
			   * refused */
	WR_CMD_JOINED,    /* first, count, node, apps, place: a spawn's ranks
			   * joined the job, asked for by a rank of node:
			   * serve them to this host's ranks and start those
			   * placed here (the answer: WR_EV_JOINED), before
			   * the asker learns of them */
	WR_CMD_AGAIN,     /* the attempt is over (every rank finished) and
			   * the job restarts (--max-restarts): clean up,
			   * answer WR_EV_AGAIN, and start anew on the same
			   * channel, waiting for the next attempt's SETUP */
	WR_CMD_NKINDS,
};

struct wr_cmd {
	enum wr_cmd_kind kind;
	int rank;
	int stream;
	int sig;
	int first;
	int count;
	int id;
	int node;
	const char *data;
	size_t len;
	json_t *apps;     /* SPAWN, JOINED: as in struct wr_ev, borrowed */
	json_t *place;    /* SPAWN, JOINED: the node of each of the spawn's
			   * ranks (wr_wire_place_get), borrowed */
	const char *addr; /* START: the IPv4 address this host's ranks publish
			   * (WORLD_ADVERTISE), known only once every agent
			   * is ready; NULL: what SETUP gave stands. Read
			   * from a frame, borrowed from it, as data is */
};

/*
 * SETUP, the first message on an agent's channel: the job as one host
 * sees it. Byte strings (the program's arguments, the environment, the
 * working directory) may be any bytes but NUL, so they travel in the
 * blob, NUL-terminated, and the JSON says how many there are.
 */
#define WR_SETUP_STDIN_NONE (-1) /* stdin_rank: every rank reads /dev/null */
#define WR_SETUP_STDIN_ALL (-2)  /* every rank reads a copy */
#define WR_SETUP_STRINGS_MAX 65536 /* arguments and variables, each */
#define WR_SETUP_NAME_MAX 255      /* a node's name */

struct wr_setup {
	char jobid[13];   /* 12 hex digits */
	int size;         /* ranks in the job */
	int nnodes;
	int node;         /* this host's node rank */
	int nranks;       /* ranks on this host, 1 or more */
	int *ranks;       /* their world ranks, rising: local rank i is ranks[i] */
	char **argv;      /* argc strings and NULL */
	int argc;
	char **env;       /* envc "NAME=VALUE" strings and NULL: the base
			   * environment, the registry's address and secret
			   * included */
	int envc;
	char *wdir;       /* NULL: the agent's own */
	bool wdir_soft;   /* where wdir does not exist, the agent's own */
	bool pty;
	int stdin_rank;   /* a world rank of this host, or WR_SETUP_STDIN_* */
	double kill_grace;
	double host_timeout; /* seconds of silence on the channel, either
			      * way, after which the other side is gone
			      * (--host-timeout); 0: never */
	char *master_addr; /* "": the launcher's address as the agent reaches it */
	int master_port;
	int registry_port; /* where the launcher's registry listens for
			    * other hosts (on the address they reach it at) */
	unsigned long long nofile_cur, nofile_max; /* RLIMIT_NOFILE for ranks */
	bool pmi;         /* serve PMI-1 to the ranks (pmisrv.h) */
	bool pmi_port;    /* on a loopback port (PMI_PORT), not PMI_FD */
	bool pmix;        /* serve PMIx to the ranks (pmixsrv.h) */
	char *pmi_mapping; /* its PMI_process_mapping; NULL: none */
	int bind;          /* enum wr_bind_level (bind.h): --bind-to */
	int cpus_per_rank; /* --cpus-per-rank; 0 is 1 */
	bool report_bindings; /* STARTED says what each rank is bound to */
	char **node_name;  /* [nnodes]: the nodes' names, for PMIx's node map
			    * (printable, no comma, at most
			    * WR_SETUP_NAME_MAX bytes); NULL: not given */
	void *strings_;   /* private: where the strings live */
};

/* Append @s as one frame: 0, -EINVAL (not a valid setup), WORLD_EFRAME
 * or -ENOMEM; on failure nothing was appended. */
int wr_wire_setup_write(struct evbuffer *out, const struct wr_setup *s);

/*
 * Fill @s from a frame, copying what it keeps (wr_wire_setup_finish
 * frees it). Returns 0, WORLD_EPROTO (anything that is not a valid
 * setup: a field missing, of the wrong type or out of range, ranks not
 * rising or not of the job, strings that do not match their counts, a
 * variable without "=") or -ENOMEM; on failure @s holds nothing.
 */
int wr_wire_setup_read(json_t *msg, const void *blob, size_t blob_len,
		       struct wr_setup *s);

/* Free what wr_wire_setup_read() filled in; accepts a zeroed @s. */
void wr_wire_setup_finish(struct wr_setup *s);

/* "start", "output", ... (NULL for a bad value). */
const char *wr_wire_cmd_name(enum wr_cmd_kind k);
const char *wr_wire_ev_name(enum wr_ev_kind k);

/*
 * Append @cmd (@ev) to @out as one frame, its data as the blob. Returns
 * 0, WORLD_EFRAME (over the frame limits) or -ENOMEM; on failure nothing
 * was appended.
 */
int wr_wire_cmd_write(struct evbuffer *out, const struct wr_cmd *cmd);
int wr_wire_ev_write(struct evbuffer *out, const struct wr_ev *ev);

/*
 * Fill @cmd (@ev) from a frame's @msg and blob, both borrowed: data
 * points into @blob. Returns 0, or WORLD_EPROTO for anything that is not
 * such a message: an unknown name, a missing field or one of the wrong
 * type or out of its range, a blob where none belongs or none where one
 * does. Fields the message does not have are left 0.
 */
int wr_wire_cmd_read(json_t *msg, const void *blob, size_t blob_len,
		     struct wr_cmd *cmd);
int wr_wire_ev_read(json_t *msg, const void *blob, size_t blob_len,
		    struct wr_ev *ev);

#endif
