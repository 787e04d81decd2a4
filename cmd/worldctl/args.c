/* SPDX-License-Identifier: MIT */
#include "args.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#define MAX_SECONDS (366.0 * 86400)

void
wr_args_usage(const char *fmt, ...)
{
	va_list ap;

	fputs("worldctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (see worldctl --help)\n", stderr);
}

int
wr_args_seconds(const char *s, double *out)
{
	const char *dot = strchr(s, '.');
	char *end = NULL;
	double v;

	/* strtod also takes signs, hex, "inf" and "nan": allow digits and a dot. */
	if (strspn(s, "0123456789.") != strlen(s) || strspn(s, ".") == strlen(s) ||
	    (dot != NULL && strchr(dot + 1, '.') != NULL)) {
		return -EINVAL;
	}
	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || *end != '\0' || !isfinite(v) || v > MAX_SECONDS) {
		return -EINVAL;
	}
	*out = v;
	return 0;
}

int
wr_args_integer(const char *s, int64_t min, int64_t max, int64_t *out)
{
	const char *digits = s + (s[0] == '-' || s[0] == '+');
	char *end = NULL;
	long long v;

	/* strtoll also skips blanks and takes "0x": digits only. */
	if (digits[0] == '\0' || strspn(digits, "0123456789") != strlen(digits)) {
		return -EINVAL;
	}
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < min || v > max) {
		return -EINVAL;
	}
	*out = v;
	return 0;
}

bool
wr_args_is_text(const char *s)
{
	json_t *j = json_string(s); /* NULL unless valid UTF-8 */

	json_decref(j);
	return j != NULL;
}

/* "--timeout S" or "--timeout=S" at argv[*i]; moves *i past its value. */
static int
take_timeout(struct wr_args *a, int argc, char **argv, int *i, const char *cmd)
{
	const char *w = argv[*i], *v = NULL;
	double s;
	int64_t ms;

	if (w[9] == '=') {
		v = w + 10;
	} else if (*i + 1 < argc) {
		v = argv[++*i];
	}
	if (v == NULL) {
		wr_args_usage("%s: option --timeout needs a value", cmd);
		return -EINVAL;
	}
	if (wr_args_seconds(v, &s) < 0) {
		wr_args_usage("%s: --timeout %s: not a number of seconds", cmd, v);
		return -EINVAL;
	}
	/* To the nearest millisecond, but only 0 means "do not wait". */
	ms = (int64_t)(s * 1e3 + 0.5);
	a->timeout_ms = ms == 0 && s > 0 ? 1 : ms;
	return 0;
}

int
wr_args_parse(struct wr_args *a, int argc, char **argv, const char *cmd,
	      unsigned opts)
{
	bool options = true;

	*a = (struct wr_args){ .pos = argv, .timeout_ms = -1 };
	for (int i = 0; i < argc; i++) {
		const char *w = argv[i];

		if (options && strcmp(w, "--") == 0) {
			options = false;
		} else if (options && strncmp(w, "--timeout", 9) == 0 &&
			   (w[9] == '\0' || w[9] == '=')) {
			if (!(opts & WR_ARGS_TIMEOUT)) {
				wr_args_usage("%s takes no --timeout", cmd);
				return -EINVAL;
			}
			if (take_timeout(a, argc, argv, &i, cmd) < 0) {
				return -EINVAL;
			}
		} else if (options && strcmp(w, "--json") == 0) {
			if (!(opts & WR_ARGS_JSON)) {
				wr_args_usage("%s takes no --json", cmd);
				return -EINVAL;
			}
			a->json = true;
		} else if (options && strncmp(w, "--", 2) == 0) {
			wr_args_usage("%s: unknown option %.*s", cmd,
				      (int)strcspn(w, "="), w);
			return -EINVAL;
		} else {
			/* Positional words move down over the options: argv is ours. */
			a->pos[a->npos++] = argv[i];
		}
	}
	return 0;
}
