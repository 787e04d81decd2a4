/* SPDX-License-Identifier: MIT */
/*
 * The names, the table of which collective has which algorithm, and the
 * choice among them; the algorithms themselves are in algos-reduce.c
 * (all_reduce, reduce, reduce_scatter) and algos-move.c (the others).
 */
#include "algos.h"

#include <errno.h>
#include <string.h>

#define KIB ((size_t)1024)
#define MIB (1024 * KIB)

static const char *const algo_names[WR_ALGO_NALGOS] = {
	[WR_ALGO_AUTO] = "auto",
	[WR_ALGO_RECURSIVE_DOUBLING] = "recursive_doubling",
	[WR_ALGO_RABENSEIFNER] = "rabenseifner",
	[WR_ALGO_RING] = "ring",
	[WR_ALGO_BINOMIAL] = "binomial",
	[WR_ALGO_SCATTER_ALLGATHER] = "scatter_allgather",
	[WR_ALGO_DISSEMINATION] = "dissemination",
	[WR_ALGO_BRUCK] = "bruck",
	[WR_ALGO_LINEAR] = "linear",
	[WR_ALGO_PAIRWISE] = "pairwise",
	[WR_ALGO_REDUCE_SCATTER_GATHER] = "reduce_scatter_gather",
	[WR_ALGO_RECURSIVE_HALVING] = "recursive_halving",
	[WR_ALGO_REDUCE_THEN_SCATTER] = "reduce_then_scatter",
	[WR_ALGO_SHM] = "shm",
};

static const char *const kind_names[WR_COLL_NKINDS] = {
	[WR_COLL_BARRIER] = "barrier",
	[WR_COLL_BROADCAST] = "broadcast",
	[WR_COLL_ALL_REDUCE] = "all_reduce",
	[WR_COLL_REDUCE] = "reduce",
	[WR_COLL_ALL_GATHER] = "all_gather",
	[WR_COLL_GATHER] = "gather",
	[WR_COLL_SCATTER] = "scatter",
	[WR_COLL_REDUCE_SCATTER] = "reduce_scatter",
	[WR_COLL_ALL_TO_ALL] = "all_to_all",
};

#define BIT(a) (1u << (a))

/* The algorithms of each collective, as bits of enum wr_algo. */
static const unsigned kind_algos[WR_COLL_NKINDS] = {
	[WR_COLL_BARRIER] = BIT(WR_ALGO_DISSEMINATION) | BIT(WR_ALGO_SHM),
	[WR_COLL_BROADCAST] = BIT(WR_ALGO_BINOMIAL) |
			      BIT(WR_ALGO_SCATTER_ALLGATHER) | BIT(WR_ALGO_SHM),
	[WR_COLL_ALL_REDUCE] = BIT(WR_ALGO_RECURSIVE_DOUBLING) |
			       BIT(WR_ALGO_RABENSEIFNER) | BIT(WR_ALGO_RING) |
			       BIT(WR_ALGO_SHM),
	[WR_COLL_REDUCE] =
		BIT(WR_ALGO_BINOMIAL) | BIT(WR_ALGO_REDUCE_SCATTER_GATHER),
	[WR_COLL_ALL_GATHER] = BIT(WR_ALGO_RECURSIVE_DOUBLING) |
			       BIT(WR_ALGO_BRUCK) | BIT(WR_ALGO_RING) |
			       BIT(WR_ALGO_SHM),
	[WR_COLL_GATHER] = BIT(WR_ALGO_BINOMIAL) | BIT(WR_ALGO_LINEAR),
	[WR_COLL_SCATTER] = BIT(WR_ALGO_BINOMIAL) | BIT(WR_ALGO_LINEAR),
	[WR_COLL_REDUCE_SCATTER] = BIT(WR_ALGO_RING) |
				   BIT(WR_ALGO_RECURSIVE_HALVING) |
				   BIT(WR_ALGO_REDUCE_THEN_SCATTER),
	[WR_COLL_ALL_TO_ALL] = BIT(WR_ALGO_PAIRWISE) | BIT(WR_ALGO_BRUCK),
};

const char *
wr_algo_name(enum wr_algo a)
{
	return (unsigned)a < WR_ALGO_NALGOS ? algo_names[a] : NULL;
}

const char *
wr_algo_kind_name(enum wr_coll_kind k)
{
	return (unsigned)k < WR_COLL_NKINDS ? kind_names[k] : NULL;
}

bool
wr_algo_has_root(enum wr_coll_kind k)
{
	return k == WR_COLL_BROADCAST || k == WR_COLL_REDUCE || k == WR_COLL_GATHER ||
	       k == WR_COLL_SCATTER;
}

bool
wr_algo_reduces(enum wr_coll_kind k)
{
	return k == WR_COLL_ALL_REDUCE || k == WR_COLL_REDUCE || k == WR_COLL_REDUCE_SCATTER;
}

bool
wr_algo_valid(enum wr_coll_kind k, enum wr_algo a)
{
	if ((unsigned)k >= WR_COLL_NKINDS || (unsigned)a >= WR_ALGO_NALGOS) {
		return false;
	}
	return a == WR_ALGO_AUTO || (kind_algos[k] & BIT(a)) != 0;
}

/* The index of the @len-byte name @s in @names, or -1. */
static int
lookup(const char *const *names, int n, const char *s, size_t len)
{
	for (int i = 0; i < n; i++) {
		if (strlen(names[i]) == len && memcmp(names[i], s, len) == 0) {
			return i;
		}
	}
	return -1;
}

/* Apply one item, "kind=algorithm" or "algorithm", of @len bytes. */
static int
parse_item(const char *s, size_t len, enum wr_algo forced[WR_COLL_NKINDS])
{
	const char *eq = memchr(s, '=', len);
	int kind = -1, algo;
	bool any = false;

	if (eq != NULL) {
		kind = lookup(kind_names, WR_COLL_NKINDS, s, (size_t)(eq - s));
		if (kind < 0) {
			return -EINVAL;
		}
		len -= (size_t)(eq + 1 - s);
		s = eq + 1;
	}
	algo = lookup(algo_names, WR_ALGO_NALGOS, s, len);
	if (algo < 0) {
		return -EINVAL;
	}
	for (int k = 0; k < WR_COLL_NKINDS; k++) {
		if ((kind < 0 || k == kind) && wr_algo_valid(k, algo)) {
			forced[k] = (enum wr_algo)algo;
			any = true;
		}
	}
	return any ? 0 : -EINVAL;
}

int
wr_algo_parse(const char *spec, enum wr_algo forced[WR_COLL_NKINDS])
{
	enum wr_algo out[WR_COLL_NKINDS] = {WR_ALGO_AUTO};
	const char *s = spec;

	while (s != NULL && *s != '\0') {
		const char *comma = strchr(s, ',');
		size_t len = comma != NULL ? (size_t)(comma - s) : strlen(s);
		int rc = parse_item(s, len, out);

		if (rc < 0) {
			return rc;
		}
		/* A trailing comma leaves an empty item, which fails. */
		s = comma != NULL ? (comma[1] != '\0' ? comma + 1 : comma) : NULL;
	}
	memcpy(forced, out, sizeof(out));
	return 0;
}

static bool
is_pow2(int n)
{
	return (n & (n - 1)) == 0;
}

/* @bytes times @n, saturated. */
static size_t
total_of(size_t bytes, int n)
{
	return bytes > SIZE_MAX / (size_t)n ? SIZE_MAX : bytes * (size_t)n;
}

/*
 * Where the group shares an area (shmcoll.h), measured with collbench,
 * 2, 4 and 8 ranks on 2 cores: a barrier is always faster through it
 * (8 ranks: 5 us against 18-22); an all_reduce too when oversubscribed
 * (4 B: 5 us against 22-25; 16 MiB: 19 ms against 34-36 for the ring),
 * and otherwise below 1 MiB, above which Rabenseifner's single copies by
 * CMA win (2 ranks, 4 MiB: 0.52-0.59 ms against 0.77-0.83). A broadcast
 * gains when oversubscribed (8 ranks, 4 B: 1.4-2.2 us against 2.8-3.8;
 * 64 KiB: 29 us against 46-57), and below 16 KiB otherwise (2 ranks, 4
 * B: 0.23 us against 1.1-1.2). An
 * all_gather gains when oversubscribed (8 ranks, 1 MiB blocks: 2.8 ms
 * against 4.8-6.9), and below 256 KiB in all otherwise (2 ranks, 1 KiB:
 * 0.7 us against 1.4; 1 MiB: 219 against 171).
 */
static bool
shm_wins(enum wr_coll_kind k, size_t bytes, size_t total, bool over)
{
	switch (k) {
	case WR_COLL_BARRIER:
		return true;
	case WR_COLL_ALL_REDUCE:
		return over || bytes < 1 * MIB;
	case WR_COLL_BROADCAST:
		return over || bytes < 16 * KIB;
	case WR_COLL_ALL_GATHER:
		return over || total < 256 * KIB;
	default:
		return false;
	}
}

/*
 * fabric.md §8, with α ≈ 3 us per step here (50-250 us oversubscribed)
 * and 3-6 GB/s: below the crossovers the algorithms with the fewest steps
 * win; above, those that move each byte the fewest times. Oversubscribed
 * ranks pay so much per step that the lg p algorithms win up to large n,
 * except all_reduce, whose ring wins from 1 MiB even then: measured with
 * 8 ranks on 2 cores (medians of 7 rounds), 1.0x Open MPI's time at 1 MiB
 * and 0.6-0.8x at 2-16 MiB, against 2.8x and 0.9-1.3x for Rabenseifner,
 * whose first steps' halves fall out of cache; at 512 KiB they tie.
 */
static enum wr_algo
auto_pick(enum wr_coll_kind k, int size, size_t bytes, unsigned flags)
{
	size_t total = total_of(bytes, size > 0 ? size : 1);
	bool over = (flags & WR_PICK_OVER) != 0;

	if ((flags & WR_PICK_SHM) != 0 && shm_wins(k, bytes, total, over)) {
		return WR_ALGO_SHM;
	}
	switch (k) {
	case WR_COLL_BARRIER:
		return WR_ALGO_DISSEMINATION;
	case WR_COLL_BROADCAST:
		if (size < 8 || bytes < 64 * KIB || (over && bytes < 4 * MIB)) {
			return WR_ALGO_BINOMIAL;
		}
		return WR_ALGO_SCATTER_ALLGATHER;
	case WR_COLL_ALL_REDUCE:
		if (bytes < 16 * KIB) {
			return WR_ALGO_RECURSIVE_DOUBLING;
		}
		return bytes >= (over ? 1 : 4) * MIB ? WR_ALGO_RING
						     : WR_ALGO_RABENSEIFNER;
	case WR_COLL_REDUCE:
		return bytes < 16 * KIB ? WR_ALGO_BINOMIAL
					: WR_ALGO_REDUCE_SCATTER_GATHER;
	case WR_COLL_ALL_GATHER:
		if (total < 80 * KIB) {
			return is_pow2(size) ? WR_ALGO_RECURSIVE_DOUBLING
					     : WR_ALGO_BRUCK;
		}
		return over ? WR_ALGO_RECURSIVE_DOUBLING : WR_ALGO_RING;
	case WR_COLL_GATHER:
	case WR_COLL_SCATTER:
		return total < 512 * KIB ? WR_ALGO_BINOMIAL : WR_ALGO_LINEAR;
	case WR_COLL_REDUCE_SCATTER:
		return total < 4 * MIB || over ? WR_ALGO_RECURSIVE_HALVING
					       : WR_ALGO_RING;
	case WR_COLL_ALL_TO_ALL:
		if (size >= 4 && bytes <= (over ? 32 * KIB : 1 * KIB)) {
			return WR_ALGO_BRUCK;
		}
		return WR_ALGO_PAIRWISE;
	case WR_COLL_NKINDS:
		break;
	}
	return WR_ALGO_AUTO;
}

enum wr_algo
wr_algo_pick(enum wr_coll_kind k, int size, size_t bytes, unsigned flags,
	     const enum wr_algo forced[WR_COLL_NKINDS])
{
	if ((unsigned)k >= WR_COLL_NKINDS) {
		return WR_ALGO_AUTO;
	}
	if (forced != NULL && forced[k] != WR_ALGO_AUTO &&
	    (forced[k] != WR_ALGO_SHM || (flags & WR_PICK_SHM) != 0)) {
		return forced[k];
	}
	return auto_pick(k, size, bytes, flags);
}
