/* SPDX-License-Identifier: MIT */
#include "srun.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "shell.h"

/* The longest stderr line passed on whole; longer ones are cut. */
#define LINE_MAX_ 1024

struct wr_srun {
	struct wr_srun_cfg cfg;
	pid_t pid;
	int in;                  /* its stdin, while cfg.keep_input */
	struct bufferevent *err;
	char end[96];
};

int
wr_srun_label(const char *line, const char **text)
{
	const char *colon = strchr(line, ':');
	char *tail = NULL;
	long task = -1;

	/* srun pads labels to the width of the largest task number. */
	while (*line == ' ') {
		line++;
	}
	if (colon != NULL && colon[1] == ' ') {
		task = strtol(line, &tail, 10);
	}
	if (tail == colon && tail != line && task >= 0 && task < 1 << 20) {
		*text = colon + 2;
		return (int)task;
	}
	*text = line;
	return -1;
}

/* "N: text" from the agent of task N (--label), else srun's own. */
static void
say(struct wr_srun *s, const char *line)
{
	const char *text;
	int task = wr_srun_label(line, &text);

	s->cfg.said(s->cfg.arg, task, text);
}

static void
on_err_read(struct bufferevent *bev, void *arg)
{
	struct wr_srun *s = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	char piece[LINE_MAX_];
	char *line;
	size_t n;

	while ((line = evbuffer_readln(in, &n, EVBUFFER_EOL_LF)) != NULL) {
		say(s, line);
		free(line);
	}
	/* A line that never ends is passed on in pieces. */
	while (evbuffer_get_length(in) >= LINE_MAX_ - 1) {
		evbuffer_remove(in, piece, LINE_MAX_ - 1);
		piece[LINE_MAX_ - 1] = '\0';
		say(s, piece);
	}
}

static void
on_err_event(struct bufferevent *bev, short what, void *arg)
{
	struct evbuffer *in = bufferevent_get_input(bev);

	/* The last line, without its newline. */
	if (evbuffer_get_length(in) > 0) {
		evbuffer_add(in, "\n", 1);
		on_err_read(bev, arg);
	}
	bufferevent_disable(bev, EV_READ);
}

/* "SECRET PORT" and a newline, into a pipe nothing is left in: it fits
 * whole. Unless the job may restart, the pipe's end then tells srun there
 * is no more (and @fd is closed). */
static int
give_secret(struct wr_srun *s, int fd, const char *secret, int port)
{
	char line[256];
	int len = snprintf(line, sizeof(line), "%s %d\n", secret, port);
	int rc = 0;

	if (len < 0 || (size_t)len >= sizeof(line)) {
		rc = -EINVAL;
	} else {
		rc = write(fd, line, (size_t)len) == (ssize_t)len ? 0 : -EPIPE;
	}
	if (s->cfg.keep_input && rc == 0) {
		s->in = fd;
	} else {
		close(fd);
	}
	return rc;
}

/* srun's stderr on @err (s's from now on), its lines passed on. */
static int
read_err(struct wr_srun *s, int err)
{
	if (evutil_make_socket_nonblocking(err) < 0) {
		close(err);
		return -errno;
	}
	s->err = bufferevent_socket_new(s->cfg.base, err, BEV_OPT_CLOSE_ON_FREE);
	if (s->err == NULL) {
		close(err);
		return -ENOMEM;
	}
	bufferevent_setcb(s->err, on_err_read, NULL, on_err_event, s);
	bufferevent_enable(s->err, EV_READ);
	return 0;
}

int
wr_srun_attach_kept(const struct wr_srun_cfg *cfg, const struct wr_remote_kept *k,
	      struct wr_srun **out)
{
	struct wr_srun *s = calloc(1, sizeof(*s));
	int rc = s == NULL ? -ENOMEM : waitpid(k->pid, NULL, WNOHANG) == 0 ? 0 : -EPIPE;

	*out = NULL;
	if (rc < 0) {
		free(s);
		wr_remote_kept_end(k);
		return rc;
	}
	s->cfg = *cfg;
	s->pid = k->pid;
	s->in = -1;
	if (cfg->guard_slot != NULL) {
		__atomic_store_n(cfg->guard_slot, k->pid, __ATOMIC_SEQ_CST);
	}
	rc = read_err(s, k->err);
	if (rc == 0) {
		rc = give_secret(s, k->chan, cfg->secret, cfg->port);
	} else {
		close(k->chan);
	}
	if (rc < 0) {
		wr_srun_close(s);
		return rc;
	}
	*out = s;
	return 0;
}

int
wr_srun_keep(struct wr_srun *s, struct wr_remote_kept *k)
{
	*k = (struct wr_remote_kept){ .pid = -1, .chan = -1, .err = -1 };
	if (s == NULL || s->in < 0 || s->pid <= 0 || s->err == NULL) {
		return -EPIPE;
	}
	if (wr_remote_kept_copy(k, s->pid, s->in, bufferevent_getfd(s->err)) < 0) {
		return -EMFILE;
	}
	/* Not ours to end now. */
	s->pid = -1;
	if (s->cfg.guard_slot != NULL) {
		__atomic_store_n(s->cfg.guard_slot, 0, __ATOMIC_SEQ_CST);
	}
	return 0;
}

int
wr_srun_open(const struct wr_srun_cfg *cfg, struct wr_srun **out)
{
	struct wr_srun *s = calloc(1, sizeof(*s));
	int in[2] = { -1, -1 }, ep[2] = { -1, -1 };
	int rc = 0;

	*out = NULL;
	if (s == NULL) {
		return -ENOMEM;
	}
	s->cfg = *cfg;
	s->pid = -1;
	s->in = -1;
	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(ep, O_CLOEXEC) < 0) {
		rc = -errno;
	}
	if (rc == 0) {
		/* Its stdout too goes to stderr: an agent writes nothing there. */
		s->pid = wr_shell_start(cfg->argv, in[0], ep[1], ep[1], cfg->guard_slot);
		rc = s->pid < 0 ? (int)s->pid : 0;
	}
	for (int i = 0; i < 2; i++) {
		if (i == 0 && in[0] >= 0) {
			close(in[0]);
		}
		if (i == 1 && ep[1] >= 0) {
			close(ep[1]);
		}
	}
	if (rc == 0) {
		/* An srun that is gone already (bad options) says why on its
		 * stderr, and its end is reaped as any other: not a failure here. */
		rc = give_secret(s, in[1], cfg->secret, cfg->port);
		rc = rc == -EPIPE ? 0 : rc;
		in[1] = -1;
	}
	if (rc == 0) {
		rc = read_err(s, ep[0]);
		ep[0] = -1;
	}
	if (rc < 0) {
		if (in[1] >= 0) {
			close(in[1]);
		}
		if (ep[0] >= 0) {
			close(ep[0]);
		}
		if (s->pid > 0) {
			kill(-s->pid, SIGKILL);
			waitpid(s->pid, NULL, 0);
			s->pid = -1;
		}
		wr_srun_close(s);
		return rc;
	}
	*out = s;
	return 0;
}

pid_t
wr_srun_pid(const struct wr_srun *s)
{
	return s->pid;
}

void
wr_srun_reaped(struct wr_srun *s, int wstatus)
{
	s->pid = -1;
	if (s->cfg.guard_slot != NULL) {
		__atomic_store_n(s->cfg.guard_slot, 0, __ATOMIC_SEQ_CST);
	}
	if (WIFEXITED(wstatus)) {
		snprintf(s->end, sizeof(s->end), "srun exited with status %d",
			 WEXITSTATUS(wstatus));
	} else {
		snprintf(s->end, sizeof(s->end), "srun was killed by signal %d",
			 WTERMSIG(wstatus));
	}
	/* What it said last comes before why it is gone. */
	bufferevent_disable(s->err, EV_READ);
	on_err_read(s->err, s);
	evbuffer_unfreeze(bufferevent_get_input(s->err), 0);
	while (evbuffer_read(bufferevent_get_input(s->err), bufferevent_getfd(s->err),
			     4096) > 0) {
		on_err_read(s->err, s);
	}
	on_err_event(s->err, 0, s);
}

const char *
wr_srun_end(const struct wr_srun *s)
{
	return s->end;
}

void
wr_srun_close(struct wr_srun *s)
{
	if (s == NULL) {
		return;
	}
	if (s->pid > 0) {
		kill(-s->pid, SIGKILL);
	}
	if (s->err != NULL) {
		bufferevent_free(s->err);
	}
	if (s->in >= 0) {
		close(s->in);
	}
	free(s);
}
