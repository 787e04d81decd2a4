/* SPDX-License-Identifier: MIT */
#include "torchrun.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "env.h"
#include "opts.h"
#include "resolve.h"

static int
refuse(const char *as, const char *val, const char *why)
{
	fprintf(stderr, "worldrun: %s %s: %s (see worldrun --help)\n", as, val, why);
	return -1;
}

/* torchrun's "auto" and "cpu" count the CPUs (os.cpu_count()); a GPU
 * count is the user's to give. */
static int
nproc_arg(struct wr_torch_opts *t, const char *val, const char *as)
{
	long n = 0;

	if (strcmp(val, "auto") == 0 || strcmp(val, "cpu") == 0) {
		n = sysconf(_SC_NPROCESSORS_ONLN);
		t->nproc = n > 0 ? n : 1;
		return 0;
	}
	if (strcmp(val, "gpu") == 0 || strcmp(val, "xpu") == 0) {
		return refuse(as, val, "worldrun does not count devices: give the "
			      "number of ranks per node");
	}
	if (wr_opts_parse_count(val, &n) < 0) {
		return refuse(as, val, "not a rank count (1 to 1048576), auto or cpu");
	}
	t->nproc = n;
	return 0;
}

/* N, or N:N: a job of worldrun has as many nodes from start to end. */
static int
nnodes_arg(struct wr_torch_opts *t, const char *val, const char *as)
{
	const char *colon = strchr(val, ':');
	char first[16];
	long lo = 0, hi = 0;

	snprintf(first, sizeof(first), "%.*s",
		 (int)(colon != NULL ? colon - val : (long)strlen(val)), val);
	if (wr_opts_parse_count(first, &lo) < 0 ||
	    (colon != NULL && wr_opts_parse_count(colon + 1, &hi) < 0)) {
		return refuse(as, val, "not a number of nodes (N or N:N)");
	}
	if (colon != NULL && hi != lo) {
		return refuse(as, val, "worldrun's jobs are not elastic: give one "
			      "number of nodes");
	}
	t->nnodes = lo;
	return 0;
}

static int
port_arg(struct wr_torch_opts *t, const char *val, const char *as)
{
	long port = 0;

	if (wr_opts_parse_count(val, &port) < 0 || port > 65535) {
		return refuse(as, val, "not a TCP port (1 to 65535)");
	}
	t->master_port = (int)port;
	return 0;
}

/* A name in the environment of every rank: one line of printable bytes. */
static int
name_arg(const char **out, const char *val, const char *as)
{
	for (const unsigned char *p = (const unsigned char *)val; *p != '\0'; p++) {
		if (*p < 0x20 || *p == 0x7f) {
			return refuse(as, "", "expected a name without control characters");
		}
	}
	if (val[0] == '\0' || strlen(val) > 256) {
		return refuse(as, val, "expected a name of 1 to 256 bytes");
	}
	*out = val;
	return 0;
}

int
wr_torchrun_apply(struct wr_torch_opts *t, enum wr_torch_opt what, const char *val,
		  const char *as)
{
	t->used = true;
	switch (what) {
	case WR_TORCH_NPROC:
		return nproc_arg(t, val, as);
	case WR_TORCH_NNODES:
		return nnodes_arg(t, val, as);
	case WR_TORCH_ROLE:
		return name_arg(&t->role, val, as);
	case WR_TORCH_MASTER_ADDR:
		return name_arg(&t->master_addr, val, as);
	case WR_TORCH_RDZV_ID:
		return name_arg(&t->run_id, val, as);
	case WR_TORCH_MASTER_PORT:
		return port_arg(t, val, as);
	case WR_TORCH_MONITOR:
		if (wr_opts_parse_seconds(val, &t->monitor) < 0 || t->monitor <= 0) {
			return refuse(as, val, "not a number of seconds above 0");
		}
		return 0;
	case WR_TORCH_MODULE:
		t->module = true;
		return 0;
	case WR_TORCH_NO_PYTHON:
		t->no_python = true;
		return 0;
	case WR_TORCH_RUN_PATH:
	case WR_TORCH_STANDALONE:
	case WR_TORCH_NONE:
		return 0;
	}
	return 0;
}

/* The first @size - 1 bytes of the file at @path from @wdir; 0 when it
 * is not a readable file there. */
static ssize_t
head_of(const char *path, const char *wdir, char *buf, size_t size)
{
	char *full = NULL;
	ssize_t n = 0;
	int fd;

	if (path[0] != '/' && wdir != NULL && asprintf(&full, "%s/%s", wdir, path) < 0) {
		return 0;
	}
	fd = open(full != NULL ? full : path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	free(full);
	if (fd >= 0) {
		n = read(fd, buf, size - 1);
		close(fd);
	}
	buf[n > 0 ? n : 0] = '\0';
	return n > 0 ? n : 0;
}

/*
 * The interpreter of a "#!" line in @head, in @out: its last word when
 * it is /usr/bin/env's ("python3"), else its path. 0, or -1 for none.
 */
static int
shebang(const char *head, char *out, size_t size)
{
	const char *p = head + 2, *end, *word;

	if (strncmp(head, "#!", 2) != 0) {
		return -1;
	}
	p += strspn(p, " \t");
	end = p + strcspn(p, "\r\n");
	word = p + strcspn(p, " \t\r\n");
	if (word < end && word - p >= 4 && strncmp(word - 4, "/env", 4) == 0) {
		p = word + strspn(word, " \t");
		word = p + strcspn(p, " \t\r\n");
	}
	if (word == p || (size_t)(word - p) >= size) {
		return -1;
	}
	snprintf(out, size, "%.*s", (int)(word - p), p);
	return 0;
}

/* True where torchrun's "python -u SCRIPT" is what the user means. */
static bool
is_python_script(const char *prog, const char *wdir)
{
	char head[256], interp[256];
	size_t len = strlen(prog);
	ssize_t n = head_of(prog, wdir, head, sizeof(head));

	if (len > 3 && strcmp(prog + len - 3, ".py") == 0) {
		return true;
	}
	if (n == 0 || (n >= 4 && memcmp(head, "\177ELF", 4) == 0)) {
		return false;
	}
	return shebang(head, interp, sizeof(interp)) < 0 || strstr(interp, "python") != NULL;
}

/* PYTHON_EXEC, as torchrun reads it; the interpreter of the torchrun on
 * PATH (its sys.executable); else python3, as PATH finds it. */
static char *
python_of(char *const *envp)
{
	const char *exec = wr_env_value(envp, "PYTHON_EXEC");
	char *torchrun = NULL, head[256], interp[256];

	if (exec != NULL && exec[0] != '\0') {
		return strdup(exec);
	}
	if (wr_resolve("torchrun", wr_env_value(envp, "PATH"), NULL, &torchrun) == 0 &&
	    head_of(torchrun, NULL, head, sizeof(head)) > 0 &&
	    shebang(head, interp, sizeof(interp)) == 0 && strstr(interp, "python") != NULL) {
		free(torchrun);
		return strdup(interp);
	}
	free(torchrun);
	return strdup("python3");
}

int
wr_torchrun_command(struct wr_torch_opts *t, char ***argv, int *argc, const char *wdir,
		    char *const *envp)
{
	int n = 0;

	if (!t->used || (*argc > 0 && t->no_python && !t->module)) {
		return 0;
	}
	if (t->no_python) {
		fprintf(stderr, "worldrun: --no-python and -m: give one of them "
				"(see worldrun --help)\n");
		return -1;
	}
	if (!t->module && !is_python_script((*argv)[0], wdir)) {
		return 0;
	}
	t->argv = calloc((size_t)*argc + 4, sizeof(char *));
	if (t->argv == NULL || (t->argv[n++] = python_of(envp)) == NULL) {
		fprintf(stderr, "worldrun: unable to find Python: %s\n", strerror(ENOMEM));
		return -1;
	}
	t->argv[n++] = "-u";
	if (t->module) {
		t->argv[n++] = "-m";
	}
	for (int i = 0; i < *argc; i++) {
		t->argv[n++] = (*argv)[i];
	}
	*argv = t->argv;
	*argc = n;
	return 0;
}

void
wr_torchrun_finish(struct wr_torch_opts *t)
{
	if (t == NULL || t->argv == NULL) {
		return;
	}
	free(t->argv[0]);
	free(t->argv);
	t->argv = NULL;
}
