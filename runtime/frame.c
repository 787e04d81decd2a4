/* SPDX-License-Identifier: MIT */
#include "frame.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "world.h"

void
wr_frame_reader_init(struct wr_frame_reader *r, const struct wr_frame_limits *lim)
{
	*r = (struct wr_frame_reader){
		.lim = lim != NULL ? *lim : (struct wr_frame_limits){
			.json_max = WR_FRAME_JSON_MAX, .blob_max = WR_FRAME_BLOB_MAX },
	};
}

void
wr_frame_reader_finish(struct wr_frame_reader *r)
{
	if (r == NULL) {
		return;
	}
	json_decref(r->msg);
	r->msg = NULL;
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
	return 1;
}

int
wr_frame_read(struct wr_frame_reader *r, struct evbuffer *in, json_t **msg,
	      void **blob, size_t *blob_len)
{
	void *b = NULL;
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
	if (evbuffer_get_length(in) < r->blob_len) {
		return 0;
	}
	if (r->blob_len > 0) {
		b = malloc(r->blob_len);
		if (b == NULL) {
			return -ENOMEM;
		}
		evbuffer_remove(in, b, r->blob_len);
	}
	*msg = r->msg;
	*blob = b;
	*blob_len = r->blob_len;
	r->msg = NULL;
	r->blob_len = 0;
	return 1;
}

static int
append(const char *buf, size_t size, void *data)
{
	return evbuffer_add(data, buf, size);
}

int
wr_frame_write(struct evbuffer *out, json_t *msg, const void *blob,
	       size_t blob_len)
{
	struct evbuffer *tmp = evbuffer_new();
	unsigned char hdr[4];
	size_t len;
	int rc = -ENOMEM;

	if (tmp == NULL) {
		return -ENOMEM;
	}
	if (blob_len > 0) {
		if (json_object_set_new(msg, "blob", json_integer((json_int_t)blob_len)) < 0) {
			goto out;
		}
	} else {
		json_object_del(msg, "blob");
	}
	/* Dumped straight into a buffer chain, which then moves without a copy. */
	if (json_dump_callback(msg, append, tmp, JSON_COMPACT) < 0) {
		goto out;
	}
	len = evbuffer_get_length(tmp);
	if (len > WR_FRAME_JSON_MAX) {
		rc = WORLD_EFRAME;
		goto out;
	}
	hdr[0] = (unsigned char)(len >> 24);
	hdr[1] = (unsigned char)(len >> 16);
	hdr[2] = (unsigned char)(len >> 8);
	hdr[3] = (unsigned char)len;
	if (evbuffer_prepend(tmp, hdr, sizeof(hdr)) < 0 || evbuffer_add_buffer(out, tmp) < 0 ||
	    (blob_len > 0 && evbuffer_add(out, blob, blob_len) < 0)) {
		goto out;
	}
	rc = 0;
out:
	evbuffer_free(tmp);
	return rc;
}
