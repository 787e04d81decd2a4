/* SPDX-License-Identifier: MIT */
/*
 * signals: the signals worldrun acts on, delivered through the event loop
 * (libevent's evsignal), never handled inside a signal handler, and
 * handed to one callback (the policy's). SIGPIPE is ignored: a closed
 * stdout shows up as EPIPE from write(). SIGCHLD is the agent's.
 */
#ifndef WR_SIGNALS_H
#define WR_SIGNALS_H

#include <event2/event.h>

#define WR_NSIGNALS 8

typedef void wr_signals_fn(void *arg, int sig);

struct wr_signals {
	struct event *ev[WR_NSIGNALS];
	wr_signals_fn *fn;
	void *arg;
};

/*
 * Hold the signals worldrun forwards (INT, TERM, QUIT, TSTP, ...) until
 * wr_signals_start() watches them: one that comes while worldrun starts
 * waits for it, rather than taking its default action (a SIGQUIT would
 * dump core where a second later it prints the hang report).
 */
void wr_signals_hold(void);

/* Watch the signals on @base for @fn(@arg, sig), then let them in (held
 * ones too). 0 or -errno; stop either way. */
int wr_signals_start(struct wr_signals *s, struct event_base *base,
		     wr_signals_fn *fn, void *arg);

/* Stop watching. Accepts NULL and signals never started (zeroed). */
void wr_signals_stop(struct wr_signals *s);

/* End worldrun by @sig with its default action, as a shell expects. */
void wr_signals_die(int sig) __attribute__((noreturn));

#endif
