/* SPDX-License-Identifier: MIT */
/*
 * fuzz-hosts: hostfiles and -H lists (cmd/worldrun/hosts.c), then where
 * ranks go. A list that reads must hold hosts with sane slots that add
 * up; a placement that succeeds must put every rank on a node of the
 * list, never past a node's max_slots, and within the slots unless
 * oversubscribed.
 *
 * Input: one byte of settings (bit 0: a -H list, else a hostfile; bit 1:
 * by node; bit 2: --oversubscribe; bits 3-7: --ppn), one byte of ranks
 * (0-255), then the file or the list.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "hosts.h"

static void
check_place(const struct wr_hosts *h, const struct wr_place_cfg *cfg)
{
	char err[WR_HOSTS_ERR_MAX];
	int node[256], count[256] = {0};
	long room = 0;

	if (wr_hosts_place(h, cfg, node, err) != 0) {
		FUZZ_CHECK(err[0] != '\0');
		return;
	}
	for (int i = 0; i < h->n; i++) {
		int c = cfg->ppn > 0 ? cfg->ppn : h->v[i].slots;

		room += h->v[i].max_slots > 0 && c > h->v[i].max_slots ? h->v[i].max_slots : c;
	}
	FUZZ_CHECK(cfg->oversubscribe || cfg->nranks <= room);
	for (int r = 0; r < cfg->nranks; r++) {
		FUZZ_CHECK(node[r] >= 0 && node[r] < h->n);
		if (node[r] < 256) {
			count[node[r]]++;
		}
	}
	for (int i = 0; i < h->n && i < 256; i++) {
		FUZZ_CHECK(h->v[i].max_slots == 0 || count[i] <= h->v[i].max_slots);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[WR_HOSTS_ERR_MAX], path[64];
	struct wr_hosts h = {0};
	struct wr_place_cfg cfg;
	long sum = 0;
	int rc, fd;

	if (size < 2) {
		return 0;
	}
	cfg = (struct wr_place_cfg){.nranks = data[1], .map = data[0] & 2 ? WR_MAP_NODE : WR_MAP_SLOT,
				    .oversubscribe = (data[0] & 4) != 0, .ppn = data[0] >> 3};
	if (data[0] & 1) {
		char *list = strndup((const char *)data + 2, size - 2);

		FUZZ_CHECK(list != NULL);
		rc = wr_hosts_read_list(&h, list, err);
		free(list);
	} else {
		fd = memfd_create("hosts", MFD_CLOEXEC);
		FUZZ_CHECK(fd >= 0);
		FUZZ_CHECK(write(fd, data + 2, size - 2) == (ssize_t)(size - 2));
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		rc = wr_hosts_read_file(&h, path, err);
		close(fd);
	}
	if (rc == 0) {
		FUZZ_CHECK(h.n >= 1);
		for (int i = 0; i < h.n; i++) {
			FUZZ_CHECK(h.v[i].slots >= 1 && h.v[i].name[0] != '\0');
			FUZZ_CHECK(h.v[i].max_slots == 0 || h.v[i].max_slots >= 1);
			sum += h.v[i].slots;
		}
		FUZZ_CHECK(sum == h.slots);
		check_place(&h, &cfg);
	} else {
		FUZZ_CHECK(err[0] != '\0');
	}
	wr_hosts_finish(&h);
	return 0;
}
