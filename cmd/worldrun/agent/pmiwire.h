/* SPDX-License-Identifier: MIT */
/*
 * pmiwire: PMI-1's "simple" wire, as MPICH's ranks speak it: one request
 * per line, "cmd=NAME" (or "mcmd=spawn", the first line of a multi-line
 * request) and then "key=value" words separated by blanks; a backslash
 * takes the next character as it is (a blank in a value). It parses a
 * line in place and writes answers; what a request means is pmisrv.c's.
 */
#ifndef WR_PMIWIRE_H
#define WR_PMIWIRE_H

#include <stdbool.h>
#include <stddef.h>

/* The maxima a get_maxes answers, and what a line may be with them: a
 * put carries a kvsname, a key and a value, each escaped at worst. */
#define WR_PMI_KVSNAME_MAX 256
#define WR_PMI_KEY_MAX 64
#define WR_PMI_VAL_MAX 1024
#define WR_PMI_LINE_MAX (2 * (WR_PMI_KVSNAME_MAX + WR_PMI_KEY_MAX + WR_PMI_VAL_MAX) + 256)
/* The most "key=value" words of a request, its command included. */
#define WR_PMI_ARGS_MAX 16

struct wr_pmi_msg {
	const char *cmd;  /* the value of cmd= (or of mcmd=) */
	bool mcmd;        /* the first line of a multi-line request */
	int n;
	const char *key[WR_PMI_ARGS_MAX];
	const char *val[WR_PMI_ARGS_MAX];
};

/*
 * Parse @line (its @len bytes, no newline; changed in place, and must
 * hold a NUL after them) into @m, whose strings point into @line.
 * Returns 0, or -EINVAL for a line that is not a request (no cmd= first,
 * a word without "=", a key of other characters than [A-Za-z0-9_/-],
 * more than WR_PMI_ARGS_MAX words, a NUL byte).
 */
int wr_pmi_parse(char *line, size_t len, struct wr_pmi_msg *m);

/* The value of @key in @m, or NULL. */
const char *wr_pmi_arg(const struct wr_pmi_msg *m, const char *key);

/*
 * Write an answer into @buf (@size bytes): "cmd=@cmd" and then @n words
 * "@keys[i]=@vals[i]" (values escaped: blanks, backslashes) and a
 * newline. Returns its length, or -ENOSPC (then @buf holds nothing).
 */
int wr_pmi_format(char *buf, size_t size, const char *cmd, int n,
		  const char *const *keys, const char *const *vals);

#endif
