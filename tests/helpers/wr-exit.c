/* SPDX-License-Identifier: MIT */
/* wr-exit CODE: exit with CODE. */
#include <stdlib.h>

int
main(int argc, char **argv)
{
	return argc > 1 ? atoi(argv[1]) : 0;
}
