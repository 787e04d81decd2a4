/* SPDX-License-Identifier: MIT */
/*
 * worldctl: the registry of a worldrun job, for shell scripts that run as
 * its ranks: who this rank is, a key/value space, barriers; and, from any
 * shell of the same user, the jobs that run and what they wait for. One
 * table of commands drives both the dispatch and --help. Every run opens
 * its own connection, as a tool acting for its rank (or, with --job, as
 * an observer acting for none), so that its exit kills nothing and
 * several may run at once.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "ctl.h"
#include "jobs.h"
#include "kv.h"
#include "ranks.h"
#include "status.h"

struct command {
	const char *name; /* one word, or a group and a word: "kv get" */
	const char *args; /* what follows the name, for --help */
	const char *help;
	int min, max;     /* positional words; max -1: no limit */
	int keys;         /* leading positional words that are keys (-1: all) */
	unsigned opts;    /* the options it takes: WR_ARGS_TIMEOUT, WR_ARGS_JSON */
	bool observes;    /* runs with --job, as an observer */
	int (*run)(struct wr_ctl *ctl, const struct wr_args *a);
};

#define T WR_ARGS_TIMEOUT
#define J WR_ARGS_JSON

static const struct command commands[] = {
	{ "rank", "", "print this rank's number, 0 to size-1",
	  0, 0, 0, 0, false, wr_ranks_rank },
	{ "size", "", "print the number of ranks",
	  0, 0, 0, 0, false, wr_ranks_size },
	{ "ranks", "", "print \"RANK STATE\" per rank: up, done, dead",
	  0, 0, 0, 0, true, wr_ranks_states },
	{ "kv set", "KEY VALUE", "set KEY to VALUE (\"-\": standard input)",
	  2, 2, 1, 0, false, wr_kv_set },
	{ "kv get", "KEY [--timeout S]", "print KEY's value (wait with --timeout)",
	  1, 1, 1, T, true, wr_kv_get },
	{ "kv add", "KEY N", "add N to KEY (0 if unset), print the sum",
	  2, 2, 1, 0, false, wr_kv_add },
	{ "kv wait", "KEY... [--timeout S]", "wait until every KEY is set",
	  1, -1, -1, T, true, wr_kv_wait },
	{ "kv mget", "KEY... [--timeout S]", "print every KEY's value, a line each",
	  1, -1, -1, T, true, wr_kv_mget },
	{ "kv del", "KEY", "delete KEY", 1, 1, 1, 0, false, wr_kv_del },
	{ "barrier", "[NAME] [--timeout S]", "wait for every rank at barrier NAME",
	  0, 1, -1, T, false, wr_ranks_barrier },
	{ "jobs", "[--json]", "list this user's running jobs",
	  0, 0, 0, J, true, wr_jobs_list },
	{ "status", "[JOBID] [--json]", "print what the job's ranks wait for",
	  0, 1, 0, J, true, wr_status_show },
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static const struct {
	const char *flags;
	const char *help;
} options[] = {
	{ "-h, --help", "print this help and exit" },
	{ "-V, --version", "print the version and exit" },
	{ "--job JOBID", "observe job JOBID (a unique start of its id) from outside" },
	{ "--timeout S", "wait at most S seconds (\"0.5\"; 0: try once)" },
	{ "--json", "print JSON (jobs, status)" },
};

static void
print_help(void)
{
	char left[64];

	printf("usage: worldctl [--job JOBID] COMMAND [ARGS...]\n"
	       "       worldctl --help | --version\n\n"
	       "Use the registry of the worldrun job this shell runs in: who this "
	       "rank is,\nvalues shared between ranks, barriers; or, from any shell "
	       "of the same user,\nlist the jobs and look into one.\n\n"
	       "commands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++) {
		snprintf(left, sizeof(left), "%s%s%s", commands[i].name,
			 commands[i].args[0] != '\0' ? " " : "", commands[i].args);
		printf("  %-28s  %s\n", left, commands[i].help);
	}
	printf("\noptions:\n");
	for (size_t i = 0; i < sizeof(options) / sizeof(options[0]); i++) {
		printf("  %-28s  %s\n", options[i].flags, options[i].help);
	}
	printf("\nWithout --timeout, kv get does not wait; kv wait and barrier wait "
	       "as long\nas the job's default (WORLD_WAIT_TIMEOUT seconds). "
	       "NAME defaults to\n\"%s\". With --job, only ranks, kv get, kv wait "
	       "and status run:\nan observer reads and changes nothing.\n\n"
	       "Exit status: 0 ok; 1 no such key; 2 usage; 3 a rank is dead; "
	       "124 timed out;\n125 not inside a job, no such job, or the registry "
	       "is unreachable or refused.\nSee worldctl(1).\n", WR_RANKS_BARRIER);
}

/*
 * The options before the command. Returns the index of the command, or
 * -1 with the exit status in *status (after --help, --version, or a
 * usage error).
 */
/* "--job JOBID" or "--job=JOBID" at argv[*i]; moves *i past its value. */
static int
take_job(int argc, char **argv, int *i, const char **job)
{
	const char *w = argv[*i];

	if (strncmp(w, "--job=", 6) == 0) {
		*job = w + 6;
	} else if (*i + 1 < argc) {
		*job = argv[++*i];
	} else {
		*job = NULL;
	}
	if (*job == NULL || (*job)[0] == '\0') {
		wr_args_usage("option --job needs a JOBID");
		return -1;
	}
	return 0;
}

static int
global_options(int argc, char **argv, const char **job, int *status)
{
	int i = 1;

	*status = WR_CTL_OK;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (strcmp(argv[i], "--job") == 0 || strncmp(argv[i], "--job=", 6) == 0) {
			if (take_job(argc, argv, &i, job) < 0) {
				*status = WR_CTL_USAGE;
				return -1;
			}
			continue;
		}
		if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			print_help();
			return -1;
		}
		if (strcmp(argv[i], "-V") == 0 || strcmp(argv[i], "--version") == 0) {
			printf("worldctl %s\n", WR_VERSION);
			return -1;
		}
		if (strcmp(argv[i], "--") == 0) {
			i++;
			break;
		}
		wr_args_usage("unknown option %s", argv[i]);
		*status = WR_CTL_USAGE;
		return -1;
	}
	if (i == argc) {
		wr_args_usage("no command");
		*status = WR_CTL_USAGE;
		return -1;
	}
	return i;
}

/* Does @c's name match the start of @argv? How many words it took. */
static int
name_words(const struct command *c, int argc, char **argv)
{
	size_t len = strcspn(c->name, " ");

	if (strlen(argv[0]) != len || strncmp(argv[0], c->name, len) != 0) {
		return 0;
	}
	if (c->name[len] == '\0') {
		return 1;
	}
	return argc > 1 && strcmp(argv[1], c->name + len + 1) == 0 ? 2 : -1;
}

/* The command @argv names, and in *words how many words that took. */
static const struct command *
find_command(int argc, char **argv, int *words)
{
	bool group = false;

	for (size_t i = 0; i < NCOMMANDS; i++) {
		*words = name_words(&commands[i], argc, argv);
		if (*words > 0) {
			return &commands[i];
		}
		group = group || *words < 0;
	}
	if (group && argc > 1) {
		wr_args_usage("unknown command %s %s", argv[0], argv[1]);
	} else if (group) {
		wr_args_usage("%s: expected a command after it", argv[0]);
	} else {
		wr_args_usage("unknown command %s", argv[0]);
	}
	return NULL;
}

/* The command's words: options, how many, and keys that are text. */
static int
check_words(const struct command *c, struct wr_args *a, int argc, char **argv)
{
	if (wr_args_parse(a, argc, argv, c->name, c->opts) < 0) {
		return -1;
	}
	if (a->npos < c->min || (c->max >= 0 && a->npos > c->max)) {
		wr_args_usage("%s: expected %s%s%s", c->name, c->name,
			      c->args[0] != '\0' ? " " : "", c->args);
		return -1;
	}
	for (int i = 0; i < a->npos && (c->keys < 0 || i < c->keys); i++) {
		if (!wr_args_is_text(a->pos[i])) {
			wr_args_usage("%s: keys and names must be UTF-8 text", c->name);
			return -1;
		}
	}
	return 0;
}

int
main(int argc, char **argv)
{
	const struct command *cmd;
	const char *job = NULL;
	struct wr_ctl ctl;
	struct wr_args a;
	int i, words, status;

	i = global_options(argc, argv, &job, &status);
	if (i < 0) {
		return status;
	}
	cmd = find_command(argc - i, argv + i, &words);
	if (cmd == NULL || check_words(cmd, &a, argc - i - words,
				       argv + i + words) < 0) {
		return WR_CTL_USAGE;
	}
	if (job != NULL && !cmd->observes) {
		wr_args_usage("%s acts for a rank: it does not run with --job", cmd->name);
		return WR_CTL_USAGE;
	}
	/* The commands read the environment once their words are checked. */
	wr_ctl_init(&ctl);
	ctl.job = job;
	status = cmd->run(&ctl, &a);
	wr_ctl_finish(&ctl);
	return status;
}
