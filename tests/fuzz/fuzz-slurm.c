/* SPDX-License-Identifier: MIT */
/*
 * fuzz-slurm: a Slurm allocation's node list and counts
 * (cmd/worldrun/slurm.c). A pair that reads must give hosts with names
 * a hostfile would take and slots that add up; one that does not must
 * say why.
 *
 * Input: the node list, a NUL, then the counts (without a NUL: "1").
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "slurm.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[WR_HOSTS_ERR_MAX] = "";
	char *buf = malloc(size + 2);
	struct wr_slurm_alloc a = { .nodelist_var = "SLURM_JOB_NODELIST",
				    .counts_var = "SLURM_TASKS_PER_NODE" };
	struct wr_hosts h = { 0 };
	size_t cut;
	long sum = 0;

	FUZZ_CHECK(buf != NULL);
	memcpy(buf, data, size);
	buf[size] = buf[size + 1] = '\0';
	cut = strlen(buf);
	a.nodelist = buf;
	a.counts = cut < size ? buf + cut + 1 : "1";
	if (wr_slurm_hosts(&h, &a, err) == 0) {
		FUZZ_CHECK(h.n >= 1 && h.n <= WR_HOSTS_MAX);
		for (int i = 0; i < h.n; i++) {
			size_t len = strlen(h.v[i].name);

			FUZZ_CHECK(len >= 1 && len <= WR_HOSTS_NAME_MAX && h.v[i].name[0] != '-');
			FUZZ_CHECK(h.v[i].slots >= 1 && h.v[i].slots <= WR_HOSTS_SLOTS_MAX);
			sum += h.v[i].slots;
		}
		FUZZ_CHECK(sum == h.slots);
	} else {
		FUZZ_CHECK(err[0] != '\0');
	}
	wr_hosts_finish(&h);
	free(buf);
	return 0;
}
