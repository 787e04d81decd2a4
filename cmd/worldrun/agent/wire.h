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

/* Ranks on the wire are below this (the transport's 20 source bits). */
#define WR_WIRE_RANK_MAX (1 << 20)

enum wr_stream_id {
	WR_OUT = 0,
	WR_ERR = 1,
};

enum wr_ev_kind {
	WR_EV_STARTED,      /* rank, pid, mono */
	WR_EV_START_FAILED, /* rank, err, stage (0: in worldrun, before fork) */
	WR_EV_OUTPUT,       /* rank, stream, data, len, partial, eof */
	WR_EV_EXITED,       /* rank, pid, wstatus, maxrss_kib, mono */
	WR_EV_FINISHED,     /* rank: reaped and both streams closed; forced */
	WR_EV_STDIN_TAKEN,  /* every live reader took the last stdin chunk */
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
};

enum wr_cmd_kind {
	WR_CMD_START,     /* first, count */
	WR_CMD_SIGNAL,    /* rank (-1: all), sig: to each unfinished group */
	WR_CMD_PAUSE,     /* rank (-1: all), stream (-1: both): stop reading */
	WR_CMD_RESUME,    /* undoes WR_CMD_PAUSE */
	WR_CMD_STDIN,     /* data, len: a chunk for every stdin reader */
	WR_CMD_STDIN_EOF, /* close every stdin reader's pipe */
	WR_CMD_NKINDS,
};

struct wr_cmd {
	enum wr_cmd_kind kind;
	int rank;
	int stream;
	int sig;
	int first;
	int count;
	const char *data;
	size_t len;
};

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
