/* SPDX-License-Identifier: MIT */
/*
 * peers: what an endpoint knows of the other ranks: each one's address
 * (given as hex, kept decoded), its fi_addr once it has been inserted
 * into the address vector (lazily, on the first send), and on shm a
 * mapping of its doorbell (lazily, on the first ring). It does not send
 * or wait, and takes no lock: its owner serializes the calls.
 */
#ifndef WR_PEERS_H
#define WR_PEERS_H

#include <stdbool.h>
#include <stddef.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

struct wr_peers;

struct wr_peers_cfg {
	int size;              /* ranks in the world */
	size_t addrlen;        /* every address's length; 0: NUL-terminated strings */
	const char *bell_prefix; /* peers' doorbells (borrowed); NULL: none */
};

/* 0, -EINVAL or -ENOMEM. The table is sized for @cfg->size ranks but
 * touched only where peers are set. */
int wr_peers_create(const struct wr_peers_cfg *cfg, struct wr_peers **out);

/* Free the table and unmap the bells. Accepts NULL. */
void wr_peers_destroy(struct wr_peers *p);

/*
 * Remember @rank's address, @hex (two lower- or upper-case digits a
 * byte). -EINVAL for a bad rank, bad hex, or an address that cannot be
 * one (wrong length, a string without its NUL); -EBUSY when @rank has
 * been inserted with another address already.
 */
int wr_peers_set(struct wr_peers *p, int rank, const char *hex);

bool wr_peers_has(const struct wr_peers *p, int rank);

/* @rank's fi_addr, inserting its address into @av on first use: 0,
 * -EDESTADDRREQ (no address known), -EINVAL, or fi_av_insert's code. */
int wr_peers_fi_addr(struct wr_peers *p, struct fid_av *av, int rank,
		     fi_addr_t *out);

/* Ring @rank's doorbell, mapping it on first use; nothing without bells
 * or when the bell cannot be mapped (the owner then finds the work at
 * its next timed look). */
void wr_peers_ring(struct wr_peers *p, int rank);

/* @len bytes of @buf as lower-case hex in a new string, or NULL. */
char *wr_peers_hex(const void *buf, size_t len);

#endif
