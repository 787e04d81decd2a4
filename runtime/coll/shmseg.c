/* SPDX-License-Identifier: MIT */
/*
 * The segment's life: made and sized by rank 0, mapped by the others
 * between a broadcast ("made") and an all_reduce ("every one has it"),
 * both over the fabric, then unlinked. Like the rest of a group's
 * creation, the agreement can end well on some members and fail on
 * another (its deadline, a loss): the others' first operation then fails
 * at its own deadline or on the loss. Until the unlink, another process
 * of the same user could open the segment and shrink it, and the members
 * would take SIGBUS; that user can ptrace the ranks anyway.
 */
#include "shmseg.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup.h"
#include "shmcoll.h"

/* One member's part in the agreement. */
struct agree {
	const char *name;
	size_t len;
	unsigned char *base; /* mapped, or NULL */
	uint8_t ok;          /* rank 0: made it; then: every member has it */
	bool room;           /* this member could keep it */
};

static unsigned char *
map(int fd, size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* Rank 0's: the pages are allocated now (posix_fallocate), so that a full
 * /dev/shm says so here, not with SIGBUS at the first large collective. */
static unsigned char *
make(const char *name, size_t len)
{
	int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	unsigned char *p = NULL;

	if (fd < 0) {
		return NULL;
	}
	if (posix_fallocate(fd, 0, (off_t)len) == 0) {
		p = map(fd, len);
	}
	close(fd);
	if (p == NULL) {
		shm_unlink(name);
	}
	return p;
}

/* The others': the segment rank 0 made, at least @len bytes long. */
static unsigned char *
open_made(const char *name, size_t len)
{
	int fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
	struct stat st;
	unsigned char *p = NULL;

	if (fd < 0) {
		return NULL;
	}
	/* Rank 0's, which only this user can have made (0600, O_EXCL). */
	if (fstat(fd, &st) == 0 && st.st_uid == geteuid() && st.st_size >= 0 &&
	    (size_t)st.st_size >= len) {
		p = map(fd, len);
	}
	close(fd);
	return p;
}

/* Rank 0 says whether it made the segment; the others map it; all learn
 * whether every one has it. */
static int
agree(struct wr_coll_ctx *x, void *arg)
{
	struct agree *a = arg;
	uint8_t made = a->ok;
	int rc = wr_algo_broadcast(x, &made, 1, 0, WR_ALGO_BINOMIAL);

	if (rc == 0 && x->rank != 0 && made && a->room) {
		a->base = open_made(a->name, a->len);
	}
	a->ok = a->base != NULL;
	if (rc == 0) {
		rc = wr_algo_all_reduce(x, &a->ok, 1, WORLD_UINT8, WORLD_MIN,
					WR_ALGO_RECURSIVE_DOUBLING);
	}
	return rc;
}

int
wr_shmseg_attach(struct world_coll *c, long long deadline_ms)
{
	struct agree a = {0};
	size_t slot = wr_shm_slot(c->size);
	struct wr_shm *s = NULL;
	char name[64];
	int rc;

	if (c->size < 2 || c->fab == NULL || strcmp(wr_fab_provider(c->fab), "shm") != 0) {
		return 0;
	}
	snprintf(name, sizeof(name), "/%s_coll_%u", c->w->shm_prefix, c->id);
	a.name = name;
	a.len = wr_shm_size(c->size, slot);
	/* Before the agreement: a member that could not have it after
	 * would leave the others waiting in the area. */
	s = calloc(1, sizeof(*s));
	a.room = s != NULL;
	if (c->rank == 0 && a.room) {
		a.base = make(name, a.len);
		a.ok = a.base != NULL;
	}
	/* Sequence number 0, which no operation takes: the user's first is
	 * #1 in the hang report. */
	rc = wr_coll_run(c, "create", 0, deadline_ms, agree, &a);
	if (c->rank == 0 && a.base != NULL) {
		shm_unlink(name);
	}
	if (rc < 0 || !a.ok || s == NULL) {
		if (a.base != NULL) {
			munmap(a.base, a.len);
		}
		free(s);
		return rc;
	}
	s->base = a.base;
	s->slot = slot;
	c->shm = s;
	return 0;
}

void
wr_shmseg_detach(struct world_coll *c)
{
	if (c->shm != NULL) {
		munmap(c->shm->base, wr_shm_size(c->size, c->shm->slot));
		free(c->shm);
		c->shm = NULL;
	}
}
