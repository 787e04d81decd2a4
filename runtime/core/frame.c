/* SPDX-License-Identifier: MIT */
#include "frame.h"

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "clock.h"
#include "jsonout.h"
#include "world_errors.h"

static const struct wr_frame_limits defaults = {
	.json_max = WR_FRAME_JSON_MAX, .blob_max = WR_FRAME_BLOB_MAX,
};

int
wr_frame_size_parse(const char *s, size_t lo, size_t hi, size_t *out)
{
	char *end;
	unsigned long long v;
	int shift = 0;

	if (s == NULL || s[0] == '\0') {
		return 0;
	}
	errno = 0;
	v = strtoull(s, &end, 10);
	if (end == s || s[0] == '-' || errno != 0) {
		return -EINVAL;
	}
	shift = *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 0;
	end += shift != 0;
	if (*end != '\0' || v > (hi >> shift) || (v << shift) < lo) {
		return -EINVAL;
	}
	*out = (size_t)(v << shift);
	return 0;
}

int
wr_frame_limits_parse(struct wr_frame_limits *lim, const char *msg_max,
		      const char *blob_max, const char **bad)
{
	*lim = defaults;
	*bad = NULL;
	if (wr_frame_size_parse(msg_max, (size_t)4 << 10, (size_t)1 << 30, &lim->json_max) < 0) {
		*bad = "WORLD_MSG_MAX";
	} else if (wr_frame_size_parse(blob_max, 0, (size_t)1 << 40, &lim->blob_max) < 0) {
		*bad = "WORLD_BLOB_MAX";
	}
	return *bad != NULL ? -EINVAL : 0;
}

void
wr_frame_reader_init(struct wr_frame_reader *r, const struct wr_frame_limits *lim)
{
	*r = (struct wr_frame_reader){ .lim = lim != NULL ? *lim : defaults };
}

void
wr_frame_reader_finish(struct wr_frame_reader *r)
{
	if (r == NULL) {
		return;
	}
	json_decref(r->msg);
	free(r->blob);
	r->msg = NULL;
	r->blob = NULL;
}

/* The blob length a message announces: 0 if none, -1 if it is bad. */
static int64_t
blob_field(const json_t *msg, size_t max)
{
	const json_t *b = json_object_get(msg, "blob");

	if (b == NULL) {
		return 0;
	}
	if (!json_is_integer(b) || json_integer_value(b) < 0 ||
	    (uint64_t)json_integer_value(b) > max) {
		return -1;
	}
	return json_integer_value(b);
}

/* Parse the JSON part of the next frame into r->msg. 1, 0 or an error. */
static int
read_json(struct wr_frame_reader *r, struct evbuffer *in)
{
	unsigned char hdr[4];
	json_error_t jerr;
	unsigned char *p;
	uint32_t len;
	int64_t blob;

	if (evbuffer_copyout(in, hdr, sizeof(hdr)) < (ev_ssize_t)sizeof(hdr)) {
		return 0;
	}
	len = (uint32_t)hdr[0] << 24 | (uint32_t)hdr[1] << 16 |
	      (uint32_t)hdr[2] << 8 | (uint32_t)hdr[3];
	if (len == 0 || len > r->lim.json_max) {
		return WORLD_EFRAME;
	}
	if (evbuffer_get_length(in) < sizeof(hdr) + len) {
		return 0;
	}
	p = evbuffer_pullup(in, (ev_ssize_t)(sizeof(hdr) + len));
	if (p == NULL) {
		return -ENOMEM;
	}
	r->msg = json_loadb((const char *)p + sizeof(hdr), len,
			    JSON_REJECT_DUPLICATES, &jerr);
	evbuffer_drain(in, sizeof(hdr) + len);
	if (r->msg == NULL) {
		return WORLD_EFRAME;
	}
	blob = json_is_object(r->msg) ? blob_field(r->msg, r->lim.blob_max) : -1;
	if (blob < 0) {
		json_decref(r->msg);
		r->msg = NULL;
		return WORLD_EPROTO;
	}
	r->blob_len = (size_t)blob;
	r->blob_have = 0;
	if (blob > 0) {
		r->blob = malloc(r->blob_len);
		if (r->blob == NULL) {
			json_decref(r->msg);
			r->msg = NULL;
			return -ENOMEM;
		}
	}
	return 1;
}

int
wr_frame_read(struct wr_frame_reader *r, struct evbuffer *in, json_t **msg,
	      void **blob, size_t *blob_len)
{
	int rc;

	*msg = NULL;
	*blob = NULL;
	*blob_len = 0;
	if (r->msg == NULL) {
		rc = read_json(r, in);
		if (rc <= 0) {
			return rc;
		}
	}
	if (r->blob_have < r->blob_len) {
		int n = evbuffer_remove(in, r->blob + r->blob_have,
					r->blob_len - r->blob_have);

		r->blob_have += n > 0 ? (size_t)n : 0;
		if (r->blob_have < r->blob_len) {
			return 0;
		}
	}
	*msg = r->msg;
	*blob = r->blob;
	*blob_len = r->blob_len;
	r->msg = NULL;
	r->blob = NULL;
	r->blob_len = 0;
	return 1;
}

ssize_t
wr_frame_recv(struct wr_frame_reader *r, struct evbuffer *in, int fd)
{
	struct evbuffer_iovec v;
	ssize_t n;

	if (r->msg != NULL && r->blob_have < r->blob_len &&
	    evbuffer_get_length(in) == 0) {
		n = read(fd, r->blob + r->blob_have, r->blob_len - r->blob_have);
		if (n > 0) {
			r->blob_have += (size_t)n;
		}
		return n < 0 ? -errno : n;
	}
	/*
	 * 16 KiB less libevent's chain header: one allocation of 16 KiB. A
	 * larger chain, freed once drained after every request, would cost
	 * the allocator a consolidation each time; a blob bypasses it anyway.
	 */
	if (evbuffer_reserve_space(in, (1 << 14) - 256, &v, 1) < 1) {
		return -ENOMEM;
	}
	n = read(fd, v.iov_base, v.iov_len);
	if (n < 0) {
		n = -errno;
		v.iov_len = 0;
	} else {
		v.iov_len = (size_t)n;
	}
	evbuffer_commit_space(in, &v, 1);
	return n;
}

static int
append(const char *buf, size_t size, void *data)
{
	return evbuffer_add(data, buf, size);
}

ssize_t
wr_frame_send(struct evbuffer *out, int fd)
{
	struct evbuffer_iovec v[64];
	struct iovec iov[64];
	struct msghdr mh = { .msg_iov = iov };
	int n = evbuffer_peek(out, -1, NULL, v, 64);
	ssize_t sent;

	for (int i = 0; i < n && i < 64; i++) {
		iov[i] = (struct iovec){ v[i].iov_base, v[i].iov_len };
	}
	mh.msg_iovlen = (size_t)(n < 64 ? n : 64);
	sent = sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (sent < 0) {
		return -errno;
	}
	evbuffer_drain(out, (size_t)sent);
	return sent;
}

static void
put_length(unsigned char *hdr, size_t len)
{
	hdr[0] = (unsigned char)(len >> 24);
	hdr[1] = (unsigned char)(len >> 16);
	hdr[2] = (unsigned char)(len >> 8);
	hdr[3] = (unsigned char)len;
}

/* A large JSON part: dumped straight into a buffer chain, which then
 * moves onto @out without a copy. */
static int
write_large(struct evbuffer *out, const struct wr_frame_limits *lim, json_t *msg)
{
	struct evbuffer *tmp = evbuffer_new();
	unsigned char hdr[4];
	int rc = -ENOMEM;

	if (tmp != NULL && json_dump_callback(msg, append, tmp, JSON_COMPACT) == 0) {
		rc = evbuffer_get_length(tmp) > lim->json_max ? WORLD_EFRAME : 0;
	}
	if (rc == 0) {
		put_length(hdr, evbuffer_get_length(tmp));
		rc = evbuffer_prepend(tmp, hdr, sizeof(hdr)) < 0 ||
		     evbuffer_add_buffer(out, tmp) < 0 ? -ENOMEM : 0;
	}
	if (tmp != NULL) {
		evbuffer_free(tmp);
	}
	return rc;
}

/*
 * A frame's length and JSON part, announcing @blob_len bytes, appended
 * to @out whole or not at all; 0 when done. Most messages are small: one
 * dump into a buffer on the stack and one append, the cheapest way for
 * the registry's round trips. With @inline_blob (at most 1 KiB, a key's
 * value mostly) the blob goes in the same piece: 1 when it did, 0 with
 * nothing appended when it all does not fit.
 */
static int
write_head(struct evbuffer *out, const struct wr_frame_limits *lim, json_t *msg,
	   size_t blob_len, const void *inline_blob)
{
	unsigned char small[4096];
	size_t len, extra = inline_blob != NULL ? blob_len : 0;

	if (blob_len > lim->blob_max) {
		return WORLD_EFRAME;
	}
	if (blob_len > 0) {
		if (json_object_set_new(msg, "blob", json_integer((json_int_t)blob_len)) < 0) {
			return -ENOMEM;
		}
	} else {
		json_object_del(msg, "blob");
	}
	len = wr_jsonout_dump(msg, (char *)small + 4, sizeof(small) - 4);
	if (len == 0) {
		len = json_dumpb(msg, (char *)small + 4, sizeof(small) - 4, JSON_COMPACT);
	}
	if (len == 0) {
		return -ENOMEM;
	}
	if (len + extra > sizeof(small) - 4) {
		return inline_blob != NULL ? 0 : write_large(out, lim, msg);
	}
	if (len > lim->json_max) {
		return WORLD_EFRAME;
	}
	put_length(small, len);
	if (extra > 0) {
		memcpy(small + 4 + len, inline_blob, extra);
	}
	if (evbuffer_add(out, small, 4 + len + extra) < 0) {
		return -ENOMEM;
	}
	return inline_blob != NULL;
}

static void
free_blob(const void *data, size_t len, void *extra)
{
	free((void *)data);
}

/*
 * Build the whole frame aside, then move it onto @out (chains move, bytes
 * are not copied), so that a failure appends nothing. @blob is copied,
 * or with @attach referenced and freed once written or on failure.
 */
static int
write_frame(struct evbuffer *out, const struct wr_frame_limits *lim, json_t *msg,
	    const void *blob, size_t blob_len, bool attach)
{
	struct evbuffer *tmp;
	int rc;

	lim = lim != NULL ? lim : &defaults;
	if (!attach && blob_len > 0 && blob_len <= 1024) {
		rc = write_head(out, lim, msg, blob_len, blob);
		if (rc != 0) {
			return rc < 0 ? rc : 0;
		}
	}
	if (blob_len == 0) {
		if (attach) {
			free((void *)blob);
		}
		return write_head(out, lim, msg, 0, NULL);
	}
	tmp = evbuffer_new();
	rc = tmp == NULL ? -ENOMEM : write_head(tmp, lim, msg, blob_len, NULL);
	if (rc == 0) {
		rc = attach ? evbuffer_add_reference(tmp, blob, blob_len, free_blob, NULL)
			    : evbuffer_add(tmp, blob, blob_len);
		if (rc == 0) {
			attach = false; /* the buffer owns it now */
		}
		rc = rc < 0 ? -ENOMEM : 0;
	}
	if (rc == 0 && evbuffer_add_buffer(out, tmp) < 0) {
		rc = -ENOMEM;
	}
	if (attach) {
		free((void *)blob);
	}
	if (tmp != NULL) {
		evbuffer_free(tmp);
	}
	return rc;
}

static void
release_ref(const void *data, size_t len, void *extra)
{
	struct wr_frame_ref *ref = extra;

	ref->release(ref->arg);
	free(ref);
}

/* @blob referenced through @ref (consumed, even on failure), or copied. */
static int
add_blob(struct evbuffer *tmp, const void *blob, size_t len,
	 const struct wr_frame_ref *ref)
{
	struct wr_frame_ref *r;

	if (ref == NULL) {
		return evbuffer_add(tmp, blob, len);
	}
	r = malloc(sizeof(*r));
	if (r != NULL) {
		*r = *ref;
		if (evbuffer_add_reference(tmp, blob, len, release_ref, r) == 0) {
			return 0;
		}
		free(r);
	}
	ref->release(ref->arg);
	return -1;
}

int
wr_frame_write_text_ref(struct evbuffer *out, const struct wr_frame_limits *lim,
			const char *json, size_t json_len, const void *blob,
			size_t blob_len, const struct wr_frame_ref *ref)
{
	unsigned char small[4096], hdr[4];
	struct evbuffer *tmp = NULL;
	int rc = -ENOMEM;

	lim = lim != NULL ? lim : &defaults;
	if (json_len == 0 || json_len > lim->json_max || blob_len > lim->blob_max) {
		rc = WORLD_EFRAME;
		goto done;
	}
	if (json_len + blob_len <= sizeof(small) - 4) {
		put_length(small, json_len);
		memcpy(small + 4, json, json_len);
		if (blob_len > 0) {
			memcpy(small + 4 + json_len, blob, blob_len);
		}
		rc = evbuffer_add(out, small, 4 + json_len + blob_len) < 0 ? -ENOMEM : 0;
		goto done;
	}
	put_length(hdr, json_len);
	tmp = evbuffer_new();
	if (tmp != NULL && evbuffer_add(tmp, hdr, sizeof(hdr)) == 0 &&
	    evbuffer_add(tmp, json, json_len) == 0) {
		rc = add_blob(tmp, blob, blob_len, ref) == 0 &&
		     evbuffer_add_buffer(out, tmp) == 0 ? 0 : -ENOMEM;
		ref = NULL; /* add_blob() took it */
	}
done:
	if (tmp != NULL) {
		evbuffer_free(tmp);
	}
	if (ref != NULL) {
		ref->release(ref->arg);
	}
	return rc;
}

int
wr_frame_write_text(struct evbuffer *out, const struct wr_frame_limits *lim,
		    const char *json, size_t json_len, const void *blob, size_t blob_len)
{
	return wr_frame_write_text_ref(out, lim, json, json_len, blob, blob_len, NULL);
}

int
wr_frame_write(struct evbuffer *out, const struct wr_frame_limits *lim,
	       json_t *msg, const void *blob, size_t blob_len)
{
	return write_frame(out, lim, msg, blob, blob_len, false);
}

int
wr_frame_write_attach(struct evbuffer *out, const struct wr_frame_limits *lim,
		      json_t *msg, void *blob, size_t blob_len)
{
	return write_frame(out, lim, msg, blob, blob_len, true);
}

int
wr_frame_flush(struct bufferevent *bev, double seconds)
{
	struct evbuffer *out = bufferevent_get_output(bev);
	int fd = bufferevent_getfd(bev);
	double end = wr_clock_mono() + seconds;
	int rc = 0;

	/* A bufferevent keeps its output's start frozen between its own
	 * callbacks: a write from outside them must thaw it. */
	evbuffer_unfreeze(out, 1);
	while (rc == 0 && evbuffer_get_length(out) > 0) {
		struct pollfd p = { .fd = fd, .events = POLLOUT };
		int left = (int)((end - wr_clock_mono()) * 1e3);
		int n = left > 0 ? poll(&p, 1, left) : 0;

		if (n == 0) {
			rc = -ETIMEDOUT;
		} else if (n < 0 && errno != EINTR) {
			rc = -errno;
		} else if (n > 0 && evbuffer_write(out, fd) <= 0 && errno != EAGAIN &&
			   errno != EINTR) {
			rc = -errno;
		}
	}
	evbuffer_freeze(out, 1);
	return rc;
}
