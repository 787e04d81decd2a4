/* SPDX-License-Identifier: MIT */
/*
 * world.h: the public API of libworld, the runtime library that ranks
 * started by worldrun link. Every function that can fail returns 0 or a
 * negative code: a negated errno value where one fits, or one of the
 * WORLD_E* codes below. world_strerror() names every code.
 */
#ifndef WORLD_H
#define WORLD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Codes from -1 to -4095 are negated errno values (-ENOMEM, -ETIMEDOUT,
 * -EEXIST, ...). The codes below have no errno equivalent. Their values
 * and names are stable: the wire carries the name.
 */
enum world_error {
	WORLD_OK = 0,
	WORLD_EFRAME = -4096,     /* malformed or oversized frame */
	WORLD_EPROTO = -4097,     /* valid frame, but not a valid message */
	WORLD_ENOTMEMBER = -4098, /* this rank is not a member of the group */
	WORLD_EREMOTE = -4099,    /* the remote handler returned an error */
	WORLD_EPEERDEAD = -4100,  /* the peer rank died */
	WORLD_EREGISTRY = -4101,  /* the registry (worldrun) is gone */
	WORLD_EAUTH = -4102,      /* authentication with the job secret failed */
	WORLD_EFABRIC = -4103,    /* libfabric error with no errno equivalent */
};

/*
 * Timeouts are in milliseconds. These two are not: WORLD_TIMEOUT_DEFAULT
 * takes the job's default (WORLD_WAIT_TIMEOUT in the environment, in
 * seconds), and waiting forever has to be asked for by name. 0 means:
 * try once, do not wait.
 */
#define WORLD_TIMEOUT_DEFAULT (-1)
#define WORLD_TIMEOUT_FOREVER (-2)

/*
 * Returns a description of @err: a WORLD_E* code, a negated errno value,
 * or 0. Never NULL; the string is static.
 */
const char *world_strerror(int err);

/*
 * Returns the stable name of @err ("WORLD_EPEERDEAD", "ETIMEDOUT", "OK"),
 * or "EUNKNOWN" for a code that has none. Never NULL; the string is static.
 */
const char *world_err_name(int err);

/* ---- the world: this process as a rank of its job ---- */

struct world;

/*
 * Join the job this process was started in, from the environment worldrun
 * gives every rank (WORLD_RANK, WORLD_SIZE, WORLD_REGISTRY, WORLD_SECRET,
 * ...): connect to the job's registry as this rank and start the progress
 * thread. A process started without worldrun (no WORLD_REGISTRY) gets the
 * singleton world: rank 0 of 1, name "0", whose barriers return at once
 * and whose key/value calls fail with -ENOTSUP. Returns 0 and the world
 * in *out, -EINVAL for a bad environment, or the registry's refusal
 * (WORLD_EREGISTRY, WORLD_EAUTH, -ETIMEDOUT). One world per process.
 */
int world_open(struct world **out);

/*
 * Graceful stop: wait (at most @timeout_ms) until every rank of the job
 * has called world_stop(), answering peers meanwhile, then say goodbye
 * and free @w. Returns 0, or the error of that wait (the world is freed
 * either way). Accepts NULL.
 */
int world_stop(struct world *w, int timeout_ms);

/* Abortive stop: say goodbye now, without waiting for anyone, and free @w.
 * Accepts NULL. */
void world_abort(struct world *w);

int world_rank(const struct world *w);
int world_size(const struct world *w);

/* This rank's name: its decimal rank. Borrowed from @w. */
const char *world_name(const struct world *w);

/* The job's id (WORLD_JOBID; "" for the singleton). Borrowed from @w. */
const char *world_jobid(const struct world *w);

/*
 * Wait (at most @timeout_ms) until every rank of the job has entered
 * barrier @name as often as this one has. WORLD_EPEERDEAD as soon as a
 * rank that has not entered is dead. Back-to-back calls are safe.
 */
int world_barrier(struct world *w, const char *name, int timeout_ms);

/* ---- the job's key/value space (TCPStore's operations) ---- */

/* Values are bytes. Every call may also fail with WORLD_EREGISTRY. */
int world_kv_set(struct world *w, const char *key, const void *val,
		 size_t len);

/*
 * The value of @key, once it exists (waiting at most @timeout_ms; 0: not
 * at all, then -ENOENT if it is missing). *val is malloc'd with a NUL
 * after its @len bytes: free() it.
 */
int world_kv_get(struct world *w, const char *key, void **val, size_t *len,
		 int timeout_ms);

/* Add @delta to the decimal integer in @key (missing: 0); *out: the sum. */
int world_kv_add(struct world *w, const char *key, int64_t delta,
		 int64_t *out);

/*
 * TCPStore's compare_set: store @desired if @key holds @expected (or is
 * missing and @expected is empty). *cur (malloc'd, NUL-terminated) gets
 * the value stored after the call, if @cur is not NULL.
 */
int world_kv_cas(struct world *w, const char *key, const void *expected,
		 size_t exp_len, const void *desired, size_t des_len, void **cur,
		 size_t *cur_len);

/* 0, or -ENOENT if there was no @key. */
int world_kv_del(struct world *w, const char *key);

int world_kv_append(struct world *w, const char *key, const void *val,
		    size_t len);

/* The number of keys in the space. */
int world_kv_count(struct world *w, int64_t *n);

/* Whether all @n @keys exist now, in *all. */
int world_kv_check(struct world *w, const char *const *keys, size_t n,
		   bool *all);

/* Wait (at most @timeout_ms) until all @n @keys exist. */
int world_kv_wait(struct world *w, const char *const *keys, size_t n,
		  int timeout_ms);

#ifdef __cplusplus
}
#endif

#endif
