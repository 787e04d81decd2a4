/* SPDX-License-Identifier: MIT */
#include "jobfile.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "quote.h"

/* The arguments quoted for a shell, one line, at most @size bytes. */
static void
quote_command(char *buf, size_t size, int argc, char **argv)
{
	char q[WR_QUOTE_MAX];
	size_t len = 0;

	buf[0] = '\0';
	for (int i = 0; i < argc && len + 1 < size; i++) {
		int n = snprintf(buf + len, size - len, "%s%s", i > 0 ? " " : "",
				 wr_quote(q, sizeof(q), argv[i]));

		len += n > 0 ? (size_t)n : 0;
	}
}

static json_t *
argv_new(int argc, char **argv)
{
	json_t *a = json_array();

	for (int i = 0; a != NULL && i < argc; i++) {
		/* Not UTF-8: kept out of JSON, as the quoted command keeps it. */
		json_t *s = json_string(argv[i]);

		if (json_array_append_new(a, s != NULL ? s : json_string("?")) < 0) {
			json_decref(a);
			a = NULL;
		}
	}
	return a;
}

static int
write_entry(struct wr_jobfile *f, const struct wr_jobfile_job *job)
{
	char command[4096];
	struct wr_rundir_entry e = {
		.jobid = job->jobid, .pid = (long)getpid(), .ranks = job->ranks,
		.host = job->host, .start = wr_clock_epoch(),
		.registry = wr_reghost_endpoints(job->registry),
		.secret = job->registry->secret,
		.msg_max = (long)job->registry->limits.json_max,
		.blob_max = (long)job->registry->limits.blob_max,
		.program = job->program, .command = command,
	};
	int rc;

	quote_command(command, sizeof(command), job->argc, job->argv);
	e.argv = argv_new(job->argc, job->argv);
	if (e.argv == NULL) {
		return -ENOMEM;
	}
	rc = wr_guardian_remove_entry(job->guardian, &f->dir, f->jobid);
	if (rc == 0) {
		rc = wr_rundir_write(&f->dir, &e);
	}
	json_decref(e.argv);
	return rc;
}

int
wr_jobfile_write(struct wr_jobfile *f, const struct wr_jobfile_job *job)
{
	int rc = wr_rundir_open(&f->dir, true);

	snprintf(f->jobid, sizeof(f->jobid), "%s", job->jobid);
	if (rc < 0) {
		fprintf(stderr, "worldrun: not listing job %s in %s (worldctl jobs will "
			"not show it): %s\n", f->jobid, f->dir.path,
			wr_rundir_refusal(rc));
		f->dir.path[0] = '\0';
		return rc;
	}
	rc = write_entry(f, job);
	if (rc < 0) {
		fprintf(stderr, "worldrun: unable to list job %s in %s: %s\n", f->jobid,
			f->dir.path, strerror(-rc));
		f->dir.path[0] = '\0';
	}
	return rc;
}

void
wr_jobfile_remove(struct wr_jobfile *f)
{
	if (f == NULL || f->dir.path[0] == '\0') {
		return;
	}
	wr_rundir_remove(&f->dir, f->jobid);
	f->dir.path[0] = '\0';
}
