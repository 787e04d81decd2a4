/* SPDX-License-Identifier: MIT */
/*
 * errrecord: world_error_record(), a rank's exception written where the
 * launcher looks for it (TORCHELASTIC_ERROR_FILE), in torchelastic's JSON,
 * as torch's @record writes it. A whole file or none: a temporary file
 * beside it, then rename. It does not read the file or talk to anyone.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "world.h"

int
world_error_record(const char *message, const char *detail)
{
	const char *path = getenv("TORCHELASTIC_ERROR_FILE");
	char stamp[24], *tmp = NULL;
	json_t *doc;
	int fd, rc;

	if (path == NULL || path[0] == '\0') {
		return -ENOENT;
	}
	snprintf(stamp, sizeof(stamp), "%lld", (long long)time(NULL));
	doc = json_pack("{s:{s:s, s:{s:s, s:s}}}", "message", "message",
			message != NULL ? message : "", "extraInfo", "py_callstack",
			detail != NULL ? detail : "", "timestamp", stamp);
	if (doc == NULL) {
		return -EINVAL; /* not UTF-8 */
	}
	if (asprintf(&tmp, "%s.XXXXXX", path) < 0) {
		json_decref(doc);
		return -ENOMEM;
	}
	fd = mkostemp(tmp, O_CLOEXEC);
	rc = fd < 0 ? -errno : json_dumpfd(doc, fd, JSON_COMPACT) < 0 ? -EIO : 0;
	if (fd >= 0 && close(fd) < 0 && rc == 0) {
		rc = -errno;
	}
	if (rc == 0 && rename(tmp, path) < 0) {
		rc = -errno;
	}
	if (rc < 0 && fd >= 0) {
		unlink(tmp);
	}
	json_decref(doc);
	free(tmp);
	return rc;
}
