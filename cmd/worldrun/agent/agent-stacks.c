/* SPDX-License-Identifier: MIT */
/*
 * The agent's answer to STACK: the stack of one of its ranks, for the
 * launcher's hang report (--timeout-stacks) when the rank runs on another
 * host. The tool (stacks.h) runs for up to seconds, so each stack is
 * taken on a thread of its own while the loop goes on (the channel's
 * beats with it); the thread hands its result back through a pipe, and
 * the loop sends it as a STACK event. stacks.c takes care that the tool
 * is reaped by the thread and by nobody else.
 */
#include "agentint.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stacks.h"

struct stack_job {
	struct wr_agent *a;
	pthread_t thread;
	int rank;
	pid_t pid;
	int rc;
	char *text;
	struct stack_job *next; /* those still running */
};

struct wr_agent_stacks {
	int rd, wr;             /* the threads' results, as pointers */
	struct event *ev;
	struct stack_job *running;
};

/* Send the answer for @rank: @rc 0 with @text, or -errno. */
static void
answer(struct wr_agent *a, int rank, int rc, const char *text)
{
	const char *tool = wr_stacks_tool();
	size_t len = text != NULL ? strlen(text) : 0;
	struct wr_ev ev = {
		.kind = WR_EV_STACK, .rank = rank, .err = rc < 0 ? -rc : 0,
		.tool = tool != NULL ? tool : "", .data = text,
		.len = len < WR_WIRE_DATA_MAX ? len : WR_WIRE_DATA_MAX,
	};

	wr_agent_emit(a, &ev);
}

static void *
take(void *arg)
{
	struct stack_job *j = arg;

	j->rc = wr_stacks_capture(j->pid, WR_STACKS_TIMEOUT_MS, &j->text);
	/* A pointer is written whole (PIPE_BUF); the loop reads it. */
	while (write(j->a->stacks->wr, &j, sizeof(j)) < 0 && errno == EINTR) {
		continue;
	}
	return NULL;
}

/* Take @j off the running list, join its thread and free it. */
static void
reap(struct wr_agent_stacks *s, struct stack_job *j)
{
	for (struct stack_job **at = &s->running; *at != NULL; at = &(*at)->next) {
		if (*at == j) {
			*at = j->next;
			break;
		}
	}
	pthread_join(j->thread, NULL);
	free(j->text);
	free(j);
}

static void
on_result(evutil_socket_t fd, short what, void *arg)
{
	struct wr_agent *a = arg;
	struct stack_job *j;

	while (read(fd, &j, sizeof(j)) == (ssize_t)sizeof(j)) {
		answer(a, j->rank, j->rc, j->text);
		reap(a->stacks, j);
	}
}

static int
stacks_open(struct wr_agent *a)
{
	struct wr_agent_stacks *s = calloc(1, sizeof(*s));
	int fds[2];

	if (s == NULL) {
		return -ENOMEM;
	}
	if (pipe2(fds, O_CLOEXEC) < 0) {
		free(s);
		return -errno;
	}
	s->rd = fds[0];
	s->wr = fds[1];
	fcntl(s->rd, F_SETFL, O_NONBLOCK);
	s->ev = event_new(a->base, s->rd, EV_READ | EV_PERSIST, on_result, a);
	if (s->ev == NULL || event_add(s->ev, NULL) < 0) {
		if (s->ev != NULL) {
			event_free(s->ev);
		}
		close(s->rd);
		close(s->wr);
		free(s);
		return -ENOMEM;
	}
	a->stacks = s;
	return 0;
}

int
wr_agent_stack(struct wr_agent *a, int rank)
{
	struct proc *p = wr_agent_find_rank(a, rank);
	struct stack_job *j;
	int rc = 0;

	if (p == NULL || !p->started || p->reaped) {
		answer(a, rank, -ESRCH, NULL);
		return 0;
	}
	if (wr_stacks_tool() == NULL) {
		answer(a, rank, -ENOENT, NULL);
		return 0;
	}
	if (a->stacks == NULL) {
		rc = stacks_open(a);
	}
	j = rc == 0 ? calloc(1, sizeof(*j)) : NULL;
	if (j == NULL) {
		answer(a, rank, rc < 0 ? rc : -ENOMEM, NULL);
		return 0;
	}
	*j = (struct stack_job){ .a = a, .rank = rank, .pid = p->pid,
				 .next = a->stacks->running };
	rc = -pthread_create(&j->thread, NULL, take, j);
	if (rc < 0) {
		free(j);
		answer(a, rank, rc, NULL);
		return 0;
	}
	a->stacks->running = j;
	return 0;
}

void
wr_agent_stacks_close(struct wr_agent *a)
{
	struct wr_agent_stacks *s = a->stacks;
	struct stack_job *j;

	if (s == NULL) {
		return;
	}
	/* Each thread ends within the tool's time; its pointer is its last
	 * word, read blocking now. */
	fcntl(s->rd, F_SETFL, 0);
	while (s->running != NULL) {
		if (read(s->rd, &j, sizeof(j)) != (ssize_t)sizeof(j)) {
			j = s->running;
		}
		reap(s, j);
	}
	event_free(s->ev);
	close(s->rd);
	close(s->wr);
	free(s);
	a->stacks = NULL;
}
