/* SPDX-License-Identifier: MIT */
#include "bell.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* What the shared page holds. The futex word is shared between processes,
 * so the futex calls are the non-_PRIVATE ones. */
struct page {
	uint32_t seq;
	uint32_t waiters;
};

#define PAGE_LEN 4096

struct wr_bell {
	struct page *page;
	char *name; /* own bell only: what wr_bell_destroy() unlinks */
};

static int
bell_name(const char *prefix, int rank, char *buf, size_t size)
{
	size_t len = prefix ? strlen(prefix) : 0;

	if (len == 0 || len > WR_BELL_PREFIX_MAX || strchr(prefix, '/') ||
	    rank < 0) {
		return -EINVAL;
	}
	snprintf(buf, size, "/%s_bell_%d", prefix, rank);
	return 0;
}

/* Map @fd's page; @fd is closed either way. */
static int
map_page(int fd, struct wr_bell **out)
{
	struct wr_bell *b = calloc(1, sizeof(*b));
	struct stat st;
	void *p;
	int rc = 0;

	if (b == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		goto out;
	}
	if (st.st_size < PAGE_LEN) {
		rc = -EINVAL;
		goto out;
	}
	p = mmap(NULL, PAGE_LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		rc = -errno;
		goto out;
	}
	b->page = p;
	*out = b;
	b = NULL;
out:
	free(b);
	close(fd);
	return rc;
}

int
wr_bell_create(const char *prefix, int rank, struct wr_bell **out)
{
	char name[WR_BELL_PREFIX_MAX + 32];
	int rc = bell_name(prefix, rank, name, sizeof(name));
	int fd;

	*out = NULL;
	if (rc < 0) {
		return rc;
	}
	fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		return -errno;
	}
	if (ftruncate(fd, PAGE_LEN) < 0) {
		rc = -errno;
		close(fd);
		goto fail;
	}
	rc = map_page(fd, out);
	if (rc < 0) {
		goto fail;
	}
	(*out)->name = strdup(name);
	if ((*out)->name == NULL) {
		rc = -ENOMEM;
		goto fail;
	}
	return 0;
fail:
	wr_bell_close(*out);
	*out = NULL;
	shm_unlink(name);
	return rc;
}

void
wr_bell_destroy(struct wr_bell *b)
{
	if (b == NULL) {
		return;
	}
	if (b->name) {
		shm_unlink(b->name);
	}
	wr_bell_close(b);
}

int
wr_bell_open(const char *prefix, int rank, struct wr_bell **out)
{
	char name[WR_BELL_PREFIX_MAX + 32];
	int rc = bell_name(prefix, rank, name, sizeof(name));
	int fd;

	*out = NULL;
	if (rc < 0) {
		return rc;
	}
	fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
	if (fd < 0) {
		return -errno;
	}
	return map_page(fd, out);
}

void
wr_bell_close(struct wr_bell *b)
{
	if (b == NULL) {
		return;
	}
	if (b->page) {
		munmap(b->page, PAGE_LEN);
	}
	free(b->name);
	free(b);
}

static long
futex(uint32_t *word, int op, uint32_t val, const struct timespec *ts)
{
	return syscall(SYS_futex, word, op, val, ts, NULL, 0);
}

/*
 * The fence puts the caller's work (a message in the peer's queue) before
 * the look at the waiters: a sleeper that entered after it finds the work
 * in its last look, one that entered before it is counted here. A bell
 * nobody sleeps on is only read, so its line stays shared with its
 * owner's reads instead of moving between the caches on every message.
 */
void
wr_bell_ring(struct wr_bell *b)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&b->page->waiters, __ATOMIC_SEQ_CST) != 0) {
		__atomic_fetch_add(&b->page->seq, 1, __ATOMIC_SEQ_CST);
		futex(&b->page->seq, FUTEX_WAKE, INT_MAX, NULL);
	}
}

int
wr_bell_waiters(const struct wr_bell *b)
{
	return (int)__atomic_load_n(&b->page->waiters, __ATOMIC_SEQ_CST);
}

/*
 * The sequence is read before the waiter count goes up: a ringer that saw
 * no waiter had made its work visible before it looked, so the look for
 * work that follows finds it; one that saw us bumps the sequence, which
 * the futex sees changed.
 */
uint32_t
wr_bell_enter(struct wr_bell *b)
{
	uint32_t seq = __atomic_load_n(&b->page->seq, __ATOMIC_SEQ_CST);

	__atomic_fetch_add(&b->page->waiters, 1, __ATOMIC_SEQ_CST);
	return seq;
}

void
wr_bell_sleep(struct wr_bell *b, uint32_t seq, int64_t timeout_ns)
{
	struct timespec ts;

	if (timeout_ns <= 0) {
		return;
	}
	ts.tv_sec = (time_t)(timeout_ns / 1000000000);
	ts.tv_nsec = (long)(timeout_ns % 1000000000);
	futex(&b->page->seq, FUTEX_WAIT, seq, &ts);
}

void
wr_bell_leave(struct wr_bell *b)
{
	__atomic_fetch_sub(&b->page->waiters, 1, __ATOMIC_SEQ_CST);
}
