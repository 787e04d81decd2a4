/* SPDX-License-Identifier: MIT */
#include "status.h"

#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "hang.h"
#include "stacks.h"


/* How long other hosts' agents have for their stacks, beyond the tool's time. */
#define FAR_SLACK_S 2.0

/* One call of wr_status_print(): what to do once the report is out. */
struct pending_print {
	struct wr_status *st;
	wr_status_then_fn *then;
	void *arg;
	bool stacks;
	json_t *survey;   /* kept while other hosts' stacks are taken */
	struct event *timer;
	struct wr_hang_stack far[WR_HANG_STACKS_MAX];
	int nfar, answered;
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

/* The report for @survey, with stacks if asked (this host's stop the
 * loop) and those of @pp's other hosts; with @want, only the ranks that
 * would get a stack (into @want, their count into *@nwant). */
static json_t *
report(struct wr_status *st, json_t *survey, bool stacks,
       const struct pending_print *pp, int *want, int *nwant)
{
	int nranks = st->cfg.map->nranks;
	struct wr_hang_rank *ranks = calloc((size_t)nranks + 1, sizeof(*ranks));
	double now = wr_clock_mono();
	struct wr_hang_job job = {
		.jobid = st->cfg.jobid, .host = st->cfg.host,
		.elapsed = now - st->cfg.t0, .ranks = ranks, .nranks = nranks,
		.stacks = stacks, .stack_timeout_ms = WR_STACKS_TIMEOUT_MS,
		.far = pp != NULL ? pp->far : NULL, .nfar = pp != NULL ? pp->nfar : 0,
		.far_wait = WR_STACKS_TIMEOUT_MS / 1e3 + FAR_SLACK_S,
	};
	json_t *out = NULL;

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
	if (want != NULL) {
		*nwant = wr_hang_stack_ranks(&job, survey, want);
	} else {
		out = wr_hang_build(&job, survey);
	}
	free(ranks);
	return out;
}

json_t *
wr_status_answer(struct wr_status *st, json_t *survey)
{
	return report(st, survey, false, NULL, NULL, NULL);
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
pending_free(struct pending_print *pp)
{
	if (pp->st->asking == pp) {
		pp->st->asking = NULL;
	}
	for (int i = 0; i < pp->nfar; i++) {
		free((char *)pp->far[i].tool);
		free((char *)pp->far[i].text);
	}
	if (pp->timer != NULL) {
		event_free(pp->timer);
	}
	json_decref(pp->survey);
	free(pp);
}

/* Print the report for @pp's survey, with what the other hosts gave. */
static void
print(struct pending_print *pp)
{
	struct wr_status *st = pp->st;
	json_t *res = NULL, *line;
	size_t i;

	if (!st->quiet) {
		res = report(st, pp->survey, pp->stacks, pp, NULL, NULL);
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
	pending_free(pp);
}

static void
on_far_timeout(evutil_socket_t fd, short what, void *arg)
{
	print(arg);
}

/*
 * The ranks of other hosts that get a stack: ask their agents, and wait
 * for the answers (at most the tool's time and a little). Whether it
 * asked; one report asks at a time.
 */
static bool
ask_far(struct pending_print *pp)
{
	struct wr_status *st = pp->st;
	int want[WR_HANG_STACKS_MAX], n = 0;
	struct timeval tv = wr_clock_tv(WR_STACKS_TIMEOUT_MS / 1e3 + FAR_SLACK_S);

	if (!pp->stacks || st->asking != NULL || st->cfg.ask_stack == NULL ||
	    st->cfg.base == NULL) {
		return false;
	}
	report(st, pp->survey, true, NULL, want, &n);
	for (int i = 0; i < n; i++) {
		if (st->cfg.ranks[want[i]].far) {
			pp->far[pp->nfar++] = (struct wr_hang_stack){ .rank = want[i] };
		}
	}
	if (pp->nfar == 0) {
		return false;
	}
	pp->timer = evtimer_new(st->cfg.base, on_far_timeout, pp);
	if (pp->timer == NULL || evtimer_add(pp->timer, &tv) < 0) {
		pp->nfar = 0;
		return false;
	}
	st->asking = pp;
	for (int i = 0; i < pp->nfar; i++) {
		st->cfg.ask_stack(st->cfg.ask_arg, pp->far[i].rank);
	}
	return true;
}

void
wr_status_stack(struct wr_status *st, int rank, int err, const char *tool,
		const char *text, size_t len)
{
	struct pending_print *pp = st->asking;

	for (int i = 0; pp != NULL && i < pp->nfar; i++) {
		struct wr_hang_stack *f = &pp->far[i];

		if (f->rank == rank && !f->answered) {
			f->answered = true;
			f->err = err;
			f->tool = strdup(tool);
			f->text = len > 0 ? strndup(text, len) : NULL;
			if (f->tool == NULL) {
				f->answered = false;
			}
			if (++pp->answered == pp->nfar) {
				print(pp);
			}
			return;
		}
	}
}

static void
on_survey(void *arg, json_t *survey_new)
{
	struct pending_print *pp = arg;

	pp->survey = survey_new;
	if (pp->st->quiet) {
		pending_free(pp);
	} else if (survey_new == NULL) {
		wr_output_say(pp->st->out, "no hang report: out of memory");
		if (pp->then != NULL) {
			pp->then(pp->arg);
		}
		pending_free(pp);
	} else if (!ask_far(pp)) {
		print(pp);
	}
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
	if (st->asking != NULL) {
		pending_free(st->asking);
	}
	json_decref(st->last);
	st->last = NULL;
}
