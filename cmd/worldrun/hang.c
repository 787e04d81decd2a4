/* SPDX-License-Identifier: MIT */
#include "hang.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "procinfo.h"
#include "ranklist.h"
#include "stacks.h"

/* What one rank is doing, as the report groups it. */
enum doing {
	DOING_WAIT,    /* in a libworld (or worldctl) wait */
	DOING_BUSY,    /* running handlers, waiting for nothing */
	DOING_SILENT,  /* its libworld did not answer */
	DOING_RUN,     /* in no wait we know of */
	DOING_ENDED,
	DOING_NEVER,   /* never started */
};

struct group {
	enum doing doing;
	char key[768];   /* what its ranks do, in words: they share it */
	int *ranks;
	size_t n;
	long long for_ms; /* the longest wait among them */
	pid_t pid;        /* its first rank's */
	bool far;         /* its first rank runs on another host */
	json_t *entry;    /* its first rank's entry in the report */
};

struct build {
	const struct wr_hang_job *job;
	struct group *groups;
	size_t ngroups;
	bool *missing;    /* [nranks]: scratch, the ranks one rank waits for */
	bool *callers;    /* [nranks]: scratch, those its handlers run for */
	int *list;        /* [nranks]: scratch */
	json_t *ranks;    /* the report's */
	const json_t *survey_ranks; /* the registry's, with the names ranks gave */
	int counts[DOING_NEVER + 1];
	int *want;        /* wr_hang_stack_ranks(): who would get a stack */
	int nwant;
};

static const char *
str(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s != NULL ? s : "";
}

/* "rank 1" or "ranks 0,2-7" */
static void
ranks_phrase(const int *ranks, size_t n, char *buf, size_t room)
{
	int at = snprintf(buf, room, "rank%s ", n == 1 ? "" : "s");

	wr_ranklist_text(ranks, n, buf + at, room - (size_t)at);
}

/* A registry wait in words, for a rank whose libworld says nothing. */
static void
registry_what(const json_t *w, char *buf, size_t room)
{
	const char *kind = str(w, "kind");
	const json_t *keys = json_object_get(w, "keys");
	const char *via = strcmp(str(w, "via"), "tool") == 0 ? " via worldctl" : "";

	/* A host's PMI server enters "pmi/JOBID" for its MPICH ranks, its
	 * PMIx server "pmix/JOBID/..." for each fence of PMIx's. */
	if (strcmp(kind, "barrier") == 0 && strncmp(str(w, "name"), "pmi/", 4) == 0) {
		snprintf(buf, room, "PMI barrier (MPI_Init, MPI_Finalize or MPI_Barrier)");
	} else if (strcmp(kind, "barrier") == 0 && strncmp(str(w, "name"), "pmix/", 5) == 0 &&
		   strstr(str(w, "name"), "/connect/") != NULL) {
		snprintf(buf, room, "PMIx connect (MPI_Comm_connect or MPI_Comm_accept)");
	} else if (strcmp(kind, "barrier") == 0 && strncmp(str(w, "name"), "pmix/", 5) == 0) {
		snprintf(buf, room, "PMIx fence (MPI_Init or MPI_Finalize)");
	} else if (strcmp(kind, "barrier") == 0) {
		snprintf(buf, room, "barrier \"%s\"%s", str(w, "name"), via);
	} else if (strcmp(kind, "group.join") == 0) {
		snprintf(buf, room, "group create \"%s\"%s", str(w, "name"), via);
	} else if (strcmp(kind, "lut.wait") == 0) {
		snprintf(buf, room, "wait for \"%s\" of group \"%s\"%s",
			 json_string_value(json_array_get(keys, 0)), str(w, "name"), via);
	} else {
		snprintf(buf, room, "kv wait \"%s\"%s%s",
			 json_string_value(json_array_get(keys, 0)) != NULL
			 ? json_string_value(json_array_get(keys, 0)) : "",
			 json_array_size(keys) > 1 ? " and more keys" : "", via);
	}
}

/* Whether @text is in @buf already, as one of its "; " parts. */
static bool
said(const char *buf, const char *text)
{
	size_t n = strlen(text);

	for (const char *at = strstr(buf, text); at != NULL; at = strstr(at + 1, text)) {
		if ((at == buf || at[-1] == ' ') && (at[n] == '\0' || at[n] == ';')) {
			return true;
		}
	}
	return false;
}

/* Record @w of a rank: its words into @buf, the ranks it involves. */
static void
one_wait(struct build *b, const json_t *w, bool lib, char *buf, size_t room)
{
	size_t at = strlen(buf);
	json_int_t peer = json_integer_value(json_object_get(w, "peer"));
	bool handler = strcmp(str(w, "kind"), "handler") == 0;
	char one[512];

	if (lib) {
		snprintf(one, sizeof(one), "%s", str(w, "what"));
	} else {
		registry_what(w, one, sizeof(one));
	}
	if (!said(buf, one) && at < room) {
		snprintf(buf + at, room - at, "%s%s", at > 0 ? "; " : "", one);
	}
	if (json_is_integer(json_object_get(w, "peer")) && peer >= 0 &&
	    peer < b->job->nranks) {
		/* A handler serves its caller; a call waits for its callee. */
		(handler ? b->callers : b->missing)[peer] = true;
	}
}

/*
 * What rank @r waits for: the libworld records of its threads in words,
 * else the registry's waits acting for it; the longest wait in *for_ms;
 * the ranks it waits for in b->missing, those its handlers serve in
 * b->callers. 0 if it waits for nothing.
 */
static int
wait_words(struct build *b, const json_t *sr, char *buf, size_t room,
	   long long *for_ms)
{
	const json_t *lib = json_object_get(sr, "waits");
	const json_t *reg = json_object_get(sr, "registry");
	const json_t *list = json_array_size(lib) > 0 ? lib : reg;
	size_t i, j, n = (size_t)b->job->nranks;
	const json_t *w, *m;

	buf[0] = '\0';
	*for_ms = 0;
	memset(b->missing, 0, n * sizeof(*b->missing));
	memset(b->callers, 0, n * sizeof(*b->callers));
	json_array_foreach(list, i, w) {
		long long ms = json_integer_value(json_object_get(w, "for_ms"));

		one_wait(b, w, list == lib, buf, room);
		*for_ms = ms > *for_ms ? ms : *for_ms;
	}
	json_array_foreach(reg, i, w) {
		json_array_foreach(json_object_get(w, "missing"), j, m) {
			json_int_t k = json_integer_value(m);

			if (json_is_integer(m) && k >= 0 && k < b->job->nranks) {
				b->missing[k] = true;
			}
		}
	}
	return json_array_size(list) > 0;
}

/* "@what ranks 1,3" from @set, at the end of @buf; nothing if none. */
static void
add_ranks(struct build *b, const bool *set, const char *what, char *buf,
	  size_t room)
{
	size_t n = 0, at = strlen(buf);
	char text[256];

	for (int k = 0; k < b->job->nranks; k++) {
		if (set[k]) {
			b->list[n++] = k;
		}
	}
	if (n == 0 || at >= room) {
		return;
	}
	ranks_phrase(b->list, n, text, sizeof(text));
	snprintf(buf + at, room - at, "%s%s", what, text);
	/* One rank that named itself: its name too. */
	if (n == 1) {
		const char *name = str(json_array_get(b->survey_ranks, (size_t)b->list[0]),
				       "name");

		at = strlen(buf);
		if (name[0] != '\0' && at < room) {
			snprintf(buf + at, room - at, " \"%.64s\"", name);
		}
	}
}

/* How an ended rank ended, in the failure lines' words. */
static void
ended_words(const struct wr_hang_rank *hr, char *buf, size_t room)
{
	if (WIFSIGNALED(hr->wstatus)) {
		int sig = WTERMSIG(hr->wstatus);
		const char *abbrev = sigabbrev_np(sig);

		snprintf(buf, room, "killed by signal %d (SIG%s)", sig,
			 abbrev != NULL ? abbrev : "?");
	} else {
		snprintf(buf, room, "exited with status %d", WEXITSTATUS(hr->wstatus));
	}
}

/* /proc's view of a rank that waits for nothing we know, into @entry. */
static void
proc_words(const struct wr_hang_rank *hr, json_t *entry, char *buf, size_t room)
{
	struct wr_procinfo pi;

	/* Another host's pid means nothing in our /proc. */
	if (hr->host != NULL) {
		snprintf(buf, room, "pid %d on %s", (int)hr->pid, hr->host);
		return;
	}
	if (wr_procinfo_read(hr->pid, &pi) < 0) {
		snprintf(buf, room, "pid %d, gone", (int)hr->pid);
		return;
	}
	json_object_set_new(entry, "proc", json_pack(
		"{s:s%, s:s, s:f, s:i}", "state", &pi.state, (size_t)1, "state_name",
		wr_procinfo_state_name(pi.state), "cpu_s", pi.cpu_s, "threads",
		(int)pi.threads));
	snprintf(buf, room, "pid %d, %s (%c), %.1f s CPU", (int)hr->pid,
		 wr_procinfo_state_name(pi.state), pi.state, pi.cpu_s);
}

/* Whether every record is a handler that runs: busy, not waiting. */
static bool
only_handlers(const json_t *waits)
{
	size_t i;
	const json_t *w;

	json_array_foreach(waits, i, w) {
		if (strcmp(str(w, "kind"), "handler") != 0) {
			return false;
		}
	}
	return json_array_size(waits) > 0;
}

/* Rank @r: its entry in the report, and what it does in words (@key). */
static enum doing
classify(struct build *b, int r, const json_t *sr, json_t *entry, char *key,
	 size_t room, long long *for_ms)
{
	const struct wr_hang_rank *hr = &b->job->ranks[r];
	const char *libworld = str(sr, "libworld");
	char detail[256];

	*for_ms = 0;
	if (hr->pid == 0) {
		snprintf(key, room, "not started");
		return DOING_NEVER;
	}
	if (hr->ended) {
		ended_words(hr, key, room);
		return DOING_ENDED;
	}
	if (wait_words(b, sr, key, room, for_ms)) {
		add_ranks(b, b->callers, " for ", key, room);
		add_ranks(b, b->missing, ", waiting for ", key, room);
		return only_handlers(json_object_get(sr, "waits")) ? DOING_BUSY
			: DOING_WAIT;
	}
	proc_words(hr, entry, detail, sizeof(detail));
	if (strcmp(libworld, "connected") == 0 &&
	    !json_is_true(json_object_get(sr, "answered"))) {
		snprintf(key, room, "did not answer (%s)", detail);
		return DOING_SILENT;
	}
	snprintf(key, room, "not in any libworld wait (%s)", detail);
	return DOING_RUN;
}

static struct group *
group_of(struct build *b, enum doing d, const char *key)
{
	struct group *g;

	for (size_t i = 0; i < b->ngroups; i++) {
		/* A process's own state is its own: those never share a line. */
		if (b->groups[i].doing == d && d != DOING_RUN && d != DOING_SILENT &&
		    strcmp(b->groups[i].key, key) == 0) {
			return &b->groups[i];
		}
	}
	g = &b->groups[b->ngroups];
	*g = (struct group){ .doing = d };
	g->ranks = malloc((size_t)b->job->nranks * sizeof(*g->ranks));
	if (g->ranks == NULL) {
		return NULL;
	}
	snprintf(g->key, sizeof(g->key), "%s", key);
	b->ngroups++;
	return g;
}

static const char *const doing_names[] = {
	[DOING_WAIT] = "waiting", [DOING_BUSY] = "busy", [DOING_SILENT] = "unresponsive",
	[DOING_RUN] = "running", [DOING_ENDED] = "ended",
	[DOING_NEVER] = "not started",
};

/* One rank: its entry, and its place in a group. */
static int
add_rank(struct build *b, int r, const json_t *survey)
{
	const json_t *sr = json_array_get(json_object_get(survey, "ranks"), (size_t)r);
	const struct wr_hang_rank *hr = &b->job->ranks[r];
	json_t *entry = json_pack("{s:i, s:s, s:i, s:f}", "rank", r, "host",
				  hr->host != NULL ? hr->host : b->job->host, "pid",
				  (int)hr->pid, "seconds", hr->ran_s);
	char key[768];
	long long for_ms;
	enum doing d;
	struct group *g;

	if (entry == NULL || json_array_append_new(b->ranks, entry) < 0) {
		return -ENOMEM;
	}
	if (json_object_get(sr, "name") != NULL) {
		json_object_set(entry, "name", json_object_get(sr, "name"));
	}
	d = classify(b, r, sr, entry, key, sizeof(key), &for_ms);
	b->counts[d]++;
	json_object_set_new(entry, "state", json_string(doing_names[d]));
	json_object_set_new(entry, "doing", json_string(key));
	if (json_object_get(sr, "waits") != NULL) {
		json_object_set(entry, "waits", json_object_get(sr, "waits"));
		json_object_set(entry, "registry", json_object_get(sr, "registry"));
		json_object_set(entry, "libworld", json_object_get(sr, "libworld"));
	}
	g = group_of(b, d, key);
	if (g == NULL) {
		return -ENOMEM;
	}
	if (g->n == 0) {
		g->pid = hr->pid;
		g->far = hr->host != NULL;
		g->entry = entry;
	}
	g->ranks[g->n++] = r;
	g->for_ms = for_ms > g->for_ms ? for_ms : g->for_ms;
	return 0;
}

static void append_line(json_t *lines, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void
append_line(json_t *lines, const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	json_array_append_new(lines, json_string(line));
}

/* The first line: "job ID after 30.0 s: 7 ranks waiting, 1 running". */
static void
head_line(struct build *b, json_t *lines)
{
	static const char *const words[] = {
		[DOING_WAIT] = "waiting", [DOING_BUSY] = "in a handler",
		[DOING_SILENT] = "not answering",
		[DOING_RUN] = "running", [DOING_ENDED] = "ended",
		[DOING_NEVER] = "not started",
	};
	char line[512];
	int at = snprintf(line, sizeof(line), "job %s after %.1f s:", b->job->jobid,
			  b->job->elapsed);
	bool first = true;

	for (int d = DOING_WAIT; d <= DOING_NEVER; d++) {
		if (b->counts[d] == 0 || at >= (int)sizeof(line)) {
			continue;
		}
		at += snprintf(line + at, sizeof(line) - (size_t)at, "%s %d%s %s",
			       first ? "" : ",", b->counts[d],
			       first ? (b->counts[d] == 1 ? " rank" : " ranks") : "",
			       words[d]);
		first = false;
	}
	json_array_append_new(lines, json_string(line));
}

/* The stack's lines and JSON: @text, or @rc's reason. */
static void
stack_lines(struct group *g, json_t *lines, const char *text, int rc)
{
	char *copy = text != NULL ? strdup(text) : NULL, *save = NULL;

	if (copy != NULL) {
		json_object_set_new(g->entry, "stack", json_string(copy));
		for (char *l = strtok_r(copy, "\n", &save); l != NULL;
		     l = strtok_r(NULL, "\n", &save)) {
			append_line(lines, "      %s", l);
		}
	}
	if (rc < 0) {
		append_line(lines, "      (%s)", strerror(-rc));
	}
	free(copy);
}

/* A rank of another host: what its agent sent, if it was asked. */
static void
far_stack(struct build *b, struct group *g, json_t *lines)
{
	const struct wr_hang_job *job = b->job;
	const char *host = job->ranks[g->ranks[0]].host;
	const struct wr_hang_stack *st = NULL;

	for (int i = 0; i < job->nfar; i++) {
		if (job->far[i].rank == g->ranks[0]) {
			st = &job->far[i];
		}
	}
	if (st == NULL) {
		return;
	}
	if (!st->answered) {
		append_line(lines, "    no stack of rank %d: no answer from the agent on %s "
			    "within %.0f s", g->ranks[0], host, job->far_wait);
		return;
	}
	if (st->tool[0] == '\0') {
		append_line(lines, "    no stack of rank %d: neither eu-stack nor gdb is "
			    "installed on %s", g->ranks[0], host);
		return;
	}
	append_line(lines, "    stack of rank %d (%s on %s):", g->ranks[0], st->tool, host);
	stack_lines(g, lines, st->text, -st->err);
}

/* One stack per group, for those in it: the first rank's stands for all. */
static void
add_stack(struct build *b, struct group *g, json_t *lines)
{
	const char *tool = wr_stacks_tool();
	char *text = NULL;
	int rc;

	if (b->want != NULL) {
		b->want[b->nwant++] = g->ranks[0];
		return;
	}
	if (g->far) {
		far_stack(b, g, lines);
		return;
	}
	if (tool == NULL) {
		return;
	}
	rc = wr_stacks_capture(g->pid, b->job->stack_timeout_ms, &text);
	append_line(lines, "    stack of rank %d (%s):", g->ranks[0], tool);
	stack_lines(g, lines, text, rc);
	free(text);
}

static void
group_line(struct build *b, struct group *g, json_t *lines)
{
	char who[256], line[1100];

	ranks_phrase(g->ranks, g->n, who, sizeof(who));
	if (g->doing == DOING_WAIT || g->doing == DOING_BUSY) {
		/* "in barrier "step" (since 29.8 s), waiting for rank 1" */
		char *waiting = strstr(g->key, ", waiting for ");

		snprintf(line, sizeof(line), "  %s %s %.*s (since %.1f s)%s", who,
			 g->doing == DOING_BUSY ? "running" : "in",
			 (int)(waiting != NULL ? (size_t)(waiting - g->key) : strlen(g->key)),
			 g->key, (double)g->for_ms / 1e3, waiting != NULL ? waiting : "");
	} else {
		snprintf(line, sizeof(line), "  %s %s", who, g->key);
	}
	json_array_append_new(lines, json_string(line));
}

static void
build_lines(struct build *b, json_t *lines, int *stacks)
{
	size_t shown = 0, rest = 0;

	head_line(b, lines);
	for (size_t i = 0; i < b->ngroups; i++) {
		struct group *g = &b->groups[i];

		if (shown >= WR_HANG_LINES_MAX) {
			rest += g->n;
			continue;
		}
		group_line(b, g, lines);
		shown++;
		if (b->job->stacks && *stacks < WR_HANG_STACKS_MAX &&
		    (g->doing == DOING_WAIT || g->doing == DOING_RUN ||
		     g->doing == DOING_BUSY ||
		     g->doing == DOING_SILENT)) {
			add_stack(b, g, lines);
			(*stacks)++;
		}
	}
	if (rest > 0) {
		append_line(lines, "  ... and %zu more ranks (the report has them all)",
			    rest);
	}
}

/* The report; with @want, only the ranks that would get a stack. */
static json_t *
build(const struct wr_hang_job *job, const json_t *survey, int *want, int *nwant)
{
	struct build b = { .job = job, .want = want,
			   .survey_ranks = json_object_get(survey, "ranks") };
	json_t *lines = json_array(), *out = NULL;
	int stacks = 0, rc = 0;

	b.groups = calloc((size_t)job->nranks + 1, sizeof(*b.groups));
	b.missing = calloc((size_t)job->nranks + 1, sizeof(*b.missing));
	b.callers = calloc((size_t)job->nranks + 1, sizeof(*b.callers));
	b.list = calloc((size_t)job->nranks + 1, sizeof(*b.list));
	b.ranks = json_array();
	if (lines == NULL || b.groups == NULL || b.missing == NULL ||
	    b.callers == NULL || b.list == NULL ||
	    b.ranks == NULL) {
		rc = -ENOMEM;
	}
	for (int r = 0; rc == 0 && r < job->nranks; r++) {
		rc = add_rank(&b, r, survey);
	}
	if (rc == 0) {
		build_lines(&b, lines, &stacks);
		if (job->stacks && wr_stacks_tool() == NULL) {
			json_array_append_new(lines, json_string(
				"  no stacks: neither eu-stack nor gdb is installed "
				"(install elfutils)"));
		}
		out = json_pack("{s:{s:s, s:f, s:O}, s:O}", "report", "jobid",
				job->jobid, "elapsed", job->elapsed, "ranks", b.ranks,
				"lines", lines);
	}
	for (size_t i = 0; i < b.ngroups; i++) {
		free(b.groups[i].ranks);
	}
	free(b.groups);
	free(b.missing);
	free(b.callers);
	free(b.list);
	json_decref(b.ranks);
	json_decref(lines);
	if (nwant != NULL) {
		*nwant = b.nwant;
	}
	return out;
}

json_t *
wr_hang_build(const struct wr_hang_job *job, const json_t *survey)
{
	return build(job, survey, NULL, NULL);
}

int
wr_hang_stack_ranks(const struct wr_hang_job *job, const json_t *survey,
		    int ranks[WR_HANG_STACKS_MAX])
{
	int n = 0;
	json_t *out = build(job, survey, ranks, &n);

	if (out == NULL) {
		return -ENOMEM;
	}
	json_decref(out);
	return n;
}
