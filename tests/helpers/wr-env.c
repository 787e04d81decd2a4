/* SPDX-License-Identifier: MIT */
/* wr-env [NAME...]: print NAME=VALUE (or "NAME unset") per name, or the whole environment. */
#include <stdio.h>
#include <stdlib.h>

extern char **environ;

int
main(int argc, char **argv)
{
	if (argc == 1) {
		for (char **e = environ; *e != NULL; e++) {
			puts(*e);
		}
		return 0;
	}
	for (int i = 1; i < argc; i++) {
		const char *v = getenv(argv[i]);

		if (v != NULL) {
			printf("%s=%s\n", argv[i], v);
		} else {
			printf("%s unset\n", argv[i]);
		}
	}
	return 0;
}
