/* SPDX-License-Identifier: MIT */
#include "slurm.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The most digits a node number has, and the widest padding asked. */
#define DIGITS_MAX 9

/* What expansion carries along: the names so far, and where to say
 * what went wrong. */
struct names {
	char **v;
	int n;
	const struct wr_slurm_alloc *a;
	char *err;
};

static int __attribute__((format(printf, 2, 3)))
fail(struct names *x, const char *fmt, ...)
{
	char what[WR_HOSTS_ERR_MAX / 2];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(x->err, WR_HOSTS_ERR_MAX, "%.32s=%.128s%s: %s", x->a->nodelist_var,
		 x->a->nodelist, strlen(x->a->nodelist) > 128 ? "..." : "", what);
	return -EINVAL;
}

static int
emit(struct names *x, const char *name)
{
	char **v;

	if (x->n >= WR_HOSTS_MAX) {
		return fail(x, "more than %d nodes", WR_HOSTS_MAX);
	}
	v = realloc(x->v, ((size_t)x->n + 1) * sizeof(*v));
	if (v == NULL) {
		return -ENOMEM;
	}
	x->v = v;
	v[x->n] = strdup(name);
	if (v[x->n] == NULL) {
		return -ENOMEM;
	}
	x->n++;
	return 0;
}

/* A number of 1 to DIGITS_MAX digits, all @len bytes of @s. */
static bool
number(const char *s, size_t len, long *v)
{
	*v = 0;
	if (len == 0 || len > DIGITS_MAX || strspn(s, "0123456789") < len) {
		return false;
	}
	for (size_t i = 0; i < len; i++) {
		*v = *v * 10 + (s[i] - '0');
	}
	return true;
}

static int expand(struct names *x, char *name, size_t at, const char *s, size_t len);

/*
 * One range of a bracket, "7" or "01-04", @len bytes: each number, padded
 * to @width digits (0: as wide as the range's first number is written),
 * goes after @name[0..@at) and the rest of the expression follows it.
 */
static int
range(struct names *x, char *name, size_t at, const char *r, size_t len, int width,
      const char *rest, size_t rlen)
{
	const char *dash = memchr(r, '-', len);
	size_t alen = dash != NULL ? (size_t)(dash - r) : len;
	long lo, hi;
	int rc = 0;

	if (!number(r, alen, &lo) ||
	    !(dash == NULL ? (hi = lo, true) : number(dash + 1, len - alen - 1, &hi))) {
		return fail(x, "\"%.*s\" is not a number or a range of them", (int)len, r);
	}
	if (hi < lo) {
		return fail(x, "%.*s: a range that runs backwards", (int)len, r);
	}
	if (hi - lo >= WR_HOSTS_MAX) {
		return fail(x, "%.*s: more than %d nodes", (int)len, r, WR_HOSTS_MAX);
	}
	for (long v = lo; rc == 0 && v <= hi; v++) {
		int n = snprintf(name + at, WR_HOSTS_NAME_MAX + 1 - at, "%0*ld",
				 width > 0 ? width : (int)alen, v);

		if (n < 0 || at + (size_t)n > WR_HOSTS_NAME_MAX) {
			return fail(x, "a node name longer than %d characters", WR_HOSTS_NAME_MAX);
		}
		rc = expand(x, name, at + (size_t)n, rest, rlen);
	}
	return rc;
}

/* A bracket's inside, "1-3,7" or Open MPI's "2:1-3" (two digits each). */
static int
bracket(struct names *x, char *name, size_t at, const char *g, size_t len,
	const char *rest, size_t rlen)
{
	const char *colon = memchr(g, ':', len), *end = g + len;
	long width = 0;
	int rc = 0;

	if (colon != NULL) {
		if (!number(g, (size_t)(colon - g), &width) || width < 1 || width > DIGITS_MAX) {
			return fail(x, "[%.*s]: \"%.*s\" is not a width of 1 to %d digits",
				    (int)len, g, (int)(colon - g), g, DIGITS_MAX);
		}
		g = colon + 1;
	}
	while (rc == 0) {
		const char *comma = memchr(g, ',', (size_t)(end - g));
		size_t n = comma != NULL ? (size_t)(comma - g) : (size_t)(end - g);

		rc = range(x, name, at, g, n, (int)width, rest, rlen);
		if (comma == NULL) {
			break;
		}
		g = comma + 1;
	}
	return rc;
}

/* The names of one expression, @len bytes of @s, after @name[0..@at). */
static int
expand(struct names *x, char *name, size_t at, const char *s, size_t len)
{
	const char *open = memchr(s, '[', len), *close;
	size_t lit = open != NULL ? (size_t)(open - s) : len;

	if (memchr(s, ']', lit) != NULL) {
		return fail(x, "a bracket that does not open");
	}
	if (at + lit > WR_HOSTS_NAME_MAX) {
		return fail(x, "a node name longer than %d characters", WR_HOSTS_NAME_MAX);
	}
	memcpy(name + at, s, lit);
	name[at + lit] = '\0';
	if (open == NULL) {
		return emit(x, name);
	}
	close = memchr(open, ']', len - lit);
	if (close == NULL) {
		return fail(x, "a bracket that does not close");
	}
	if (memchr(open + 1, '[', (size_t)(close - open - 1)) != NULL) {
		return fail(x, "a bracket inside a bracket");
	}
	return bracket(x, name, at + lit, open + 1, (size_t)(close - open - 1), close + 1,
		       len - (size_t)(close + 1 - s));
}

/* Every node of the list: expressions apart at commas outside brackets. */
static int
expand_list(struct names *x, const char *s)
{
	char name[WR_HOSTS_NAME_MAX + 1];
	int rc = 0;

	if (*s == '\0') {
		return fail(x, "no node in it");
	}
	while (rc == 0) {
		size_t len = 0;
		int depth = 0;

		for (; s[len] != '\0' && (s[len] != ',' || depth > 0); len++) {
			depth += s[len] == '[' ? 1 : s[len] == ']' ? -1 : 0;
		}
		if (len == 0) {
			return fail(x, "an empty entry");
		}
		rc = expand(x, name, 0, s, len);
		if (s[len] == '\0') {
			break;
		}
		s += len + 1;
	}
	return rc;
}

static int
bad_counts(const struct wr_slurm_alloc *a, const char *why, char err[WR_HOSTS_ERR_MAX])
{
	snprintf(err, WR_HOSTS_ERR_MAX, "%.32s=%.128s: %s", a->counts_var, a->counts, why);
	return -EINVAL;
}

/* The counts of @a->counts ("4,1(x2)"), one per node: exactly @n. */
static int
read_counts(const struct wr_slurm_alloc *a, int n, int *out, char err[WR_HOSTS_ERR_MAX])
{
	const char *s = a->counts;
	int k = 0;

	for (;;) {
		long c, times = 1;
		size_t len = strspn(s, "0123456789");

		if (!number(s, len, &c) || c < 1 || c > WR_HOSTS_SLOTS_MAX) {
			return bad_counts(a, "not a list of counts from 1 to 65536 (\"4,1(x2)\")",
					  err);
		}
		s += len;
		if (strncmp(s, "(x", 2) == 0) {
			len = strspn(s + 2, "0123456789");
			if (!number(s + 2, len, &times) || times < 1 || s[2 + len] != ')') {
				return bad_counts(a, "not a repeat count (\"(x2)\")", err);
			}
			s += 3 + len;
		}
		if (times > n - k) {
			return bad_counts(a, "more counts than nodes", err);
		}
		while (times-- > 0) {
			out[k++] = (int)c;
		}
		if (*s == '\0') {
			break;
		}
		if (*s != ',') {
			return bad_counts(a, "not a list of counts (\"4,1(x2)\")", err);
		}
		s++;
	}
	return k == n ? 0 : bad_counts(a, "fewer counts than nodes", err);
}

int
wr_slurm_hosts(struct wr_hosts *h, const struct wr_slurm_alloc *a,
	       char err[WR_HOSTS_ERR_MAX])
{
	struct names x = { .a = a, .err = err };
	int *slots = NULL, rc;

	if (strlen(a->nodelist) > WR_SLURM_LIST_MAX || strlen(a->counts) > WR_SLURM_LIST_MAX) {
		snprintf(err, WR_HOSTS_ERR_MAX, "%s or %s: longer than %d bytes", a->nodelist_var,
			 a->counts_var, WR_SLURM_LIST_MAX);
		return -EINVAL;
	}
	rc = expand_list(&x, a->nodelist);
	if (rc == 0) {
		slots = calloc((size_t)x.n, sizeof(*slots));
		rc = slots == NULL ? -ENOMEM : read_counts(a, x.n, slots, err);
	}
	for (int i = 0; rc == 0 && i < x.n; i++) {
		rc = wr_hosts_add(h, x.v[i], slots[i], a->nodelist_var, err);
	}
	if (rc == -ENOMEM) {
		snprintf(err, WR_HOSTS_ERR_MAX, "%s: %s", a->nodelist_var, strerror(ENOMEM));
	}
	for (int i = 0; i < x.n; i++) {
		free(x.v[i]);
	}
	free(x.v);
	free(slots);
	return rc;
}

/* An empty variable counts as unset. */
static const char *
var(const char *name)
{
	const char *v = getenv(name);

	return v != NULL && v[0] != '\0' ? v : NULL;
}

void
wr_slurm_env_read(struct wr_slurm_env *e)
{
	bool in_step = var("SLURM_STEP_ID") != NULL;

	*e = (struct wr_slurm_env){
		.job_id = var("SLURM_JOB_ID"), .step_id = var("SLURM_STEP_ID"),
		.nodename = var("SLURMD_NODENAME"),
		.ntasks = in_step ? NULL : var("SLURM_NTASKS"),
		.alloc = { .nodelist = var("SLURM_JOB_NODELIST"),
			   .nodelist_var = "SLURM_JOB_NODELIST" },
	};
	if (e->alloc.nodelist == NULL && var("SLURM_NODELIST") != NULL) {
		e->alloc.nodelist = var("SLURM_NODELIST");
		e->alloc.nodelist_var = "SLURM_NODELIST";
	}
	e->alloc.counts_var = in_step || var("SLURM_TASKS_PER_NODE") == NULL
			      ? "SLURM_JOB_CPUS_PER_NODE" : "SLURM_TASKS_PER_NODE";
	e->alloc.counts = var(e->alloc.counts_var);
}
