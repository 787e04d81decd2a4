/* SPDX-License-Identifier: MIT */
#include "hostjob.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bind.h"
#include "resolve.h"

/* Set "NAME=VALUE" @var in @env. */
static int
set_var(struct wr_env *env, const char *var)
{
	const char *eq = strchr(var, '=');
	char *name = strndup(var, (size_t)(eq - var));
	int rc = name != NULL ? wr_env_set(env, name, eq + 1) : -ENOMEM;

	free(name);
	return rc;
}

int
wr_hostjob_init(struct wr_hostjob *job, const struct wr_setup *s, const char *secret)
{
	int rc;

	*job = (struct wr_hostjob){
		.size = s->size, .nnodes = s->nnodes, .argv = s->argv,
		.pty = s->pty, .kill_grace = s->kill_grace,
		.master_addr = s->master_addr[0] != '\0' ? s->master_addr : "127.0.0.1",
		.master_port = s->master_port,
		.pmi = s->pmi, .pmi_port = s->pmi_port, .pmix = s->pmix, .pmi_mapping = s->pmi_mapping,
		.node_name = s->node_name,
		.nofile = { .rlim_cur = s->nofile_cur, .rlim_max = s->nofile_max },
		.stdin_mode = s->stdin_rank == WR_SETUP_STDIN_NONE ? WR_STDIN_NONE
			      : s->stdin_rank == WR_SETUP_STDIN_ALL ? WR_STDIN_ALL
								     : WR_STDIN_RANK,
		.stdin_rank = s->stdin_rank,
		.bind = s->bind, .cpus_per_rank = s->cpus_per_rank > 0 ? s->cpus_per_rank : 1,
		.report_bindings = s->report_bindings,
	};
	memcpy(job->jobid, s->jobid, sizeof(job->jobid));
	rc = wr_env_init(&job->env, (char *const[]){ NULL });
	if (rc == 0 && secret != NULL) {
		rc = wr_env_set(&job->env, "WORLD_SECRET", secret);
	}
	for (int i = 0; rc == 0 && s->env[i] != NULL; i++) {
		rc = set_var(&job->env, s->env[i]);
	}
	return rc;
}

int
wr_hostjob_add_hosts_own(struct wr_hostjob *job, char *const *envp)
{
	int rc = 0;

	for (char *const *v = envp; rc == 0 && *v != NULL; v++) {
		size_t len = strcspn(*v, "=");

		if ((*v)[len] == '=' && wr_env_is_hosts_own(*v, len) &&
		    strncmp(*v, "PWD=", 4) != 0 && strncmp(*v, "OLDPWD=", 7) != 0) {
			rc = set_var(&job->env, *v);
		}
	}
	return rc;
}

static int
make_sh_argv(struct wr_hostjob *job)
{
	int argc = 0;

	while (job->argv[argc] != NULL) {
		argc++;
	}
	job->sh_argv = calloc((size_t)argc + 2, sizeof(char *));
	if (job->sh_argv == NULL) {
		return -ENOMEM;
	}
	job->sh_argv[0] = (char *)"/bin/sh";
	job->sh_argv[1] = job->path;
	for (int i = 1; i < argc; i++) {
		job->sh_argv[i + 1] = job->argv[i];
	}
	return 0;
}

int
wr_hostjob_locate(struct wr_hostjob *job, const char *wdir, char *why, size_t size)
{
	struct wr_resolved found = { 0 };
	int rc = wr_resolve_locate(&found, job->argv[0], wdir,
				   wr_env_get(&job->env, "PATH"), why, size);

	job->path = found.path;
	job->wdir = found.wdir;
	if (rc == 0 && make_sh_argv(job) < 0) {
		snprintf(why, size, "unable to build the command line: %s",
			 strerror(ENOMEM));
		rc = 125;
	}
	return rc;
}

int
wr_hostjob_bind(struct wr_hostjob *job, int nranks, char *why, size_t size)
{
	char err[160];

	if (job->bind == WR_BIND_NONE && !job->report_bindings) {
		return 0;
	}
	if (wr_bind_open(job->bind, job->cpus_per_rank, nranks, &job->cpus, err,
			 sizeof(err)) < 0) {
		snprintf(why, size, "%s", err);
		return 125;
	}
	return 0;
}

void
wr_hostjob_finish(struct wr_hostjob *job)
{
	if (job == NULL) {
		return;
	}
	wr_env_finish(&job->env);
	wr_bind_close(job->cpus);
	job->cpus = NULL;
	free(job->path);
	free(job->sh_argv);
	free(job->wdir);
	job->path = NULL;
	job->sh_argv = NULL;
	job->wdir = NULL;
}
