/* SPDX-License-Identifier: MIT */
#include "sink.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* shm's inject size: the most an inline or inject copy overflows by. */
#define SCRATCH_LEN 4096
/* The iovec claims up to CLAIM_MAX, and at least CLAIM_MIN; the kernel
 * checks only that the range lies below the top of user space (x86-64,
 * 47 bits), so the mapping asks to go low, near HINT (sanitizers keep
 * that for their shadow; then it goes where it can). The claim bounds
 * the overflow that ends in an error rather than a spin. */
#define CLAIM_MAX ((uintptr_t)1 << 44)
#define CLAIM_MIN ((uintptr_t)1 << 32)
#define HINT ((void *)(uintptr_t)0x100000000ULL)
#define USER_TOP ((uintptr_t)0x7ffffffff000ULL)

struct wr_sink {
	void *base;
	size_t claim;
};

/* CMA is off when FI_SHM_DISABLE_CMA says so or yama forbids ptrace
 * between siblings (shm then falls back to SAR on its own). */
static bool
cma_usable(void)
{
	const char *env = getenv("FI_SHM_DISABLE_CMA");
	FILE *fp;
	int scope = 0;

	if (env && env[0] != '\0' && strcmp(env, "0") != 0 &&
	    strcmp(env, "false") != 0 && strcmp(env, "no") != 0) {
		return false;
	}
	fp = fopen("/proc/sys/kernel/yama/ptrace_scope", "re");
	if (fp) {
		if (fscanf(fp, "%d", &scope) != 1) {
			scope = 0;
		}
		fclose(fp);
	}
	return scope == 0;
}

int
wr_sink_create(struct wr_sink **out)
{
	struct wr_sink *s;
	uintptr_t room;
	void *p;

	*out = NULL;
	if (!cma_usable()) {
		return 0;
	}
	p = mmap(HINT, 2 * SCRATCH_LEN, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		return -errno;
	}
	room = USER_TOP - (uintptr_t)p;
	if ((uintptr_t)p >= USER_TOP || room < CLAIM_MIN ||
	    mprotect((char *)p + SCRATCH_LEN, SCRATCH_LEN, PROT_NONE) < 0) {
		munmap(p, 2 * SCRATCH_LEN);
		return 0;
	}
	s = calloc(1, sizeof(*s));
	if (s == NULL) {
		munmap(p, 2 * SCRATCH_LEN);
		return -ENOMEM;
	}
	s->base = p;
	s->claim = room < CLAIM_MAX ? room : CLAIM_MAX;
	*out = s;
	return 0;
}

void
wr_sink_destroy(struct wr_sink *s)
{
	if (s == NULL) {
		return;
	}
	munmap(s->base, 2 * SCRATCH_LEN);
	free(s);
}

struct iovec
wr_sink_iov(const struct wr_sink *s)
{
	return (struct iovec){.iov_base = s->base, .iov_len = s->claim};
}
