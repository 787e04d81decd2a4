/* SPDX-License-Identifier: MIT */
#include "status.h"

#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "hang.h"

/* Seconds each stack may take; a stopped or traced process can hang gdb. */
#define STACK_TIMEOUT_MS 5000

/* One call of wr_status_print(): what to do once the report is out. */
struct pending_print {
	struct wr_status *st;
	wr_status_then_fn *then;
	void *arg;
	bool stacks;
};

void
wr_status_init(struct wr_status *st, const struct wr_status_cfg *cfg)
{
	*st = (struct wr_status){ .cfg = *cfg };
}

void
wr_status_bind(struct wr_status *st, struct wr_output *out,
	       struct wr_reghost *registry)
{
	st->out = out;
	st->registry = registry;
}

/* The report for @survey, with stacks if asked (they stop the loop). */
static json_t *
report(struct wr_status *st, json_t *survey, bool stacks)
{
	int nranks = st->cfg.map->nranks;
	struct wr_hang_rank *ranks = calloc((size_t)nranks + 1, sizeof(*ranks));
	double now = wr_clock_mono();
	struct wr_hang_job job = {
		.jobid = st->cfg.jobid, .host = st->cfg.host,
		.elapsed = now - st->cfg.t0, .ranks = ranks, .nranks = nranks,
		.stacks = stacks, .stack_timeout_ms = STACK_TIMEOUT_MS,
	};
	json_t *out;

	if (ranks == NULL) {
		return NULL;
	}
	for (int i = 0; i < nranks; i++) {
		const struct wr_rank *r = &st->cfg.ranks[i];
		bool ended = r->state >= WR_RANK_EXITED;

		ranks[i] = (struct wr_hang_rank){
			.pid = r->state == WR_RANK_PENDING ? 0 : r->pid, .ended = ended,
			.wstatus = r->wstatus,
			.ran_s = ended ? r->end_mono - r->start_mono : now - r->seen_mono,
			.host = r->far ? wr_map_host(st->cfg.map, i) : NULL,
		};
	}
	out = wr_hang_build(&job, survey);
	free(ranks);
	return out;
}

json_t *
wr_status_answer(struct wr_status *st, json_t *survey)
{
	return report(st, survey, false);
}

/* The report is the job's newest: --report gets it at the end. */
static void
keep(struct wr_status *st, json_t *res)
{
	json_t *report = json_object_get(res, "report");

	if (report != NULL) {
		json_decref(st->last);
		st->last = json_incref(report);
	}
}

static void
on_survey(void *arg, json_t *survey_new)
{
	struct pending_print *pp = arg;
	struct wr_status *st = pp->st;
	json_t *res = NULL, *line;
	size_t i;

	if (!st->quiet) {
		res = survey_new != NULL ? report(st, survey_new, pp->stacks) : NULL;
		if (res == NULL) {
			wr_output_say(st->out, "no hang report: out of memory");
		}
		json_array_foreach(json_object_get(res, "lines"), i, line) {
			wr_output_say(st->out, "%s", json_string_value(line));
		}
		keep(st, res);
		if (pp->then != NULL) {
			pp->then(pp->arg);
		}
	}
	json_decref(res);
	json_decref(survey_new);
	free(pp);
}

void
wr_status_print(struct wr_status *st, bool stacks, wr_status_then_fn *then, void *arg)
{
	struct pending_print *pp = malloc(sizeof(*pp));

	if (pp != NULL) {
		*pp = (struct pending_print){ .st = st, .then = then, .arg = arg,
					      .stacks = stacks };
	}
	if (pp == NULL || st->registry == NULL ||
	    wr_reghost_survey(st->registry, WR_STATUS_ASK_MS, on_survey, pp) < 0) {
		free(pp);
		wr_output_say(st->out, "no hang report: the registry cannot make one");
		if (then != NULL) {
			then(arg);
		}
	}
}

json_t *
wr_status_last(const struct wr_status *st)
{
	return st->last;
}

void
wr_status_finish(struct wr_status *st)
{
	if (st == NULL) {
		return;
	}
	json_decref(st->last);
	st->last = NULL;
}
