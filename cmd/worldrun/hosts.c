/* SPDX-License-Identifier: MIT */
#include "hosts.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The longest hostfile line read. */
#define LINE_MAX_LEN 4096

static int __attribute__((format(printf, 2, 3)))
fail(char err[WR_HOSTS_ERR_MAX], const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, WR_HOSTS_ERR_MAX, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* Host names as DNS has them (and IPv4 addresses): letters, digits, dot,
 * dash, underscore; never a leading dash, which ssh would take for an
 * option. */
static bool
name_ok(const char *s, size_t len)
{
	if (len == 0 || len > WR_HOSTS_NAME_MAX || s[0] == '-') {
		return false;
	}
	for (size_t i = 0; i < len; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_')) {
			return false;
		}
	}
	return true;
}

/* A count of slots, 1 to WR_HOSTS_SLOTS_MAX, in all @len bytes of @s. */
static int
count_of(const char *s, size_t len)
{
	long v = 0;

	if (len == 0 || len > 5) {
		return -1;
	}
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9') {
			return -1;
		}
		v = v * 10 + (s[i] - '0');
	}
	return v >= 1 && v <= WR_HOSTS_SLOTS_MAX ? (int)v : -1;
}

/* Add a host, or its slots to the node of the same name. */
static int
add(struct wr_hosts *h, const char *name, size_t len, int slots, int max)
{
	struct wr_host *v;

	for (int i = 0; i < h->n; i++) {
		struct wr_host *o = &h->v[i];

		if (strlen(o->name) == len && memcmp(o->name, name, len) == 0) {
			if (o->slots + slots > WR_HOSTS_SLOTS_MAX) {
				return -ERANGE;
			}
			/* A bound stays a bound: an entry without one adds
			 * its slots to it. */
			if (o->max_slots > 0) {
				o->max_slots += max > 0 ? max : slots;
				if (o->max_slots > WR_HOSTS_SLOTS_MAX) {
					return -ERANGE;
				}
			}
			o->slots += slots;
			h->slots += slots;
			return 0;
		}
	}
	if (h->n >= WR_HOSTS_MAX) {
		return -E2BIG;
	}
	v = realloc(h->v, ((size_t)h->n + 1) * sizeof(*v));
	if (v == NULL) {
		return -ENOMEM;
	}
	h->v = v;
	v[h->n].name = strndup(name, len);
	if (v[h->n].name == NULL) {
		return -ENOMEM;
	}
	v[h->n].slots = slots;
	v[h->n].max_slots = max;
	h->n++;
	h->slots += slots;
	return 0;
}

/* What add() said, as a message about @where. */
static int
added(int rc, char err[WR_HOSTS_ERR_MAX], const char *where)
{
	if (rc == -E2BIG) {
		return fail(err, "%s: more than %d hosts", where, WR_HOSTS_MAX);
	}
	if (rc == -ERANGE) {
		return fail(err, "%s: more than %d slots for one host in all", where,
			    WR_HOSTS_SLOTS_MAX);
	}
	if (rc < 0) {
		snprintf(err, WR_HOSTS_ERR_MAX, "%s: %s", where, strerror(-rc));
	}
	return rc;
}

int
wr_hosts_add(struct wr_hosts *h, const char *name, int slots, const char *where,
	     char err[WR_HOSTS_ERR_MAX])
{
	if (!name_ok(name, strlen(name))) {
		return fail(err, "%s: \"%.64s\" is not a host name", where, name);
	}
	if (slots < 1 || slots > WR_HOSTS_SLOTS_MAX) {
		return fail(err, "%s: %d slots for %s, not a count from 1 to %d", where, slots,
			    name, WR_HOSTS_SLOTS_MAX);
	}
	return added(add(h, name, strlen(name), slots, 0), err, where);
}

/* "name" or "name:N", @len bytes (MPICH's form, and -H's). */
static int
read_colon(struct wr_hosts *h, const char *s, size_t len, const char *where,
	   char err[WR_HOSTS_ERR_MAX])
{
	const char *colon = memchr(s, ':', len);
	size_t nl = colon != NULL ? (size_t)(colon - s) : len;
	int slots = colon != NULL ? count_of(colon + 1, len - nl - 1) : 1;

	if (!name_ok(s, nl)) {
		return fail(err, "%s: '%.*s' is not a host name", where,
			    (int)(nl < 64 ? nl : 64), s);
	}
	if (slots < 0) {
		return fail(err, "%s: '%.*s' is not a count from 1 to %d", where,
			    (int)(len - nl - 1 < 16 ? len - nl - 1 : 16), colon + 1,
			    WR_HOSTS_SLOTS_MAX);
	}
	return added(add(h, s, nl, slots, 0), err, where);
}

/* One "key=N" word of Open MPI's form into *@slots or *@max. */
static int
read_word(const char *w, size_t len, int *slots, int *max, const char *where,
	  char err[WR_HOSTS_ERR_MAX])
{
	const char *eq = memchr(w, '=', len);
	size_t kl = eq != NULL ? (size_t)(eq - w) : len;
	int v = eq != NULL ? count_of(eq + 1, len - kl - 1) : -1;
	int *to = NULL;

	if (kl == 5 && memcmp(w, "slots", 5) == 0) {
		to = slots;
	} else if ((kl == 9 && memcmp(w, "max_slots", 9) == 0) ||
		   (kl == 9 && memcmp(w, "max-slots", 9) == 0)) {
		to = max;
	}
	if (to == NULL) {
		return fail(err, "%s: unknown '%.*s' (slots=N or max_slots=N)",
			    where, (int)(len < 32 ? len : 32), w);
	}
	if (v < 0) {
		return fail(err, "%s: %.*s is not a count from 1 to %d", where,
			    (int)(len < 32 ? len : 32), w, WR_HOSTS_SLOTS_MAX);
	}
	*to = v;
	return 0;
}

static size_t
span(const char *s, const char *set, bool in)
{
	return in ? strspn(s, set) : strcspn(s, set);
}

/* One hostfile line, without its newline or comment. */
static int
read_line(struct wr_hosts *h, char *line, const char *where,
	  char err[WR_HOSTS_ERR_MAX])
{
	static const char ws[] = " \t\r\f\v";
	char *p = line + span(line, ws, true);
	size_t nl = span(p, ws, false);
	int slots = 1, max = 0, rc = 0;

	if (nl == 0) {
		return 0;
	}
	if (memchr(p, ':', nl) != NULL) {
		if (p[nl + span(p + nl, ws, true)] != '\0') {
			return fail(err, "%s: nothing may follow host:N", where);
		}
		return read_colon(h, p, nl, where, err);
	}
	if (!name_ok(p, nl)) {
		return fail(err, "%s: '%.*s' is not a host name", where,
			    (int)(nl < 64 ? nl : 64), p);
	}
	for (char *w = p + nl; rc == 0;) {
		size_t wl;

		w += span(w, ws, true);
		wl = span(w, ws, false);
		if (wl == 0) {
			break;
		}
		rc = read_word(w, wl, &slots, &max, where, err);
		w += wl;
	}
	if (rc == 0 && max > 0 && max < slots) {
		rc = fail(err, "%s: max_slots=%d is below slots=%d", where, max,
			  slots);
	}
	return rc == 0 ? added(add(h, p, nl, slots, max), err, where) : rc;
}

/* The next line of @f into @buf (room for LINE_MAX_LEN bytes and a NUL),
 * without its newline: its length; -1 at the end of the file; -2 for a
 * line too long (read to its end, kept to nothing); -3 for a NUL byte. */
static int
next_line(FILE *f, char *buf)
{
	int c, n = 0;
	bool nul = false;

	while ((c = getc(f)) != EOF && c != '\n') {
		nul = nul || c == '\0';
		if (n < LINE_MAX_LEN) {
			buf[n] = (char)c;
		}
		n += n <= LINE_MAX_LEN;
	}
	if (c == EOF && n == 0) {
		return -1;
	}
	buf[n <= LINE_MAX_LEN ? n : 0] = '\0';
	return n > LINE_MAX_LEN ? -2 : nul ? -3 : n;
}

int
wr_hosts_read_file(struct wr_hosts *h, const char *path,
		   char err[WR_HOSTS_ERR_MAX])
{
	FILE *f = fopen(path, "re");
	char where[WR_HOSTS_ERR_MAX / 2], line[LINE_MAX_LEN + 1];
	struct stat st;
	int rc = 0, no = 0, len;

	if (f == NULL || fstat(fileno(f), &st) < 0 || S_ISDIR(st.st_mode)) {
		rc = f == NULL || !S_ISDIR(st.st_mode) ? -errno : -EISDIR;
		snprintf(err, WR_HOSTS_ERR_MAX, "%s: %s", path, strerror(-rc));
		if (f != NULL) {
			fclose(f);
		}
		return rc;
	}
	while (rc == 0 && (len = next_line(f, line)) != -1) {
		snprintf(where, sizeof(where), "%s:%d", path, ++no);
		if (len == -2) {
			rc = fail(err, "%s: a line over %d bytes", where, LINE_MAX_LEN);
		} else if (len == -3) {
			rc = fail(err, "%s: a NUL byte", where);
		} else {
			line[strcspn(line, "#")] = '\0';
			rc = read_line(h, line, where, err);
		}
	}
	if (rc == 0 && ferror(f)) {
		rc = -EIO;
		snprintf(err, WR_HOSTS_ERR_MAX, "%s: %s", path, strerror(EIO));
	}
	if (rc == 0 && h->n == 0) {
		rc = fail(err, "%s: no host in it", path);
	}
	fclose(f);
	return rc;
}

int
wr_hosts_read_list(struct wr_hosts *h, const char *list,
		   char err[WR_HOSTS_ERR_MAX])
{
	const char *s = list;
	int rc = 0;

	if (*s == '\0') {
		return fail(err, "-H: no host in it");
	}
	while (rc == 0) {
		size_t len = strcspn(s, ",");

		if (len == 0) {
			return fail(err, "-H %s: an empty entry", list);
		}
		rc = read_colon(h, s, len, "-H", err);
		if (s[len] == '\0') {
			break;
		}
		s += len + 1;
	}
	return rc;
}

void
wr_hosts_finish(struct wr_hosts *h)
{
	for (int i = 0; i < h->n; i++) {
		free(h->v[i].name);
	}
	free(h->v);
	*h = (struct wr_hosts){0};
}

/* How many ranks node @i takes before oversubscription. */
int
wr_hosts_capacity(const struct wr_hosts *h, int ppn, int i)
{
	int c = ppn > 0 ? ppn : h->v[i].slots;

	return h->v[i].max_slots > 0 && c > h->v[i].max_slots ? h->v[i].max_slots : c;
}

long
wr_hosts_room(const struct wr_hosts *h, int ppn)
{
	long room = 0;

	for (int i = 0; i < h->n; i++) {
		room += wr_hosts_capacity(h, ppn, i);
	}
	return room;
}

/* One more rank on the next node (from *@at, in turn) that is under
 * @bound(i); -1 when none is. */
static int
next_node(const struct wr_hosts *h, const int *count, int *at,
	  const struct wr_place_cfg *cfg, bool over)
{
	for (int k = 0; k < h->n; k++) {
		int i = (*at + k) % h->n;
		int bound = over ? (h->v[i].max_slots > 0 ? h->v[i].max_slots : INT_MAX)
				 : wr_hosts_capacity(h, cfg->ppn, i);

		if (count[i] < bound) {
			*at = (i + 1) % h->n;
			return i;
		}
	}
	return -1;
}

int
wr_hosts_place(const struct wr_hosts *h, const struct wr_place_cfg *cfg,
	       int *node, char err[WR_HOSTS_ERR_MAX])
{
	int *count = calloc((size_t)(h->n > 0 ? h->n : 1), sizeof(*count));
	long room;
	int at = 0, r = 0;

	if (count == NULL) {
		snprintf(err, WR_HOSTS_ERR_MAX, "%s", strerror(ENOMEM));
		return -ENOMEM;
	}
	room = wr_hosts_room(h, cfg->ppn);
	/* By slot, each node fills up before the next; by node, one each. */
	for (int i = 0; cfg->map == WR_MAP_SLOT && i < h->n; i++) {
		for (int k = 0; k < wr_hosts_capacity(h, cfg->ppn, i) && r < cfg->nranks; k++) {
			node[r++] = i;
			count[i]++;
		}
	}
	while (r < cfg->nranks) {
		int i = next_node(h, count, &at, cfg, false);

		if (i < 0 && !cfg->oversubscribe) {
			free(count);
			return fail(err, "%d ranks do not fit in the %ld slots of %d host%s "
				    "(--oversubscribe allows more)",
				    cfg->nranks, room, h->n, h->n == 1 ? "" : "s");
		}
		if (i < 0) {
			i = next_node(h, count, &at, cfg, true);
		}
		if (i < 0) {
			free(count);
			return fail(err, "%d ranks do not fit in the hosts' max_slots",
				    cfg->nranks);
		}
		node[r++] = i;
		count[i]++;
	}
	free(count);
	return 0;
}
