/* SPDX-License-Identifier: MIT */
/* wr-kill SIG: die by signal number SIG (core dumps are switched off). */
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
	struct rlimit none = { 0, 0 };
	int sig = argc > 1 ? atoi(argv[1]) : SIGTERM;

	setrlimit(RLIMIT_CORE, &none);
	signal(sig, SIG_DFL);
	raise(sig);
	return 100;
}
