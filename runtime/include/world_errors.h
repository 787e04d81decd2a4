/* SPDX-License-Identifier: MIT */
/*
 * world_errors.h: libworld's error codes and timeout constants, and the
 * two functions that name a code. world.h includes it; a program (or a
 * tool of this tree) that needs only the codes may include it alone.
 */
#ifndef WORLD_ERRORS_H
#define WORLD_ERRORS_H

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
	WORLD_EMISMATCH = -4104,  /* a collective's members called it differently */
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

#ifdef __cplusplus
}
#endif

#endif
