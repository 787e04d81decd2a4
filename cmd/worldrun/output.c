/* SPDX-License-Identifier: MIT */
#include "output.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stream.h" /* WR_LINE_MAX */
#include "wire.h"   /* WR_OUT, WR_ERR */
#include "clock.h"
#include "oneline.h"
#include "quote.h"
#include "sink.h"

#define HIGH_WATER (4u << 20)
#define LOW_WATER (1u << 20)
/* How long a rank may sit in the middle of a long line while others wait. */
#define OWNER_IDLE 1.0
/* What the owner's own other stream may hold while its line goes on. */
#define SIBLING_HOLD_MAX (1u << 20)
/* What any other may hold: more means it goes on after its PAUSE (an
 * agent's ranks, in flight or not stopped), and the line gives way. */
#define HOLD_MAX (16u << 20)

struct lane;

/* One rank's stdout or stderr, or worldrun's own messages (rank -1). */
struct route {
	int rank;
	int stream;
	struct lane *lane;
	bool at_line_start;
	int file_fd;
	bool file_failed;
	char *held; /* what arrived while another route owned the lane */
	size_t held_len;
	size_t held_cap;
	bool held_partial;
	bool held_eof;
	bool waiting;
	bool paused;  /* by us, until the lane's owner finishes its line */
};

/* One of our output fds and the order of what goes into it. */
struct lane {
	struct wr_output *o;
	struct wr_sink *sink;
	struct event *wake;
	struct route *owner; /* in the middle of a line cut at WR_LINE_MAX */
	struct event *idle;
	bool owe_newline;    /* a stream ended in the middle of a line */
	bool high;
	struct route **fifo; /* routes waiting for the owner to finish */
	size_t nwaiting;
};

struct wr_output {
	struct wr_output_cfg cfg;
	struct lane lane[2];
	int nlanes;
	struct route **routes; /* 2 per rank: [rank * 2 + stream] */
	int nroutes;
	struct route self;     /* worldrun's own messages */
	int nhigh; /* lanes over HIGH_WATER: while any is, no rank is read */
	bool watch_drain;
	int err;
	int file_err;            /* the first failed write under --output-dir */
	struct route *file_route;
	/* The live line (wr_output_live): */
	bool live_tty;   /* stderr is a terminal that knows "erase the line" */
	bool live_shown; /* it is on the screen, the cursor at its end */
	bool live_over;  /* a rank wrote, or the start is over: never again */
};

static void flush_waiting(struct lane *l);

static struct route *
route_of(struct wr_output *o, int rank, int stream)
{
	return rank < 0 ? &o->self : o->routes[rank * 2 + stream];
}

static void
flow(struct wr_output *o, struct route *r, bool pause)
{
	if (r->rank >= 0) {
		o->cfg.flow(o->cfg.arg, r->rank, r->stream, pause);
	}
}

static void
check_high(struct wr_output *o, struct lane *l)
{
	if (l->high || wr_sink_queued(l->sink) < HIGH_WATER) {
		return;
	}
	l->high = true;
	if (o->nhigh++ == 0) {
		o->cfg.flow(o->cfg.arg, -1, -1, true);
	}
	wr_sink_notify_below(l->sink, o->watch_drain ? 0 : LOW_WATER);
}

/* Room in the lane's sink for @len bytes and a newline owed before them. */
static char *
reserve(struct lane *l, size_t len, char **q)
{
	char *p = wr_sink_begin(l->sink, len + 1);

	*q = p;
	if (p != NULL && l->owe_newline) {
		*(*q)++ = '\n';
		l->owe_newline = false;
	}
	return p;
}

static void
commit(struct lane *l, char *p, char *q)
{
	wr_sink_commit(l->sink, (size_t)(q - p));
}

/*
 * Copy @data with a label at each line start, in one pass. Room for the
 * labels is guessed (a line per 32 bytes); a piece with shorter lines
 * takes more than one reservation.
 */
static void
copy_labelled(struct route *r, const char *label, size_t ll, const char *s,
	      const char *end)
{
	struct lane *l = r->lane;
	char *p, *q, *limit;

	p = reserve(l, (size_t)(end - s) + ll * ((size_t)(end - s) / 32 + 2), &q);
	limit = p + (size_t)(end - s) + ll * ((size_t)(end - s) / 32 + 2);
	while (p != NULL && s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		size_t n = nl != NULL ? (size_t)(nl - s) + 1 : (size_t)(end - s);

		if ((size_t)(limit - q) < n + ll) {
			commit(l, p, q);
			p = reserve(l, (size_t)(end - s) + ll * ((size_t)(end - s) / 32 + 2), &q);
			limit = p + (size_t)(end - s) + ll * ((size_t)(end - s) / 32 + 2);
			continue;
		}
		if (r->at_line_start) {
			memcpy(q, label, ll);
			q += ll;
		}
		memcpy(q, s, n);
		q += n;
		s += n;
		r->at_line_start = nl != NULL;
	}
	if (p != NULL) {
		commit(l, p, q);
	}
}

/* Copy @data into the lane's sink, labelled if asked. */
static void
write_piece(struct route *r, const char *data, size_t len)
{
	struct lane *l = r->lane;
	char label[16];
	char *p, *q;

	if (l->o->cfg.label && r->rank >= 0) {
		size_t ll = (size_t)snprintf(label, sizeof(label), "%d: ", r->rank);

		copy_labelled(r, label, ll, data, data + len);
	} else {
		p = reserve(l, len, &q);
		if (p != NULL) {
			memcpy(q, data, len);
			commit(l, p, q + len);
			r->at_line_start = data[len - 1] == '\n';
		}
	}
	check_high(l->o, l);
}

static void
own(struct lane *l, struct route *r)
{
	struct timeval tv = wr_clock_tv(OWNER_IDLE);

	l->owner = r;
	evtimer_add(l->idle, &tv);
}

static void
release(struct lane *l)
{
	l->owner = NULL;
	evtimer_del(l->idle);
	flush_waiting(l);
}

/* Apply the end state of a piece that was just written for @r. */
static void
settle(struct lane *l, struct route *r, size_t len, bool partial, bool eof)
{
	if (eof) {
		if (!r->at_line_start) {
			/* The stream ended mid-line: end that line before any other. */
			l->owe_newline = true;
			r->at_line_start = true;
		}
		if (l->owner == r) {
			release(l);
		}
		return;
	}
	if (partial && len > 0) {
		if (l->owner != r) {
			own(l, r);
		} else {
			struct timeval tv = wr_clock_tv(OWNER_IDLE);

			evtimer_add(l->idle, &tv);
		}
		return;
	}
	if (l->owner == r && !partial) {
		release(l);
	}
}

static int
hold(struct route *r, const char *data, size_t len, bool partial, bool eof)
{
	if (r->held_len + len > r->held_cap) {
		size_t cap = r->held_len + len + 4096;
		char *h = realloc(r->held, cap);

		if (h == NULL) {
			return -ENOMEM;
		}
		r->held = h;
		r->held_cap = cap;
	}
	if (len > 0) {
		memcpy(r->held + r->held_len, data, len);
		r->held_len += len;
	}
	if (len > 0) {
		r->held_partial = partial;
	}
	r->held_eof = r->held_eof || eof;
	return 0;
}

static void break_line(struct lane *l);

/*
 * Bytes of @r while another route owns the lane: held. A route of
 * another rank is paused meanwhile. The owner's own other stream (2>&1)
 * is not: pausing it could block the rank in a write to it while we
 * wait for the rest of its line, so its bytes are held in memory, each
 * counts as a sign that the rank is not silent, and past a bound the
 * owner's line is broken instead.
 */
static void
wait_for_owner(struct lane *l, struct route *r, const char *data, size_t len,
	       bool partial, bool eof)
{
	bool sibling = r->rank >= 0 && r->rank == l->owner->rank;

	hold(r, data, len, partial, eof);
	if (!r->waiting) {
		r->waiting = true;
		l->fifo[l->nwaiting++] = r;
	}
	if (!sibling && !r->paused) {
		r->paused = true;
		flow(l->o, r, true);
	} else if (r->held_len > (sibling ? SIBLING_HOLD_MAX : HOLD_MAX)) {
		break_line(l);
	} else if (sibling) {
		struct timeval tv = wr_clock_tv(OWNER_IDLE);

		evtimer_add(l->idle, &tv);
	}
}

static void
deliver(struct route *r, const char *data, size_t len, bool partial, bool eof)
{
	struct lane *l = r->lane;

	if (l->owner != NULL && l->owner != r) {
		wait_for_owner(l, r, data, len, partial, eof);
		return;
	}
	if (len > 0) {
		write_piece(r, data, len);
	}
	settle(l, r, len, partial, eof);
}

static void
flush_waiting(struct lane *l)
{
	while (l->owner == NULL && l->nwaiting > 0) {
		struct route *r = l->fifo[0];

		memmove(l->fifo, l->fifo + 1, --l->nwaiting * sizeof(*l->fifo));
		r->waiting = false;
		if (r->held_len > 0) {
			write_piece(r, r->held, r->held_len);
		}
		settle(l, r, r->held_len, r->held_partial, r->held_eof);
		r->held_len = 0;
		r->held_partial = false;
		r->held_eof = false;
		if (r->paused) {
			r->paused = false;
			flow(l->o, r, false);
		}
	}
}

/* End the owner's line here, marked as broken, and let the others go. */
static void
break_line(struct lane *l)
{
	char *p = wr_sink_begin(l->sink, 2);

	if (p != NULL) {
		memcpy(p, "\\\n", 2);
		wr_sink_commit(l->sink, 2);
	}
	l->owner->at_line_start = true;
	release(l);
}

/* The owner stayed silent mid-line. Not while a slow reader holds every
 * rank back: that silence is ours, and the owner gets its second again
 * once reading resumes (resume_owners). */
static void
on_idle(evutil_socket_t fd, short what, void *arg)
{
	struct lane *l = arg;

	if (l->owner != NULL && l->o->nhigh == 0) {
		break_line(l);
	}
}

static void
resume_owners(struct wr_output *o)
{
	struct timeval tv = wr_clock_tv(OWNER_IDLE);

	for (int i = 0; i < o->nlanes; i++) {
		if (o->lane[i].owner != NULL) {
			evtimer_add(o->lane[i].idle, &tv);
		}
	}
}

/* A failed write stops that file and tells the run, which stops the job. */
static void
file_failed(struct wr_output *o, struct route *r, int err)
{
	char q[WR_QUOTE_MAX];

	r->file_failed = true;
	if (o->file_err == 0) {
		o->file_err = -err;
		o->file_route = r;
	}
	wr_output_say(o, "unable to write %s/%d/%s: %s", wr_quote(q, sizeof(q), o->cfg.dir),
		      r->rank, r->stream == WR_OUT ? "stdout" : "stderr", strerror(err));
	o->cfg.changed(o->cfg.arg);
}

static void
write_file(struct wr_output *o, struct route *r, const char *data, size_t len)
{
	while (len > 0 && r->file_fd >= 0 && !r->file_failed) {
		ssize_t n = write(r->file_fd, data, len);

		if (n < 0 && errno == EINTR) {
			continue;
		}
		if (n < 0) {
			file_failed(o, r, errno);
			return;
		}
		data += n;
		len -= (size_t)n;
	}
}

/* Bytes straight into worldrun's own lane (stderr's), as they are. */
static void
live_write(struct wr_output *o, const char *s, size_t n)
{
	struct lane *l = o->self.lane;
	char *p, *q;

	p = reserve(l, n, &q);
	if (p != NULL) {
		memcpy(q, s, n);
		commit(l, p, q + n);
	}
}

/* Off the screen before anything else comes: a carriage return and
 * "erase to the end of the line". */
static void
live_erase(struct wr_output *o)
{
	if (o->live_shown) {
		live_write(o, "\r\033[K", 4);
		o->live_shown = false;
	}
}

void
wr_output_live(struct wr_output *o, const char *text)
{
	char buf[256];
	int n;

	if (o == NULL || !o->live_tty || o->live_over) {
		return;
	}
	if (text == NULL) {
		live_erase(o);
		o->live_over = true;
		return;
	}
	n = snprintf(buf, sizeof(buf), "\rworldrun: %s\033[K", text);
	live_write(o, buf, n > 0 && (size_t)n < sizeof(buf) ? (size_t)n : 0);
	o->live_shown = n > 0;
}

void
wr_output_data(struct wr_output *o, int rank, int stream, const char *data,
	       size_t len, bool partial, bool eof)
{
	struct route *r = route_of(o, rank, stream);

	/* The first bytes of any rank end the live line for good. */
	if (len > 0 && !o->live_over) {
		live_erase(o);
		o->live_over = true;
	}
	write_file(o, r, data, len);
	deliver(r, data, len, partial, eof);
}

void
wr_output_say(struct wr_output *o, const char *fmt, ...)
{
	char text[1024], buf[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (n < 0) {
		return;
	}
	/* Names and reasons that ranks chose are in it: one line, whatever
	 * they hold (oneline.h). */
	memcpy(buf, "worldrun: ", 10);
	n = 10 + (int)wr_oneline(buf + 10, sizeof(buf) - 11, text,
				 strnlen(text, sizeof(text)));
	buf[n++] = '\n';
	if (o == NULL) {
		if (write(STDERR_FILENO, buf, (size_t)n) < 0) {
			/* stderr is gone: nowhere left to say it. */
		}
		return;
	}
	live_erase(o);
	deliver(route_of(o, -1, WR_ERR), buf, (size_t)n, false, false);
}

static void
on_wake(evutil_socket_t fd, short what, void *arg)
{
	struct lane *l = arg;
	struct wr_output *o = l->o;
	size_t queued;
	int err;

	wr_sink_ack(l->sink);
	err = wr_sink_error(l->sink);
	if (err != 0 && o->err == 0) {
		o->err = err;
		o->cfg.changed(o->cfg.arg);
		return;
	}
	queued = wr_sink_queued(l->sink);
	if (l->high && queued <= LOW_WATER) {
		l->high = false;
		if (--o->nhigh == 0) {
			o->cfg.flow(o->cfg.arg, -1, -1, false);
			resume_owners(o);
		}
	}
	if (o->watch_drain && queued == 0) {
		o->cfg.changed(o->cfg.arg);
	} else if (o->watch_drain || l->high) {
		wr_sink_notify_below(l->sink, o->watch_drain ? 0 : LOW_WATER);
	}
}

static int
open_lane(struct wr_output *o, struct lane *l, int fd)
{
	int rc;

	l->o = o;
	l->fifo = calloc((size_t)o->nroutes + 1, sizeof(*l->fifo));
	if (l->fifo == NULL) {
		return -ENOMEM;
	}
	rc = wr_sink_open(fd, &l->sink);
	if (rc < 0) {
		return rc;
	}
	l->wake = event_new(o->cfg.base, wr_sink_wake_fd(l->sink),
			    EV_READ | EV_PERSIST, on_wake, l);
	l->idle = evtimer_new(o->cfg.base, on_idle, l);
	if (l->wake == NULL || l->idle == NULL || event_add(l->wake, NULL) < 0) {
		return -ENOMEM;
	}
	return 0;
}

/* stdout and stderr share one queue when they are the same file (2>&1). */
static bool
same_file(int a, int b)
{
	struct stat sa, sb;

	return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

/*
 * A rank's file under --output-dir, made safely even where others can
 * write (a shared /tmp, a root worldrun): the rank's directory is made
 * 0755 and entered without following a link, and the file is opened
 * without following one, without blocking (a FIFO there would hang
 * worldrun before its loop runs), and used only if it is a regular file
 * with no other name; it is emptied only then. 0, or -errno.
 */
static int
open_rank_file(int dfd, int rank, const char *name, int *fd, const char **why)
{
	char sub[16];
	struct stat st;
	int rfd, rc;

	*why = NULL;
	snprintf(sub, sizeof(sub), "%d", rank);
	if (mkdirat(dfd, sub, 0755) < 0 && errno != EEXIST) {
		return -errno;
	}
	rfd = openat(dfd, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (rfd < 0) {
		*why = errno == ENOTDIR || errno == ELOOP ? "not a directory" : NULL;
		return errno == ELOOP ? -ENOTDIR : -errno;
	}
	*fd = openat(rfd, name, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
		     0644);
	close(rfd);
	if (*fd < 0) {
		/* ENXIO: a FIFO without a reader (or a device) refuses at once. */
		*why = errno == ELOOP ? "a symbolic link"
		       : errno == ENXIO ? "not a regular file" : NULL;
		return -errno;
	}
	if (fstat(*fd, &st) < 0) {
		rc = -errno;
	} else if (!S_ISREG(st.st_mode)) {
		*why = "not a regular file";
		rc = -EINVAL;
	} else if (st.st_nlink != 1) {
		*why = "a file with other names (hard links)";
		rc = -EINVAL;
	} else if (fcntl(*fd, F_SETFL, 0) < 0 || ftruncate(*fd, 0) < 0) {
		rc = -errno;
	} else {
		return 0;
	}
	close(*fd);
	*fd = -1;
	return rc;
}

/* The files of the routes from @from on. */
static int
open_files(struct wr_output *o, int from)
{
	char q[WR_QUOTE_MAX];
	const char *dir = o->cfg.dir;
	int dfd, rc = 0;

	if (dir == NULL) {
		return 0;
	}
	dir = wr_quote(q, sizeof(q), dir);
	if (mkdir(o->cfg.dir, 0755) < 0 && errno != EEXIST) {
		fprintf(stderr, "worldrun: --output-dir %s: %s\n", dir, strerror(errno));
		return -errno;
	}
	dfd = open(o->cfg.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		rc = -errno;
		fprintf(stderr, "worldrun: --output-dir %s: %s\n", dir, strerror(errno));
		return rc;
	}
	for (int i = from; rc == 0 && i < o->nroutes; i++) {
		struct route *r = o->routes[i];
		const char *name = r->stream == WR_OUT ? "stdout" : "stderr", *why;

		rc = open_rank_file(dfd, r->rank, name, &r->file_fd, &why);
		if (rc < 0) {
			fprintf(stderr, "worldrun: --output-dir: unable to use %s/%d/%s: %s\n",
				dir, r->rank, name, why != NULL ? why : strerror(-rc));
		}
	}
	close(dfd);
	return rc;
}

static void
route_init(struct wr_output *o, struct route *r, int rank, int stream)
{
	r->rank = rank;
	r->stream = stream;
	r->lane = &o->lane[o->nlanes == 1 ? 0 : stream];
	r->at_line_start = true;
	r->file_fd = -1;
}

/* Routes for ranks up to @nranks - 1: 0 or -ENOMEM (then as before). */
static int
add_routes(struct wr_output *o, int nranks)
{
	int n = nranks * 2;
	struct route **routes = realloc(o->routes, (size_t)n * sizeof(*routes));

	if (routes == NULL) {
		return -ENOMEM;
	}
	o->routes = routes;
	for (int i = 0; i < o->nlanes && o->lane[i].fifo != NULL; i++) {
		struct route **fifo = realloc(o->lane[i].fifo, ((size_t)n + 1) * sizeof(*fifo));

		if (fifo == NULL) {
			return -ENOMEM;
		}
		o->lane[i].fifo = fifo;
	}
	while (o->nroutes < n) {
		struct route *r = calloc(1, sizeof(*r));

		if (r == NULL) {
			return -ENOMEM;
		}
		route_init(o, r, o->nroutes / 2, o->nroutes % 2);
		o->routes[o->nroutes++] = r;
	}
	return 0;
}

int
wr_output_grow(struct wr_output *o, int nranks)
{
	int from = o->nroutes;
	int rc = add_routes(o, nranks);

	if (rc == 0) {
		rc = open_files(o, from);
	}
	if (rc == 0) {
		o->cfg.nranks = nranks;
	}
	return rc;
}

static int
build(struct wr_output *o)
{
	bool one = same_file(STDOUT_FILENO, STDERR_FILENO);
	int rc;

	o->nlanes = one ? 1 : 2;
	route_init(o, &o->self, -1, WR_ERR);
	if (add_routes(o, o->cfg.nranks) < 0) {
		return -ENOMEM;
	}
	rc = open_lane(o, &o->lane[0], STDOUT_FILENO);
	if (rc == 0 && !one) {
		rc = open_lane(o, &o->lane[1], STDERR_FILENO);
	}
	if (rc < 0) {
		fprintf(stderr, "worldrun: unable to start output: %s\n", strerror(-rc));
		return rc;
	}
	return open_files(o, 0);
}

int
wr_output_open(const struct wr_output_cfg *cfg, struct wr_output **out)
{
	struct wr_output *o = calloc(1, sizeof(*o));
	const char *term;
	int rc;

	*out = NULL;
	if (o == NULL) {
		return -ENOMEM;
	}
	o->cfg = *cfg;
	/* A dumb terminal would print the escape that erases a line. */
	term = getenv("TERM");
	o->live_tty = isatty(STDERR_FILENO) && term != NULL && term[0] != '\0' &&
		      strcmp(term, "dumb") != 0;
	rc = build(o);
	if (rc < 0) {
		wr_output_close(o, true);
		return rc;
	}
	*out = o;
	return 0;
}

static void
close_lane(struct lane *l, bool abandon)
{
	wr_sink_close(l->sink, abandon);
	if (l->wake != NULL) {
		event_free(l->wake);
	}
	if (l->idle != NULL) {
		event_free(l->idle);
	}
	free(l->fifo);
}

void
wr_output_close(struct wr_output *o, bool abandon)
{
	if (o == NULL) {
		return;
	}
	if (!abandon && o->self.lane != NULL) {
		live_erase(o);
	}
	/* Whatever is still held was cut off by the end of the job: pass it on. */
	for (int i = 0; !abandon && i < o->nlanes; i++) {
		if (o->lane[i].idle != NULL) {
			release(&o->lane[i]);
		}
	}
	for (int i = 0; i < 2; i++) {
		close_lane(&o->lane[i], abandon);
	}
	for (int i = 0; i < o->nroutes; i++) {
		if (o->routes[i]->file_fd >= 0) {
			close(o->routes[i]->file_fd);
		}
		free(o->routes[i]->held);
		free(o->routes[i]);
	}
	free(o->routes);
	free(o->self.held);
	free(o);
}

int
wr_output_error(const struct wr_output *o)
{
	return o->err;
}

int
wr_output_file_error(const struct wr_output *o, int *rank, int *stream)
{
	if (o->file_err != 0) {
		*rank = o->file_route->rank;
		*stream = o->file_route->stream;
	}
	return o->file_err;
}

bool
wr_output_is_drained(struct wr_output *o)
{
	for (int i = 0; i < o->nlanes; i++) {
		if (o->lane[i].nwaiting > 0 || wr_sink_queued(o->lane[i].sink) > 0) {
			return false;
		}
	}
	return true;
}

void
wr_output_watch_drain(struct wr_output *o)
{
	o->watch_drain = true;
	for (int i = 0; i < o->nlanes; i++) {
		wr_sink_notify_below(o->lane[i].sink, 0);
	}
}
