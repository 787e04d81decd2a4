/* SPDX-License-Identifier: MIT */
#include "remote.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "clock.h"
#include "shell.h"
#include "world_errors.h"


/* Seconds a closed channel waits for its shell's exit status. */
#define EXIT_WAIT 1.0
/* The longest stderr line passed on whole; longer ones are cut. */
#define LINE_MAX_ 1024

struct wr_remote {
	struct wr_remote_cfg cfg;
	pid_t pid;
	struct bufferevent *chan;
	struct bufferevent *err;
	struct wr_frame_reader reader;
	struct event *deadline; /* the first answer, then the exit status */
	struct event *beat;     /* every quarter of cfg.host_timeout */
	double heard;           /* when the agent last said anything */
	double tick;            /* when the beat last ran */
	bool reading;           /* we read its channel (no PAUSE of ours) */
	bool answered;          /* the agent's READY came */
	bool down;              /* the channel is closed or broken */
	bool told;              /* lost() was called */
	bool shell;             /* it has a shell of its own */
	bool reaped;
	int wstatus;
	char why[256];          /* what broke the channel, if we know */
	char last[LINE_MAX_];   /* a line of the shell's stderr */
};

/* Start the shell on @chan and @err. 0 or -errno (then it does not run). */
static int
start_shell(struct wr_remote *r, int chan, int err)
{
	pid_t pid = wr_shell_start(r->cfg.argv, chan, chan, err, r->cfg.guard_slot);

	r->pid = pid > 0 ? pid : -1;
	return pid > 0 ? 0 : (int)pid;
}

/* The agent's program, the word before "--agent" that ends the shell's line. */
static const char *
agent_path(char *const *argv)
{
	int n = 0;

	while (argv[n] != NULL) {
		n++;
	}
	return n >= 2 ? argv[n - 2] : "worldrun";
}

static void
tell_lost(struct wr_remote *r)
{
	char why[sizeof(r->why) + PATH_MAX + 96];

	if (r->told) {
		return;
	}
	r->told = true;
	if (r->why[0] != '\0') {
		snprintf(why, sizeof(why), "%s", r->why);
	} else if (r->reaped && WIFEXITED(r->wstatus) && !r->answered &&
		   (WEXITSTATUS(r->wstatus) == 126 || WEXITSTATUS(r->wstatus) == 127)) {
		/* A shell says 127 for a command it cannot find, 126 for one it
		 * cannot run: here that is worldrun itself. */
		snprintf(why, sizeof(why), "its remote shell exited with status %d: "
			 "%s %s there (the agent is worldrun at the same path as here)",
			 WEXITSTATUS(r->wstatus), agent_path(r->cfg.argv),
			 WEXITSTATUS(r->wstatus) == 127 ? "is not found" : "cannot be executed");
	} else if (r->reaped && WIFEXITED(r->wstatus)) {
		/* What it said last is already passed on, just before. */
		snprintf(why, sizeof(why), "its remote shell exited with status %d",
			 WEXITSTATUS(r->wstatus));
	} else if (r->reaped && WIFSIGNALED(r->wstatus)) {
		snprintf(why, sizeof(why), "its remote shell was killed by signal %d",
			 WTERMSIG(r->wstatus));
	} else {
		snprintf(why, sizeof(why), "the connection to its agent was lost");
	}
	r->cfg.lost(r->cfg.arg, r->cfg.node, why);
}

/*
 * The channel is down. Say so once the shell's exit status is known (it
 * tells why), or after EXIT_WAIT without it. The shell's group is killed:
 * an ssh whose agent is gone has nothing left to do.
 */
static void
go_down(struct wr_remote *r, const char *why)
{
	struct timeval tv = wr_clock_tv(EXIT_WAIT);

	if (r->down) {
		return;
	}
	r->down = true;
	if (why != NULL) {
		snprintf(r->why, sizeof(r->why), "%s", why);
	}
	if (r->chan != NULL) {
		bufferevent_disable(r->chan, EV_READ | EV_WRITE);
	}
	if (r->reaped || !r->shell) {
		tell_lost(r);
		return;
	}
	if (r->pid > 0) {
		kill(-r->pid, SIGKILL);
	}
	evtimer_add(r->deadline, &tv);
}

static void
on_deadline(evutil_socket_t fd, short what, void *arg)
{
	struct wr_remote *r = arg;
	char why[128];

	if (r->down) {
		tell_lost(r);
		return;
	}
	snprintf(why, sizeof(why), "no answer from its agent within %g s "
		 "(--connect-timeout)", r->cfg.timeout);
	go_down(r, why);
}

static void
on_frame(struct wr_remote *r, json_t *msg, const void *blob, size_t len)
{
	struct wr_ev ev;

	if (wr_wire_ev_read(msg, blob, len, &ev) != 0 ||
	    (!r->answered && ev.kind != WR_EV_READY) ||
	    (r->answered && ev.kind == WR_EV_READY)) {
		go_down(r, "its agent sent a message that is not in the protocol "
			   "(another worldrun version?)");
		return;
	}
	if (ev.kind == WR_EV_READY) {
		r->answered = true;
		evtimer_del(r->deadline);
	}
	/* It did not hear our beats (we did not run, or its way to us is
	 * one-sided): its ranks are going, and with them the host. */
	if (ev.kind == WR_EV_GAVE_UP) {
		char why[160];

		snprintf(why, sizeof(why), "its agent heard nothing from worldrun for %g s "
			 "(--host-timeout) and stopped its ranks", r->cfg.host_timeout);
		go_down(r, why);
		return;
	}
	/* A beat says only that it is there, which any frame says. */
	if (ev.kind != WR_EV_BEAT) {
		r->cfg.event(r->cfg.arg, r->cfg.node, &ev);
	}
}

static void
on_chan_read(struct bufferevent *bev, void *arg)
{
	struct wr_remote *r = arg;
	struct evbuffer *in = bufferevent_get_input(bev);

	/* Bytes of a frame still on its way count as word from the agent. */
	if (evbuffer_get_length(in) > 0) {
		r->heard = wr_clock_mono();
	}
	while (!r->down) {
		json_t *msg = NULL;
		void *blob = NULL;
		size_t len = 0;
		int rc = wr_frame_read(&r->reader, in, &msg, &blob, &len);

		if (rc < 0) {
			go_down(r, "its agent sent a frame that is not in the protocol "
				   "(another worldrun version?)");
		}
		if (rc <= 0) {
			return;
		}
		on_frame(r, msg, blob, len);
		json_decref(msg);
		free(blob);
	}
}

/*
 * One read straight from @bev's fd into its input, outside its own
 * callbacks: the bufferevent keeps its input's end frozen between them.
 */
static int
read_now(struct bufferevent *bev, int max)
{
	struct evbuffer *in = bufferevent_get_input(bev);
	int n;

	evbuffer_unfreeze(in, 0);
	n = evbuffer_read(in, bufferevent_getfd(bev), max);
	evbuffer_freeze(in, 0);
	return n;
}

/*
 * What the shell wrote before it went is read first: its last events, or
 * words that are not the protocol, tell more than its end (a write that
 * failed because it left, its exit status).
 */
static void
drain(struct wr_remote *r)
{
	while (!r->down && r->chan != NULL) {
		int n = read_now(r->chan, 65536);

		/* It may take the channel down, and free it. */
		on_chan_read(r->chan, r);
		if (n <= 0) {
			break;
		}
	}
}

static void
on_chan_event(struct bufferevent *bev, short what, void *arg)
{
	drain(arg);
	go_down(arg, NULL);
}

/* Pass on every whole line of what the shell or its agent says. */
static void
on_err_read(struct bufferevent *bev, void *arg)
{
	struct wr_remote *r = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	char *line;
	size_t n;

	while ((line = evbuffer_readln(in, &n, EVBUFFER_EOL_LF)) != NULL) {
		snprintf(r->last, sizeof(r->last), "%s", line);
		r->cfg.said(r->cfg.arg, r->cfg.node, r->last);
		free(line);
	}
	/* A line that never ends is passed on in pieces. */
	while (evbuffer_get_length(in) >= LINE_MAX_ - 1) {
		evbuffer_remove(in, r->last, LINE_MAX_ - 1);
		r->last[LINE_MAX_ - 1] = '\0';
		r->cfg.said(r->cfg.arg, r->cfg.node, r->last);
	}
}

static void
on_err_event(struct bufferevent *bev, short what, void *arg)
{
	struct wr_remote *r = arg;
	struct evbuffer *in = bufferevent_get_input(bev);

	/* The last line, without its newline. */
	if (evbuffer_get_length(in) > 0) {
		evbuffer_add(in, "\n", 1);
		on_err_read(bev, r);
	}
	bufferevent_disable(bev, EV_READ);
}

void
wr_remote_reaped(struct wr_remote *r, int wstatus)
{
	r->reaped = true;
	r->wstatus = wstatus;
	r->pid = -1;
	/* Its group's number may be reused now. */
	if (r->cfg.guard_slot != NULL) {
		__atomic_store_n(r->cfg.guard_slot, 0, __ATOMIC_SEQ_CST);
	}
	if (r->err != NULL) {
		/* What it said last comes before why it is gone. */
		bufferevent_disable(r->err, EV_READ);
		on_err_read(r->err, r);
		while (read_now(r->err, 4096) > 0) {
			on_err_read(r->err, r);
		}
		on_err_event(r->err, 0, r);
	}
	drain(r);
	if (r->down) {
		tell_lost(r);
	} else {
		/* The channel's end follows; its reason is this exit. */
		go_down(r, NULL);
	}
}

/*
 * Every quarter of --host-timeout, once the agent is ready: a beat for it,
 * and a look at how long it has been silent. Silence counts only while
 * we listen: not while our own output holds its events back (PAUSE), and
 * not while this loop did not run (worldrun stopped with Ctrl-Z or
 * SIGSTOP, or starved): a beat that comes a whole period late starts the
 * count again.
 */
static void
on_beat(evutil_socket_t fd, short what, void *arg)
{
	struct wr_remote *r = arg;
	struct wr_cmd beat = { .kind = WR_CMD_BEAT };
	double now = wr_clock_mono(), every = r->cfg.host_timeout / 4;
	char why[128];

	if (r->down || r->chan == NULL || !r->answered) {
		r->heard = r->tick = now;
		return;
	}
	if (now - r->tick > 2 * every || !r->reading) {
		r->heard = now;
	}
	r->tick = now;
	if (now - r->heard > r->cfg.host_timeout) {
		snprintf(why, sizeof(why), "no word from its agent for %g s (--host-timeout)",
			 r->cfg.host_timeout);
		go_down(r, why);
		return;
	}
	if (wr_wire_cmd_write(bufferevent_get_output(r->chan), &beat) < 0) {
		go_down(r, "out of memory for its channel");
	}
}

/* The beat, if there is a --host-timeout. */
static int
start_beat(struct wr_remote *r)
{
	struct timeval tv = wr_clock_tv(r->cfg.host_timeout / 4);

	r->heard = r->tick = wr_clock_mono();
	if (r->cfg.host_timeout <= 0 || r->beat != NULL) {
		return 0;
	}
	r->beat = event_new(r->cfg.base, -1, EV_PERSIST, on_beat, r);
	return r->beat == NULL || event_add(r->beat, &tv) < 0 ? -ENOMEM : 0;
}

/* The channel on @chan, and the shell's stderr on @err (-1: none of
 * its own); both are r's from now on, even on failure. */
static int
open_events(struct wr_remote *r, int chan, int err)
{
	struct timeval tv = wr_clock_tv(r->cfg.timeout);

	if (evutil_make_socket_nonblocking(chan) < 0 ||
	    (err >= 0 && evutil_make_socket_nonblocking(err) < 0)) {
		close(chan);
		if (err >= 0) {
			close(err);
		}
		return -errno;
	}
	r->chan = bufferevent_socket_new(r->cfg.base, chan, BEV_OPT_CLOSE_ON_FREE);
	if (r->chan == NULL) {
		close(chan);
	}
	if (err >= 0) {
		r->err = bufferevent_socket_new(r->cfg.base, err, BEV_OPT_CLOSE_ON_FREE);
		if (r->err == NULL) {
			close(err);
			return -ENOMEM;
		}
		bufferevent_setcb(r->err, on_err_read, NULL, on_err_event, r);
		bufferevent_enable(r->err, EV_READ);
	}
	if (r->deadline == NULL) {
		r->deadline = evtimer_new(r->cfg.base, on_deadline, r);
	}
	if (r->chan == NULL || r->deadline == NULL) {
		return -ENOMEM;
	}
	bufferevent_setcb(r->chan, on_chan_read, NULL, on_chan_event, r);
	bufferevent_enable(r->chan, EV_READ | EV_WRITE);
	r->reading = true;
	return evtimer_add(r->deadline, &tv) < 0 || start_beat(r) < 0 ? -ENOMEM : 0;
}

/* A remote with a shell of its own, before the shell: NULL or new. */
static struct wr_remote *
remote_new(const struct wr_remote_cfg *cfg)
{
	struct wr_remote *r = calloc(1, sizeof(*r));

	if (r != NULL) {
		r->cfg = *cfg;
		r->pid = -1;
		r->shell = true;
		wr_frame_reader_init(&r->reader, &wr_wire_event_limits);
	}
	return r;
}

int
wr_remote_open(const struct wr_remote_cfg *cfg, const struct wr_setup *setup,
	       struct wr_remote **out)
{
	struct wr_remote *r = remote_new(cfg);
	int sv[2] = { -1, -1 }, ep[2] = { -1, -1 };
	int rc;

	*out = NULL;
	if (r == NULL) {
		return -ENOMEM;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0 ||
	    pipe2(ep, O_CLOEXEC) < 0) {
		rc = -errno;
		goto fail;
	}
	rc = start_shell(r, sv[1], ep[1]);
	close(sv[1]);
	close(ep[1]);
	sv[1] = ep[1] = -1;
	if (rc == 0) {
		rc = open_events(r, sv[0], ep[0]);
		sv[0] = ep[0] = -1;
	}
	if (rc == 0) {
		rc = wr_wire_setup_write(bufferevent_get_output(r->chan), setup);
	}
	if (rc < 0) {
		goto fail;
	}
	*out = r;
	return 0;
fail:
	for (int i = 0; i < 2; i++) {
		if (sv[i] >= 0) {
			close(sv[i]);
		}
		if (ep[i] >= 0) {
			close(ep[i]);
		}
	}
	if (r->pid > 0) {
		kill(-r->pid, SIGKILL);
		waitpid(r->pid, NULL, 0);
		r->pid = -1;
	}
	wr_remote_close(r);
	return rc;
}

int
wr_remote_kept_copy(struct wr_remote_kept *k, pid_t pid, int chan, int err)
{
	*k = (struct wr_remote_kept){ .pid = pid, .chan = fcntl(chan, F_DUPFD_CLOEXEC, 3),
				      .err = err >= 0 ? fcntl(err, F_DUPFD_CLOEXEC, 3) : -1 };
	if (k->chan >= 0 && (err < 0 || k->err >= 0)) {
		return 0;
	}
	if (k->chan >= 0) {
		close(k->chan);
	}
	if (k->err >= 0) {
		close(k->err);
	}
	*k = (struct wr_remote_kept){ .pid = -1, .chan = -1, .err = -1 };
	return -EMFILE;
}

void
wr_remote_kept_end(const struct wr_remote_kept *k)
{
	if (k->chan >= 0) {
		close(k->chan);
	}
	if (k->err >= 0) {
		close(k->err);
	}
	if (k->pid > 1 && waitpid(k->pid, NULL, WNOHANG) == 0) {
		kill(-k->pid, SIGKILL);
	}
}

/* Whether the kept shell still runs and its channel is not at its end:
 * the next agent says nothing before its SETUP. */
static bool
kept_alive(const struct wr_remote_kept *k)
{
	struct pollfd p = { .fd = k->chan, .events = POLLIN };

	return waitpid(k->pid, NULL, WNOHANG) == 0 && poll(&p, 1, 0) == 0;
}

int
wr_remote_attach_kept(const struct wr_remote_cfg *cfg, const struct wr_setup *setup,
		const struct wr_remote_kept *k, struct wr_remote **out)
{
	struct wr_remote *r = NULL;
	int rc = kept_alive(k) ? 0 : -EPIPE;

	*out = NULL;
	if (rc == 0 && (r = remote_new(cfg)) == NULL) {
		rc = -ENOMEM;
	}
	if (rc < 0) {
		wr_remote_kept_end(k);
		return rc;
	}
	r->pid = k->pid;
	if (r->cfg.guard_slot != NULL) {
		__atomic_store_n(r->cfg.guard_slot, k->pid, __ATOMIC_SEQ_CST);
	}
	rc = open_events(r, k->chan, k->err);
	if (rc == 0) {
		rc = wr_wire_setup_write(bufferevent_get_output(r->chan), setup);
	}
	if (rc < 0) {
		wr_remote_close(r);
		return rc;
	}
	*out = r;
	return 0;
}

int
wr_remote_again(struct wr_remote *r)
{
	struct wr_cmd again = { .kind = WR_CMD_AGAIN };

	if (!r->answered || r->down || r->reaped || r->chan == NULL ||
	    (r->shell && r->pid <= 0)) {
		return -EPIPE;
	}
	return wr_wire_cmd_write(bufferevent_get_output(r->chan), &again);
}

/* The agent's answer to AGAIN, read straight from the channel. */
static int
await_again(struct wr_remote *r, double seconds)
{
	struct evbuffer *in = bufferevent_get_input(r->chan);
	struct pollfd p = { .fd = bufferevent_getfd(r->chan), .events = POLLIN };
	double end = wr_clock_mono() + seconds;

	for (;;) {
		json_t *msg = NULL;
		void *blob = NULL;
		size_t len = 0;
		struct wr_ev ev;
		int rc = wr_frame_read(&r->reader, in, &msg, &blob, &len);
		bool again;

		if (rc < 0) {
			return rc;
		}
		if (rc > 0) {
			again = wr_wire_ev_read(msg, blob, len, &ev) == 0 && ev.kind == WR_EV_AGAIN;
			json_decref(msg);
			free(blob);
			if (again) {
				/* Nothing of it may be left for the next agent's reader. */
				return evbuffer_get_length(in) == 0 ? 0 : WORLD_EPROTO;
			}
			continue;
		}
		if (end <= wr_clock_mono() ||
		    poll(&p, 1, (int)((end - wr_clock_mono()) * 1e3) + 1) <= 0) {
			return -ETIMEDOUT;
		}
		if (read_now(r->chan, 65536) <= 0) {
			return -EPIPE;
		}
	}
}

int
wr_remote_keep(struct wr_remote *r, double seconds, struct wr_remote_kept *k)
{
	int rc = wr_frame_flush(r->chan, seconds);

	*k = (struct wr_remote_kept){ .pid = -1, .chan = -1, .err = -1 };
	if (rc == 0) {
		rc = await_again(r, seconds);
	}
	/* An agent that dialed in dials the next attempt: nothing to hand on. */
	if (rc < 0 || !r->shell) {
		return rc;
	}
	rc = wr_remote_kept_copy(k, r->pid, bufferevent_getfd(r->chan),
				 r->err != NULL ? bufferevent_getfd(r->err) : -1);
	if (rc < 0) {
		return rc;
	}
	/* Not ours to end now: no shutdown of the channel, no kill. */
	r->pid = -1;
	if (r->cfg.guard_slot != NULL) {
		__atomic_store_n(r->cfg.guard_slot, 0, __ATOMIC_SEQ_CST);
	}
	r->down = r->told = true;
	bufferevent_free(r->chan);
	r->chan = NULL;
	return 0;
}

int
wr_remote_open_waiting(const struct wr_remote_cfg *cfg, struct wr_remote **out)
{
	struct wr_remote *r = calloc(1, sizeof(*r));
	struct timeval tv = wr_clock_tv(cfg->timeout);

	*out = r;
	if (r == NULL) {
		return -ENOMEM;
	}
	r->cfg = *cfg;
	r->pid = -1;
	wr_frame_reader_init(&r->reader, &wr_wire_event_limits);
	r->deadline = evtimer_new(r->cfg.base, on_deadline, r);
	return r->deadline == NULL || evtimer_add(r->deadline, &tv) < 0 ? -ENOMEM : 0;
}

int
wr_remote_attach(struct wr_remote *r, int fd, const struct wr_setup *setup)
{
	int rc;

	if (r->down || r->chan != NULL) {
		close(fd);
		return -EPIPE;
	}
	/* From here on its READY has the whole --connect-timeout. */
	evtimer_del(r->deadline);
	rc = open_events(r, fd, -1);
	if (rc == 0) {
		rc = wr_wire_setup_write(bufferevent_get_output(r->chan), setup);
	}
	if (rc < 0) {
		go_down(r, "out of memory for its channel");
	}
	return rc;
}

bool
wr_remote_attached(const struct wr_remote *r)
{
	return r->chan != NULL;
}

void
wr_remote_fail(struct wr_remote *r, const char *why)
{
	go_down(r, why);
}

int
wr_remote_send(struct wr_remote *r, const struct wr_cmd *cmd)
{
	if (r->down || r->chan == NULL) {
		return -EPIPE;
	}
	/* While our output cannot take more, we read no more: so an agent
	 * that goes on sending after PAUSE fills its own buffers, not ours. */
	if (cmd->rank < 0 && cmd->kind == WR_CMD_PAUSE) {
		bufferevent_disable(r->chan, EV_READ);
		r->reading = false;
	} else if (cmd->rank < 0 && cmd->kind == WR_CMD_RESUME) {
		bufferevent_enable(r->chan, EV_READ);
		r->reading = true;
		r->heard = wr_clock_mono();
	}
	return wr_wire_cmd_write(bufferevent_get_output(r->chan), cmd);
}

void
wr_remote_flush(struct wr_remote *r, double seconds)
{
	if (!r->down && r->chan != NULL && seconds > 0) {
		wr_frame_flush(r->chan, seconds);
	}
}

pid_t
wr_remote_pid(const struct wr_remote *r)
{
	return r->pid;
}

void
wr_remote_hangup(struct wr_remote *r)
{
	r->down = true;
	r->told = true;
	if (r->deadline != NULL) {
		evtimer_del(r->deadline);
	}
	if (r->beat != NULL) {
		event_del(r->beat);
	}
	/* The agent sees the end of its channel and stops what runs there:
	 * at once, even where libevent defers the close to a loop that may
	 * not run again (shutdown, not the free, ends the stream). */
	if (r->chan != NULL) {
		shutdown(bufferevent_getfd(r->chan), SHUT_RDWR);
		bufferevent_free(r->chan);
		r->chan = NULL;
	}
}

void
wr_remote_close(struct wr_remote *r)
{
	if (r == NULL) {
		return;
	}
	wr_remote_hangup(r);
	if (r->pid > 0) {
		kill(-r->pid, SIGKILL);
	}
	if (r->err != NULL) {
		bufferevent_free(r->err);
	}
	if (r->deadline != NULL) {
		event_free(r->deadline);
	}
	if (r->beat != NULL) {
		event_free(r->beat);
	}
	wr_frame_reader_finish(&r->reader);
	free(r);
}
