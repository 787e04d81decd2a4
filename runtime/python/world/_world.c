/* SPDX-License-Identifier: MIT */
/*
 * _world: libworld's C API for CPython, one object per libworld handle
 * (the world, an RPC group, a future, a remote result), bytes in and
 * bytes out: what the bytes mean (pickles) is world/__init__.py's. Every
 * call that can block releases the GIL; handlers run on libworld's
 * workers and hold the GIL only while Python code runs. Every libworld
 * code raises its own exception class (errors.c).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdlib.h>
#include <string.h>

#include "world.h"
#include "pyworld.h"

/* ---- handlers: Python callables that libworld's workers call ---- */

/*
 * A call for the callable @ctx, on a worker (or on the calling thread,
 * for a call to this process): it gets the blob as a Blob of its own and
 * returns a bytes-like answer.
 * world/__init__.py's wrappers catch everything; what still escapes is
 * the caller's WORLD_EREMOTE, with the exception's text.
 */
/*
 * A libworld worker's own thread state, made at its first call and kept:
 * PyGILState_Ensure() on a thread Python does not know makes one and
 * PyGILState_Release() frees it again, a few microseconds every call.
 * World.stop() joins the workers before the interpreter goes.
 */
static __thread PyThreadState *kept;

/* Hold the GIL: 1 on a worker (leave() gives it back through kept), 0
 * on a thread of Python's own (the caller's, for a call to itself). */
static int
enter(PyGILState_STATE *gil)
{
	if (kept != NULL) {
		PyEval_RestoreThread(kept);
		return 1;
	}
	if (PyGILState_GetThisThreadState() != NULL) {
		*gil = PyGILState_Ensure();
		return 0;
	}
	/* Never released: the thread state stays for the next calls. */
	PyGILState_Ensure();
	kept = PyThreadState_Get();
	return 1;
}

static void
leave(int worker, PyGILState_STATE gil)
{
	if (worker) {
		kept = PyEval_SaveThread();
	} else {
		PyGILState_Release(gil);
	}
}

static int
call_handler(void *ctx, const json_t *args, const void *blob, size_t len,
	     struct world_reply *reply)
{
	PyGILState_STATE gil = PyGILState_UNLOCKED;
	/* The arguments may keep arrays rebuilt on the blob (a server that
	 * stores what it is sent): the Blob owns it, taken from libworld, or
	 * a copy of the caller's bytes in a call of this process to itself. */
	void *own = world_reply_take_blob(reply);
	int worker = enter(&gil);
	PyObject *data = own != NULL ? pyworld_blob_take(own, len) : pyworld_blob_copy(blob, len);
	PyObject *res = data != NULL ? PyObject_CallOneArg((PyObject *)ctx, data) : NULL;
	Py_buffer buf;
	int rc = 0;

	Py_XDECREF(data);
	if (res != NULL && PyObject_GetBuffer(res, &buf, PyBUF_SIMPLE) == 0) {
		rc = world_reply_blob(reply, buf.buf, (size_t)buf.len);
		PyBuffer_Release(&buf);
	} else {
		PyObject *type, *value, *tb, *text;

		PyErr_Fetch(&type, &value, &tb);
		text = value != NULL ? PyObject_Str(value) : NULL;
		rc = -EPROTO;
		world_reply_error(reply, rc, text != NULL ? PyUnicode_AsUTF8(text)
							  : "the handler failed");
		PyErr_Clear();
		Py_XDECREF(text);
		Py_XDECREF(type);
		Py_XDECREF(value);
		Py_XDECREF(tb);
	}
	Py_XDECREF(res);
	leave(worker, gil);
	return rc;
}

/* ---- the world ---- */

/*
 * libworld's waits ask this every 100 ms (world_set_interrupt): Python
 * runs the handlers of the signals that came (Ctrl-C), and an exception
 * they raise ends the wait, and stays set for the call to raise.
 */
static int
check_signals(void *arg)
{
	PyGILState_STATE gil = PyGILState_Ensure();
	int stop = PyErr_CheckSignals() < 0;

	PyGILState_Release(gil);
	return stop;
}

static void
world_dealloc(PyWorld *self)
{
	/* A world left without stop(): abort it, so that no worker calls
	 * into an interpreter that is going away. */
	if (self->w != NULL) {
		Py_BEGIN_ALLOW_THREADS
		world_abort(self->w);
		Py_END_ALLOW_THREADS
		self->w = NULL;
	}
	Py_XDECREF(self->keep);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

static int
world_init(PyWorld *self, PyObject *args, PyObject *kw)
{
	static char *kws[] = { "rank", "size", "address", "name", NULL };
	struct world_options o = { .rank = -1, .size = -1 };
	struct world *w = NULL;
	int rc;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|iizz:World", kws, &o.rank, &o.size,
					 &o.address, &o.name)) {
		return -1;
	}
	if (self->w != NULL) {
		PyErr_SetString(PyExc_RuntimeError, "World is open already");
		return -1;
	}
	self->keep = PyList_New(0);
	if (self->keep == NULL) {
		return -1;
	}
	/* With an address: a world without worldrun (world_open_with()). */
	Py_BEGIN_ALLOW_THREADS
	rc = o.address != NULL || o.name != NULL ? world_open_with(&o, &w) : world_open(&w);
	Py_END_ALLOW_THREADS
	if (rc < 0) {
		pyworld_raise(rc);
		return -1;
	}
	self->w = w;
	world_set_interrupt(w, check_signals, NULL);
	return 0;
}

/* The world, or NULL with an exception once it was stopped. */
struct world *
pyworld_get(PyWorld *self)
{
	if (self->w == NULL) {
		PyErr_SetString(PyExc_RuntimeError, "the world is stopped");
	}
	return self->w;
}

static PyObject *
world_stop_py(PyWorld *self, PyObject *args)
{
	struct world *w = pyworld_get(self);
	int timeout, rc;

	if (w == NULL || !PyArg_ParseTuple(args, "i:stop", &timeout)) {
		return NULL;
	}
	self->w = NULL;
	Py_BEGIN_ALLOW_THREADS
	rc = world_stop(w, timeout);
	Py_END_ALLOW_THREADS
	pyworld_lent_drain();
	return rc < 0 ? pyworld_raise(rc) : Py_NewRef(Py_None);
}

static PyObject *
world_fail_py(PyWorld *self, PyObject *args)
{
	struct world *w = pyworld_get(self);
	const char *why;
	int status, rc;

	if (w == NULL || !PyArg_ParseTuple(args, "is:fail", &status, &why)) {
		return NULL;
	}
	self->w = NULL;
	Py_BEGIN_ALLOW_THREADS
	rc = world_fail(w, status, why);
	Py_END_ALLOW_THREADS
	pyworld_lent_drain();
	return rc < 0 ? pyworld_raise(rc) : Py_NewRef(Py_None);
}

static PyObject *
world_info(PyWorld *self, PyObject *unused)
{
	struct world *w = pyworld_get(self);

	if (w == NULL) {
		return NULL;
	}
	return Py_BuildValue("iiss", world_rank(w), world_size(w), world_name(w),
			     world_jobid(w));
}

/* The struct world itself, for the c10d backend (world/c10d.cpp), which
 * must end its use of it first when the world stops (World.stop()). */
static PyObject *
world_handle(PyWorld *self, PyObject *unused)
{
	struct world *w = pyworld_get(self);

	return w == NULL ? NULL : PyCapsule_New(w, "world.world", NULL);
}

/* Every rank's name, in rank order: waits until every rank has a world. */
static PyObject *
world_names_py(PyWorld *self, PyObject *unused)
{
	struct world *w = pyworld_get(self);
	PyObject *list = w != NULL ? PyList_New(world_size(w)) : NULL;
	int rc = 0;

	for (int r = 0; list != NULL && r < world_size(w); r++) {
		const char *name = NULL;
		PyObject *item;

		Py_BEGIN_ALLOW_THREADS
		rc = world_rank_name(w, r, &name);
		Py_END_ALLOW_THREADS
		if (rc < 0) {
			Py_DECREF(list);
			return pyworld_raise(rc);
		}
		item = PyUnicode_FromString(name);
		if (item == NULL) {
			Py_DECREF(list);
			return NULL;
		}
		PyList_SET_ITEM(list, r, item);
	}
	return list;
}

/* Keep @obj alive as long as the world: libworld may call it until stop. */
static int
keep(PyWorld *self, PyObject *obj)
{
	return PyList_Append(self->keep, obj);
}

static PyObject *
world_export_py(PyWorld *self, PyObject *args)
{
	struct world *w = pyworld_get(self);
	PyObject *fn;
	const char *name;
	int serial = 0, rc;

	if (w == NULL || !PyArg_ParseTuple(args, "sO|p:export", &name, &fn, &serial) ||
	    keep(self, fn) < 0) {
		return NULL;
	}
	rc = world_export(w, name, call_handler, fn, serial ? WORLD_SERIAL : 0);
	return rc < 0 ? pyworld_raise(rc) : Py_NewRef(Py_None);
}

static PyObject *
world_barrier_py(PyWorld *self, PyObject *args)
{
	struct world *w = pyworld_get(self);
	const char *name;
	int timeout, rc;

	if (w == NULL || !PyArg_ParseTuple(args, "si:barrier", &name, &timeout)) {
		return NULL;
	}
	Py_BEGIN_ALLOW_THREADS
	rc = world_barrier(w, name, timeout);
	Py_END_ALLOW_THREADS
	return rc < 0 ? pyworld_raise(rc) : Py_NewRef(Py_None);
}

static PyMethodDef world_methods[] = {
	{ "stop", (PyCFunction)world_stop_py, METH_VARARGS,
	  "stop(timeout_ms): wait until every rank stops, answering peers meanwhile" },
	{ "fail", (PyCFunction)world_fail_py, METH_VARARGS,
	  "fail(status, why): tell the job this rank failed, and leave the world" },
	{ "names", (PyCFunction)world_names_py, METH_NOARGS,
	  "names() -> every rank's name, in rank order" },
	{ "info", (PyCFunction)world_info, METH_NOARGS,
	  "info() -> (rank, size, name, jobid)" },
	{ "handle", (PyCFunction)world_handle, METH_NOARGS,
	  "handle() -> a capsule of the struct world, for world.c10d" },
	{ "export", (PyCFunction)world_export_py, METH_VARARGS,
	  "export(name, fn, serial=False): a direct handler of this process" },
	{ "barrier", (PyCFunction)world_barrier_py, METH_VARARGS,
	  "barrier(name, timeout_ms): every rank of the job" },
	{ "create_group", (PyCFunction)pyworld_group_create, METH_VARARGS,
	  "create_group(name, members, timeout_ms) -> Group" },
	{ "open_group", (PyCFunction)pyworld_group_open, METH_VARARGS,
	  "open_group(name) -> Group: an existing group, for a non-member" },
	{ "create_coll", (PyCFunction)pyworld_coll_create, METH_VARARGS,
	  "create_coll(world_ranks, timeout_ms) -> Coll (members only)" },
	{ NULL, NULL, 0, NULL },
};

PyTypeObject PyWorld_Type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "world._world.World",
	.tp_basicsize = sizeof(PyWorld),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "libworld's world: this process as a rank of its job",
	.tp_new = PyType_GenericNew,
	.tp_init = (initproc)world_init,
	.tp_dealloc = (destructor)world_dealloc,
	.tp_methods = world_methods,
};

int
pyworld_register_handler(PyWorld *world, struct world_group *g, const char *key,
			 PyObject *fn, int serial)
{
	int rc;

	if (keep(world, fn) < 0) {
		return -ENOMEM;
	}
	Py_BEGIN_ALLOW_THREADS
	rc = world_register(g, key, call_handler, fn, serial ? WORLD_SERIAL : 0);
	Py_END_ALLOW_THREADS
	return rc;
}

static struct PyModuleDef module = {
	PyModuleDef_HEAD_INIT,
	.m_name = "world._world",
	.m_doc = "libworld's C API, bytes in and bytes out (use the world package)",
	.m_size = -1,
};

PyMODINIT_FUNC PyInit__world(void);

PyMODINIT_FUNC
PyInit__world(void)
{
	PyObject *m = PyModule_Create(&module);

	if (m == NULL || PyType_Ready(&PyWorld_Type) < 0 ||
	    PyModule_AddObjectRef(m, "World", (PyObject *)&PyWorld_Type) < 0 ||
	    pyworld_group_types(m) < 0 || pyworld_coll_types(m) < 0 ||
	    pyworld_blob_type(m) < 0 ||
	    pyworld_errors(m) < 0 ||
	    PyModule_AddIntConstant(m, "TIMEOUT_DEFAULT", WORLD_TIMEOUT_DEFAULT) < 0 ||
	    PyModule_AddIntConstant(m, "TIMEOUT_FOREVER", WORLD_TIMEOUT_FOREVER) < 0) {
		Py_XDECREF(m);
		return NULL;
	}
	return m;
}
