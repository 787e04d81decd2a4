/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for wire-apps: a spawn's apps come back from their shape and
 * strings field for field; strings and shapes that do not agree, and apps
 * an agent could not run, are refused (EPROTO).
 */
#include "wire.h"
#include "tap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static bool
strv_same(char **a, char **b)
{
	size_t i = 0;

	for (; a[i] != NULL && b[i] != NULL; i++) {
		if (strcmp(a[i], b[i]) != 0) {
			return false;
		}
	}
	return a[i] == NULL && b[i] == NULL;
}

static void
test_round_trip(void)
{
	struct wr_spawn_app in[] = {
		{ .cmd = "./learner", .argv = (char *[]){ "learner", "--lr", "0.1", NULL },
		  .env = (char *[]){ "OMPI_PARENT_PORT=1.2:3", "EMPTY=", NULL }, .cwd = "/srv/run",
		  .maxprocs = 2 },
		{ .cmd = "actor", .argv = (char *[]){ "actor", NULL }, .env = (char *[]){ NULL },
		  .maxprocs = 5 },
	};
	char *strings = NULL;
	size_t len = 0, n = 0;
	json_t *shape = wr_wire_apps_pack(in, 2, &strings, &len);
	struct wr_spawn_app *out = shape != NULL ? wr_wire_apps_unpack(shape, strings, len, 7, &n)
						 : NULL;

	ok(out != NULL && n == 2, "two apps of 7 ranks come back");
	for (size_t i = 0; out != NULL && i < 2; i++) {
		ok(strcmp(out[i].cmd, in[i].cmd) == 0 && strv_same(out[i].argv, in[i].argv) &&
			   strv_same(out[i].env, in[i].env) && out[i].maxprocs == in[i].maxprocs &&
			   (in[i].cwd == NULL ? out[i].cwd == NULL
					      : out[i].cwd != NULL && strcmp(out[i].cwd, in[i].cwd) == 0),
		   "app %zu: program, arguments, variables, directory and ranks", i);
	}
	errno = 0;
	ok(wr_wire_apps_unpack(shape, strings, len, 8, &n) == NULL && errno == EPROTO,
	   "the same apps are no apps of 8 ranks");
	ok(wr_wire_apps_unpack(shape, strings, len - 1, 7, &n) == NULL && errno == EPROTO,
	   "nor without their last NUL");
	free(out);
	free(strings);
	json_decref(shape);
}

/* unpack of @json with @blob ('|' for each NUL, one more at the end). */
static int
unpack_errno(const char *json, const char *blob, int ranks)
{
	json_t *shape = json_loads(json, 0, NULL);
	char bytes[512];
	size_t n = strlen(blob) + 1, napps;
	struct wr_spawn_app *apps;

	memcpy(bytes, blob, n);
	for (size_t i = 0; i < n; i++) {
		bytes[i] = bytes[i] == '|' ? '\0' : bytes[i];
	}
	errno = 0;
	apps = wr_wire_apps_unpack(shape, bytes, n, ranks, &napps);
	free(apps);
	json_decref(shape);
	return apps != NULL ? 0 : errno;
}

static void
test_refusals(void)
{
	static const struct {
		const char *json, *blob, *what;
	} bad[] = {
		{ "[]", "a|a", "no app" },
		{ "[[1, 1, 0, false]]", "|a", "an empty program" },
		{ "[[1, 1, 1, false]]", "a|a|NAME", "a variable without =" },
		{ "[[1, 1, 1, false]]", "a|a|=x", "a variable without a name" },
		{ "[[1, 1, 0, false]]", "a|a|b", "a string more than the shape says" },
		{ "[[1, 1, 0, true]]", "a|a", "a directory it does not have" },
		{ "[[1, 0, 0, false]]", "a", "an app without arguments" },
		{ "[[0, 1, 0, false], [1, 1, 0, false]]", "a|a|b|b", "an app of no rank" },
		{ "[[1, 1, 0]]", "a|a", "a shape of three counts" },
		{ "[[1, 1, 0, false, 9]]", "a|a", "a shape of five" },
		{ "[[1, \"1\", 0, false]]", "a|a", "a count that is a string" },
		{ "[[1, 70000, 0, false]]", "a|a", "more arguments than an event holds" },
		{ "{\"apps\": 1}", "a|a", "a shape that is no array" },
	};
	char json[2048] = "[", blob[512] = "";

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int e = unpack_errno(bad[i].json, bad[i].blob, 1 + (strstr(bad[i].json, "[0,") != NULL));

		ok(e == EPROTO, "refused: %s (%d)", bad[i].what, e);
	}
	for (int i = 0; i <= WR_SPAWN_APPS_MAX; i++) {
		strcat(json, i > 0 ? ", [1, 1, 0, false]" : "[1, 1, 0, false]");
		strcat(blob, i > 0 ? "|a|a" : "a|a");
	}
	strcat(json, "]");
	is_int(unpack_errno(json, blob, WR_SPAWN_APPS_MAX + 1), EPROTO,
	       "refused: one app more than WR_SPAWN_APPS_MAX");
	is_int(unpack_errno("[[1, 1, 0, false]]", "a|a", 1), 0, "taken: the app they differ from");
}

int
main(void)
{
	plan(5 + 13 + 2);
	test_round_trip();
	test_refusals();
	return done_testing();
}
