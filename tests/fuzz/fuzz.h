/* SPDX-License-Identifier: MIT */
/*
 * fuzz.h: what the libFuzzer targets share, header only: the entry
 * points libFuzzer calls, a check that ends the run with what failed,
 * and input cut into NUL-separated words (for argv and environments).
 */
#ifndef WR_FUZZ_H
#define WR_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static inline void
fuzz_fail(const char *what, const char *file, int line)
{
	fprintf(stderr, "%s:%d: check failed: %s\n", file, line, what);
	abort();
}

/* Not assert(): it holds with NDEBUG too. */
#define FUZZ_CHECK(cond) ((cond) ? (void)0 : fuzz_fail(#cond, __FILE__, __LINE__))

/* Words of the input, each a NUL-terminated copy, in a NULL-terminated
 * array; one allocation, freed with free(). *n gets the count. */
static inline char **
fuzz_words(const uint8_t *data, size_t size, size_t *n)
{
	size_t count = 1;
	char **v, *p;

	for (size_t i = 0; i < size; i++) {
		count += data[i] == '\0';
	}
	v = malloc((count + 1) * sizeof(*v) + size + 1);
	if (v == NULL) {
		return NULL;
	}
	p = (char *)(v + count + 1);
	memcpy(p, data, size);
	p[size] = '\0';
	for (size_t i = 0; i < count; i++) {
		v[i] = p;
		p += strlen(p) + 1;
	}
	v[count] = NULL;
	*n = count;
	return v;
}

#endif
