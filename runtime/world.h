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
#include <sys/uio.h>

#include <jansson.h>

#include "world_errors.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * How the last failed call of this thread failed (like errno, one per
 * thread): the code it returned, for WORLD_EREMOTE the handler's own code
 * and message, for WORLD_EPEERDEAD the rank that died (else -1). Never
 * NULL; valid until the thread's next call.
 */
struct world_failure {
	int code;
	int remote_code;
	int rank;
	char message[256];
};

const struct world_failure *world_last_failure(void);

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
 * (WORLD_EREGISTRY, WORLD_EAUTH, -ETIMEDOUT, and -EEXIST when this rank
 * has a world already: one world per process). world_stop() frees the
 * groups this process created and still holds; free futures, remote
 * results and opened group handles first.
 */
int world_open(struct world **out);

/*
 * A world without worldrun, as Machin's programs make one: processes the
 * program starts itself (torch.multiprocessing.spawn, multiprocessing,
 * shells, other hosts) each open it with their own @rank, the same @size
 * and the same @address, "tcp://HOST:PORT" (or "HOST:PORT"). Rank 0's
 * process hosts the job's registry there, on a thread of its own, until
 * its world_stop(); the others join it, waiting for it at most the wait
 * timeout (WORLD_WAIT_TIMEOUT, 300 s). Only the same user's processes
 * may join: on one host they find the secret rank 0 makes in a 0600
 * file of the user's runtime directory; across hosts set WORLD_SECRET,
 * the same in every process. worldrun's environment is not read (a
 * program under worldrun that starts its own processes gets a world of
 * its own). Everything else is as in worldrun's worlds; a rank that dies
 * or fails is dead to its peers, and rank 0's end ends the world: every
 * later call of the others fails (WORLD_EREGISTRY). Returns as
 * world_open(), and -EINVAL for bad options (a rank outside 0 to
 * @size-1, no address), -EHOSTUNREACH (HOST has no IPv4 address),
 * -EADDRINUSE (rank 0: another process listens there).
 *
 * With @o->address NULL it joins worldrun's job (or makes the singleton)
 * as world_open() does, and @o->rank and @o->size are not read. Either
 * way @o->name, when set, names this rank: any string of 1 to 255 bytes
 * without control characters, unique in the world (digits only if they
 * are its own rank). A rank that names itself waits in world_open_with()
 * until every rank has opened its world, and fails with -EEXIST if
 * another took its name (world_last_failure() says which ranks).
 */
struct world_options {
	int rank;            /* with an address: this process's rank */
	int size;            /* with an address: the world's size */
	const char *address; /* NULL: worldrun's job (or the singleton) */
	const char *name;    /* NULL or "": the decimal rank */
};

int world_open_with(const struct world_options *o, struct world **out);

/*
 * Let the program end this world's waits (Ctrl-C in an interpreter that
 * handles signals between its own steps): while @check is set, a call
 * that waits for an answer of the registry or of a peer (barriers, group
 * creation, pairs and lookups, calls, futures, remote results,
 * collectives and point-to-point transfers) asks @check(@arg) at least
 * every 100 ms, from the waiting thread and holding no lock of
 * libworld's; nonzero gives the wait up with -EINTR, as a timeout would
 * (a call is abandoned, a future may be waited for again; a collective
 * group is poisoned, as after any failure of its own). NULL clears it.
 * world_stop() does not ask it. A no-op in the singleton world.
 */
void world_set_interrupt(struct world *w, int (*check)(void *arg), void *arg);

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

/*
 * This rank has failed: tell the job, then free @w as world_abort() does
 * (without the goodbye: the rank is dead to its peers, not done). Under
 * worldrun the job's failure is this rank's, with exit status @status (1
 * to 255; another value is 1) and reason @why (its first 200 bytes; NULL:
 * none), whatever order the ranks end in, and worldrun stops the others.
 * Waits of other ranks that need this one fail at once with
 * WORLD_EPEERDEAD, naming it and @why. It does not exit: the caller
 * should exit with @status next. Returns 0, or the error of telling the
 * registry (@w is freed either way). Accepts NULL. Python calls it for an
 * uncaught exception in the main thread.
 */
int world_fail(struct world *w, int status, const char *why);

/*
 * Write the exception this rank is failing with where its launcher reads
 * it: the file TORCHELASTIC_ERROR_FILE names (worldrun and torchrun set
 * it), in torchelastic's JSON, as torch's @record does. @message is one
 * line ("ValueError: bad input"), @detail the traceback or any longer
 * account (NULL: none), both UTF-8, borrowed. worldrun then ends the
 * rank's failure line with @message and puts both in --report. It works
 * without a world, and replaces what the file held. Returns 0, -ENOENT
 * when the variable is not set, -EINVAL for text that is not UTF-8, or
 * the error of writing the file.
 */
int world_error_record(const char *message, const char *detail);

int world_rank(const struct world *w);
int world_size(const struct world *w);

/* This rank's name: the one it gave (world_options), else its decimal
 * rank. Borrowed from @w. */
const char *world_name(const struct world *w);

/*
 * Rank @rank's name into *@name (borrowed from @w): known once every rank
 * has opened its world, so this may wait until then (the wait timeout).
 * 0, -EINVAL (no such rank), -EEXIST (two ranks share a name) or the
 * registry's error.
 */
int world_rank_name(struct world *w, int rank, const char **name);

/* The rank named @name (digits: that rank), waiting as world_rank_name()
 * may: the rank, or -ENOENT (no such name), -EINVAL, ... */
int world_name_rank(struct world *w, const char *name);

/* The job's id (WORLD_JOBID; "" for the singleton). Borrowed from @w. */
const char *world_jobid(const struct world *w);

/*
 * Wait (at most @timeout_ms) until every rank of the job has entered
 * barrier @name as often as this one has. WORLD_EPEERDEAD as soon as a
 * rank that has not entered is dead. Back-to-back calls are safe.
 */
int world_barrier(struct world *w, const char *name, int timeout_ms);

/*
 * The registry's counters for this rank's own connection, for tests and
 * tuning: *requests (requests it has sent, this one included) and
 * *entries (lookup-table entries this rank owns).
 */
int world_stats(struct world *w, int64_t *requests, int64_t *entries);

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

/* ---- RPC groups (Machin's RpcGroup) ----
 *
 * A group is a name and a sorted set of member ranks, known by their
 * names (a rank's name is its decimal rank). Members pair values and
 * register services under keys unique in the group; anyone holding the
 * group (members, or non-members through world_group_open()) can look
 * them up and call them. Lookups are cached; the cache is dropped on a
 * miss, when the owner dies and when the entry is released.
 *
 * Arguments and results are JSON (jansson's json_t) plus an optional
 * binary blob, which travels as is (no base64). Functions borrow the
 * json_t they are given and return new references, in jansson's words.
 */

struct world_group;
struct world_reply;
struct world_future;
struct world_rref;

/*
 * A service or direct handler. It runs on one of the world's worker
 * threads (never the caller's, unless the caller is this very process,
 * where it runs in the calling thread), may call anything, including its
 * own process, and answers through @reply (borrowed for the call). It
 * returns 0, or a negative code that reaches the caller as
 * WORLD_EREMOTE, with the code and any message set by
 * world_reply_error().
 */
typedef int world_handler_fn(void *ctx, const json_t *args, const void *blob,
			     size_t len, struct world_reply *reply);

/* The answer: @result_new is stolen (even on failure); the blob is copied. */
int world_reply_result_new(struct world_reply *reply, json_t *result_new);
int world_reply_blob(struct world_reply *reply, const void *blob, size_t len);
/*
 * The call's blob, the handler's from now on (free() it), so that what it
 * was sent can outlive the call without a copy; NULL when there is none
 * or it cannot be had (a call of this process to itself lends the
 * caller's bytes: copy them then). The blob pointer the handler was
 * given stays valid until it returns either way.
 */
void *world_reply_take_blob(struct world_reply *reply);
/* An error with a message; the handler then returns @code. */
int world_reply_error(struct world_reply *reply, int code, const char *message);

/* Calls of one service may run at once on several workers unless it is
 * registered with WORLD_SERIAL: then one at a time. */
#define WORLD_SERIAL 1u

/*
 * Create group @name with @n @members (rank names, in any order) and wait
 * (at most @timeout_ms) until every member has created it too. Members
 * only: -EINVAL if this rank is not in @members (Machin: "Creator Process
 * not in Group"), -EEXIST if this process has a group of that name.
 */
int world_group_create(struct world *w, const char *name,
		       const char *const *members, size_t n, int timeout_ms,
		       struct world_group **out);

/*
 * A handle to an existing group for a process that is not a member:
 * -ENOENT if there is no such group. In a process that created the group
 * the handle acts as that member's, but destroying it leaves the group.
 */
int world_group_open(struct world *w, const char *name,
		     struct world_group **out);

/*
 * Leave and free the handle. A member's values and services are
 * deregistered first, so the same name can be created again. Accepts NULL.
 */
int world_group_destroy(struct world_group *g);

const char *world_group_name(const struct world_group *g);
size_t world_group_size(const struct world_group *g);
/* The @i-th member's name, in sorted order; NULL past the end. */
const char *world_group_member(const struct world_group *g, size_t i);
/* Whether @name (NULL: this process) is a member. */
bool world_group_is_member(const struct world_group *g, const char *name);

/* Members only (WORLD_ENOTMEMBER otherwise). */
int world_group_barrier(struct world_group *g, int timeout_ms);

/* Values. pair: -EEXIST if the key is paired anywhere in the group. */
int world_pair(struct world_group *g, const char *key, const json_t *value,
	       const void *blob, size_t len);
/* -ENOENT if not paired, -EPERM if paired by another rank. */
int world_unpair(struct world_group *g, const char *key);
/* Asks the registry every time (no cache). */
int world_is_paired(struct world_group *g, const char *key, bool *out);
/*
 * A copy of the value, fetched from its owner (so it fails, or times out,
 * when the owner cannot answer): *value a new reference, *blob malloc'd
 * (NULL if none). -ENOENT if not paired.
 */
int world_get_paired(struct world_group *g, const char *key, json_t **value,
		     void **blob, size_t *len, int timeout_ms);
/* Wait until @key is paired (at most @timeout_ms). */
int world_wait_paired(struct world_group *g, const char *key, int timeout_ms);

/* Services. register: -EEXIST if the key is registered in the group. */
int world_register(struct world_group *g, const char *key,
		   world_handler_fn *fn, void *ctx, unsigned flags);
int world_deregister(struct world_group *g, const char *key);
int world_is_registered(struct world_group *g, const char *key, bool *out);

/*
 * Call service @key (wherever it is registered) and wait at most
 * @timeout_ms for its result: *result a new reference, *blob malloc'd
 * (either may be NULL if not wanted; a blob needs @rlen too). -ENOENT if
 * no such service, WORLD_EREMOTE if the handler failed (its own code and
 * message: world_last_failure()), WORLD_EPEERDEAD if its owner died,
 * -EMSGSIZE for a blob over WORLD_BLOB_MAX bytes (1 GiB) or arguments
 * over WORLD_MSG_MAX bytes of JSON (1 MiB).
 */
int world_call(struct world_group *g, const char *key, const json_t *args,
	       const void *blob, size_t len, int timeout_ms, json_t **result,
	       void **rblob, size_t *rlen);

/* The same, without waiting: a future. */
int world_call_async(struct world_group *g, const char *key,
		     const json_t *args, const void *blob, size_t len,
		     int timeout_ms, struct world_future **out);

/*
 * Direct handlers: every process has its own table of them, so that each
 * member can export the same name; world_call_direct() calls @name on
 * member @member.
 */
int world_export(struct world *w, const char *name, world_handler_fn *fn,
		 void *ctx, unsigned flags);
int world_call_direct(struct world_group *g, const char *member,
		      const char *name, const json_t *args, const void *blob,
		      size_t len, int timeout_ms, json_t **result, void **rblob,
		      size_t *rlen);
int world_call_direct_async(struct world_group *g, const char *member,
			    const char *name, const json_t *args,
			    const void *blob, size_t len, int timeout_ms,
			    struct world_future **out);

/*
 * A call described whole, for a blob in pieces (the parts of a pickle, a
 * header and the arrays it describes) that is not copied first: a peer
 * on this host reads a large one (256 KiB or more) straight from the
 * caller's memory, once (process_vm_readv; WORLD_PULL=0 turns this off,
 * and where the system forbids it the bytes go through the socket).
 */
struct world_call_spec {
	const char *member;  /* NULL: service @key, wherever registered;
				else direct handler @key of @member */
	const char *key;
	const json_t *args;  /* or NULL */
	const struct iovec *iov; /* the blob: @iovcnt pieces, in order */
	size_t iovcnt;
	/*
	 * NULL: the pieces are copied before the call returns, as with
	 * world_call(). Otherwise they are lent: libworld reads them until it
	 * calls release(@release_arg), exactly once, whatever happens (also
	 * when the call fails at once), from any thread, perhaps before the
	 * call returns, perhaps long after a call that timed out (at its
	 * answer, the end of its connection, or world_stop()); perhaps with
	 * libworld's locks held: release must not call libworld. Until then
	 * the pieces must stay allocated; a callee may read them as they are
	 * when it reads, so change them only after release.
	 */
	void (*release)(void *arg);
	void *release_arg;
	int timeout_ms;
};

/*
 * Free a blob that libworld gave (a result, a value, a call's blob
 * taken), whose length @len is as libworld gave it, as free() would; but
 * keep the memory of a large one (4 MiB or more, at most two) for the
 * next large blob this process receives, which then costs no page
 * faults: a server sent a model of the same size again and again takes
 * it into warm memory. world_stop() frees what is kept. Accepts NULL.
 */
void world_blob_free(void *blob, size_t len);

/* world_call() or world_call_direct() (with @s->member) from a spec. */
int world_callv(struct world_group *g, const struct world_call_spec *s,
		json_t **result, void **rblob, size_t *rlen);
/* The same, without waiting: a future. */
int world_callv_async(struct world_group *g, const struct world_call_spec *s,
		      struct world_future **out);

/*
 * Remote calls whose result stays with the callee until fetched or
 * released (Machin's remote / registered_remote, and their RRef).
 */
int world_call_remote(struct world_group *g, const char *key,
		      const json_t *args, const void *blob, size_t len,
		      int timeout_ms, struct world_rref **out);
/* The same for direct handler @name on @member (Machin's remote). */
int world_call_direct_remote(struct world_group *g, const char *member,
			     const char *name, const json_t *args,
			     const void *blob, size_t len, int timeout_ms,
			     struct world_rref **out);
int world_rref_fetch(struct world_rref *r, json_t **result, void **blob,
		     size_t *len, int timeout_ms);
/* Drop the result on the callee and free @r. Accepts NULL. */
void world_rref_release(struct world_rref *r);

/* Futures. wait: the result as world_call() gives it. */
int world_future_wait(struct world_future *f, int timeout_ms, json_t **result,
		      void **blob, size_t *len);
/* 1 if done, 0 if not yet. */
int world_future_test(struct world_future *f);
int world_future_wait_all(struct world_future *const *fs, size_t n,
			  int timeout_ms);
/* *index: one that is done. */
int world_future_wait_any(struct world_future *const *fs, size_t n,
			  int timeout_ms, size_t *index);
/* The remote handler's own code, after WORLD_EREMOTE (else 0). */
int world_future_remote_code(const struct world_future *f);
void world_future_free(struct world_future *f);

/* ---- collective groups: element types and reductions ----
 *
 * The element type of a collective's buffers, and how all_reduce, reduce
 * and reduce_scatter combine them. WORLD_BAND, WORLD_BOR and WORLD_BXOR
 * take integers only, WORLD_AVG floating types only (the sum, divided by
 * the group's size at the end); other combinations fail with -EINVAL.
 * float16 is IEEE binary16, bfloat16 the upper half of a float32; both
 * reduce in float32 and round to nearest even. The values are stable.
 */
enum world_dtype {
	WORLD_INT8 = 0,
	WORLD_INT16 = 1,
	WORLD_INT32 = 2,
	WORLD_INT64 = 3,
	WORLD_UINT8 = 4,
	WORLD_UINT16 = 5,
	WORLD_UINT32 = 6,
	WORLD_UINT64 = 7,
	WORLD_FLOAT16 = 8,
	WORLD_BFLOAT16 = 9,
	WORLD_FLOAT32 = 10,
	WORLD_FLOAT64 = 11,
};

enum world_op {
	WORLD_SUM = 0,
	WORLD_PROD = 1,
	WORLD_MIN = 2,
	WORLD_MAX = 3,
	WORLD_BAND = 4,
	WORLD_BOR = 5,
	WORLD_BXOR = 6,
	WORLD_AVG = 7,
};

/* ---- collective groups (Machin's CollectiveGroup, over libfabric) ----
 *
 * A collective group is created by its members only, from a list of world
 * ranks; its ranks are the positions in that list (0 .. n-1), and every
 * call below takes and returns group ranks, as MPI does. Members create
 * groups whose members overlap in the same order. Buffers hold @count
 * elements of @dtype. A group's calls are ordered as the member issues
 * them (one at a time per group; non-blocking ones in the order started).
 * When a member an operation needs dies or leaves (world_stop), the
 * operation fails with WORLD_EPEERDEAD naming it (world_last_failure()),
 * and so does every later call on the group until it is destroyed; a
 * timeout (-ETIMEDOUT) poisons the group in the same way, since peers may
 * be half-way through the operation. The first group opens this rank's
 * fabric endpoint (WORLD_FABRIC); a rank that never creates one pays
 * nothing for it.
 */
struct world_coll;

/*
 * Create the group of the @n world ranks @ranks (the caller among them),
 * waiting at most @timeout_ms for every member. Members must pass the
 * same list: those that do not fail with WORLD_EPROTO at once. Two groups
 * with the same members created one after the other are distinct.
 * Returns 0 and the group in *@out; -EINVAL (a rank out of range or
 * twice, @n 0), WORLD_ENOTMEMBER (the caller is not in @ranks),
 * WORLD_EPEERDEAD, -ETIMEDOUT, WORLD_EFABRIC (the provider cannot be
 * opened). The singleton world has a working group of one.
 */
int world_coll_create(struct world *w, const int *ranks, size_t n,
		      int timeout_ms, struct world_coll **out);

/* Free @c (wait for what it started first). Accepts NULL. */
void world_coll_destroy(struct world_coll *c);

/* This rank's rank in @c, and the number of members. */
int world_coll_rank(const struct world_coll *c);
int world_coll_size(const struct world_coll *c);

/* The world rank of group rank @rank, or -EINVAL. */
int world_coll_world_rank(const struct world_coll *c, int rank);

/* The group rank of world rank @world_rank, or WORLD_ENOTMEMBER. */
int world_coll_group_rank(const struct world_coll *c, int world_rank);

/* For world_coll_recv() and world_coll_irecv(): from any member. */
#define WORLD_ANY_SOURCE (-1)

/* The largest user tag: tags are 0 .. WORLD_TAG_MAX. */
#define WORLD_TAG_MAX 1048575

/*
 * Point to point: send @count elements to group rank @dst with @tag, and
 * receive from @src (or WORLD_ANY_SOURCE) with @tag; *@source (if not
 * NULL) is the sender's group rank. A message longer than the buffer
 * fails with -EMSGSIZE. Messages from one sender with one tag arrive in
 * the order sent. A send above a few KiB completes only once the
 * receiver has posted its receive.
 */
int world_coll_send(struct world_coll *c, const void *buf, size_t count,
		    enum world_dtype dtype, int dst, int tag, int timeout_ms);
int world_coll_recv(struct world_coll *c, void *buf, size_t count,
		    enum world_dtype dtype, int src, int tag, int timeout_ms,
		    int *source);

/*
 * A started operation: test it, wait for it (at most @timeout_ms; the
 * request stays valid on -ETIMEDOUT and may be waited for again), then
 * free it. world_coll_wait() returns the operation's own result and, for
 * a receive, *@source (if not NULL) the sender's group rank (else -1).
 */
struct world_coll_req;

int world_coll_isend(struct world_coll *c, const void *buf, size_t count,
		     enum world_dtype dtype, int dst, int tag,
		     struct world_coll_req **out);
int world_coll_irecv(struct world_coll *c, void *buf, size_t count,
		     enum world_dtype dtype, int src, int tag,
		     struct world_coll_req **out);
int world_coll_wait(struct world_coll_req *r, int timeout_ms, int *source);
/* 1 if done, 0 if not yet. */
int world_coll_test(struct world_coll_req *r);
/* Free @r; one not done is waited for first. Accepts NULL. */
void world_coll_req_free(struct world_coll_req *r);

/*
 * Collectives, called by every member. broadcast: @root's @buf to all.
 * all_reduce: @buf becomes the reduction (world_op) of every member's, the
 * same bytes on every member. reduce: the same, on @root only (others'
 * @buf unchanged). all_gather: @out (size x @count) gets every member's
 * @in, in group rank order. gather: the same on @root only (@out ignored
 * elsewhere). scatter: member r gets block r of @root's @in (size x
 * @count; ignored elsewhere) in @out. reduce_scatter: member r gets block
 * r (@count elements) of the reduction of every member's @in (size x
 * @count). all_to_all: block j of @in goes to member j, whose block i of
 * @out comes from member i. barrier: returns once every member entered.
 * -EINVAL for a bad root, dtype or op (world_dtype's comment).
 * WORLD_EMISMATCH on every member when members called it differently
 * (another collective, count, dtype, op or root): world_last_failure()
 * names the first member that differs from member 0 and in what; the
 * buffers' contents are then unspecified, and the group stays usable.
 */
int world_coll_broadcast(struct world_coll *c, void *buf, size_t count,
			 enum world_dtype dtype, int root, int timeout_ms);
int world_coll_all_reduce(struct world_coll *c, void *buf, size_t count,
			  enum world_dtype dtype, enum world_op op,
			  int timeout_ms);
int world_coll_reduce(struct world_coll *c, void *buf, size_t count,
		      enum world_dtype dtype, enum world_op op, int root,
		      int timeout_ms);
int world_coll_all_gather(struct world_coll *c, const void *in, void *out,
			  size_t count, enum world_dtype dtype, int timeout_ms);
int world_coll_gather(struct world_coll *c, const void *in, void *out,
		      size_t count, enum world_dtype dtype, int root,
		      int timeout_ms);
int world_coll_scatter(struct world_coll *c, const void *in, void *out,
		       size_t count, enum world_dtype dtype, int root,
		       int timeout_ms);
int world_coll_reduce_scatter(struct world_coll *c, const void *in, void *out,
			      size_t count, enum world_dtype dtype,
			      enum world_op op, int timeout_ms);
int world_coll_all_to_all(struct world_coll *c, const void *in, void *out,
			  size_t count, enum world_dtype dtype, int timeout_ms);
int world_coll_barrier(struct world_coll *c, int timeout_ms);

/*
 * The same collectives, started: they run in the order started (and
 * before any later blocking call on @c), and the request says when they
 * are done. The buffers are the group's until then. -EAGAIN while 1024
 * started collectives of @c are not freed yet.
 */
int world_coll_ibroadcast(struct world_coll *c, void *buf, size_t count,
			  enum world_dtype dtype, int root,
			  struct world_coll_req **out);
int world_coll_iall_reduce(struct world_coll *c, void *buf, size_t count,
			   enum world_dtype dtype, enum world_op op,
			   struct world_coll_req **out);
int world_coll_ireduce(struct world_coll *c, void *buf, size_t count,
		       enum world_dtype dtype, enum world_op op, int root,
		       struct world_coll_req **out);
int world_coll_iall_gather(struct world_coll *c, const void *in, void *out,
			   size_t count, enum world_dtype dtype,
			   struct world_coll_req **out_req);
int world_coll_igather(struct world_coll *c, const void *in, void *out,
		       size_t count, enum world_dtype dtype, int root,
		       struct world_coll_req **out_req);
int world_coll_iscatter(struct world_coll *c, const void *in, void *out,
			size_t count, enum world_dtype dtype, int root,
			struct world_coll_req **out_req);
int world_coll_ireduce_scatter(struct world_coll *c, const void *in,
			       void *out, size_t count, enum world_dtype dtype,
			       enum world_op op, struct world_coll_req **out_req);
int world_coll_iall_to_all(struct world_coll *c, const void *in, void *out,
			   size_t count, enum world_dtype dtype,
			   struct world_coll_req **out_req);
int world_coll_ibarrier(struct world_coll *c, struct world_coll_req **out);

/*
 * The deadline of @c's started collectives: each ends with -ETIMEDOUT
 * (and poisons @c) @timeout_ms after it begins to run; WORLD_TIMEOUT_DEFAULT
 * (the wait timeout, WORLD_WAIT_TIMEOUT, as before any call) or
 * WORLD_TIMEOUT_FOREVER. A world_coll_wait() at least that long runs the
 * operation on its own thread when its turn has come, rather than the
 * group's worker (no thread switch for a collective started and waited
 * for at once); a shorter wait returns at its timeout while the worker
 * goes on. 0, or -EINVAL for a bad timeout.
 */
int world_coll_set_timeout(struct world_coll *c, int timeout_ms);

/* The size in bytes of one element of @dtype; 0 for a bad value. */
size_t world_dtype_size(enum world_dtype dtype);

#ifdef __cplusplus
}
#endif

#endif
