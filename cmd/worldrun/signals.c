/* SPDX-License-Identifier: MIT */
#include "signals.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <event2/event.h>

static const int forwarded[] = {
	SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGTSTP, SIGCONT,
};

#define NFORWARDED (sizeof(forwarded) / sizeof(forwarded[0]))
_Static_assert(NFORWARDED <= WR_NSIGNALS, "struct wr_signals holds the events");

/* The forwarded signals, blocked (@how SIG_BLOCK) or not (SIG_UNBLOCK). */
static void
mask_forwarded(int how)
{
	sigset_t set;

	sigemptyset(&set);
	for (size_t i = 0; i < NFORWARDED; i++) {
		sigaddset(&set, forwarded[i]);
	}
	sigprocmask(how, &set, NULL);
}

void
wr_signals_hold(void)
{
	mask_forwarded(SIG_BLOCK);
}

static void
on_signal(evutil_socket_t sig, short what, void *arg)
{
	struct wr_signals *s = arg;

	s->fn(s->arg, (int)sig);
}

int
wr_signals_start(struct wr_signals *s, struct event_base *base,
		 wr_signals_fn *fn, void *arg)
{
	struct sigaction ign = { .sa_handler = SIG_IGN };

	s->fn = fn;
	s->arg = arg;
	if (sigaction(SIGPIPE, &ign, NULL) < 0) {
		return -errno;
	}
	for (size_t i = 0; i < NFORWARDED; i++) {
		struct sigaction old;

		/* Under nohup, worldrun keeps ignoring SIGHUP and forwards none. */
		if (forwarded[i] == SIGHUP && sigaction(SIGHUP, NULL, &old) == 0 &&
		    old.sa_handler == SIG_IGN) {
			continue;
		}
		/*
		 * SIGINT and SIGTERM stop worldrun even where its shell started
		 * it ignoring them (a background job): libevent would put that
		 * back at wr_signals_stop(), and a pending one, held for the wait
		 * before a restart (restart.h), would be discarded with it.
		 */
		if ((forwarded[i] == SIGINT || forwarded[i] == SIGTERM) &&
		    sigaction(forwarded[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN) {
			struct sigaction dfl = { .sa_handler = SIG_DFL };

			sigaction(forwarded[i], &dfl, NULL);
		}
		s->ev[i] = evsignal_new(base, forwarded[i], on_signal, s);
		if (s->ev[i] == NULL || evsignal_add(s->ev[i], NULL) < 0) {
			return -ENOMEM;
		}
	}
	/* What came while worldrun started (wr_signals_hold()), or was held
	 * by whoever started it, arrives now, through the loop. */
	mask_forwarded(SIG_UNBLOCK);
	return 0;
}

void
wr_signals_stop(struct wr_signals *s)
{
	for (size_t i = 0; s != NULL && i < NFORWARDED; i++) {
		if (s->ev[i] != NULL) {
			event_free(s->ev[i]);
			s->ev[i] = NULL;
		}
	}
}

void
wr_signals_die(int sig)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	sigset_t set;

	sigaction(sig, &dfl, NULL);
	sigemptyset(&set);
	sigaddset(&set, sig);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	raise(sig);
	/* Still here (the signal is ignored by force): the shell's number. */
	_exit(128 + sig);
}
