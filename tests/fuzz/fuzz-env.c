/* SPDX-License-Identifier: MIT */
/*
 * fuzz-env: what worldrun makes of the environment it inherits and of -x
 * (cmd/worldrun/env.c), and the settings read from environment values
 * (WORLD_MSG_MAX and WORLD_BLOB_MAX, WORLD_SPIN_US). The input is one
 * byte, how many of the words are inherited (the rest are -x arguments),
 * then the words, NUL-separated. Nothing inherited that is worldrun's
 * may reach a rank, a -x that succeeds is what the rank sees, and no
 * name is in a rank's environment twice.
 */
#include <errno.h>
#include <stdbool.h>

#include "env.h"
#include "frame.h"
#include "fuzz.h"
#include "spin.h"

static size_t
name_len(const char *var)
{
	const char *eq = strchr(var, '=');

	return eq != NULL ? (size_t)(eq - var) : strlen(var);
}

/* Whether the first @n of @vars hold a name twice. */
static bool
has_twice(char *const *vars, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		for (size_t j = i + 1; j < n; j++) {
			size_t len = name_len(vars[i]);

			if (len == name_len(vars[j]) && memcmp(vars[i], vars[j], len) == 0) {
				return true;
			}
		}
	}
	return false;
}

/* The settings parsers on one value: in range when they accept it. */
static void
check_settings(const char *v)
{
	struct wr_frame_limits lim;
	const char *bad = NULL;
	int us = -1;

	if (wr_frame_limits_parse(&lim, v, NULL, &bad) == 0) {
		FUZZ_CHECK(lim.json_max >= 4096 && lim.json_max <= (size_t)1 << 30);
	} else {
		FUZZ_CHECK(bad != NULL && strcmp(bad, "WORLD_MSG_MAX") == 0);
	}
	if (wr_frame_limits_parse(&lim, NULL, v, &bad) == 0) {
		FUZZ_CHECK(lim.blob_max <= (size_t)1 << 40);
	} else {
		FUZZ_CHECK(bad != NULL && strcmp(bad, "WORLD_BLOB_MAX") == 0);
	}
	if (wr_spin_parse(v, &us) == 0) {
		FUZZ_CHECK(us >= 0 && us <= WR_SPIN_US_MAX);
	} else {
		FUZZ_CHECK(us == WR_SPIN_US_DEFAULT);
	}
}

/* After a -x that succeeded, the rank sees what it said. */
static void
check_x(const struct wr_env *env, const char *x, char *const *inherited)
{
	size_t len = name_len(x);
	char *name = strndup(x, len);
	const char *want = x[len] == '=' ? x + len + 1 : NULL, *got;

	FUZZ_CHECK(name != NULL);
	for (size_t i = 0; want == NULL && inherited[i] != NULL; i++) {
		if (strncmp(inherited[i], x, len) == 0 && inherited[i][len] == '=') {
			want = inherited[i] + len + 1;
		}
	}
	got = wr_env_get(env, name);
	FUZZ_CHECK(want != NULL && got != NULL && strcmp(got, want) == 0);
	free(name);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wr_ident id = { .rank = 1, .size = 2, .local_rank = 1, .local_size = 2,
			       .nnodes = 1, .jobid = "feedfeedfeed",
			       .master_addr = "127.0.0.1", .master_port = 29500 };
	size_t n = 0, ninh, omp;
	char **words, **envp, *held;
	struct wr_env env;

	if (size == 0) {
		return 0;
	}
	words = fuzz_words(data + 1, size - 1, &n);
	FUZZ_CHECK(words != NULL);
	ninh = data[0] < n ? data[0] : n;
	held = words[ninh];
	words[ninh] = NULL; /* the inherited environment ends here */
	for (size_t i = 0; i < n; i++) {
		const char *w = i == ninh ? held : words[i];

		check_settings(w[name_len(w)] == '=' ? w + name_len(w) + 1 : w);
	}
	FUZZ_CHECK(wr_env_init(&env, words) == 0);
	for (size_t i = 0; i < env.n; i++) {
		FUZZ_CHECK(strchr(env.vars[i], '=') != NULL);
		FUZZ_CHECK(strncmp(env.vars[i], "WORLD_", 6) != 0);
		FUZZ_CHECK(!wr_env_is_contract(env.vars[i], name_len(env.vars[i])));
	}
	FUZZ_CHECK(!has_twice(env.vars, env.n));
	for (size_t i = ninh; i < n; i++) {
		const char *x = i == ninh ? held : words[i];
		int rc = wr_env_apply_x(&env, x, words);

		FUZZ_CHECK(rc == 0 || rc == -ENOENT || rc == -EPERM);
		FUZZ_CHECK((rc == -EPERM) == wr_env_is_contract(x, name_len(x)));
		if (rc == 0) {
			check_x(&env, x, words);
		}
	}
	/* The 16 contract names, and OMP_NUM_THREADS=1 where it was not set
	 * (local_size 2: the ranks share a host). */
	omp = wr_env_get(&env, "OMP_NUM_THREADS") == NULL;
	envp = wr_env_for_rank(&env, &id);
	FUZZ_CHECK(envp != NULL);
	FUZZ_CHECK(envp[env.n + 16 + omp] == NULL && !has_twice(envp, env.n + 16 + omp));
	free(envp);
	wr_env_finish(&env);
	free(words);
	return 0;
}
