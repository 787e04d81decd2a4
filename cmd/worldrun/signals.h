/* SPDX-License-Identifier: MIT */
/*
 * signals: the signals worldrun acts on, delivered through the event loop
 * (libevent's evsignal), never handled inside a signal handler. SIGPIPE is
 * ignored: a closed stdout shows up as EPIPE from write(). SIGCHLD is
 * the agent's.
 */
#ifndef WR_SIGNALS_H
#define WR_SIGNALS_H

struct wr_run;

int wr_signals_start(struct wr_run *run);
void wr_signals_stop(struct wr_run *run);

/* End worldrun by @sig with its default action, as a shell expects. */
void wr_signals_die(int sig) __attribute__((noreturn));

#endif
