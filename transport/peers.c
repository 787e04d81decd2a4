/* SPDX-License-Identifier: MIT */
#include "peers.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bell.h"

/* An shm address is "fi_shm://<pid>:<uid>:<idx>" or a name chosen at
 * open; nothing longer is one. */
#define STR_ADDR_MAX 256

struct peer {
	unsigned char *addr; /* NULL: unknown */
	size_t len;
	bool inserted;
	bool bell_failed; /* do not try to map the bell again */
	fi_addr_t fa;
	struct wr_bell *bell;
};

struct wr_peers {
	int size;
	size_t addrlen;
	char *bell_prefix;
	struct peer *tab;
};

int
wr_peers_create(const struct wr_peers_cfg *cfg, struct wr_peers **out)
{
	struct wr_peers *p;

	*out = NULL;
	if (cfg->size <= 0) {
		return -EINVAL;
	}
	p = calloc(1, sizeof(*p));
	if (p == NULL) {
		return -ENOMEM;
	}
	p->size = cfg->size;
	p->addrlen = cfg->addrlen;
	p->tab = calloc((size_t)cfg->size, sizeof(*p->tab));
	if (cfg->bell_prefix) {
		p->bell_prefix = strdup(cfg->bell_prefix);
	}
	if (p->tab == NULL || (cfg->bell_prefix && p->bell_prefix == NULL)) {
		wr_peers_destroy(p);
		return -ENOMEM;
	}
	*out = p;
	return 0;
}

void
wr_peers_destroy(struct wr_peers *p)
{
	if (p == NULL) {
		return;
	}
	for (int i = 0; p->tab && i < p->size; i++) {
		free(p->tab[i].addr);
		wr_bell_close(p->tab[i].bell);
	}
	free(p->tab);
	free(p->bell_prefix);
	free(p);
}

static int
hex_digit(char c)
{
	if (c >= '0' && c <= '9') {
		return c - '0';
	}
	if (c >= 'a' && c <= 'f') {
		return c - 'a' + 10;
	}
	if (c >= 'A' && c <= 'F') {
		return c - 'A' + 10;
	}
	return -1;
}

/* Decode @hex into a new buffer of *@len bytes: 0, -EINVAL or -ENOMEM. */
static int
unhex(const char *hex, unsigned char **out, size_t *len)
{
	size_t n = strlen(hex);
	unsigned char *buf;

	if (n == 0 || n % 2 != 0 || n / 2 > STR_ADDR_MAX) {
		return -EINVAL;
	}
	buf = malloc(n / 2);
	if (buf == NULL) {
		return -ENOMEM;
	}
	for (size_t i = 0; i < n / 2; i++) {
		int hi = hex_digit(hex[2 * i]), lo = hex_digit(hex[2 * i + 1]);

		if (hi < 0 || lo < 0) {
			free(buf);
			return -EINVAL;
		}
		buf[i] = (unsigned char)(hi << 4 | lo);
	}
	*out = buf;
	*len = n / 2;
	return 0;
}

/* Whether @addr can be handed to fi_av_insert(), which reads as many
 * bytes as the provider's format says, not as many as we have. */
static bool
addr_fits(const struct wr_peers *p, const unsigned char *addr, size_t len)
{
	if (p->addrlen > 0) {
		return len == p->addrlen;
	}
	return len >= 2 && memchr(addr, '\0', len) == addr + len - 1;
}

int
wr_peers_set(struct wr_peers *p, int rank, const char *hex)
{
	unsigned char *addr = NULL;
	struct peer *e;
	size_t len = 0;
	int rc;

	if (rank < 0 || rank >= p->size || hex == NULL) {
		return -EINVAL;
	}
	rc = unhex(hex, &addr, &len);
	if (rc < 0) {
		return rc;
	}
	if (!addr_fits(p, addr, len)) {
		free(addr);
		return -EINVAL;
	}
	e = &p->tab[rank];
	if (e->inserted) {
		rc = len == e->len && memcmp(addr, e->addr, len) == 0 ? 0 : -EBUSY;
		free(addr);
		return rc;
	}
	free(e->addr);
	e->addr = addr;
	e->len = len;
	return 0;
}

bool
wr_peers_has(const struct wr_peers *p, int rank)
{
	return rank >= 0 && rank < p->size && p->tab[rank].addr != NULL;
}

int
wr_peers_fi_addr(struct wr_peers *p, struct fid_av *av, int rank,
		 fi_addr_t *out)
{
	struct peer *e;
	int n;

	if (rank < 0 || rank >= p->size) {
		return -EINVAL;
	}
	e = &p->tab[rank];
	if (e->addr == NULL) {
		return -EDESTADDRREQ;
	}
	if (!e->inserted) {
		n = fi_av_insert(av, e->addr, 1, &e->fa, 0, NULL);
		if (n != 1) {
			return n < 0 ? n : -EINVAL;
		}
		e->inserted = true;
	}
	*out = e->fa;
	return 0;
}

void
wr_peers_ring(struct wr_peers *p, int rank)
{
	struct peer *e;

	if (p->bell_prefix == NULL || rank < 0 || rank >= p->size) {
		return;
	}
	e = &p->tab[rank];
	if (e->bell == NULL && !e->bell_failed) {
		e->bell_failed = wr_bell_open(p->bell_prefix, rank, &e->bell) < 0;
	}
	if (e->bell) {
		wr_bell_ring(e->bell);
	}
}

char *
wr_peers_hex(const void *buf, size_t len)
{
	static const char digits[] = "0123456789abcdef";
	const unsigned char *b = buf;
	char *s = malloc(2 * len + 1);

	if (s == NULL) {
		return NULL;
	}
	for (size_t i = 0; i < len; i++) {
		s[2 * i] = digits[b[i] >> 4];
		s[2 * i + 1] = digits[b[i] & 15];
	}
	s[2 * len] = '\0';
	return s;
}
