/* SPDX-License-Identifier: MIT */
/*
 * spell: the options that users of mpirun, mpiexec, srun and torchrun
 * type out of habit, in one table. Each spelling stands for a worldrun
 * option, is accepted and means nothing here, or is refused with what to
 * use instead. It holds the table and finds in it; opts applies what it finds.
 */
#ifndef WR_SPELL_H
#define WR_SPELL_H

#include <stdbool.h>
#include <stddef.h>

struct wr_spell {
	const char *name;  /* as typed, dashes included: "-hostfile" */
	int nargs;         /* the words it takes: 0, 1 or 2 */
	const char *means; /* the worldrun long option it stands for, or NULL */
	const char *ok;    /* values accepted (and ignored), "|" between, or NULL */
	const char *say;   /* NULL: accepted; else why it is refused, what instead */
	int torch;         /* enum wr_torch_opt: torchrun's own (torchrun.h); 0: none */
};

/* The spelling named by the @len bytes at @word, or NULL. */
const struct wr_spell *wr_spell_find(const char *word, size_t len);

/* True if @value is one of @sp's accepted values. */
bool wr_spell_ok(const struct wr_spell *sp, const char *value);

/*
 * The edit distance (insertions, deletions, substitutions and swaps of
 * two neighbours) between the @alen bytes at @a and the string @b; names
 * longer than 32 bytes count as 99.
 */
int wr_spell_distance(const char *a, size_t alen, const char *b);

#endif
