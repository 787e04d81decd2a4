/* SPDX-License-Identifier: MIT */
/*
 * rundir: the per-user directory where running jobs are listed, one 0600
 * file per job named after its id, holding what another shell of the same
 * user needs to find the job and reach its registry (the entry's one
 * schema lives here). worldrun writes and removes entries, its guardian
 * removes them, worldctl reads them. The directory is
 * $XDG_RUNTIME_DIR/worldrun when XDG_RUNTIME_DIR is an absolute path to a
 * directory of ours that nobody else may write, else TMP/worldrun-UID (TMP
 * from an absolute TMPDIR, else /tmp). It is used only while it is a
 * directory of ours, not a symbolic link, that group and others cannot
 * access. Nothing here knows what a registry is.
 */
#ifndef WR_RUNDIR_H
#define WR_RUNDIR_H

#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>

#include <jansson.h>

/* A job id: 12 lowercase hex digits. */
#define WR_RUNDIR_ID_LEN 12
/* The largest entry that is read. */
#define WR_RUNDIR_ENTRY_MAX (1u << 20)

struct wr_rundir {
	char path[PATH_MAX]; /* "" if none */
	dev_t dev;
	ino_t ino;
};

/* One job's entry; the strings are borrowed (from @json, when read). */
struct wr_rundir_entry {
	const char *jobid;
	long pid;             /* worldrun's */
	int ranks;
	const char *host;
	double start;         /* seconds since the epoch */
	const char *registry; /* WORLD_REGISTRY, as the ranks get it */
	const char *secret;
	long msg_max;         /* WORLD_MSG_MAX and WORLD_BLOB_MAX of the job */
	long blob_max;
	const char *program;  /* the path that ranks execute */
	json_t *argv;         /* borrowed: the arguments, an array of strings */
	const char *command;  /* the arguments quoted for a shell, on one line */
	json_t *json;         /* what a read entry was parsed from; NULL if none */
};

/*
 * Find the directory, making it (0700) if @create and it is missing, and
 * record what it is. Returns 0, -ENOENT (none and not @create), -ELOOP (a
 * symbolic link), -ENOTDIR, -EPERM (another user's), -EACCES (group or
 * others may access it) or -errno; @d->path is set in every case but the
 * first's failures, for messages, and @d->dev is 0 unless it returned 0.
 */
int wr_rundir_open(struct wr_rundir *d, bool create);

/* What a refusal of wr_rundir_open() means, for a message. */
const char *wr_rundir_refusal(int rc);

/*
 * Write @e (its jobid names the file) atomically: a temporary file, then
 * a rename over the name. Returns 0 or a negative code; nothing is left
 * behind on failure.
 */
int wr_rundir_write(const struct wr_rundir *d, const struct wr_rundir_entry *e);

/*
 * Remove entry @jobid if the directory is still the one recorded and the
 * entry a regular file of ours; a symbolic link is never followed.
 * Returns 0 (also when there is none), -ESTALE (left alone) or -errno.
 */
int wr_rundir_remove(const struct wr_rundir *d, const char *jobid);

/*
 * Other small files of the same user (a world without worldrun keeps its
 * secret so: embed.h), named with 1 to 64 of [a-z0-9.-], not a job's id
 * nor starting with ".", and kept as entries are: put writes @text
 * atomically (0600), get reads it into *@text (to free(); the same
 * refusals as wr_rundir_read()), drop removes it as wr_rundir_remove()
 * does. -EINVAL for a bad name.
 */
int wr_rundir_put(const struct wr_rundir *d, const char *name, const char *text);
int wr_rundir_get(const struct wr_rundir *d, const char *name, char **text);
int wr_rundir_drop(const struct wr_rundir *d, const char *name);

/*
 * The ids of every entry, sorted, in *@ids (an array of *@n, each
 * WR_RUNDIR_ID_LEN + 1 bytes, to free()). Returns 0 or -errno.
 */
int wr_rundir_list(const struct wr_rundir *d, char (**ids)[WR_RUNDIR_ID_LEN + 1],
		   size_t *n);

/*
 * The one id that starts with @prefix (1 to 12 hex digits) in @id.
 * Returns 0, -ENOENT (none, or @prefix is not one) or -ENOTUNIQ (several:
 * the first two in @id and @other).
 */
int wr_rundir_find(const struct wr_rundir *d, const char *prefix,
		   char id[WR_RUNDIR_ID_LEN + 1], char other[WR_RUNDIR_ID_LEN + 1]);

/*
 * Read entry @jobid into @e (finish it with wr_rundir_entry_finish()).
 * Returns 0, -ENOENT, -EPERM (not a regular file of ours that only we may
 * read), -EFBIG, -EBADMSG (not an entry) or -errno.
 */
int wr_rundir_read(const struct wr_rundir *d, const char *jobid,
		   struct wr_rundir_entry *e);

/* Release what a read entry holds. Accepts NULL. */
void wr_rundir_entry_finish(struct wr_rundir_entry *e);

#endif
