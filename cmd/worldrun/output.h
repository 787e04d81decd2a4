/* SPDX-License-Identifier: MIT */
/*
 * output: where rank output goes on the launcher's side. Every line of
 * every rank reaches worldrun's stdout or stderr whole: while one rank is
 * in the middle of a line longer than WR_LINE_MAX, the others' output
 * waits (their streams are paused). It adds labels, writes --output-dir
 * files with the exact bytes, and pauses all ranks while our own stdout
 * is slow. worldrun's own messages go through here too, so they never
 * cut a rank's line.
 */
#ifndef WR_OUTPUT_H
#define WR_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>

#include <event2/event.h>

struct wr_output;

struct wr_output_cfg {
	struct event_base *base;
	int nranks;
	bool label;
	const char *dir; /* --output-dir, or NULL */
	/* Stop (pause) or restart reading @stream of @rank; rank -1: all. */
	void (*flow)(void *arg, int rank, int stream, bool pause);
	/* A write failed (wr_output_error(), wr_output_file_error()), or all
	 * is written after wr_output_watch_drain(). */
	void (*changed)(void *arg);
	void *arg;
};

/* Returns 0, or -errno after printing why (an --output-dir problem). */
int wr_output_open(const struct wr_output_cfg *cfg, struct wr_output **out);

/* Routes for ranks up to @nranks - 1 (ranks a spawn added), their files
 * under --output-dir too. 0, or -errno after printing why. */
int wr_output_grow(struct wr_output *o, int nranks);

/* Writes what is queued first unless @abandon. Accepts NULL. */
void wr_output_close(struct wr_output *o, bool abandon);

/*
 * Bytes from @stream (WR_OUT or WR_ERR) of @rank: @partial when they do
 * not end with a newline, @eof when the stream ended (then @len may be 0).
 */
void wr_output_data(struct wr_output *o, int rank, int stream,
		    const char *data, size_t len, bool partial, bool eof);

/* One line of worldrun's own, to stderr, "worldrun: " and a newline added. */
void wr_output_say(struct wr_output *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * The one live line of a slow start, "worldrun: " and @text, rewritten in
 * place on stderr; NULL erases it for good. Only on a terminal (not a
 * dumb one), never in a pipe or a file; erased before any of worldrun's
 * own lines, and for good before the first bytes of any rank.
 */
void wr_output_live(struct wr_output *o, const char *text);

/* 0, or the -errno of a failed write to stdout or stderr (-EPIPE). */
int wr_output_error(const struct wr_output *o);

/*
 * 0, or the -errno of the first failed write to a file under
 * --output-dir (its rank and stream in *@rank, *@stream); cfg->changed
 * was called when it failed. That file gets no more bytes.
 */
int wr_output_file_error(const struct wr_output *o, int *rank, int *stream);

/* Ask for a call of cfg->changed once everything queued is written. */
void wr_output_watch_drain(struct wr_output *o);
bool wr_output_is_drained(struct wr_output *o);

#endif
