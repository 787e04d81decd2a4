/* SPDX-License-Identifier: MIT */
/*
 * wr-trap LOGFILE [SECONDS]: catch INT, TERM, HUP, QUIT, USR1, USR2 and
 * CONT, append each one's name to LOGFILE as it arrives, and go on;
 * write "ready PID" first. Exit 0 after SECONDS (default 60), or at once
 * after the second SIGTERM if -x comes first: wr-trap -x LOGFILE.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int log_fd = -1;
static volatile sig_atomic_t terms;

static void
on_signal(int sig)
{
	const char *name = sig == SIGINT ? "SIGINT\n" : sig == SIGTERM ? "SIGTERM\n"
			 : sig == SIGHUP ? "SIGHUP\n" : sig == SIGQUIT ? "SIGQUIT\n"
			 : sig == SIGUSR1 ? "SIGUSR1\n" : sig == SIGUSR2 ? "SIGUSR2\n"
			 : "SIGCONT\n";

	if (write(log_fd, name, strlen(name)) < 0) {
		_exit(3);
	}
	if (sig == SIGTERM) {
		terms++;
	}
}

int
main(int argc, char **argv)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT,
				    SIGUSR1, SIGUSR2, SIGCONT };
	int twice = argc > 1 && strcmp(argv[1], "-x") == 0;
	struct sigaction sa = { .sa_handler = on_signal };
	double secs = argc > 2 + twice ? atof(argv[2 + twice]) : 60;
	char buf[64];
	time_t end;

	if (argc < 2 + twice) {
		fprintf(stderr, "usage: wr-trap [-x] LOGFILE [SECONDS]\n");
		return 2;
	}
	log_fd = open(argv[1 + twice], O_WRONLY | O_CREAT | O_APPEND, 0644);
	if (log_fd < 0) {
		return 1;
	}
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		sigaction(sigs[i], &sa, NULL);
	}
	snprintf(buf, sizeof(buf), "ready %d\n", (int)getpid());
	if (write(log_fd, buf, strlen(buf)) < 0) {
		return 1;
	}
	end = time(NULL) + (time_t)secs;
	while (time(NULL) < end && !(twice && terms >= 2)) {
		sleep(1);
	}
	return 0;
}
