/* SPDX-License-Identifier: MIT */
/*
 * prog-leave MODE: for tests/cli/worldrun-guardian.bats, a libworld rank
 * that joins the job (which binds its peer socket in the job's directory)
 * and leaves without world_stop(): MODE exit returns 0 from main, segv
 * and abort die by SIGSEGV and SIGABRT (without a core file). It waits for
 * nobody, so its peers may be of any kind.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "world.h"

int
main(int argc, char **argv)
{
	const char *mode = argc == 2 ? argv[1] : "";
	struct rlimit none = { 0, 0 };
	struct world *w = NULL;
	int rc = world_open(&w);

	if (rc < 0 || (strcmp(mode, "exit") != 0 && strcmp(mode, "segv") != 0 &&
		       strcmp(mode, "abort") != 0)) {
		fprintf(stderr, "usage: worldrun prog-leave exit|segv|abort (%s)\n",
			world_strerror(rc));
		return 2;
	}
	setrlimit(RLIMIT_CORE, &none);
	if (strcmp(mode, "segv") == 0) {
		/* A sanitizer's own SIGSEGV handler would exit 1 instead. */
		signal(SIGSEGV, SIG_DFL);
		raise(SIGSEGV);
	} else if (strcmp(mode, "abort") == 0) {
		abort();
	}
	return 0;
}
