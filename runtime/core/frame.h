/* SPDX-License-Identifier: MIT */
/*
 * frame: the wire format that worldrun's registry and libworld share. A
 * frame is a 4-byte big-endian length, that many bytes of UTF-8 JSON
 * (an object), then an optional binary attachment (the "blob") whose
 * length the object gives as "blob": N. Both lengths are checked against
 * limits before anything is allocated for them. It knows nothing of what
 * the messages mean: the registry's requests are checked in
 * cmd/worldrun/registry/ops.c, peers' calls in serve.c.
 */
#ifndef WR_FRAME_H
#define WR_FRAME_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <jansson.h>

#define WR_FRAME_JSON_MAX (1u << 20)        /* default: 1 MiB */
#define WR_FRAME_BLOB_MAX ((size_t)1 << 30) /* default: 1 GiB */

struct wr_frame_limits {
	size_t json_max;
	size_t blob_max;
};

/*
 * One connection's reading state: a parsed message waits for its blob,
 * which is allocated once its length is known and filled as bytes come,
 * from the buffer or (wr_frame_recv) straight from the socket.
 */
struct wr_frame_reader {
	struct wr_frame_limits lim;
	json_t *msg;
	unsigned char *blob;
	size_t blob_len;
	size_t blob_have;
};

/*
 * Limits from two settings, WORLD_MSG_MAX for the JSON part (4 KiB to
 * 1 GiB) and WORLD_BLOB_MAX for the blob (up to 1 TiB): bytes with an
 * optional K, M or G suffix (powers of 1024); NULL or "" keeps the
 * default. Returns 0, or -EINVAL with *@bad set to the wrong one's name.
 */
int wr_frame_limits_parse(struct wr_frame_limits *lim, const char *msg_max,
			  const char *blob_max, const char **bad);

/*
 * A size setting: bytes with an optional K, M or G suffix (powers of
 * 1024), in [@lo, @hi]. NULL or "" leaves *@out as it is. 0 or -EINVAL.
 */
int wr_frame_size_parse(const char *s, size_t lo, size_t hi, size_t *out);

/* @lim NULL: the defaults. */
void wr_frame_reader_init(struct wr_frame_reader *r,
			  const struct wr_frame_limits *lim);
void wr_frame_reader_finish(struct wr_frame_reader *r);

/*
 * Take one frame off @in. Returns 1 with a new reference in *msg and the
 * blob in *blob (malloc'd, free() it; NULL when there is none) and
 * *blob_len; 0 if more bytes are needed; or a negative code after which
 * the connection must be dropped: WORLD_EFRAME (a length over its limit
 * or zero, bytes that are not JSON or not UTF-8), WORLD_EPROTO (JSON
 * that is not an object, a bad "blob" field), -ENOMEM.
 */
int wr_frame_read(struct wr_frame_reader *r, struct evbuffer *in,
		  json_t **msg, void **blob, size_t *blob_len);

/*
 * One read(2) from @fd: straight into the blob being received when @in
 * holds nothing more (so a large blob is not copied again), else into
 * @in. Returns the bytes read, 0 at end of file, or -errno (-EAGAIN when
 * a non-blocking @fd has nothing).
 */
ssize_t wr_frame_recv(struct wr_frame_reader *r, struct evbuffer *in, int fd);

/*
 * One sendmsg(2) of what @out holds to @fd, with MSG_NOSIGNAL: a peer
 * that is gone is -EPIPE, never a SIGPIPE in whichever thread sends; and
 * MSG_DONTWAIT: it never blocks, even on a socket whose reads do
 * (-EAGAIN when it is full). Returns the bytes sent (drained from @out)
 * or -errno.
 */
ssize_t wr_frame_send(struct evbuffer *out, int fd);

/*
 * Append @msg and @blob_len bytes of @blob as one frame. @msg is borrowed,
 * but its "blob" member is set to @blob_len (or removed when there is no
 * blob). Returns 0, WORLD_EFRAME (the JSON or the blob is over its limit
 * in @lim, NULL: the defaults) or -ENOMEM; on failure nothing was
 * appended.
 */
int wr_frame_write(struct evbuffer *out, const struct wr_frame_limits *lim,
		   json_t *msg, const void *blob, size_t blob_len);

/* The same with @blob (malloc'd) attached: it travels without a copy and
 * is freed once @out lets go of it, or on failure. */
int wr_frame_write_attach(struct evbuffer *out, const struct wr_frame_limits *lim,
			  json_t *msg, void *blob, size_t blob_len);

/*
 * Append a frame whose JSON part the caller wrote itself (@json_len bytes
 * of @json, an object that gives @blob_len as "blob" when there is a
 * blob), for a reply of a fixed shape on a hot path. @blob is copied.
 * Returns 0, WORLD_EFRAME (empty, or over a limit) or -ENOMEM; on failure
 * nothing was appended.
 */
int wr_frame_write_text(struct evbuffer *out, const struct wr_frame_limits *lim,
			const char *json, size_t json_len, const void *blob,
			size_t blob_len);

/* Someone else's bytes, held until release(arg) lets go of them. */
struct wr_frame_ref {
	void (*release)(void *arg);
	void *arg;
};

/*
 * The same, with @blob not copied (unless it is small) but held through
 * @ref until @out lets go of it; @ref is released in every case, at once
 * on failure. @ref NULL: a copy.
 */
int wr_frame_write_text_ref(struct evbuffer *out, const struct wr_frame_limits *lim,
			    const char *json, size_t json_len, const void *blob,
			    size_t blob_len, const struct wr_frame_ref *ref);

/*
 * Write what @bev's output holds to its socket now, outside the event
 * loop, waiting at most @seconds for the socket to take the bytes: before
 * the process stops or leaves, its last frames go. 0, -ETIMEDOUT (some
 * are left) or -errno.
 */
int wr_frame_flush(struct bufferevent *bev, double seconds);

#endif
