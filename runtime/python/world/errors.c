/* SPDX-License-Identifier: MIT */
/*
 * errors: one exception class per libworld code, in one hierarchy under
 * WorldError, each also a subclass of the built-in exception Machin's
 * users catch for it (KeyError for a missing or taken key, TimeoutError,
 * RuntimeError for a non-member). WorldError is a RuntimeError, as every
 * error of torch's RPC and c10d under Machin is (a remote exception, a
 * group name taken, a timeout, a dead peer). Every instance carries the
 * code, its stable name, and for PeerDeadError the rank.
 */
#include "pyworld.h"

#include <errno.h>

struct kind {
	const char *name;  /* in module world */
	int codes[3];      /* 0-terminated */
	PyObject **base;   /* the built-in it also is, or NULL */
	const char *doc;
};

static PyObject *world_error;

static struct kind kinds[] = {
	{ "NotFoundError", { -ENOENT }, &PyExc_KeyError,
	  "No such key, group or service (ENOENT)." },
	{ "ExistsError", { -EEXIST }, &PyExc_KeyError,
	  "The key is paired or registered already (EEXIST)." },
	{ "NotOwnerError", { -EPERM }, &PyExc_KeyError,
	  "The key belongs to another rank (EPERM)." },
	{ "NotMemberError", { WORLD_ENOTMEMBER }, &PyExc_RuntimeError,
	  "This process is not a member of the group." },
	{ "WorldTimeoutError", { -ETIMEDOUT }, &PyExc_TimeoutError,
	  "The call did not finish in its timeout." },
	{ "PeerDeadError", { WORLD_EPEERDEAD }, NULL,
	  "A rank the call needs died; .rank names it." },
	{ "RemoteError", { WORLD_EREMOTE }, NULL,
	  "The remote handler raised: .remote_type, .remote_message, "
	  ".remote_traceback." },
	{ "RegistryError", { WORLD_EREGISTRY }, NULL,
	  "worldrun's registry is gone." },
	{ "AuthError", { WORLD_EAUTH }, NULL, "The job secret was refused." },
	{ "ProtocolError", { WORLD_EPROTO, WORLD_EFRAME }, NULL,
	  "A peer sent what is not the protocol." },
	{ "FabricError", { WORLD_EFABRIC }, NULL, "libfabric failed." },
	{ "MismatchError", { WORLD_EMISMATCH }, NULL,
	  "The group's members called a collective differently (kind, count, "
	  "dtype, op or root); the message names the first that differs." },
	{ "UnsupportedError", { -ENOTSUP }, &PyExc_NotImplementedError,
	  "Not supported here (the singleton world has no registry)." },
	{ "InvalidError", { -EINVAL }, &PyExc_ValueError, "A bad argument." },
	{ "TooBigError", { -EMSGSIZE }, &PyExc_ValueError,
	  "Over WORLD_MSG_MAX or WORLD_BLOB_MAX." },
	{ "OutOfMemoryError", { -ENOMEM }, &PyExc_MemoryError, "Out of memory." },
};

#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

static PyObject *classes[NKINDS];

/* Set @name on @e to @v_new (stolen). 0 or -1. */
static int
set(PyObject *e, const char *name, PyObject *v_new)
{
	int rc = v_new != NULL ? PyObject_SetAttrString(e, name, v_new) : -1;

	Py_XDECREF(v_new);
	return rc;
}

PyObject *
pyworld_raise(int code)
{
	/* A wait that the interrupt check ended: its exception is set. */
	if (code == -EINTR && PyErr_Occurred()) {
		return NULL;
	}
	const struct world_failure *f = world_last_failure();
	PyObject *cls = world_error, *e;
	const char *text = f->code == code && f->message[0] != '\0' ? f->message
								       : world_strerror(code);

	for (size_t i = 0; i < NKINDS; i++) {
		for (int k = 0; kinds[i].codes[k] != 0; k++) {
			if (kinds[i].codes[k] == code) {
				cls = classes[i];
			}
		}
	}
	e = PyObject_CallFunction(cls, "s", text);
	if (e == NULL) {
		return NULL;
	}
	if (set(e, "code", PyLong_FromLong(code)) < 0 ||
	    set(e, "name", PyUnicode_FromString(world_err_name(code))) < 0 ||
	    set(e, "rank", PyLong_FromLong(f->code == code ? f->rank : -1)) < 0 ||
	    set(e, "remote_code", PyLong_FromLong(f->code == code ? f->remote_code : 0)) < 0) {
		Py_DECREF(e);
		return NULL;
	}
	PyErr_SetObject(cls, e);
	Py_DECREF(e);
	return NULL;
}

/* raise_error(code): raise what libworld's @code is, as a call that
 * failed with it would (for tests, and tools that hold a code). */
static PyObject *
raise_error(PyObject *self, PyObject *args)
{
	int code;

	if (!PyArg_ParseTuple(args, "i", &code)) {
		return NULL;
	}
	if (code >= 0) {
		PyErr_SetString(PyExc_ValueError, "a libworld error code is negative");
		return NULL;
	}
	return pyworld_raise(code);
}

static PyMethodDef error_functions[] = {
	{ "raise_error", raise_error, METH_VARARGS,
	  "raise_error(code): raise the exception of libworld's error code." },
	{ NULL, NULL, 0, NULL },
};

int
pyworld_errors(PyObject *m)
{
	if (PyModule_AddFunctions(m, error_functions) < 0) {
		return -1;
	}
	world_error = PyErr_NewExceptionWithDoc("world.WorldError",
		"Every error of libworld: .code (negative), .name (its stable name), "
		".rank (the dead rank, or -1).", PyExc_RuntimeError, NULL);
	if (world_error == NULL || PyModule_AddObjectRef(m, "WorldError", world_error) < 0) {
		return -1;
	}
	for (size_t i = 0; i < NKINDS; i++) {
		char full[64];
		PyObject *bases = kinds[i].base != NULL
			? PyTuple_Pack(2, world_error, *kinds[i].base)
			: PyTuple_Pack(1, world_error);

		snprintf(full, sizeof(full), "world.%s", kinds[i].name);
		classes[i] = bases != NULL
			? PyErr_NewExceptionWithDoc(full, kinds[i].doc, bases, NULL) : NULL;
		Py_XDECREF(bases);
		if (classes[i] == NULL ||
		    PyModule_AddObjectRef(m, kinds[i].name, classes[i]) < 0) {
			return -1;
		}
	}
	return 0;
}
