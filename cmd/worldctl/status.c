/* SPDX-License-Identifier: MIT */
#include "status.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "oneline.h"
#include "regproto.h"
#include "world_errors.h"

/* The lines of the answer, each on its own line, whatever names of the
 * ranks' choosing they hold (oneline.h). */
static int
print_lines(struct wr_ctl *ctl, json_t *lines)
{
	char buf[4096];
	size_t i;
	json_t *l;

	json_array_foreach(lines, i, l) {
		if (!json_is_string(l)) {
			return wr_ctl_fail(ctl, WORLD_EPROTO);
		}
		wr_oneline(buf, sizeof(buf), json_string_value(l), json_string_length(l));
		printf("%s\n", buf);
	}
	return WR_CTL_OK;
}

static int
print_result(struct wr_ctl *ctl, json_t *result, bool json)
{
	json_t *report = NULL, *lines = NULL;
	int rc;

	if (json_unpack(result, "{s:o, s:o}", "report", &report, "lines", &lines) < 0 ||
	    !json_is_object(report) || !json_is_array(lines)) {
		return wr_ctl_fail(ctl, WORLD_EPROTO);
	}
	if (json) {
		rc = json_dumpf(report, stdout, JSON_INDENT(2)) < 0 || putchar('\n') == EOF
		     ? WR_CTL_FAILED : WR_CTL_OK;
	} else {
		rc = print_lines(ctl, lines);
	}
	if (rc == WR_CTL_OK && fflush(stdout) == EOF) {
		wr_ctl_say(ctl, "writing to standard output: %s", strerror(errno));
		rc = WR_CTL_FAILED;
	}
	return rc;
}

int
wr_status_show(struct wr_ctl *ctl, const struct wr_args *a)
{
	const char *job = a->npos > 0 ? a->pos[0] : ctl->job;
	json_t *result = NULL;
	int rc;

	wr_ctl_doing(ctl, "status");
	rc = job != NULL ? wr_ctl_connect_job(ctl, job) : wr_ctl_connect(ctl);
	if (rc < 0) {
		return WR_CTL_FAILED;
	}
	rc = wr_ctl_call(ctl, wr_regproto_op(WR_OP_STATUS), NULL, 0,
			 WR_CTL_NOWAIT, &result, NULL, NULL);
	rc = rc < 0 ? wr_ctl_fail(ctl, rc) : print_result(ctl, result, a->json);
	json_decref(result);
	return rc;
}
