/* SPDX-License-Identifier: MIT */
#include "agentd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "agent.h"
#include "reach.h"
#include "clock.h"
#include "guardian.h"
#include "hostjob.h"
#include "jobdir.h"
#include "quote.h"
#include "resolve.h"
#include "wire.h"

extern char **environ;

/* Seconds the launcher has to send SETUP once the channel is up. */
#define SETUP_TIMEOUT 60.0
/* Bytes of events queued for the channel before output is held, and
 * the level it must fall to before output flows again. */
#define OUT_HIGH (8u << 20)
#define OUT_LOW (1u << 20)

struct agentd {
	struct event_base *base;
	struct bufferevent *in;
	struct bufferevent *out;
	struct wr_frame_reader reader;
	struct event *deadline;
	struct event *beat;   /* every quarter of the setup's host_timeout */
	struct event *grace;  /* the ranks' time to go, the launcher lost */
	struct event *sigs[3];
	struct wr_setup setup;
	bool have_setup;
	struct wr_hostjob job;
	struct wr_jobdir dir;
	struct wr_guardian guardian;
	struct wr_agent *agent;
	char launcher[INET_ADDRSTRLEN]; /* as ssh saw it; "" if unknown */
	struct wr_reach *reach;         /* how it reached the launcher, or NULL (ssh) */
	bool held;
	double heard;         /* when the launcher last said anything */
	double tick;          /* when the beat last ran */
	bool job_stopped;     /* the launcher stopped every rank (Ctrl-Z) */
	bool lost;            /* the launcher went silent: the ranks stop */
	bool again;           /* AGAIN came: start anew on this channel */
	int input;            /* srun's stdin, for the next agent that dials */
	int live;             /* ranks started and not finished */
	int status; /* the agent's exit status */
};

/* "agent: @what[: @why]" on stderr, which the launcher passes on. */
static void
say(const char *what, const char *why)
{
	fprintf(stderr, "agent: %s%s%s\n", what, why != NULL ? ": " : "",
		why != NULL ? why : "");
}

/* Why the channel ends: the launcher is gone, or it said something
 * that is not our protocol. Either way the ranks go with it. */
static void
quit(struct agentd *d, int status, const char *why)
{
	if (why != NULL) {
		say(why, "stopping this host's ranks");
	}
	d->status = status;
	event_base_loopexit(d->base, NULL);
}

static void
send_ev(struct agentd *d, const struct wr_ev *ev)
{
	struct evbuffer *out = bufferevent_get_output(d->out);
	int rc = wr_wire_ev_write(out, ev);

	if (rc < 0) {
		quit(d, 125, "unable to write an event");
		return;
	}
	if (!d->held && evbuffer_get_length(out) > OUT_HIGH && d->agent != NULL) {
		d->held = true;
		wr_agent_hold(d->agent, true);
	}
}

static void
on_event(void *arg, const struct wr_ev *ev)
{
	struct agentd *d = arg;

	d->live += (ev->kind == WR_EV_STARTED) - (ev->kind == WR_EV_FINISHED);
	send_ev(d, ev);
	/* The ranks of a lost launcher are all gone: no need for the rest
	 * of their grace. */
	if (d->lost && d->live == 0) {
		quit(d, 125, NULL);
	}
}

/* The launcher's reader caught up: output flows again. */
static void
on_out_low(struct bufferevent *bev, void *arg)
{
	struct agentd *d = arg;

	if (d->held) {
		d->held = false;
		wr_agent_hold(d->agent, false);
	}
}

static void
ready(struct agentd *d, int status, const char *why)
{
	struct wr_ev ev = { .kind = WR_EV_READY, .status = status, .data = why,
			    .len = why != NULL ? strlen(why) : 0,
			    .addr = d->launcher[0] != '\0' ? d->launcher : NULL };

	send_ev(d, &ev);
}

/*
 * The addresses of this host's ssh connection, "CLIENT PORT SERVER PORT"
 * in SSH_CONNECTION: the launcher's, which the ranks reach the registry
 * at, and ours, which they publish. Without them (not ssh), loopback: a
 * stand-in on the launcher's machine. -EAFNOSUPPORT for IPv6, which the
 * registry and the ranks' listeners do not serve yet.
 */
static int
ssh_addrs(char launcher[INET_ADDRSTRLEN], char self[INET_ADDRSTRLEN])
{
	const char *c = getenv("SSH_CONNECTION");
	char a[64], b[64];
	struct in6_addr x;

	launcher[0] = '\0';
	strcpy(self, "127.0.0.1");
	if (c == NULL || sscanf(c, "%63s %*s %63s", a, b) != 2) {
		return 0;
	}
	if (inet_pton(AF_INET6, a, &x) == 1 || inet_pton(AF_INET6, b, &x) == 1) {
		return -EAFNOSUPPORT;
	}
	if (inet_pton(AF_INET, a, &x) != 1 || inet_pton(AF_INET, b, &x) != 1) {
		return 0;
	}
	strcpy(launcher, a);
	strcpy(self, b);
	return 0;
}

/* Where this host's ranks reach the registry, and what they publish. */
static int
set_addrs(struct agentd *d)
{
	char self[INET_ADDRSTRLEN], ep[64];
	int rc = 0;

	if (d->reach != NULL) {
		snprintf(d->launcher, sizeof(d->launcher), "%s", d->reach->launcher);
		snprintf(self, sizeof(self), "%s", d->reach->self);
	} else {
		rc = ssh_addrs(d->launcher, self);
	}
	if (rc == 0 && d->setup.registry_port > 0) {
		snprintf(ep, sizeof(ep), "tcp:%s:%d",
			 d->launcher[0] != '\0' ? d->launcher : "127.0.0.1",
			 d->setup.registry_port);
		rc = wr_env_set(&d->job.env, "WORLD_REGISTRY", ep);
	}
	return rc == 0 ? wr_env_set(&d->job.env, "WORLD_ADVERTISE", self) : rc;
}

/*
 * This host's job from SETUP (hostjob.h): the setup's environment as it
 * is (WORLD_* included), with this host's own variables from ours, as
 * sshd gave them. A channel that is a plain TCP connection (reach) does
 * not carry the secret: it came on stdin. 0, or the status READY gives
 * with why.
 */
static int
make_job(struct agentd *d, char *why, size_t size)
{
	const struct wr_setup *s = &d->setup;
	struct wr_hostjob *job = &d->job;
	const char *tmp = getenv("TMPDIR");
	int rc;

	rc = wr_hostjob_init(job, s, d->reach != NULL ? d->reach->secret : NULL);
	if (rc == 0) {
		rc = wr_hostjob_add_hosts_own(job, environ);
	}
	if (rc == 0) {
		rc = wr_jobdir_make(&d->dir, tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp",
				    job->jobid);
	}
	if (rc == 0) {
		rc = wr_env_set(&job->env, "WORLD_JOBDIR", d->dir.path);
	}
	if (rc == 0) {
		rc = set_addrs(d);
	}
	/* An empty MASTER_ADDR: rank 0 runs beside the launcher. */
	if (s->master_addr[0] == '\0') {
		job->master_addr = d->launcher[0] != '\0' ? d->launcher : "127.0.0.1";
	}
	if (rc == -EAFNOSUPPORT) {
		snprintf(why, size, "its ssh connection is over IPv6 (SSH_CONNECTION=%s), "
			 "but worldrun reaches other hosts over IPv4 only: name the host "
			 "by an IPv4 address or a name that resolves to one",
			 getenv("SSH_CONNECTION"));
		return 125;
	}
	if (rc < 0) {
		snprintf(why, size, "unable to prepare the job: %s", strerror(-rc));
		return 125;
	}
	/* The launcher's own directory, if this host has it; else the
	 * agent's, and the user hears so, once for the host. */
	if (s->wdir != NULL && s->wdir_soft && access(s->wdir, X_OK) < 0) {
		char what[WR_QUOTE_MAX + 64], here[PATH_MAX];

		snprintf(what, sizeof(what), "worldrun's working directory %s is not on this host",
			 wr_quote(here, sizeof(here), s->wdir));
		if (getcwd(here, sizeof(here)) != NULL) {
			char q[WR_QUOTE_MAX], where[WR_QUOTE_MAX + 32];

			snprintf(where, sizeof(where), "the ranks run in %s",
				 wr_quote(q, sizeof(q), here));
			say(what, where);
		}
		return wr_hostjob_locate(job, NULL, why, size);
	}
	return wr_hostjob_locate(job, s->wdir, why, size);
}

/*
 * The guardian kills this host's ranks and removes what they leave
 * (the job directory, the fabric's segments) however the agent ends.
 */
static int
guard(struct agentd *d)
{
	int rc = wr_guardian_open(&d->guardian, (size_t)d->setup.nranks + WR_GUARD_SPARE);

	if (rc == 0) {
		rc = wr_guardian_remove_dir(&d->guardian, &d->dir);
	}
	if (rc == 0) {
		rc = wr_guardian_remove_job_shm(&d->guardian, d->job.jobid);
	}
	return rc;
}

static void
on_grace_end(evutil_socket_t fd, short what, void *arg)
{
	quit(arg, 125, NULL);
}

/*
 * The launcher is gone as far as this host can tell: its ranks get
 * SIGTERM, the setup's grace, then (from the guardian, as the agent
 * leaves) SIGKILL. No rank keeps running cut off from its job.
 */
static void
lose_launcher(struct agentd *d)
{
	struct wr_cmd term = { .kind = WR_CMD_SIGNAL, .rank = -1, .sig = SIGTERM };
	struct wr_ev gave_up = { .kind = WR_EV_GAVE_UP };
	struct timeval tv = wr_clock_tv(d->setup.kill_grace);
	char what[96];

	snprintf(what, sizeof(what), "no word from the launcher for %g s (--host-timeout)",
		 d->setup.host_timeout);
	say(what, "stopping this host's ranks");
	/* Should the launcher be there after all (it did not run), it
	 * learns first that these ranks did not end by themselves. */
	send_ev(d, &gave_up);
	d->lost = true;
	event_del(d->beat);
	if (d->live == 0) {
		quit(d, 125, NULL);
		return;
	}
	wr_agent_send(d->agent, &term);
	/* A rank stopped by a signal of its own must run to act on it. */
	term.sig = SIGCONT;
	wr_agent_send(d->agent, &term);
	d->grace = evtimer_new(d->base, on_grace_end, d);
	if (d->grace == NULL || evtimer_add(d->grace, &tv) < 0) {
		quit(d, 125, NULL);
	}
}

/*
 * Every quarter of the host timeout: a beat for the launcher, and a look
 * at how long it has been silent. As on the launcher's side (remote.c),
 * a beat that comes a whole period late (this agent did not run) starts
 * the count again, and so does a job the launcher stopped.
 */
static void
on_beat(evutil_socket_t fd, short what, void *arg)
{
	struct agentd *d = arg;
	struct wr_ev beat = { .kind = WR_EV_BEAT };
	double now = wr_clock_mono(), every = d->setup.host_timeout / 4;

	if (now - d->tick > 2 * every || d->job_stopped) {
		d->heard = now;
	}
	d->tick = now;
	if (now - d->heard > d->setup.host_timeout) {
		lose_launcher(d);
		return;
	}
	send_ev(d, &beat);
}

/* Beats from READY on, if the launcher asked for them. */
static int
start_beat(struct agentd *d)
{
	struct timeval tv = wr_clock_tv(d->setup.host_timeout / 4);

	d->heard = d->tick = wr_clock_mono();
	if (d->setup.host_timeout <= 0) {
		return 0;
	}
	d->beat = event_new(d->base, -1, EV_PERSIST, on_beat, d);
	return d->beat == NULL || event_add(d->beat, &tv) < 0 ? -ENOMEM : 0;
}

static void
on_setup(struct agentd *d, json_t *msg, const void *blob, size_t len)
{
	char why[WR_RESOLVE_WHY_MAX] = "";
	int rc = wr_wire_setup_read(msg, blob, len, &d->setup);
	int status;

	if (rc != 0) {
		ready(d, 125, rc == -ENOMEM ? "out of memory for the setup"
					    : "the setup is not one this agent "
					      "understands (another worldrun version?)");
		return;
	}
	d->have_setup = true;
	evtimer_del(d->deadline);
	status = make_job(d, why, sizeof(why));
	if (status == 0) {
		status = wr_hostjob_bind(&d->job, d->setup.nranks, why, sizeof(why));
	}
	rc = status == 0 ? guard(d) : 0;
	if (rc < 0) {
		snprintf(why, sizeof(why), "unable to start the guardian: %s",
			 strerror(-rc));
		status = 125;
	}
	if (status == 0) {
		struct wr_agent_cfg cfg = {
			.base = d->base, .job = &d->job, .stdin_fd = -1,
			.ranks = d->setup.ranks,
			.nranks = d->setup.nranks, .node = d->setup.node,
			.guard_slots = d->guardian.slots,
			.spare_slots = wr_guardian_slot(&d->guardian, (size_t)d->setup.nranks),
			.nspare = WR_GUARD_SPARE, .cb = on_event, .arg = d,
		};

		rc = wr_agent_open(&cfg, &d->agent);
		if (rc == 0) {
			rc = start_beat(d);
		}
		if (rc < 0) {
			snprintf(why, sizeof(why), "unable to open the agent: %s",
				 strerror(-rc));
			status = 125;
		}
	}
	ready(d, status, status != 0 ? why : NULL);
}

static void
on_cmd(struct agentd *d, json_t *msg, const void *blob, size_t len)
{
	struct wr_cmd cmd;

	if (wr_wire_cmd_read(msg, blob, len, &cmd) != 0 ||
	    (d->agent == NULL && cmd.kind != WR_CMD_BEAT)) {
		quit(d, 125, "the launcher sent a command that is not in the protocol");
		return;
	}
	if (cmd.kind == WR_CMD_BEAT || d->lost) {
		return;
	}
	if (cmd.kind == WR_CMD_AGAIN) {
		/* Only once every rank here is over. */
		if (d->live > 0 || (d->reach != NULL && d->input < 0)) {
			quit(d, 125, "the launcher asked for its next attempt too soon");
			return;
		}
		d->again = true;
		quit(d, 0, NULL);
		return;
	}
	/* A launcher that stops the whole job (Ctrl-Z) stops itself after:
	 * its silence until SIGCONT is no loss. */
	if (cmd.kind == WR_CMD_SIGNAL && cmd.rank < 0 &&
	    (cmd.sig == SIGSTOP || cmd.sig == SIGTSTP || cmd.sig == SIGCONT)) {
		d->job_stopped = cmd.sig != SIGCONT;
	}
	/* A failed START said so in its events; the rest cannot fail usefully. */
	wr_agent_send(d->agent, &cmd);
}

static void
on_readable(struct bufferevent *bev, void *arg)
{
	struct agentd *d = arg;
	struct evbuffer *in = bufferevent_get_input(bev);

	if (evbuffer_get_length(in) > 0) {
		d->heard = wr_clock_mono();
	}
	for (;;) {
		json_t *msg = NULL;
		void *blob = NULL;
		size_t len = 0;
		int rc = wr_frame_read(&d->reader, in, &msg, &blob, &len);

		if (rc <= 0) {
			if (rc < 0) {
				quit(d, 125, "the launcher sent a frame that is not in the protocol");
			}
			return;
		}
		if (!d->have_setup) {
			on_setup(d, msg, blob, len);
		} else {
			on_cmd(d, msg, blob, len);
		}
		json_decref(msg);
		free(blob);
		if (d->status >= 0) {
			return;
		}
	}
}

static void
on_channel(struct bufferevent *bev, short what, void *arg)
{
	struct agentd *d = arg;

	/* The launcher closes the channel when the job is over: that is the
	 * normal end. Ranks that still run are killed (by the guardian). */
	quit(d, 0, NULL);
}

static void
on_deadline(evutil_socket_t fd, short what, void *arg)
{
	quit(arg, 125, "no setup came from the launcher");
}

static void
on_signal(evutil_socket_t sig, short what, void *arg)
{
	quit(arg, 128 + (int)sig, "stopped by a signal");
}

/* Our end of the channel on fds we own (stdin and stdout, or the socket
 * @sock); 0 and 1 become /dev/null, so that nothing else written there
 * can break a frame. */
static int
take_channel(int sock, int *in, int *out)
{
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);

	*in = fcntl(sock >= 0 ? sock : STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
	*out = fcntl(sock >= 0 ? sock : STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
	if (null < 0 || *in < 0 || *out < 0 || dup2(null, STDIN_FILENO) < 0 ||
	    dup2(null, STDOUT_FILENO) < 0) {
		return -errno;
	}
	close(null);
	return 0;
}

static int
open_loop(struct agentd *d, int in, int out)
{
	static const int sigs[3] = { SIGTERM, SIGINT, SIGHUP };
	struct timeval tv = wr_clock_tv(SETUP_TIMEOUT);

	d->base = event_base_new();
	if (d->base == NULL || evutil_make_socket_nonblocking(in) < 0 ||
	    evutil_make_socket_nonblocking(out) < 0) {
		return -ENOMEM;
	}
	d->in = bufferevent_socket_new(d->base, in, BEV_OPT_CLOSE_ON_FREE);
	d->out = bufferevent_socket_new(d->base, out, BEV_OPT_CLOSE_ON_FREE);
	d->deadline = evtimer_new(d->base, on_deadline, d);
	if (d->in == NULL || d->out == NULL || d->deadline == NULL) {
		return -ENOMEM;
	}
	for (int i = 0; i < 3; i++) {
		d->sigs[i] = evsignal_new(d->base, sigs[i], on_signal, d);
		if (d->sigs[i] == NULL || evsignal_add(d->sigs[i], NULL) < 0) {
			return -ENOMEM;
		}
	}
	bufferevent_setcb(d->in, on_readable, NULL, on_channel, d);
	bufferevent_setcb(d->out, NULL, on_out_low, on_channel, d);
	bufferevent_setwatermark(d->out, EV_WRITE, OUT_LOW, 0);
	bufferevent_enable(d->in, EV_READ);
	bufferevent_enable(d->out, EV_WRITE);
	return evtimer_add(d->deadline, &tv) < 0 ? -ENOMEM : 0;
}

static void
close_all(struct agentd *d)
{
	wr_agent_close(d->agent);
	/* Whatever still runs on this host is killed now, by the guardian. */
	wr_guardian_close(&d->guardian);
	wr_jobdir_remove(&d->dir);
	wr_jobdir_release(&d->dir);
	for (int i = 0; i < 3; i++) {
		if (d->sigs[i] != NULL) {
			event_free(d->sigs[i]);
		}
	}
	if (d->deadline != NULL) {
		event_free(d->deadline);
	}
	if (d->beat != NULL) {
		event_free(d->beat);
	}
	if (d->grace != NULL) {
		event_free(d->grace);
	}
	if (d->in != NULL) {
		bufferevent_free(d->in);
	}
	if (d->out != NULL) {
		bufferevent_free(d->out);
	}
	if (d->base != NULL) {
		event_base_free(d->base);
	}
	wr_frame_reader_finish(&d->reader);
	wr_hostjob_finish(&d->job);
	wr_wire_setup_finish(&d->setup);
}

/*
 * The job of this attempt ends here as at any end (its ranks are over
 * already): its agent (with its PMI servers), its guardian, its
 * directory. Before the answer to AGAIN, so that the next attempt finds
 * nothing of it.
 */
static void
end_job(struct agentd *d)
{
	wr_agent_close(d->agent);
	d->agent = NULL;
	wr_guardian_close(&d->guardian);
	wr_jobdir_remove(&d->dir);
	wr_jobdir_release(&d->dir);
	d->dir.path[0] = '\0';
}

/*
 * AGAIN: the last event, then the channel back on stdin and stdout for
 * the next agent, before close_all closes our copies; or, for an agent
 * that dialed in, srun's stdin back on stdin: the next one reads the
 * next attempt's secret and port there and dials it. -errno if not.
 */
static int
hand_on(struct agentd *d)
{
	struct wr_ev ev = { .kind = WR_EV_AGAIN };

	/* No answer where the next agent could not start. */
	if (access("/proc/self/exe", X_OK) < 0) {
		return -errno;
	}
	end_job(d);
	if (wr_wire_ev_write(bufferevent_get_output(d->out), &ev) < 0 ||
	    wr_frame_flush(d->out, 5.0) < 0) {
		return -EPIPE;
	}
	if (d->reach != NULL) {
		return dup2(d->input, STDIN_FILENO) < 0 ? -errno : 0;
	}
	if (dup2(bufferevent_getfd(d->in), STDIN_FILENO) < 0 ||
	    dup2(bufferevent_getfd(d->out), STDOUT_FILENO) < 0) {
		return -errno;
	}
	return 0;
}

/*
 * The next attempt's agent: this program again, as its starter started
 * it, on the same channel (or dialing again). Its job's directory,
 * guardian and ranks are gone with close_all. Returns only on failure:
 * the status.
 */
static int
start_again(bool dial)
{
	char *const argv[] = { program_invocation_name, "--agent", dial ? "--dial" : NULL,
			       NULL };

	execv("/proc/self/exe", argv);
	say("unable to start again", strerror(errno));
	return 125;
}

/*
 * Send what is still queued (the last events) before leaving, for at
 * most a second: a launcher that stopped reading does not keep us.
 */
static void
flush_out(struct agentd *d)
{
	if (d->out != NULL) {
		wr_frame_flush(d->out, 1.0);
	}
}

int
wr_agentd_main(bool dial)
{
	struct agentd d = { .status = -1, .guardian = { .pid = -1, .fd = -1 }, .input = -1 };
	struct wr_reach reach = { .fd = -1 };
	char why[512];
	int in = -1, out = -1;
	int rc;

	signal(SIGPIPE, SIG_IGN);
	wr_frame_reader_init(&d.reader, &wr_wire_limits);
	/* srun's stdin, where a restarted job's next secret comes. */
	if (dial) {
		d.input = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
	}
	if (dial && wr_reach_open(&reach, SETUP_TIMEOUT, why, sizeof(why)) < 0) {
		say("unable to start", why);
		wr_frame_reader_finish(&d.reader);
		return 125;
	}
	d.reach = dial ? &reach : NULL;
	rc = take_channel(reach.fd, &in, &out);
	if (reach.fd >= 0) {
		close(reach.fd);
	}
	if (rc == 0) {
		rc = open_loop(&d, in, out);
	} else {
		close(in);
		close(out);
	}
	if (rc < 0) {
		say("unable to set up", strerror(-rc));
		close_all(&d);
		return 125;
	}
	event_base_dispatch(d.base);
	if (d.again && hand_on(&d) < 0) {
		d.again = false;
	}
	flush_out(&d);
	close_all(&d);
	if (d.again) {
		return start_again(dial);
	}
	if (d.input >= 0) {
		close(d.input);
	}
	return d.status > 0 ? d.status : 0;
}
