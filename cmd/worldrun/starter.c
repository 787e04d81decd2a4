/* SPDX-License-Identifier: MIT */
#include "starter.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * ssh must never wait for a person: no password or passphrase prompt
 * (BatchMode), a bounded connect, and a host key that is new is learned
 * while one that changed is refused (accept-new). ServerAlive notices a
 * host that went away without closing the connection. -x: no X11, -T: no
 * terminal, so the channel carries bytes as they are.
 */
static const char *const ssh_words[] = {
	"ssh", "-x", "-T", "-o", "BatchMode=yes", "-o",
	"StrictHostKeyChecking=accept-new", "-o", "ServerAliveInterval=5", "-o",
	"ServerAliveCountMax=3", "-o",
};

/* Whether a remote shell reads @w as it is, without quotes. */
static bool
plain_word(const char *w)
{
	return w[0] != '\0' &&
	       strspn(w, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
			 "0123456789/._+-,:=@") == strlen(w);
}

/* @w in single quotes, for a remote shell. */
static char *
quote_word(const char *w)
{
	size_t n = 3;
	char *q, *p;

	for (const char *c = w; *c != '\0'; c++) {
		n += *c == '\'' ? 4 : 1;
	}
	q = malloc(n);
	if (q == NULL) {
		return NULL;
	}
	p = q;
	*p++ = '\'';
	for (const char *c = w; *c != '\0'; c++) {
		if (*c == '\'') {
			memcpy(p, "'\\''", 4);
			p += 4;
		} else {
			*p++ = *c;
		}
	}
	*p++ = '\'';
	*p = '\0';
	return q;
}

/* Split @rsh at blanks into s->words, pointers appended to @argv. */
static int
split(struct wr_starter *s, const char *rsh, char **argv, int *n)
{
	char *save = NULL, *w;

	s->words = strdup(rsh);
	if (s->words == NULL) {
		return -ENOMEM;
	}
	for (w = strtok_r(s->words, " \t", &save); w != NULL;
	     w = strtok_r(NULL, " \t", &save)) {
		if (*n >= WR_STARTER_WORDS_MAX) {
			return -EINVAL;
		}
		argv[(*n)++] = w;
	}
	return *n > 0 ? 0 : -EINVAL;
}

int
wr_starter_init(struct wr_starter *s, const char *rsh, double timeout,
		const char *host, bool local)
{
	size_t nssh = sizeof(ssh_words) / sizeof(ssh_words[0]);
	char **argv = calloc(WR_STARTER_WORDS_MAX + nssh + 8, sizeof(char *));
	char *self = realpath("/proc/self/exe", NULL);
	char ct[48];
	int n = 0, rc = 0;

	*s = (struct wr_starter){ .argv = argv };
	if (argv == NULL || self == NULL) {
		free(self);
		return -ENOMEM;
	}
	s->self = plain_word(self) || local ? self : quote_word(self);
	if (s->self != self) {
		free(self);
	}
	if (s->self == NULL) {
		return -ENOMEM;
	}
	if (!local && rsh != NULL) {
		rc = split(s, rsh, argv, &n);
	} else if (!local) {
		for (size_t i = 0; i < nssh; i++) {
			argv[n++] = (char *)ssh_words[i];
		}
		snprintf(ct, sizeof(ct), "ConnectTimeout=%d", timeout < 1 ? 1 : (int)timeout);
		s->words = strdup(ct);
		argv[n++] = s->words;
		rc = s->words == NULL ? -ENOMEM : 0;
	}
	if (!local) {
		argv[n++] = (char *)host;
	}
	argv[n++] = s->self;
	argv[n++] = (char *)"--agent";
	argv[n] = NULL;
	return rc;
}

void
wr_starter_finish(struct wr_starter *s)
{
	free(s->argv);
	free(s->self);
	free(s->words);
	*s = (struct wr_starter){ 0 };
}

/*
 * One task per node, each with all that the job has there (--whole: a
 * task's default share would be one CPU, which its ranks would inherit
 * under task/affinity or task/cgroup), shared with the job's other steps
 * (--overlap: else it would wait for their CPUs in silence, those of the
 * step worldrun runs in, or of another worldrun's), no MPI plugin of
 * srun's own (the agents serve PMI), and the step ended when one agent
 * fails. --label
 * tells the agents' stderr lines apart. The options are all explicit:
 * srun reads SLURM_* input variables of the job's shell otherwise.
 */
int
wr_starter_init_srun(struct wr_starter *s, const char *const *nodes, int n)
{
	size_t len = 64;
	char *p;
	int k = 0;

	*s = (struct wr_starter){ 0 };
	for (int i = 0; i < n; i++) {
		len += strlen(nodes[i]) + 1;
	}
	s->argv = calloc(24, sizeof(char *));
	s->self = realpath("/proc/self/exe", NULL);
	s->words = malloc(len + 96);
	if (s->argv == NULL || s->self == NULL || s->words == NULL) {
		return -ENOMEM;
	}
	/* words: "-N", "-n" and the node list, one after another. The port
	 * is on srun's stdin with the secret (srun.h): never on a command
	 * line, which every user can read. */
	p = s->words;
	s->argv[k++] = (char *)"srun";
	s->argv[k++] = (char *)"--overlap";
	s->argv[k++] = p;
	p += sprintf(p, "--nodes=%d", n) + 1;
	s->argv[k++] = p;
	p += sprintf(p, "--ntasks=%d", n) + 1;
	s->argv[k++] = (char *)"--ntasks-per-node=1";
	s->argv[k++] = p;
	p = stpcpy(p, "--nodelist=");
	for (int i = 0; i < n; i++) {
		p = stpcpy(stpcpy(p, nodes[i]), i + 1 < n ? "," : "");
	}
	p++;
	s->argv[k++] = (char *)"--kill-on-bad-exit=1";
	s->argv[k++] = (char *)"--whole";
	s->argv[k++] = (char *)"--mpi=none";
	s->argv[k++] = (char *)"--input=all";
	s->argv[k++] = (char *)"--label";
	s->argv[k++] = s->self;
	s->argv[k++] = (char *)"--agent";
	s->argv[k++] = (char *)"--dial";
	s->argv[k] = NULL;
	return 0;
}
