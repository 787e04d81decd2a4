/* SPDX-License-Identifier: MIT */
/*
 * fuzz-ctlargs: worldctl's argument parser (cmd/worldctl/args.c). The
 * input is one byte of settings (bit 0: the command takes --timeout),
 * then the words after the command's name, NUL-separated. A parse that
 * succeeds must keep every positional word, in order, and nothing else;
 * every word also goes through the seconds, integer and text checks
 * alone. Usage errors go to stderr: run with -close_fd_mask=3 (run.sh
 * does).
 */
#include <math.h>
#include <stdbool.h>

#include "args.h"
#include "fuzz.h"

#define YEAR_MS (366LL * 86400 * 1000)

static void
check_numbers(const char *w)
{
	int64_t lo = -1000, hi = 1000, v = 0;
	double s = -1;

	if (wr_args_seconds(w, &s) == 0) {
		FUZZ_CHECK(isfinite(s) && s >= 0 && s <= 366.0 * 86400);
	}
	if (wr_args_integer(w, lo, hi, &v) == 0) {
		FUZZ_CHECK(v >= lo && v <= hi);
	}
	if (wr_args_integer(w, INT64_MIN, INT64_MAX, &v) == 0 && v >= lo && v <= hi) {
		int64_t again = 0;

		FUZZ_CHECK(wr_args_integer(w, lo, hi, &again) == 0 && again == v);
	}
	wr_args_is_text(w);
}

/* What a parse keeps: the words that are not options, in order. */
static void
check_args(const struct wr_args *a, char **copy, int argc, bool timed)
{
	bool options = true;
	int k = 0;

	FUZZ_CHECK(a->npos >= 0 && a->npos <= argc);
	FUZZ_CHECK(a->timeout_ms == -1 || (timed && a->timeout_ms >= 0 &&
					   a->timeout_ms <= YEAR_MS));
	for (int i = 0; i < argc; i++) {
		if (options && strcmp(copy[i], "--") == 0) {
			options = false;
		} else if (options && strncmp(copy[i], "--timeout", 9) == 0 &&
			   (copy[i][9] == '\0' || copy[i][9] == '=')) {
			i += copy[i][9] == '\0';
		} else {
			FUZZ_CHECK(k < a->npos && a->pos[k] == copy[i]);
			k++;
		}
	}
	FUZZ_CHECK(k == a->npos);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t n = 0;
	char **words, **copy;
	struct wr_args a;
	bool timed;

	if (size == 0) {
		return 0;
	}
	timed = data[0] & 1;
	words = fuzz_words(data + 1, size - 1, &n);
	copy = malloc((n + 1) * sizeof(*copy));
	FUZZ_CHECK(words != NULL && copy != NULL);
	memcpy(copy, words, (n + 1) * sizeof(*copy));
	for (size_t i = 0; i < n; i++) {
		check_numbers(words[i]);
	}
	if (wr_args_parse(&a, (int)n, words, "kv get",
			  timed ? WR_ARGS_TIMEOUT : 0) == 0) {
		check_args(&a, copy, (int)n, timed);
	}
	free(copy);
	free(words);
	return 0;
}
