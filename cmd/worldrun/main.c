/* SPDX-License-Identifier: MIT */
/*
 * worldrun: start a program as a job of N ranks, forward their output
 * and signals, stop the whole job on the first failure, and exit with a
 * status a shell script can trust. main() only wires the parts together.
 */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "agentd.h"
#include "restart.h"
#include "run.h"
#include "signals.h"

#ifndef __has_feature
#define __has_feature(x) 0 /* GCC's spelling is __SANITIZE_ADDRESS__ */
#endif
#if defined(__SANITIZE_ADDRESS__) || __has_feature(address_sanitizer)
/*
 * LeakSanitizer's own hooks, in the ASan build only: what libpmix keeps
 * after its finalize (tests/lsan.supp says more) is not reported, nor
 * listed, even where LSAN_OPTIONS does not reach: an agent that ssh
 * started has an environment of its own. Their names are LSan's.
 */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_options(void);

const char *
__lsan_default_suppressions(void)
{
	return "leak:libpmix.so.2\n";
}

const char *
__lsan_default_options(void)
{
	return "print_suppressions=0";
}
#endif

/* A closed fd 0-2 would be taken by the next open() and confuse everyone. */
static void
open_std_fds(void)
{
	for (int fd = 0; fd < 3; fd++) {
		if (fcntl(fd, F_GETFD) < 0) {
			int null = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);

			if (null >= 0 && null != fd) {
				dup2(null, fd);
				close(null);
			}
		}
	}
}

int
main(int argc, char **argv)
{
	struct wr_restart restart;
	struct wr_run run;
	bool again = false;
	int status, sig;

	open_std_fds();
	/* What a launcher starts on another host (worldrun(1), REMOTE HOSTS). */
	if (argc == 2 && strcmp(argv[1], "--agent") == 0) {
		return wr_agentd_main(false);
	}
	if (argc == 3 && strcmp(argv[1], "--agent") == 0 && strcmp(argv[2], "--dial") == 0) {
		return wr_agentd_main(true);
	}
	wr_signals_hold();
	if (wr_restart_init(&restart) < 0) {
		wr_restart_finish(&restart);
		return 125;
	}
	if (wr_run_open(&run, argc, argv, &restart) == 0 && !run.opts.done) {
		wr_run_loop(&run);
	}
	status = wr_run_close(&run, &again);
	/* Between attempts, what worldrun forwards is held (wr_run_close);
	 * INT, TERM and HUP end it here, as they would a running job. */
	sig = again ? wr_restart_wait(&restart) : 0;
	if (sig != 0) {
		wr_restart_finish(&restart);
		wr_signals_die(sig);
	}
	if (again) {
		status = wr_restart_exec(&restart, argv);
	}
	wr_restart_finish(&restart);
	return status;
}
