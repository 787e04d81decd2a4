/* SPDX-License-Identifier: MIT */
#include "status.h"

#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "hang.h"
#include "output.h"
#include "run.h"

/* Seconds each stack may take; a stopped or traced process can hang gdb. */
#define STACK_TIMEOUT_MS 5000

/* One call of wr_status_print(): what to do once the report is out. */
struct pending_print {
	struct wr_run *run;
	wr_status_then_fn *then;
	bool stacks;
};

/* The report for @survey, with stacks if asked (they stop the loop). */
static json_t *
report(struct wr_run *run, json_t *survey, bool stacks)
{
	struct wr_hang_rank *ranks = calloc((size_t)run->nranks + 1, sizeof(*ranks));
	double now = wr_clock_mono();
	struct wr_hang_job job = {
		.jobid = run->job.jobid, .host = run->host, .elapsed = now - run->t0,
		.ranks = ranks, .nranks = run->nranks,
		.stacks = stacks, .stack_timeout_ms = STACK_TIMEOUT_MS,
	};
	json_t *out;

	if (ranks == NULL) {
		return NULL;
	}
	for (int i = 0; i < run->nranks; i++) {
		const struct wr_rank *r = &run->ranks[i];
		bool ended = r->state >= WR_RANK_EXITED;

		ranks[i] = (struct wr_hang_rank){
			.pid = r->state == WR_RANK_PENDING ? 0 : r->pid, .ended = ended,
			.wstatus = r->wstatus,
			.ran_s = ended ? r->end_mono - r->start_mono : now - r->seen_mono,
			.host = r->far ? wr_map_host(&run->map, i) : NULL,
		};
	}
	out = wr_hang_build(&job, survey);
	free(ranks);
	return out;
}

json_t *
wr_status_answer(void *run, json_t *survey)
{
	return report(run, survey, false);
}

/* The report is the job's newest: --report gets it at the end. */
static void
keep(struct wr_run *run, json_t *res)
{
	json_t *report = json_object_get(res, "report");

	if (report != NULL) {
		json_decref(run->hang);
		run->hang = json_incref(report);
	}
}

static void
on_survey(void *arg, json_t *survey_new)
{
	struct pending_print *pp = arg;
	struct wr_run *run = pp->run;
	json_t *res = NULL, *line;
	size_t i;

	if (!run->closing) {
		res = survey_new != NULL ? report(run, survey_new, pp->stacks) : NULL;
		if (res == NULL) {
			wr_output_say(run->out, "no hang report: out of memory");
		}
		json_array_foreach(json_object_get(res, "lines"), i, line) {
			wr_output_say(run->out, "%s", json_string_value(line));
		}
		keep(run, res);
		if (pp->then != NULL) {
			pp->then(run);
		}
	}
	json_decref(res);
	json_decref(survey_new);
	free(pp);
}

void
wr_status_print(struct wr_run *run, bool stacks, wr_status_then_fn *then)
{
	struct pending_print *pp = malloc(sizeof(*pp));

	if (pp != NULL) {
		*pp = (struct pending_print){ .run = run, .then = then, .stacks = stacks };
	}
	if (pp == NULL ||
	    wr_reghost_survey(&run->registry, WR_STATUS_ASK_MS, on_survey, pp) < 0) {
		free(pp);
		wr_output_say(run->out, "no hang report: the registry cannot make one");
		if (then != NULL) {
			then(run);
		}
	}
}
