/* SPDX-License-Identifier: MIT */
#include "client.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "fuzz.h"

void
fuzz_check_answer(json_t *msg)
{
	json_t *err = json_object_get(msg, "error");
	const char *name, *message;
	json_int_t code = 0;

	FUZZ_CHECK(json_is_integer(json_object_get(msg, "id")));
	if (err == NULL) {
		FUZZ_CHECK(json_is_object(json_object_get(msg, "result")));
		return;
	}
	FUZZ_CHECK(json_unpack(err, "{s:I, s:s, s:s}", "code", &code, "name", &name,
			       "message", &message) == 0);
	FUZZ_CHECK(code < 0 && name[0] != '\0' && message[0] != '\0');
	FUZZ_CHECK(json_object_get(msg, "result") == NULL);
}

size_t
fuzz_split(const uint8_t *data, size_t size, size_t *begin, size_t *mid)
{
	size_t n = 0;

	*begin = 1;
	*mid = size;
	if (!(data[0] & 16) || size < 3) {
		return 1;
	}
	n = (size_t)data[1] << 8 | data[2];
	*begin = 3;
	*mid = n < size - 3 ? 3 + n : size;
	return 2;
}

/* Note the id of every whole frame in c->out, as the server reads them. */
static void
note_requests(struct fuzz_client *c)
{
	struct evbuffer *b = evbuffer_new();
	struct wr_frame_reader r;
	json_t *msg;
	void *blob;
	size_t blen;

	FUZZ_CHECK(b != NULL);
	if (evbuffer_get_length(c->out) > 0) {
		evbuffer_add(b, evbuffer_pullup(c->out, -1), evbuffer_get_length(c->out));
	}
	wr_frame_reader_init(&r, &c->reader.lim);
	while (wr_frame_read(&r, b, &msg, &blob, &blen) == 1) {
		json_t *id = json_object_get(msg, "id");

		c->ids = realloc(c->ids, (c->nids + 2) * sizeof(*c->ids));
		FUZZ_CHECK(c->ids != NULL);
		c->ids[c->nids++] = json_is_integer(id) ? json_integer_value(id) : -1;
		json_decref(msg);
		free(blob);
	}
	c->requests = c->nids;
	c->ids = realloc(c->ids, (c->nids + 1) * sizeof(*c->ids));
	FUZZ_CHECK(c->ids != NULL);
	c->ids[c->nids++] = -1;
	wr_frame_reader_finish(&r);
	evbuffer_free(b);
}

/* Strike off the request @answer answers. */
static void
strike(struct fuzz_client *c, json_t *answer)
{
	json_int_t id = json_integer_value(json_object_get(answer, "id"));

	for (size_t i = 0; i < c->nids; i++) {
		if (c->ids[i] == id) {
			c->ids[i] = c->ids[--c->nids];
			return;
		}
	}
	FUZZ_CHECK(!"an answer to no request, or a second one");
}

static void on_event(evutil_socket_t fd, short what, void *arg);

/* Everything is sent: only read from now on. */
static void
read_only(struct fuzz_client *c)
{
	c->sending = false;
	event_del(c->ev);
	event_assign(c->ev, c->base, c->fd, EV_READ | EV_PERSIST, on_event, c);
	event_add(c->ev, NULL);
}

static void
read_answers(struct fuzz_client *c)
{
	ssize_t n = wr_frame_recv(&c->reader, c->in, c->fd);
	json_t *msg;
	void *blob;
	size_t len;
	int rc;

	if (n == -EAGAIN) {
		return;
	}
	while ((rc = wr_frame_read(&c->reader, c->in, &msg, &blob, &len)) == 1) {
		c->check(msg);
		strike(c, msg);
		json_decref(msg);
		free(blob);
		c->answers++;
	}
	FUZZ_CHECK(rc == 0); /* a server writes only good frames */
	if (n <= 0) {
		/* Closed by the server, at the end or with a reset: no half frame. */
		FUZZ_CHECK(n == 0 || n == -ECONNRESET);
		FUZZ_CHECK(n < 0 || (evbuffer_get_length(c->in) == 0 &&
				     c->reader.msg == NULL));
		event_free(c->ev);
		c->ev = NULL;
		close(c->fd);
		c->fd = -1;
		--*c->open;
	}
}

static void
on_event(evutil_socket_t fd, short what, void *arg)
{
	struct fuzz_client *c = arg;

	if ((what & EV_WRITE) && c->sending) {
		ssize_t n = wr_frame_send(c->out, c->fd);

		if (n < 0 && n != -EAGAIN) {
			/* -EPIPE: the server stopped listening; it says why. */
			evbuffer_drain(c->out, evbuffer_get_length(c->out));
		}
		if (evbuffer_get_length(c->out) == 0) {
			read_only(c);
		}
	}
	if (what & EV_READ) {
		read_answers(c);
	}
	if (c->ev != NULL && !c->sending && !c->ended &&
	    (!c->wait_all || c->answers >= c->requests)) {
		shutdown(c->fd, SHUT_WR);
		c->ended = true;
	}
}

void
fuzz_client_init(struct fuzz_client *c, struct event_base *base,
		 const struct wr_frame_limits *lim, void (*check)(json_t *))
{
	*c = (struct fuzz_client){ .base = base, .fd = -1, .check = check };
	c->out = evbuffer_new();
	c->in = evbuffer_new();
	FUZZ_CHECK(c->out != NULL && c->in != NULL);
	wr_frame_reader_init(&c->reader, lim);
}

void
fuzz_client_start(struct fuzz_client *c, const char *path, int *open)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };

	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	FUZZ_CHECK(c->fd >= 0 && strlen(path) < sizeof(sun.sun_path));
	strcpy(sun.sun_path, path);
	FUZZ_CHECK(connect(c->fd, (struct sockaddr *)&sun, sizeof(sun)) == 0);
	c->ev = event_new(c->base, c->fd, EV_READ | EV_WRITE | EV_PERSIST, on_event, c);
	FUZZ_CHECK(c->ev != NULL && event_add(c->ev, NULL) == 0);
	c->sending = true;
	c->open = open;
	++*open;
	note_requests(c);
}

void
fuzz_client_finish(struct fuzz_client *c)
{
	if (c->ev != NULL) {
		event_free(c->ev);
	}
	if (c->fd >= 0) {
		close(c->fd);
	}
	wr_frame_reader_finish(&c->reader);
	free(c->ids);
	if (c->out != NULL) {
		evbuffer_free(c->out);
	}
	if (c->in != NULL) {
		evbuffer_free(c->in);
	}
}

void
fuzz_hello(struct evbuffer *out, const char *secret, int rank, const char *role)
{
	json_t *hello = json_pack("{s:s, s:i, s:s, s:i, s:s}", "op", "hello", "id", 0,
				  "secret", secret, "rank", rank, "role", role);

	FUZZ_CHECK(hello != NULL && wr_frame_write(out, NULL, hello, NULL, 0) == 0);
	json_decref(hello);
}

/* The one mutable static of a target: see fuzz_loop() in client.h. */
static struct {
	struct event_base *base;
	char dir[64];
} shared;

static void
remove_dir(void)
{
	rmdir(shared.dir);
}

static void
setup(void)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(shared.dir, sizeof(shared.dir), "%.40s/fuzz-XXXXXX",
		 tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp");
	FUZZ_CHECK(mkdtemp(shared.dir) != NULL);
	atexit(remove_dir);
	shared.base = event_base_new();
	FUZZ_CHECK(shared.base != NULL);
}

struct event_base *
fuzz_loop(void)
{
	if (shared.base == NULL) {
		setup();
	}
	return shared.base;
}

const char *
fuzz_dir(void)
{
	fuzz_loop();
	return shared.dir;
}
