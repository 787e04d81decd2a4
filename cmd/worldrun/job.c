/* SPDX-License-Identifier: MIT */
#include "job.h"
#include "provider.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "quote.h"
#include "resolve.h"
#include "token.h"

/* A port the kernel considers free now, for torchrun's MASTER_PORT. */
static int
free_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int port = -errno;

	if (fd < 0) {
		return port;
	}
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sa, &len) == 0) {
		port = ntohs(sa.sin_port);
	} else {
		port = -errno;
	}
	close(fd);
	return port;
}

/* The variables worldrun sets in every rank from its own environment:
 * "NAME=VALUE worldrun ..." is the way to give them. */
static bool
from_own_env(const char *x, int nlen)
{
	static const char *const names[] = { "WORLD_WAIT_TIMEOUT", "WORLD_LEASE_INTERVAL",
					     "WORLD_SPIN_US", "WORLD_PULL", "WORLD_FABRIC" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if ((int)strlen(names[i]) == nlen && strncmp(names[i], x, (size_t)nlen) == 0) {
			return true;
		}
	}
	return false;
}

static int
apply_xvars(struct wr_job *job, const struct wr_opts *o, char *const *envp)
{
	for (size_t i = 0; i < o->nxvars; i++) {
		const char *x = o->xvars[i];
		int nlen = (int)strcspn(x, "=");
		int rc = wr_env_apply_x(&job->env, x, envp);
		char q[WR_QUOTE_MAX];

		if (rc == -EPERM && from_own_env(x, nlen)) {
			fprintf(stderr, "worldrun: -x %.*s: worldrun sets this variable in every "
					"rank from its own environment: %.*s=%.40s worldrun ... "
					"sets it\n", nlen, x, nlen, x, x[nlen] == '=' ? x + nlen + 1 :
					"VALUE");
			return 125;
		}
		if (rc == -EPERM) {
			fprintf(stderr, "worldrun: -x %.*s: worldrun sets this "
					"variable in every rank\n", nlen, x);
			return 125;
		}
		/* As Open MPI's mpirun: said, and the job goes on (a script's
		 * -x CUDA_VISIBLE_DEVICES on a machine without a GPU). */
		if (rc == -ENOENT) {
			x = wr_quote(q, sizeof(q), x);
			fprintf(stderr, "worldrun: -x %s: not set in worldrun's environment: "
					"the ranks get none (-x %s=VALUE sets one)\n", x, x);
			continue;
		}
		if (rc < 0) {
			fprintf(stderr, "worldrun: -x %s: %s\n", wr_quote(q, sizeof(q), x),
				strerror(-rc));
			return 125;
		}
	}
	return 0;
}

/*
 * Where the ranks of other hosts run: --wdir (from our working directory
 * if relative), or our working directory itself where they have it, as
 * mpirun does.
 */
static int
far_wdir(struct wr_job *job, const char *wdir)
{
	char *cwd = getcwd(NULL, 0);

	job->far_wdir_soft = wdir == NULL;
	if (wdir != NULL && wdir[0] == '/') {
		job->far_wdir = strdup(wdir);
	} else if (wdir != NULL && cwd != NULL) {
		if (asprintf(&job->far_wdir, "%s/%s", cwd, wdir) < 0) {
			job->far_wdir = NULL;
		}
	} else {
		job->far_wdir = cwd;
		cwd = NULL;
	}
	free(cwd);
	return job->far_wdir != NULL || (errno != ENOMEM && wdir == NULL) ? 0 : -ENOMEM;
}

/*
 * The directory of the worldctl that came with this worldrun: beside it
 * when installed, in ../worldctl/ in the build tree. NULL if none.
 */
static char *
own_worldctl_dir(void)
{
	static const char *const where[] = { "", "/../worldctl" };
	char *self = realpath("/proc/self/exe", NULL);
	char *dir = NULL;

	if (self == NULL || strrchr(self, '/') == NULL) {
		free(self);
		return NULL;
	}
	*strrchr(self, '/') = '\0';
	for (size_t i = 0; i < 2 && dir == NULL; i++) {
		char *cand = NULL;

		if (asprintf(&cand, "%s%s/worldctl", self, where[i]) < 0) {
			break;
		}
		if (access(cand, X_OK) == 0) {
			*strrchr(cand, '/') = '\0';
			dir = realpath(cand, NULL);
		}
		free(cand);
	}
	free(self);
	return dir;
}

/*
 * Ranks' scripts call worldctl. When the ranks' PATH finds none, append
 * the directory of our own, as mpirun adds its prefix: appended, so it
 * shadows nothing that the user's PATH chose.
 */
static int
add_worldctl_dir(struct wr_job *job, const char *wdir)
{
	const char *path = wr_env_get(&job->env, "PATH");
	char *found = NULL, *dir = NULL, *newpath = NULL;
	int rc = 0;

	if (wr_resolve("worldctl", path, wdir, &found) == 0) {
		free(found);
		return 0;
	}
	dir = own_worldctl_dir();
	if (dir == NULL) {
		return 0;
	}
	if (asprintf(&newpath, "%s:%s", path != NULL ? path : "/usr/bin:/bin",
		     dir) < 0) {
		newpath = NULL;
		rc = -ENOMEM;
	} else {
		rc = wr_env_set(&job->env, "PATH", newpath);
	}
	free(newpath);
	free(dir);
	return rc;
}

/* The job's fabric (provider.h), for every rank: WORLD_FABRIC. */
static int
set_fabric(struct wr_job *job, char *const *envp)
{
	const char *why;
	char name[32];

	if (wr_provider_choose(envp, job->nnodes, name, sizeof(name), &why) < 0) {
		fprintf(stderr, "worldrun: WORLD_FABRIC=%s: %s\n", name, why);
		return 125;
	}
	if (wr_env_set(&job->env, "WORLD_FABRIC", name) < 0) {
		fprintf(stderr, "worldrun: unable to set WORLD_FABRIC: %s\n", strerror(ENOMEM));
		return 125;
	}
	return 0;
}

static int
fail_system(const char *what, int err)
{
	fprintf(stderr, "worldrun: unable to %s: %s\n", what, strerror(-err));
	return 125;
}

/*
 * torchrun's names for the whole job (worldrun(1), ENVIRONMENT): one role
 * for every rank, a node for each of its agents, the job id as its run
 * id, and the store in rank 0's process, as under torchrun's c10d
 * rendezvous: worldrun hosts no TCPStore of its own.
 */
static int
set_torch_env(struct wr_job *job, const struct wr_opts *o, const struct wr_restart *rs)
{
	char nodes[16], restarts[16], count[16];
	const char *const set[][2] = {
		{ "ROLE_NAME", o->torch.role != NULL ? o->torch.role : "default" },
		{ "GROUP_WORLD_SIZE", nodes },
		{ "TORCHELASTIC_RESTART_COUNT", count },
		{ "WORLD_RESTART_COUNT", count },
		{ "TORCHELASTIC_MAX_RESTARTS", restarts },
		{ "TORCHELASTIC_RUN_ID", o->torch.run_id != NULL ? o->torch.run_id : job->jobid },
		{ "TORCHELASTIC_USE_AGENT_STORE", "False" },
	};

	snprintf(nodes, sizeof(nodes), "%d", job->nnodes);
	snprintf(restarts, sizeof(restarts), "%ld", o->max_restarts);
	snprintf(count, sizeof(count), "%d", rs->count);
	for (size_t i = 0; i < sizeof(set) / sizeof(set[0]); i++) {
		if (wr_env_set(&job->env, set[i][0], set[i][1]) < 0) {
			return -ENOMEM;
		}
	}
	return 0;
}

int
wr_job_init(struct wr_job *job, const struct wr_opts *o, char *const *envp,
	    const struct rlimit *nofile, int nnodes, struct wr_restart *restart)
{
	int rc;

	*job = (struct wr_job){
		.size = (int)o->np,
		.nnodes = nnodes,
		.argv = o->argv,
		.pty = o->pty,
		.stdin_mode = o->stdin_mode,
		.stdin_rank = (int)o->stdin_rank,
		.stdin_fd = 0,
		.kill_grace = o->kill_grace,
		.master_addr = o->torch.master_addr != NULL ? o->torch.master_addr
							     : "127.0.0.1",
		.master_given = o->torch.master_addr != NULL,
		.nofile = *nofile,
	};
	/* Every attempt of a job that restarts is the same job. */
	rc = restart->jobid[0] != '\0' ? 0 : wr_token(restart->jobid, 6);
	if (rc < 0) {
		return fail_system("make a job id", rc);
	}
	memcpy(job->jobid, restart->jobid, sizeof(job->jobid));
	/* -x NAME still forwards NAME from @envp, with --env-none too. */
	rc = wr_env_init(&job->env, o->env_none ? (char *const[]){NULL} : envp);
	if (rc < 0) {
		return fail_system("copy the environment", rc);
	}
	rc = apply_xvars(job, o, envp);
	if (rc == 0) {
		rc = set_fabric(job, envp);
	}
	/* A job of one node may be on another host too (-H node-b). */
	if (rc == 0 && far_wdir(job, o->wdir) < 0) {
		return fail_system("find the working directory", -ENOMEM);
	}
	if (rc == 0 && add_worldctl_dir(job, o->wdir) < 0) {
		return fail_system("add worldctl to PATH", -ENOMEM);
	}
	if (rc == 0 && set_torch_env(job, o, restart) < 0) {
		return fail_system("set torchrun's variables", -ENOMEM);
	}
	if (rc != 0) {
		return rc;
	}
	job->master_port = o->torch.master_port > 0 ? o->torch.master_port : free_port();
	if (job->master_port < 0) {
		return fail_system("find a free port for MASTER_PORT",
				   job->master_port);
	}
	return 0;
}

void
wr_job_finish(struct wr_job *job)
{
	if (job == NULL) {
		return;
	}
	wr_env_finish(&job->env);
	free(job->path);
	free(job->wdir);
	free(job->far_wdir);
	job->far_wdir = NULL;
	job->path = NULL;
	job->wdir = NULL;
}
