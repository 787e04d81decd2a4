/* SPDX-License-Identifier: MIT */
#include "provider.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* libfabric 1.17's core providers, and the utility ones layered on them
 * ("tcp;ofi_rxm"): a name outside these is a typo, not a provider. */
static const char *const cores[] = {
	"shm", "net", "tcp", "sockets", "udp", "verbs", "psm2", "psm3", "efa",
	"usnic", "opx", "cxi", "ucx",
};
static const char *const utils[] = { "ofi_rxm", "ofi_rxd" };

static bool
listed(const char *const *list, size_t n, const char *name, size_t len)
{
	for (size_t i = 0; i < n; i++) {
		if (strlen(list[i]) == len && memcmp(list[i], name, len) == 0) {
			return true;
		}
	}
	return false;
}

static const char *
check(const char *v)
{
	const char *semi = strchr(v, ';');
	size_t core = semi != NULL ? (size_t)(semi - v) : strlen(v);

	if (*v == '\0') {
		return "empty";
	}
	if (!listed(cores, sizeof(cores) / sizeof(cores[0]), v, core)) {
		return "not a libfabric provider (shm, net, tcp;ofi_rxm, ...)";
	}
	if (semi != NULL &&
	    !listed(utils, sizeof(utils) / sizeof(utils[0]), semi + 1, strlen(semi + 1))) {
		return "the part after ';' must be ofi_rxm or ofi_rxd";
	}
	return NULL;
}

int
wr_provider_choose(char *const *envp, int nnodes, char *out, size_t size,
		 const char **why)
{
	const char *v = nnodes > 1 ? "net" : "shm";

	*why = NULL;
	for (char *const *e = envp; e != NULL && *e != NULL; e++) {
		if (strncmp(*e, "WORLD_FABRIC=", 13) == 0) {
			v = *e + 13;
		}
	}
	*why = check(v);
	if (*why == NULL && strlen(v) >= size) {
		*why = "too long";
	}
	/* On failure, what was given (cut to fit), for the message. */
	snprintf(out, size, "%s", v);
	return *why != NULL ? -EINVAL : 0;
}
