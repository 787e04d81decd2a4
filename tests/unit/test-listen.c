/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for listen's gate: one stranger more than it holds pushes
 * the oldest stranger out at once, never one of the job's own, and never
 * pauses the listeners; the job's own that fill it pause them, and the
 * oldest go once their grace is over, never a stranger; whoever stays
 * past the timeout goes; one that left is never dropped.
 */
#include "listen.h"
#include "tap.h"

#define N 16

struct conn {
	struct wr_gate_entry e; /* first: drop() gets its address */
	int id;
	bool dropped;
};

static struct conn conns[N];
static struct wr_listeners listen_l;
static int order[N], ndropped;

static void
drop(struct wr_gate_entry *e, void *arg)
{
	struct conn *c = (struct conn *)(void *)e;

	c->dropped = true;
	order[ndropped++] = c->id;
}

static void
reset(void)
{
	for (int i = 0; i < N; i++) {
		conns[i] = (struct conn){ .id = i };
	}
	ndropped = 0;
}

/* The ids dropped so far, as "0,3", or "-". */
static const char *
dropped(void)
{
	static char buf[128];
	size_t n = 0;

	buf[0] = '\0';
	for (int i = 0; i < ndropped; i++) {
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%d", i ? "," : "", order[i]);
	}
	return ndropped > 0 ? buf : "-";
}

/* Run the loop for @s seconds. */
static void
run_for(struct event_base *base, double s)
{
	struct timeval tv = { (time_t)s, (suseconds_t)((s - (double)(time_t)s) * 1e6) };

	event_base_loopexit(base, &tv);
	event_base_dispatch(base);
}

static void
test_strangers(struct event_base *base)
{
	struct wr_gate g;

	reset();
	wr_gate_init(&g, &listen_l, 3, 60, drop, NULL);
	wr_gate_enter(&g, &conns[0].e, true);
	for (int i = 1; i <= 3; i++) {
		wr_gate_enter(&g, &conns[i].e, false);
	}
	is_str(dropped(), "-", "3 strangers and one of the job's own: nobody pushed out");
	wr_gate_enter(&g, &conns[4].e, false);
	is_str(dropped(), "1", "a 4th stranger pushes the oldest stranger out at once, "
	       "not the older connection of the job's own");
	is_int(g.strangers, 3, "3 strangers in the gate");
	ok(!listen_l.gate_full, "strangers that fill the gate pause nothing");
	wr_gate_leave(&g, &conns[2].e);
	wr_gate_enter(&g, &conns[5].e, false);
	is_str(dropped(), "1", "a stranger that left made room: nobody pushed out");
	wr_gate_enter(&g, &conns[6].e, false);
	is_str(dropped(), "1,3", "the next pushes out the oldest stranger still there");
	for (int i = 7; i < 10; i++) {
		wr_gate_enter(&g, &conns[i].e, true);
	}
	is_str(dropped(), "1,3", "the job's own are not pushed out at once, nor push "
	       "a stranger out");
	is_int(g.ours, 4, "4 of the job's own in the gate");
	wr_gate_finish(&g);
}

static void
test_ours(struct event_base *base)
{
	struct wr_gate g;

	reset();
	wr_gate_init(&g, &listen_l, 2, 60, drop, NULL);
	wr_gate_enter(&g, &conns[0].e, false);
	for (int i = 1; i <= 4; i++) {
		wr_gate_enter(&g, &conns[i].e, true);
	}
	is_str(dropped(), "-", "4 of the job's own where 2 fit: nobody pushed out before "
	       "the grace");
	ok(listen_l.gate_full, "the job's own that fill the gate pause accepting");
	run_for(base, WR_GATE_GRACE * 4);
	is_str(dropped(), "1,2,3", "after the grace the oldest of the job's own went, "
	       "oldest first, until the gate had room, and the older stranger stayed");
	is_int(g.ours, 1, "1 of the job's own left");
	ok(!listen_l.gate_full, "accepting goes on");
	is_int(g.strangers, 1, "the stranger still in the gate");
	wr_gate_finish(&g);
}

static void
test_timeout(struct event_base *base)
{
	struct wr_gate g;

	reset();
	wr_gate_init(&g, &listen_l, 4, 0.05, drop, NULL);
	wr_gate_enter(&g, &conns[0].e, false);
	wr_gate_enter(&g, &conns[1].e, true);
	wr_gate_enter(&g, &conns[2].e, false);
	wr_gate_leave(&g, &conns[1].e);
	run_for(base, 1);
	is_str(dropped(), "0,2", "past the timeout each that stayed goes; the one that "
	       "left does not");
	ok(g.head == NULL && g.ours == 0 && g.strangers == 0, "the gate is empty");
	wr_gate_leave(&g, &conns[0].e);
	is_int(g.strangers, 0, "leaving after a drop changes nothing");
	wr_gate_finish(&g);
}

int
main(void)
{
	struct event_base *base = event_base_new();

	listen_l.base = base;
	plan(17);
	test_strangers(base);
	test_ours(base);
	test_timeout(base);
	event_base_free(base);
	return done_testing();
}
