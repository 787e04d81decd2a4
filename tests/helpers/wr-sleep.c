/* SPDX-License-Identifier: MIT */
/* wr-sleep SECONDS: sleep (decimal seconds, at most an hour), exit 0. */
#include <stdlib.h>
#include <time.h>

int
main(int argc, char **argv)
{
	double s = argc > 1 ? atof(argv[1]) : 1;
	struct timespec ts;

	if (s > 3600) {
		s = 3600;
	}
	ts.tv_sec = (time_t)s;
	ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) != 0) {
	}
	return 0;
}
