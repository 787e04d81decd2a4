/* SPDX-License-Identifier: MIT */
/*
 * args: the words after a command's name, and the numbers in them.
 * "--timeout S" (or "--timeout=S") is an option of the commands that
 * wait, "--json" one of those that report; "--" ends the options; every other word is positional, even
 * one that starts with a single "-", so that "kv add n -1" and "kv set k -"
 * mean what they say. Any other "--word" is a usage error. Nothing here
 * talks to the registry.
 */
#ifndef WR_ARGS_H
#define WR_ARGS_H

#include <stdbool.h>
#include <stdint.h>

struct wr_args {
	char **pos;         /* the positional words: argv, reordered in place */
	int npos;
	int64_t timeout_ms; /* --timeout in milliseconds, or -1: not given */
	bool json;          /* --json */
};

/* The options a command takes. */
enum {
	WR_ARGS_TIMEOUT = 1, /* --timeout S */
	WR_ARGS_JSON = 2,    /* --json */
};

/*
 * Split @argc words of @argv (the words after command @cmd) into options
 * and positional words; of the options, only those in @opts (WR_ARGS_*).
 * Returns 0, or -EINVAL after printing the usage error.
 */
int wr_args_parse(struct wr_args *a, int argc, char **argv, const char *cmd,
		  unsigned opts);

/* Print "worldctl: <message> (see worldctl --help)" on stderr. */
void wr_args_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * A number of seconds: decimal digits and at most one dot ("2", "0.5"),
 * at most a year. Returns 0 or -EINVAL.
 */
int wr_args_seconds(const char *s, double *out);

/* A decimal integer, optionally signed, in [@min, @max]: 0 or -EINVAL. */
int wr_args_integer(const char *s, int64_t min, int64_t max, int64_t *out);

/* @s is valid UTF-8, as keys and names must be (they travel in JSON). */
bool wr_args_is_text(const char *s);

#endif
