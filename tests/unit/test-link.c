/* SPDX-License-Identifier: MIT */
/*
 * link: frames both ways over a socketpair on one event loop; a 16 MiB
 * blob read straight into its buffer and sent by reference; several
 * answers of one turn in one write; a bad frame answered before closing;
 * end of file; closing from inside a callback; back-pressure, and requests
 * already read held back while answers pile up; a shared link that another
 * thread sends on, a long blob's rest left to the loop, and closed by its
 * owner from a lost() that a poke brought.
 */
#include <errno.h>
#include <stddef.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "link.h"
#include "tap.h"
#include "world_errors.h"

struct side {
	struct wr_link *l;
	int frames;
	int lost_rc[4];
	int lost;
	size_t last_len;
	unsigned char *last_blob;
	json_int_t last_id;
	bool echo;          /* answer every frame with its id */
	size_t echo_blob;   /* and a blob of this many bytes */
	bool close_in_frame;
	bool answer_bad;    /* on a bad frame: answer, then shut down */
	struct event_base *base;
};

static void
on_frame(struct wr_link *l, json_t *msg, void *blob, size_t len, void *arg)
{
	struct side *s = arg;

	s->frames++;
	s->last_id = json_integer_value(json_object_get(msg, "id"));
	free(s->last_blob);
	s->last_blob = blob;
	s->last_len = len;
	if (s->echo) {
		json_t *a = json_pack("{s:I}", "id", s->last_id);
		void *b = s->echo_blob > 0 ? calloc(1, s->echo_blob) : NULL;

		wr_link_send_attach(l, a, b, s->echo_blob);
		json_decref(a);
	}
	json_decref(msg);
	if (s->close_in_frame) {
		wr_link_close(l);
		s->l = NULL;
	}
}

static void
on_lost(struct wr_link *l, int rc, void *arg)
{
	struct side *s = arg;

	if (s->lost < 4) {
		s->lost_rc[s->lost] = rc;
	}
	s->lost++;
	if (s->answer_bad && rc < 0 && rc != -ECONNRESET && rc != -EPIPE) {
		json_t *a = json_pack("{s:i}", "id", -1);

		wr_link_send(l, a, NULL, 0);
		json_decref(a);
		wr_link_shutdown(l);
		return;
	}
	wr_link_close(l);
	s->l = NULL;
}

static int
open_side(struct event_base *base, int fd, struct side *s, size_t out_high)
{
	struct wr_link_cfg cfg = {
		.base = base, .out_high = out_high, .frame = on_frame,
		.lost = on_lost, .arg = s,
	};

	s->base = base;
	return wr_link_open(&cfg, fd, &s->l);
}

/* Run the loop until *@count reaches @want, at most 1200 turns of 50 ms:
 * a minute, for a machine busy with other suites (10 s was too short). */
static void
run_until(struct event_base *base, const int *count, int want)
{
	struct timeval tv = { 0, 50000 };

	for (int i = 0; i < 1200 && *count < want; i++) {
		event_base_loopexit(base, &tv);
		event_base_loop(base, EVLOOP_ONCE);
	}
}

static void
test_both_ways(struct event_base *base)
{
	struct side a = { 0 }, b = { .echo = true };
	int sv[2];
	size_t big = 16u << 20;
	unsigned char *blob = malloc(big);
	bool same;

	socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv);
	open_side(base, sv[0], &a, 0);
	open_side(base, sv[1], &b, 0);
	for (size_t i = 0; i < big; i++) {
		blob[i] = (unsigned char)(i * 7 + i / 4096);
	}
	for (int id = 1; id <= 3; id++) {
		json_t *m = json_pack("{s:s, s:i}", "op", "x", "id", id);

		wr_link_send(a.l, m, NULL, 0);
		json_decref(m);
	}
	run_until(base, &a.frames, 3);
	is_int(b.frames, 3, "three frames arrive");
	is_int(a.frames, 3, "three answers come back");
	is_int(a.last_id, 3, "in order");

	json_t *m = json_pack("{s:s, s:i}", "op", "blob", "id", 9);
	unsigned char *copy = malloc(big);

	memcpy(copy, blob, big);
	is_int(wr_link_send_attach(a.l, m, copy, big), 0, "a 16 MiB blob is queued by reference");
	json_decref(m);
	run_until(base, &a.frames, 4);
	is_int((long long)b.last_len, (long long)big, "the blob arrives whole");
	same = b.last_blob != NULL && memcmp(b.last_blob, blob, big) == 0;
	ok(same, "byte for byte");
	is_int(a.frames, 4, "and is answered");

	wr_link_close(a.l);
	run_until(base, &b.lost, 1);
	is_int(b.lost, 1, "the other side sees end of file");
	is_int(b.lost_rc[0], 0, "as 0");
	free(a.last_blob);
	free(b.last_blob);
	free(blob);
}

static void
test_bad_frame(struct event_base *base)
{
	struct side b = { .answer_bad = true };
	int sv[2];
	unsigned char junk[] = { 0, 0, 0, 3, 'x', 'y', 'z' };
	unsigned char buf[256];
	ssize_t n;

	socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv);
	open_side(base, sv[1], &b, 0);
	ok(write(sv[0], junk, sizeof(junk)) == (ssize_t)sizeof(junk), "junk written");
	run_until(base, &b.lost, 2);
	is_int(b.lost, 2, "a bad frame, then the end once the answer is out");
	is_int(b.lost_rc[0], WORLD_EFRAME, "first WORLD_EFRAME");
	is_int(b.lost_rc[1], 0, "then 0");
	n = read(sv[0], buf, sizeof(buf));
	ok(n > 4 && memmem(buf, (size_t)n, "\"id\":-1", 7) != NULL,
	   "the answer reached the peer before the close");
	n = read(sv[0], buf, sizeof(buf));
	is_int(n, 0, "then end of file");
	close(sv[0]);
}

static void
test_close_in_callback(struct event_base *base)
{
	struct side b = { .close_in_frame = true };
	int sv[2];
	char two[64];
	int len = 0;

	socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv);
	open_side(base, sv[1], &b, 0);
	/* Two frames in one write: the second must not reach a closed link. */
	for (int i = 0; i < 2; i++) {
		const char *j = "{\"id\":1}";

		two[len++] = 0;
		two[len++] = 0;
		two[len++] = 0;
		two[len++] = (char)strlen(j);
		memcpy(two + len, j, strlen(j));
		len += (int)strlen(j);
	}
	ok(write(sv[0], two, (size_t)len) == len, "two frames written at once");
	run_until(base, &b.frames, 1);
	event_base_loop(base, EVLOOP_NONBLOCK);
	is_int(b.frames, 1, "closing in the first frame's callback stops delivery");
	is_int(b.lost, 0, "and no loss is reported after a close");
	close(sv[0]);
	free(b.last_blob);
}

static void
test_back_pressure(struct event_base *base)
{
	struct side b = { .echo = true };
	int sv[2];
	int sent = 0, got;
	char req[32];

	socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv);
	open_side(base, sv[1], &b, 4096);
	/* A peer that sends requests and never reads the answers. */
	for (int i = 0; i < 20000; i++) {
		int n = snprintf(req + 4, sizeof(req) - 4, "{\"id\":%d}", i);

		req[0] = req[1] = req[2] = 0;
		req[3] = (char)n;
		if (send(sv[0], req, (size_t)n + 4, MSG_DONTWAIT) < 0) {
			break;
		}
		sent++;
		event_base_loop(base, EVLOOP_NONBLOCK);
	}
	got = b.frames;
	ok(got < sent, "reading stops while answers pile up (%d of %d read)", got, sent);
	ok(got > 0, "after some were served");
	wr_link_close(b.l);
	close(sv[0]);
	free(b.last_blob);
}

/* Reads what the link sent on @fd, without waiting: the answers it holds. */
static int
drain_answers(int fd, size_t answer)
{
	static unsigned char buf[1 << 16];
	static size_t total;
	ssize_t n;

	while ((n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0) {
		total += (size_t)n;
	}
	return (int)(total / answer);
}

static void
test_requests_held_back(struct event_base *base)
{
	struct side b = { .echo = true, .echo_blob = 65536 };
	size_t answer = 4 + strlen("{\"id\":100,\"blob\":65536}") + 65536;
	char reqs[200 * 16];
	size_t at = 0;
	int sv[2], answered = 0;

	socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv);
	open_side(base, sv[1], &b, 4096);
	/* 200 requests in one write, each asking for a 64 KiB answer. */
	for (int i = 100; i < 300; i++) {
		int n = snprintf(reqs + at + 4, sizeof(reqs) - at - 4, "{\"id\":%d}", i);

		reqs[at] = reqs[at + 1] = reqs[at + 2] = 0;
		reqs[at + 3] = (char)n;
		at += (size_t)n + 4;
	}
	send(sv[0], reqs, at, 0);
	for (int i = 0; i < 50; i++) {
		event_base_loop(base, EVLOOP_NONBLOCK);
	}
	ok(b.frames < 200, "requests that came in one read wait while answers "
	   "pile up (%d of 200 handled)", b.frames);
	for (int i = 0; i < 2000 && answered < 200; i++) {
		answered = drain_answers(sv[0], answer);
		event_base_loop(base, EVLOOP_NONBLOCK);
	}
	is_int(b.frames, 200, "once the peer reads, every request is handled");
	is_int(answered, 200, "and answered");
	wr_link_close(b.l);
	close(sv[0]);
	free(b.last_blob);
}

struct shared {
	pthread_mutex_t mu;
	int kick_fd;
	struct side a;
	unsigned char *blob;
	size_t big;
	int sent;
};

/* The link's argument is the side; the side sits in the shared state. */
static void
kick(void *arg)
{
	struct shared *sh = (struct shared *)((char *)arg - offsetof(struct shared, a));
	uint64_t one = 1;

	if (write(sh->kick_fd, &one, sizeof(one)) < 0) {
		/* a wake is pending already */
	}
}

static void
on_kick(evutil_socket_t fd, short what, void *arg)
{
	struct shared *sh = arg;
	uint64_t n;

	if (read(fd, &n, sizeof(n)) < 0) {
		return;
	}
	pthread_mutex_lock(&sh->mu);
	if (sh->a.l != NULL) {
		wr_link_poke(sh->a.l);
	}
	pthread_mutex_unlock(&sh->mu);
}

/* Another thread: 1000 frames, then a blob far bigger than the socket takes. */
static void *
sender(void *arg)
{
	struct shared *sh = arg;

	for (int id = 1; id <= 1001; id++) {
		json_t *m = json_pack("{s:i}", "id", id);
		unsigned char *copy = NULL;

		if (id == 1001) {
			copy = malloc(sh->big);
			memcpy(copy, sh->blob, sh->big);
		}
		pthread_mutex_lock(&sh->mu);
		sh->sent += wr_link_send_attach(sh->a.l, m, copy, copy != NULL ? sh->big : 0) == 0;
		pthread_mutex_unlock(&sh->mu);
		json_decref(m);
	}
	return NULL;
}

static void
test_shared(struct event_base *base)
{
	struct shared sh = { .mu = PTHREAD_MUTEX_INITIALIZER, .big = 4u << 20 };
	struct side b = { .echo = true };
	struct wr_link_cfg cfg = {
		.base = base, .frame = on_frame, .lost = on_lost, .arg = &sh.a,
		.mu = &sh.mu, .kick = kick,
	};
	struct event *ev;
	json_t *m;
	pthread_t t;
	int sv[2];

	socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv);
	sh.kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	ev = event_new(base, sh.kick_fd, EV_READ | EV_PERSIST, on_kick, &sh);
	event_add(ev, NULL);
	sh.blob = malloc(sh.big);
	for (size_t i = 0; i < sh.big; i++) {
		sh.blob[i] = (unsigned char)(i ^ (i >> 9));
	}
	sh.a.base = base;
	wr_link_open(&cfg, sv[0], &sh.a.l);
	open_side(base, sv[1], &b, 0);
	pthread_create(&t, NULL, sender, &sh);
	run_until(base, &sh.a.frames, 1001);
	pthread_join(t, NULL);
	is_int(sh.sent, 1001, "another thread queued 1001 frames on a shared link");
	is_int(sh.a.frames, 1001, "every one was answered");
	ok(b.last_len == sh.big && memcmp(b.last_blob, sh.blob, sh.big) == 0,
	   "the 4 MiB blob the socket could not take at once arrived whole");
	/* The peer is gone: a send must not raise SIGPIPE (its default kills). */
	wr_link_close(b.l);
	m = json_pack("{s:i}", "id", 0);
	pthread_mutex_lock(&sh.mu);
	wr_link_send(sh.a.l, m, NULL, 0);
	pthread_mutex_unlock(&sh.mu);
	json_decref(m);
	run_until(base, &sh.a.lost, 1);
	is_int(sh.a.lost, 1, "a send to a closed peer is a loss, not a SIGPIPE");
	pthread_mutex_lock(&sh.mu);
	wr_link_close(sh.a.l);
	pthread_mutex_unlock(&sh.mu);
	event_free(ev);
	close(sh.kick_fd);
	free(sh.blob);
	free(sh.a.last_blob);
	free(b.last_blob);
}

/*
 * A shared link shut down off the loop ends in wr_link_poke(), whose
 * lost(0) closes the link: poke must not touch it after that (it did,
 * and libworld's peer server crashed on a call before hello).
 */
static void
test_shared_shutdown(struct event_base *base)
{
	struct shared sh = { .mu = PTHREAD_MUTEX_INITIALIZER };
	struct side b = { 0 };
	struct wr_link_cfg cfg = {
		.base = base, .frame = on_frame, .lost = on_lost, .arg = &sh.a,
		.mu = &sh.mu, .kick = kick,
	};
	json_t *m = json_pack("{s:i}", "id", 7);
	struct event *ev;
	int sv[2];

	socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv);
	sh.kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	ev = event_new(base, sh.kick_fd, EV_READ | EV_PERSIST, on_kick, &sh);
	event_add(ev, NULL);
	sh.a.base = base;
	wr_link_open(&cfg, sv[0], &sh.a.l);
	open_side(base, sv[1], &b, 0);
	pthread_mutex_lock(&sh.mu);
	wr_link_send(sh.a.l, m, NULL, 0);
	wr_link_shutdown(sh.a.l);
	pthread_mutex_unlock(&sh.mu);
	json_decref(m);
	run_until(base, &b.lost, 1);
	ok(sh.a.lost == 1 && sh.a.lost_rc[0] == 0 && sh.a.l == NULL,
	   "shared shutdown: lost(0) from the poke, which closed the link");
	ok(b.frames == 1 && b.last_id == 7 && b.lost == 1 && b.lost_rc[0] == 0,
	   "shared shutdown: the peer got the answer, then end of file");
	event_free(ev);
	close(sh.kick_fd);
	free(b.last_blob);
}

int
main(void)
{
	struct event_base *base = event_base_new();

	plan(29);
	test_both_ways(base);
	test_bad_frame(base);
	test_close_in_callback(base);
	test_back_pressure(base);
	test_requests_held_back(base);
	test_shared(base);
	test_shared_shutdown(base);
	event_base_free(base);
	return done_testing();
}
