/* SPDX-License-Identifier: MIT */
#include "payload.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

size_t
wr_payload_len(const struct wr_payload *pl)
{
	size_t len = 0;

	for (size_t i = 0; pl != NULL && i < pl->n; i++) {
		len += pl->iov[i].iov_len;
	}
	return len;
}

void
wr_payload_release(struct wr_payload *pl)
{
	void (*release)(void *) = pl != NULL ? pl->release : NULL;

	if (release != NULL) {
		pl->release = NULL;
		release(pl->arg);
	}
}

/* A pull shares out to another thread from this size on. */
#define PULL_SPLIT_MIN ((size_t)4 << 20)
/* The kernel moves at most MAX_RW_COUNT (2 GiB less a page) per call. */
#define PULL_CHUNK_MAX ((size_t)1 << 30)

/* The huge page's size where the kernel has them (x86-64, arm64 with
 * 4 KiB pages). */
#define HUGE_PAGE ((size_t)2 << 20)

/* A freed large buffer is kept from KEEP_MIN to KEEP_LEN_MAX bytes, in at
 * most KEEP_MAX, for at most KEEP_SECONDS: a rank that took two blobs of
 * 300 MiB once held them for good. */
#define KEEP_MIN ((size_t)4 << 20)
#define KEEP_LEN_MAX ((size_t)64 << 20)
#define KEEP_MAX 2
#define KEEP_SECONDS 10

/*
 * Large buffers given back (wr_payload_keep), for the next large blob: a
 * fresh one costs a page fault per page, in which the kernel zeroes it,
 * as long as the copy into it. Process-wide, as malloc's heap is: a blob
 * may outlive the world that made it.
 */
static pthread_mutex_t kept_mu = PTHREAD_MUTEX_INITIALIZER;
static struct kept {
	void *p;
	size_t len;
	time_t at; /* CLOCK_MONOTONIC seconds */
} kept[KEEP_MAX];

static time_t
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec;
}

/* Free what was kept longer than KEEP_SECONDS; kept_mu held. */
static void
drop_old(time_t now)
{
	for (size_t i = 0; i < KEEP_MAX; i++) {
		if (kept[i].p != NULL && now - kept[i].at >= KEEP_SECONDS) {
			free(kept[i].p);
			kept[i] = (struct kept){ NULL, 0, 0 };
		}
	}
}

size_t
wr_payload_kept_len(void)
{
	size_t len = 0;

	pthread_mutex_lock(&kept_mu);
	for (size_t i = 0; i < KEEP_MAX; i++) {
		len += kept[i].p != NULL ? kept[i].len : 0;
	}
	pthread_mutex_unlock(&kept_mu);
	return len;
}

void
wr_payload_drop_stale(void)
{
	pthread_mutex_lock(&kept_mu);
	drop_old(now_s());
	pthread_mutex_unlock(&kept_mu);
}

/* A kept buffer for @len bytes, wasting at most half of it, or NULL. */
static void *
take_kept(size_t len)
{
	struct kept *best = NULL;
	void *p = NULL;

	pthread_mutex_lock(&kept_mu);
	drop_old(now_s());
	for (size_t i = 0; i < KEEP_MAX; i++) {
		if (kept[i].p != NULL && kept[i].len >= len && kept[i].len / 2 <= len &&
		    (best == NULL || kept[i].len < best->len)) {
			best = &kept[i];
		}
	}
	if (best != NULL) {
		p = best->p;
		*best = (struct kept){ NULL, 0, 0 };
	}
	pthread_mutex_unlock(&kept_mu);
	return p;
}

void
wr_payload_keep(void *p, size_t len)
{
	time_t now = now_s();

	pthread_mutex_lock(&kept_mu);
	drop_old(now);
	for (size_t i = 0; p != NULL && len >= KEEP_MIN && len <= KEEP_LEN_MAX &&
			   i < KEEP_MAX; i++) {
		if (kept[i].p == NULL) {
			kept[i] = (struct kept){ p, len, now };
			p = NULL;
		}
	}
	pthread_mutex_unlock(&kept_mu);
	free(p);
}

void
wr_payload_drop_kept(void)
{
	pthread_mutex_lock(&kept_mu);
	for (size_t i = 0; i < KEEP_MAX; i++) {
		free(kept[i].p);
		kept[i] = (struct kept){ NULL, 0, 0 };
	}
	pthread_mutex_unlock(&kept_mu);
}

/*
 * Where the allocator maps each large block anew (as in a process that
 * imported torch), a fresh 16 MiB buffer costs 4096 page faults, more
 * than the copy into it: a kept buffer first, else one aligned for
 * transparent huge pages (8 faults).
 */
void *
wr_payload_alloc(size_t len)
{
	void *p = len >= KEEP_MIN ? take_kept(len) : NULL;

	if (p != NULL) {
		return p;
	}
	if (len < 2 * HUGE_PAGE) {
		return malloc(len > 0 ? len : 1);
	}
	if (posix_memalign(&p, HUGE_PAGE, len) != 0) {
		return NULL;
	}
	/* Advice only: where huge pages are off, the buffer is as malloc's. */
	(void)madvise(p, len & ~(HUGE_PAGE - 1), MADV_HUGEPAGE);
	return p;
}

int
wr_payload_gather(const struct wr_payload *pl, void **out, size_t *len)
{
	size_t total = wr_payload_len(pl), at = 0;
	char *buf;

	*out = NULL;
	*len = total;
	if (total == 0) {
		return 0;
	}
	buf = wr_payload_alloc(total);
	if (buf == NULL) {
		return -ENOMEM;
	}
	for (size_t i = 0; i < pl->n; i++) {
		if (pl->iov[i].iov_len > 0) {
			memcpy(buf + at, pl->iov[i].iov_base, pl->iov[i].iov_len);
			at += pl->iov[i].iov_len;
		}
	}
	*out = buf;
	return 0;
}

json_t *
wr_payload_pull_desc(const struct iovec *iov, size_t n)
{
	json_t *desc = json_array();

	for (size_t i = 0; desc != NULL && i < n; i++) {
		if (iov[i].iov_len == 0) {
			continue;
		}
		if (json_array_append_new(desc, json_pack("[I, I]",
				(json_int_t)(uintptr_t)iov[i].iov_base,
				(json_int_t)iov[i].iov_len)) < 0) {
			json_decref(desc);
			desc = NULL;
		}
	}
	return desc;
}

int
wr_payload_pull_parse(const json_t *desc, size_t max, struct iovec **iov,
		      size_t *n, size_t *total)
{
	size_t count = json_array_size(desc), sum = 0, i;
	struct iovec *v;
	json_t *piece;

	*iov = NULL;
	*n = 0;
	*total = 0;
	if (!json_is_array(desc) || count == 0 || count > WR_PULL_PIECES_MAX) {
		return -EPROTO;
	}
	v = calloc(count, sizeof(*v));
	if (v == NULL) {
		return -ENOMEM;
	}
	json_array_foreach(desc, i, piece) {
		json_int_t at = -1, len = -1;

		if (json_unpack((json_t *)piece, "[I, I]", &at, &len) < 0 || at <= 0 ||
		    len <= 0 || (uintmax_t)at > UINTPTR_MAX) {
			free(v);
			return -EPROTO;
		}
		if ((uintmax_t)len > max - sum) {
			free(v);
			return -EMSGSIZE;
		}
		sum += (size_t)len;
		v[i] = (struct iovec){ (void *)(uintptr_t)at, (size_t)len };
	}
	*iov = v;
	*n = count;
	*total = sum;
	return 0;
}

/*
 * A pull in chunks, taken in turn by whichever of its threads runs (the
 * caller's, and a helper on another CPU): where that CPU is busy, the
 * caller's thread takes the chunk the helper does not get to.
 */
struct pull {
	pid_t pid;
	char *dst;
	const struct iovec *iov; /* the remote pieces */
	size_t n, total;
	size_t chunk;            /* its size */
	size_t next;             /* the next chunk to take, atomic */
	int rc;                  /* the first failure, atomic */
};

/* The remote pieces of bytes [@from, @from + @len) of @iov (@n pieces)
 * in @out, which has room for @n; returns how many. */
static size_t
slice(const struct iovec *iov, size_t n, size_t from, size_t len, struct iovec *out)
{
	size_t at = 0, k = 0;

	for (size_t i = 0; i < n && len > 0; at += iov[i].iov_len, i++) {
		size_t off, take;

		if (from >= at + iov[i].iov_len) {
			continue;
		}
		off = from - at;
		take = iov[i].iov_len - off < len ? iov[i].iov_len - off : len;
		out[k++] = (struct iovec){ (char *)iov[i].iov_base + off, take };
		from += take;
		len -= take;
	}
	return k;
}

static void
failed(struct pull *pl, int rc)
{
	int none = 0;

	__atomic_compare_exchange_n(&pl->rc, &none, rc, false, __ATOMIC_SEQ_CST,
				    __ATOMIC_SEQ_CST);
}

/* Take chunks until none is left (or one failed). */
static void *
take_chunks(void *arg)
{
	struct pull *pl = arg;
	struct iovec *pieces = malloc(pl->n * sizeof(*pieces));

	if (pieces == NULL) {
		failed(pl, -ENOMEM);
		return NULL;
	}
	for (;;) {
		size_t from = __atomic_fetch_add(&pl->next, 1, __ATOMIC_RELAXED) * pl->chunk;
		size_t len = from < pl->total ? pl->total - from : 0;
		struct iovec local = { pl->dst + from, len < pl->chunk ? len : pl->chunk };
		size_t k;
		ssize_t got;

		if (len == 0 || __atomic_load_n(&pl->rc, __ATOMIC_RELAXED) < 0) {
			break;
		}
		k = slice(pl->iov, pl->n, from, local.iov_len, pieces);
		got = process_vm_readv(pl->pid, &local, 1, pieces, (unsigned long)k, 0);
		/* A short read stops at a piece it could not read. */
		if (got < 0 || (size_t)got != local.iov_len) {
			failed(pl, got < 0 ? -errno : -EFAULT);
		}
	}
	free(pieces);
	return NULL;
}

/*
 * A helper for a pull of @total bytes, on a CPU other than this one, or
 * false. The kernel's copy between processes goes page by page and is
 * bound by the CPU rather than by memory (here, 16 MiB in 2.5 ms from one
 * thread, 1.1 ms from two), while the caller waits idle for it; left to
 * itself, the scheduler often put a new thread on its creator's CPU
 * (measured: a third of the jobs, each pull then 2.5 ms).
 */
static bool
start_helper(struct pull *pl, pthread_t *helper)
{
	int here = sched_getcpu();
	pthread_attr_t attr;
	cpu_set_t cpus;
	bool started;

	if (pl->total < PULL_SPLIT_MIN || here < 0 ||
	    sched_getaffinity(0, sizeof(cpus), &cpus) < 0) {
		return false;
	}
	CPU_CLR(here, &cpus);
	if (CPU_COUNT(&cpus) == 0 || pthread_attr_init(&attr) != 0) {
		return false;
	}
	started = pthread_attr_setaffinity_np(&attr, sizeof(cpus), &cpus) == 0 &&
		  pthread_create(helper, &attr, take_chunks, pl) == 0;
	pthread_attr_destroy(&attr);
	return started;
}

int
wr_payload_pull(pid_t pid, const struct iovec *iov, size_t n, size_t total,
		void **out)
{
	/* Two halves from PULL_SPLIT_MIN on, else one piece: smaller
	 * chunks, measured, made a pull slower, not steadier. Never over
	 * PULL_CHUNK_MAX, which one process_vm_readv takes whole. */
	size_t chunk = total >= PULL_SPLIT_MIN ? (total + 1) / 2 : total;
	struct pull pl = { .pid = pid, .iov = iov, .n = n, .total = total,
			   .chunk = chunk < PULL_CHUNK_MAX ? chunk : PULL_CHUNK_MAX };
	pthread_t helper;
	bool helped;

	*out = NULL;
	if (pid <= 0) {
		return -ESRCH;
	}
	pl.dst = wr_payload_alloc(total);
	if (pl.dst == NULL) {
		return -ENOMEM;
	}
	helped = start_helper(&pl, &helper);
	take_chunks(&pl);
	if (helped) {
		pthread_join(helper, NULL);
	}
	if (pl.rc < 0) {
		free(pl.dst);
		return pl.rc;
	}
	*out = pl.dst;
	return 0;
}

bool
wr_payload_hung_up(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLRDHUP };

	return poll(&p, 1, 0) != 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR |
						  POLLNVAL)) != 0;
}
