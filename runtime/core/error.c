/* SPDX-License-Identifier: MIT */
/*
 * error: names and descriptions of libworld's error codes. The switches
 * have no default case, so the compiler flags a code added to world.h
 * but forgotten here; negated errno values fall through to libc.
 */
#include "world_errors.h"

#include <errno.h>
#include <string.h>

const char *
world_strerror(int err)
{
	switch ((enum world_error)err) {
	case WORLD_OK:
		return "Success";
	case WORLD_EFRAME:
		return "Malformed or oversized frame";
	case WORLD_EPROTO:
		return "Protocol error";
	case WORLD_ENOTMEMBER:
		return "Not a member of the group";
	case WORLD_EREMOTE:
		return "Remote handler failed";
	case WORLD_EPEERDEAD:
		return "Peer rank is dead";
	case WORLD_EREGISTRY:
		return "Registry is gone";
	case WORLD_EAUTH:
		return "Authentication failed";
	case WORLD_EFABRIC:
		return "Fabric error";
	case WORLD_EMISMATCH:
		return "Collective arguments differ between members";
	}
	if (err < 0 && err > -4096) {
		return strerror(-err);
	}
	return "Unknown error";
}

const char *
world_err_name(int err)
{
	switch ((enum world_error)err) {
	case WORLD_OK:
		return "OK";
	case WORLD_EFRAME:
		return "WORLD_EFRAME";
	case WORLD_EPROTO:
		return "WORLD_EPROTO";
	case WORLD_ENOTMEMBER:
		return "WORLD_ENOTMEMBER";
	case WORLD_EREMOTE:
		return "WORLD_EREMOTE";
	case WORLD_EPEERDEAD:
		return "WORLD_EPEERDEAD";
	case WORLD_EREGISTRY:
		return "WORLD_EREGISTRY";
	case WORLD_EAUTH:
		return "WORLD_EAUTH";
	case WORLD_EFABRIC:
		return "WORLD_EFABRIC";
	case WORLD_EMISMATCH:
		return "WORLD_EMISMATCH";
	}
	if (err < 0 && err > -4096) {
		const char *name = strerrorname_np(-err);
		return name != NULL ? name : "EUNKNOWN";
	}
	return "EUNKNOWN";
}
