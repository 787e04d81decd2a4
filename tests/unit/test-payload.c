/* SPDX-License-Identifier: MIT */
/*
 * payload: pieces gathered in order; a pull from this very process of
 * pieces of every size, whole, shared by two threads from 4 MiB, with
 * a piece that cannot be read refused as a whole; the descriptor's
 * round trip; the buffers kept for the next blob serve only blobs they
 * hold, and not too much smaller ones; and the release of a payload
 * happens once.
 */
#include "payload.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tap.h"

#define MIB ((size_t)1 << 20)

static unsigned char *
pattern_new(size_t len, unsigned seed)
{
	unsigned char *b = malloc(len);

	for (size_t i = 0; b != NULL && i < len; i++) {
		b[i] = (unsigned char)(i * 31 + seed + i / 4093);
	}
	return b;
}

/* Whether @got holds the @n pieces of @iov one after the other. */
static bool
same(const unsigned char *got, const struct iovec *iov, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (memcmp(got, iov[i].iov_base, iov[i].iov_len) != 0) {
			return false;
		}
		got += iov[i].iov_len;
	}
	return true;
}

static void
count(void *arg)
{
	(*(int *)arg)++;
}

static void
test_gather_and_release(void)
{
	unsigned char *a = pattern_new(MIB, 1);
	struct iovec iov[3] = { { a, 10 }, { a, 0 }, { a + 100, 5000 } };
	int released = 0;
	struct wr_payload pl = { iov, 3, count, &released };
	void *out = NULL;
	size_t len = 0;

	ok(wr_payload_len(&pl) == 5010, "len: the sum of the pieces");
	ok(wr_payload_gather(&pl, &out, &len) == 0 && len == 5010 && same(out, iov, 3),
	   "gather: the pieces in order, the empty one among them");
	free(out);
	wr_payload_release(&pl);
	wr_payload_release(&pl);
	ok(released == 1, "release: once, however often asked");
	free(a);
}

static void
test_pull(void)
{
	size_t sizes[] = { 1, 4094, MIB + 3, 5 * MIB + 1 };
	unsigned char *a = pattern_new(8 * MIB, 2), *gone;
	struct iovec iov[4];
	size_t total = 0, n;
	void *out = NULL;
	struct iovec *back = NULL;
	json_t *desc;

	for (size_t i = 0, at = 0; i < 4; at += sizes[i] + 11, i++) {
		iov[i] = (struct iovec){ a + at, sizes[i] };
		total += sizes[i];
	}
	ok(wr_payload_pull(getpid(), iov, 4, total, &out) == 0 && same(out, iov, 4),
	   "pull: %zu bytes in 4 pieces of every size, over 4 MiB (two threads), whole",
	   total);
	free(out);
	ok(wr_payload_pull(getpid(), iov, 2, sizes[0] + sizes[1], &out) == 0 &&
	   same(out, iov, 2), "pull: a few bytes (one thread), whole");
	free(out);
	gone = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(gone, 4096);
	iov[3].iov_base = gone;
	iov[3].iov_len = 4096;
	out = &total;
	ok(wr_payload_pull(getpid(), iov, 4, total - sizes[3] + 4096, &out) == -EFAULT &&
	   out == NULL, "pull: a piece that cannot be read fails it whole (-EFAULT)");
	ok(wr_payload_pull(0, iov, 1, 1, &out) == -ESRCH, "pull: no process, -ESRCH");
	iov[3] = (struct iovec){ a, 3 };
	desc = wr_payload_pull_desc(iov, 4);
	ok(wr_payload_pull_parse(desc, 8 * MIB, &back, &n, &total) == 0 && n == 4 &&
	   total == sizes[0] + sizes[1] + sizes[2] + 3 &&
	   back[2].iov_base == iov[2].iov_base && back[3].iov_len == 3,
	   "desc: what the caller sends is what the callee parses");
	free(back);
	ok(wr_payload_pull_parse(desc, MIB, &back, &n, &total) == -EMSGSIZE &&
	   back == NULL, "desc: over the limit, -EMSGSIZE");
	json_decref(desc);
	free(a);
}

static void
test_kept(void)
{
	unsigned char *big = malloc(6 * MIB), *p;

	wr_payload_keep(big, 6 * MIB);
	p = wr_payload_alloc(9 * MIB);
	ok(p != big, "keep: a kept buffer never serves a larger blob");
	free(p);
	p = wr_payload_alloc(2 * MIB);
	ok(p != big, "keep: nor a blob under half its size");
	free(p);
	p = wr_payload_alloc(5 * MIB);
	ok(p == big, "keep: a blob of about its size takes it");
	wr_payload_keep(p, 6 * MIB);
	wr_payload_keep(malloc(5 * MIB), 5 * MIB);
	wr_payload_keep(malloc(5 * MIB), 5 * MIB); /* a third: freed */
	wr_payload_keep(malloc(MIB), MIB);         /* small: freed */
	p = wr_payload_alloc(6 * MIB);
	ok(p == big, "keep: two kept, the one that fits taken");
	free(p);
	wr_payload_drop_kept();
	p = wr_payload_alloc(5 * MIB);
	ok(p != big, "keep: none after they are dropped");
	free(p);
	wr_payload_keep(malloc(65 * MIB), 65 * MIB);
	is_int((long long)wr_payload_kept_len(), 0, "keep: a buffer over 64 MiB is freed, not kept");
	wr_payload_keep(malloc(64 * MIB), 64 * MIB);
	wr_payload_drop_stale();
	is_int((long long)wr_payload_kept_len(), 64 * MIB,
	       "keep: one of 64 MiB is kept, and not stale at once");
	wr_payload_drop_kept();
}

int
main(void)
{
	plan(16);
	test_gather_and_release();
	test_pull();
	test_kept();
	return done_testing();
}
