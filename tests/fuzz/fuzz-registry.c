/* SPDX-License-Identifier: MIT */
/*
 * fuzz-registry: the registry's JSON front end (server.c, ops.c, kvops.c)
 * and its core, as worldrun serves them, on bytes from one or two clients.
 * Each input gets a fresh registry of 3 ranks and a server listening in a
 * private directory; the clients connect to its Unix socket, send their
 * bytes, end their side and read every answer until the server closes.
 * Every answer must be a frame within the limits, {id, result} or {id,
 * error: {code, name, message}}; the server must close each connection
 * (a hang is a finding), and everything must be freed.
 *
 * Input: one byte of settings (bits 0-1 and 2-3: what the harness says
 * first on client 0 and 1: nothing, hello as the client's own rank, hello
 * as a tool for it, or hello with a wrong secret; bit 4: a second
 * client), then with a second client two bytes (big-endian) of how many
 * of the rest go to client 0, then the clients' bytes.
 */
#include <errno.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/event.h>

#include "core.h"
#include "frame.h"
#include "fuzz.h"
#include "server.h"
#include "world.h"

#define NRANKS 3
#define NCLIENTS 2
#define SECRET "fuzz-secret" /* seeds.py writes it into the seeds */

static const struct wr_frame_limits limits = { .json_max = 4096,
					       .blob_max = 64 << 10 };

/*
 * The one mutable static: libFuzzer calls with no context, and making an
 * event loop and a directory per input would cost more than the input.
 */
static struct {
	struct event_base *base;
	char dir[64];
} fz;

struct client {
	int fd;
	struct event *ev;
	struct evbuffer *out, *in;
	struct wr_frame_reader reader;
	bool writing;
	int *open;
};

/* An answer is {id, result: {...}} or {id, error: {code, name, message}}. */
static void
check_answer(json_t *msg)
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

static void
client_end(struct client *c)
{
	event_free(c->ev);
	c->ev = NULL;
	close(c->fd);
	c->fd = -1;
	--*c->open;
}

static void
on_client(evutil_socket_t fd, short what, void *arg)
{
	struct client *c = arg;
	ssize_t n;
	json_t *msg;
	void *blob;
	size_t len;
	int rc;

	if ((what & EV_WRITE) && c->writing) {
		n = wr_frame_send(c->out, c->fd);
		if (evbuffer_get_length(c->out) == 0 || (n < 0 && n != -EAGAIN)) {
			/* All said, or the server stopped listening (-EPIPE). */
			shutdown(c->fd, SHUT_WR);
			c->writing = false;
			event_del(c->ev);
			event_assign(c->ev, fz.base, c->fd, EV_READ | EV_PERSIST,
				     on_client, c);
			event_add(c->ev, NULL);
		}
	}
	if (!(what & EV_READ)) {
		return;
	}
	n = wr_frame_recv(&c->reader, c->in, c->fd);
	if (n == -EAGAIN) {
		return;
	}
	while ((rc = wr_frame_read(&c->reader, c->in, &msg, &blob, &len)) == 1) {
		check_answer(msg);
		json_decref(msg);
		free(blob);
	}
	FUZZ_CHECK(rc == 0); /* the server writes only good frames */
	if (n <= 0) {
		/* Closed by the server, at the end or after a reset: no half frame. */
		FUZZ_CHECK(n == 0 || n == -ECONNRESET);
		FUZZ_CHECK(n < 0 || (evbuffer_get_length(c->in) == 0 &&
				     c->reader.msg == NULL));
		client_end(c);
	}
}

/* What the harness says first: @how 1 hello as @rank, 2 as a tool, 3 with a
 * wrong secret. */
static void
prelude(struct evbuffer *out, int how, int rank)
{
	json_t *hello;

	if (how == 0) {
		return;
	}
	hello = json_pack("{s:s, s:i, s:s, s:i, s:s}", "op", "hello", "id", 0,
			  "secret", how == 3 ? "wrong" : SECRET, "rank", rank,
			  "role", how == 2 ? "tool" : "rank");
	FUZZ_CHECK(hello != NULL && wr_frame_write(out, NULL, hello, NULL, 0) == 0);
	json_decref(hello);
}

static void
client_open(struct client *c, const char *path, int *open)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };

	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	FUZZ_CHECK(c->fd >= 0 && strlen(path) < sizeof(sun.sun_path));
	strcpy(sun.sun_path, path);
	FUZZ_CHECK(connect(c->fd, (struct sockaddr *)&sun, sizeof(sun)) == 0);
	c->ev = event_new(fz.base, c->fd, EV_READ | EV_WRITE | EV_PERSIST,
			  on_client, c);
	FUZZ_CHECK(c->ev != NULL && event_add(c->ev, NULL) == 0);
	c->writing = true;
	c->open = open;
	++*open;
}

static void
rank_lost(void *arg, int rank, const char *why)
{
	wr_reg_rank_dead(arg, rank); /* as worldrun does */
}

static void
remove_dir(void)
{
	rmdir(fz.dir);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(fz.dir, sizeof(fz.dir), "%.40s/fuzz-registry-XXXXXX",
		 tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp");
	FUZZ_CHECK(mkdtemp(fz.dir) != NULL);
	atexit(remove_dir);
	fz.base = event_base_new();
	FUZZ_CHECK(fz.base != NULL);
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct client c[NCLIENTS] = { 0 };
	struct wr_reg *reg = wr_reg_create(NRANKS);
	struct wr_regsrv_cfg cfg = {
		.base = fz.base, .reg = reg, .jobid = "fuzz", .secret = SECRET,
		.dir = fz.dir, .hello_timeout = 60, .lease_timeout = 0,
		.wait_default = 60, .limits = limits, .rank_lost = rank_lost,
		.arg = reg,
	};
	struct wr_regsrv *srv = NULL;
	size_t at = 1, split = size, nclients;
	int open = 0;

	if (size == 0) {
		wr_reg_destroy(reg);
		return 0;
	}
	nclients = data[0] & 16 ? 2 : 1;
	if (nclients == 2 && size >= 3) {
		split = (size_t)data[1] << 8 | data[2];
		at = 3;
		split = at + split < size ? at + split : size;
	}
	FUZZ_CHECK(reg != NULL && wr_regsrv_open(&cfg, &srv) == 0);
	for (size_t i = 0; i < nclients; i++) {
		size_t from = i == 0 ? at : split, to = i == 0 ? split : size;

		c[i].out = evbuffer_new();
		c[i].in = evbuffer_new();
		FUZZ_CHECK(c[i].out != NULL && c[i].in != NULL);
		wr_frame_reader_init(&c[i].reader, &limits);
		prelude(c[i].out, (data[0] >> (2 * i)) & 3, (int)i);
		evbuffer_add(c[i].out, data + from, to - from);
		client_open(&c[i], wr_regsrv_socket(srv), &open);
	}
	while (open > 0) {
		event_base_loop(fz.base, EVLOOP_ONCE);
	}
	wr_regsrv_close(srv);
	wr_reg_destroy(reg);
	for (size_t i = 0; i < nclients; i++) {
		wr_frame_reader_finish(&c[i].reader);
		evbuffer_free(c[i].out);
		evbuffer_free(c[i].in);
	}
	return 0;
}
