/* SPDX-License-Identifier: MIT */
/*
 * policy-spawn: ranks that a rank starts (MPI_Comm_spawn through PMIx)
 * join the job, numbered after the others, placed in the free slots of
 * the job's nodes from the asker's on (wr_map_place_spawn), and are ranks
 * like them (output, failures, the exit status, the report). One spawn
 * is under way at a time: every other host first serves the new ranks
 * to its own and starts those placed there (JOINED, answered once each),
 * then the asker's host does (SPAWN) and answers the asker. So no rank
 * hears of ranks its host does not know, and every host sees the spawns
 * in the order of their numbers.
 */
#include "policyint.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* A spawn numbered and not yet started. */
struct wr_policy_spawn {
	struct wr_policy_spawn *next;
	int rank;       /* who asked */
	int id;         /* its agent's number for it */
	int first;
	int count;
	int told;       /* hosts sent JOINED; INT_MAX while being sent */
	int answered;   /* of them, those that answered */
	bool joined_sent;
	json_t *apps;   /* what they run: the shape, and the strings */
	char *strings;
	size_t len;
	json_t *place;  /* the node of each */
};

static void
spawn_free(struct wr_policy_spawn *s)
{
	if (s != NULL) {
		json_decref(s->apps);
		json_decref(s->place);
		free(s->strings);
		free(s);
	}
}

/* Room in the rank table for @count ranks more, pending. */
static int
grow_table(struct wr_policy *p, int count)
{
	int n = p->nranks + count;
	struct wr_rank *r = realloc(p->ranks, ((size_t)n + 1) * sizeof(*r));

	if (r == NULL) {
		return -ENOMEM;
	}
	memset(&r[p->nranks], 0, ((size_t)count + 1) * sizeof(*r));
	for (int i = p->nranks; i < n; i++) {
		r[i].dead_peer = -1;
	}
	p->ranks = r;
	p->hang.cfg.ranks = r;
	p->nranks = n;
	return 0;
}

/*
 * Tell every other host of the first spawn, then, once each answered,
 * have the asker's start it; then the next. The in-process agent answers
 * inside the send: while it is under way, the spawn waits for all.
 */
static void
spawns_next(struct wr_policy *p)
{
	struct wr_policy_spawn *s;

	while ((s = p->spawns) != NULL && !p->stopping && !p->closing) {
		if (!s->joined_sent) {
			struct wr_cmd cmd = { .kind = WR_CMD_JOINED, .rank = -1, .first = s->first,
					      .count = s->count,
					      .node = p->cfg.map->node[s->rank], .apps = s->apps,
					      .place = s->place, .data = s->strings,
					      .len = s->len };

			s->joined_sent = true;
			s->told = INT_MAX;
			s->told = p->cfg.agents.send(p->cfg.agents.arg, &cmd);
		}
		if (s->answered < s->told) {
			return;
		}
		p->spawns = s->next;
		p->cfg.agents.send(p->cfg.agents.arg,
				   &(struct wr_cmd){ .kind = WR_CMD_SPAWN, .rank = s->rank,
						     .id = s->id, .first = s->first,
						     .count = s->count, .apps = s->apps,
						     .place = s->place, .data = s->strings,
						     .len = s->len });
		spawn_free(s);
	}
}

/* Why a spawn cannot be served, or NULL. */
static const char *
spawn_refusal(const struct wr_policy *p, const struct wr_ev *ev)
{
	if (ev->count > WR_WIRE_RANK_MAX - p->nranks) {
		return "the job would have too many ranks";
	}
	if (ev->apps == NULL) {
		return "more programs, or longer arguments and variables, than worldrun carries "
		       "(64 programs, 64 KiB)";
	}
	return NULL;
}

/* Where @s's ranks go, as the job's went (wr_map_place_spawn), in the
 * launcher and in @s (the place the hosts are told). 0 or -ENOMEM. */
static int
spawn_place(struct wr_policy *p, struct wr_policy_spawn *s, int asker, int count)
{
	int *node = calloc((size_t)count, sizeof(*node));
	int rc = node != NULL ? 0 : -ENOMEM;

	if (rc == 0) {
		wr_map_place_spawn(p->cfg.map, asker, count, node);
		s->place = json_array();
	}
	for (int i = 0; rc == 0 && i < count; i++) {
		rc = json_array_append_new(s->place, json_integer(node[i])) == 0 ? 0 : -ENOMEM;
	}
	if (rc == 0) {
		rc = p->cfg.grow(p->cfg.grow_arg, node, count);
	}
	free(node);
	return rc;
}

/* Number @ev's ranks and make room for them; the spawn, or NULL with why. */
static struct wr_policy_spawn *
spawn_number(struct wr_policy *p, const struct wr_ev *ev, const char **why)
{
	struct wr_policy_spawn *s = NULL;

	*why = spawn_refusal(p, ev);
	if (*why == NULL) {
		s = calloc(1, sizeof(*s));
	}
	if (s != NULL) {
		s->apps = json_incref(ev->apps);
		s->strings = malloc(ev->len > 0 ? ev->len : 1);
		s->len = ev->len;
		if (s->strings != NULL && ev->len > 0) {
			memcpy(s->strings, ev->data, ev->len);
		}
	}
	if (*why == NULL && (s == NULL || s->strings == NULL ||
			     spawn_place(p, s, p->cfg.map->node[ev->rank], ev->count) < 0 ||
			     grow_table(p, ev->count) < 0)) {
		*why = strerror(ENOMEM);
	}
	if (*why != NULL) {
		spawn_free(s);
		return NULL;
	}
	s->rank = ev->rank;
	s->id = ev->id;
	s->first = p->nranks - ev->count;
	s->count = ev->count;
	return s;
}

/*
 * A spawn that cannot be served is refused and the job stops with 125,
 * as mpirun stops one whose spawn it cannot start: merely failing the
 * call would leave the asker's peers waiting for ever (Open MPI's other
 * ranks of the spawning communicator wait for the root's children
 * whatever its spawn returned). A job that is stopping refuses quietly.
 */
void
wr_policy_spawn(struct wr_policy *p, const struct wr_ev *ev)
{
	struct wr_policy_spawn *s = NULL, **tail = &p->spawns;
	const char *why = NULL;

	if (!p->stopping && !p->closing) {
		s = spawn_number(p, ev, &why);
	}
	if (s == NULL) {
		if (why != NULL && !p->spawn_said) {
			p->spawn_said = true;
			wr_output_say(p->out, "rank %d asked to start %d rank%s more "
				      "(MPI_Comm_spawn): %s: stopping the job", ev->rank,
				      ev->count, wr_policy_plural(ev->count), why);
			wr_policy_fail(p, 125, "spawn-refused", -1);
		}
		p->cfg.agents.send(p->cfg.agents.arg,
				   &(struct wr_cmd){ .kind = WR_CMD_SPAWN, .rank = ev->rank,
						     .id = ev->id });
		return;
	}
	if (p->cfg.verbose) {
		wr_output_say(p->out, "rank %d started ranks %d-%d (MPI_Comm_spawn)", ev->rank,
			      s->first, s->first + s->count - 1);
	}
	while (*tail != NULL) {
		tail = &(*tail)->next;
	}
	*tail = s;
	spawns_next(p);
}

void
wr_policy_spawn_joined(struct wr_policy *p, const struct wr_ev *ev)
{
	struct wr_policy_spawn *s = p->spawns;

	if (s != NULL && s->joined_sent && s->first == ev->rank) {
		s->answered++;
		spawns_next(p);
	}
}

void
wr_policy_spawns_free(struct wr_policy *p)
{
	while (p->spawns != NULL) {
		struct wr_policy_spawn *s = p->spawns;

		p->spawns = s->next;
		spawn_free(s);
	}
}
