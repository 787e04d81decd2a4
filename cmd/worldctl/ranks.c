/* SPDX-License-Identifier: MIT */
#include "ranks.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "regproto.h"
#include "world_errors.h"

/* @n and a newline on stdout. */
static int
print_number(struct wr_ctl *ctl, int n)
{
	if (printf("%d\n", n) < 0 || fflush(stdout) == EOF) {
		wr_ctl_say(ctl, "writing to standard output: %s", strerror(errno));
		return WR_CTL_FAILED;
	}
	return WR_CTL_OK;
}

int
wr_ranks_rank(struct wr_ctl *ctl, const struct wr_args *a)
{
	wr_ctl_doing(ctl, "rank");
	if (wr_ctl_identify(ctl) < 0) {
		return WR_CTL_FAILED;
	}
	return print_number(ctl, ctl->rank);
}

int
wr_ranks_size(struct wr_ctl *ctl, const struct wr_args *a)
{
	wr_ctl_doing(ctl, "size");
	if (wr_ctl_identify(ctl) < 0) {
		return WR_CTL_FAILED;
	}
	return print_number(ctl, ctl->size);
}

/* "RANK STATE" for each element of @ranks, in the registry's order. */
static int
print_states(struct wr_ctl *ctl, json_t *ranks)
{
	size_t i;
	json_t *r;

	json_array_foreach(ranks, i, r) {
		const char *state;
		int rank;

		if (json_unpack(r, "{s:i, s:s}", "rank", &rank, "state", &state) < 0) {
			return wr_ctl_fail(ctl, WORLD_EPROTO);
		}
		printf("%d %s\n", rank, state);
	}
	if (fflush(stdout) == EOF) {
		wr_ctl_say(ctl, "writing to standard output: %s", strerror(errno));
		return WR_CTL_FAILED;
	}
	return WR_CTL_OK;
}

/* The registry lists the ranks a page at a time: "next" is where the next starts. */
int
wr_ranks_states(struct wr_ctl *ctl, const struct wr_args *a)
{
	json_int_t from = 0;
	int rc = WR_CTL_OK;

	wr_ctl_doing(ctl, "ranks");
	if (wr_ctl_connect(ctl) < 0) {
		return WR_CTL_FAILED;
	}
	while (from >= 0 && rc == WR_CTL_OK) {
		json_t *result = NULL, *ranks = NULL;
		json_int_t next = -1;
		int err = wr_ctl_call(ctl, wr_regproto_ranks(from),
				      NULL, 0, WR_CTL_NOWAIT, &result, NULL, NULL);

		if (err == 0 && (json_unpack(result, "{s:o, s?:I}", "ranks", &ranks, "next",
					     &next) < 0 || (next >= 0 && next <= from))) {
			err = WORLD_EPROTO;
		}
		rc = err < 0 ? wr_ctl_fail(ctl, err) : print_states(ctl, ranks);
		json_decref(result);
		from = next;
	}
	return rc;
}

int
wr_ranks_barrier(struct wr_ctl *ctl, const struct wr_args *a)
{
	const char *name = a->npos > 0 ? a->pos[0] : WR_RANKS_BARRIER;
	int rc;

	wr_ctl_doing(ctl, "barrier %s", name);
	if (wr_ctl_connect(ctl) < 0) {
		return WR_CTL_FAILED;
	}
	/* No "members": every rank of the job. -1: the job's default wait. */
	rc = wr_ctl_call(ctl, wr_regproto_timeout(wr_regproto_barrier(name, NULL),
							a->timeout_ms),
			 NULL, 0, a->timeout_ms, NULL, NULL, NULL);
	return wr_ctl_fail(ctl, rc);
}
