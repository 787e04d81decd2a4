/* SPDX-License-Identifier: MIT */
/*
 * group: libworld's RPC group for Python (Group), and what its calls give
 * back without waiting (Future, RRef). Data goes in as any bytes-like
 * object and comes back as bytes; timeouts are libworld's milliseconds.
 */
#include "pyworld.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

typedef struct {
	PyObject_HEAD
	PyWorld *world; /* kept: the group lives in it */
	struct world_group *g;
} PyGroup;

typedef struct {
	PyObject_HEAD
	PyGroup *group;
	struct world_future *f;
	PyObject *result; /* once waited for */
	int code;         /* or how it failed: 0 while unknown */
} PyFuture;

typedef struct {
	PyObject_HEAD
	PyGroup *group;
	struct world_rref *r;
} PyRRef;

static PyTypeObject PyGroup_Type, PyFuture_Type, PyRRef_Type;

/* A blob from libworld (malloc'd, or NULL) as a Blob, without a copy. */
static PyObject *
take_blob(void *blob, size_t len)
{
	return blob != NULL ? pyworld_blob_take(blob, len) : PyBytes_FromStringAndSize("", 0);
}

static struct world_group *
group_get(PyGroup *self)
{
	if (self->g == NULL) {
		PyErr_SetString(PyExc_RuntimeError, "the group is destroyed");
	}
	return self->g;
}

static PyObject *
new_group(PyWorld *world, struct world_group *g)
{
	PyGroup *self = PyObject_New(PyGroup, &PyGroup_Type);

	if (self == NULL) {
		world_group_destroy(g);
		return NULL;
	}
	self->world = (PyWorld *)Py_NewRef((PyObject *)world);
	self->g = g;
	return (PyObject *)self;
}

PyObject *
pyworld_group_create(PyWorld *self, PyObject *args)
{
	struct world *w = pyworld_get(self);
	struct world_group *g = NULL;
	const char **names = NULL;
	PyObject *members, *seq;
	const char *name;
	Py_ssize_t n;
	int timeout, rc = 0;

	if (w == NULL || !PyArg_ParseTuple(args, "sOi:create_group", &name, &members, &timeout)) {
		return NULL;
	}
	seq = PySequence_Fast(members, "members: a sequence of rank names");
	if (seq == NULL) {
		return NULL;
	}
	n = PySequence_Fast_GET_SIZE(seq);
	names = calloc((size_t)n + 1, sizeof(*names));
	for (Py_ssize_t i = 0; names != NULL && i < n; i++) {
		names[i] = PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(seq, i));
		if (names[i] == NULL) {
			free(names);
			Py_DECREF(seq);
			return NULL;
		}
	}
	if (names == NULL) {
		Py_DECREF(seq);
		return PyErr_NoMemory();
	}
	Py_BEGIN_ALLOW_THREADS
	rc = world_group_create(w, name, names, (size_t)n, timeout, &g);
	Py_END_ALLOW_THREADS
	free(names);
	Py_DECREF(seq);
	return rc < 0 ? pyworld_raise(rc) : new_group(self, g);
}

PyObject *
pyworld_group_open(PyWorld *self, PyObject *args)
{
	struct world *w = pyworld_get(self);
	struct world_group *g = NULL;
	const char *name;
	int rc;

	if (w == NULL || !PyArg_ParseTuple(args, "s:open_group", &name)) {
		return NULL;
	}
	Py_BEGIN_ALLOW_THREADS
	rc = world_group_open(w, name, &g);
	Py_END_ALLOW_THREADS
	return rc < 0 ? pyworld_raise(rc) : new_group(self, g);
}

static int
group_destroy_now(PyGroup *self)
{
	struct world_group *g = self->g;
	int rc = 0;

	self->g = NULL;
	if (g != NULL && self->world->w != NULL) {
		Py_BEGIN_ALLOW_THREADS
		rc = world_group_destroy(g);
		Py_END_ALLOW_THREADS
	}
	return rc;
}

static void
group_dealloc(PyGroup *self)
{
	group_destroy_now(self);
	Py_XDECREF(self->world);
	PyObject_Free(self);
}

static PyObject *
group_destroy_py(PyGroup *self, PyObject *unused)
{
	int rc = group_destroy_now(self);

	return rc < 0 ? pyworld_raise(rc) : Py_NewRef(Py_None);
}

static PyObject *
group_info(PyGroup *self, PyObject *unused)
{
	struct world_group *g = group_get(self);
	PyObject *members, *m;
	size_t n;

	if (g == NULL) {
		return NULL;
	}
	n = world_group_size(g);
	members = PyList_New((Py_ssize_t)n);
	for (size_t i = 0; members != NULL && i < n; i++) {
		m = PyUnicode_FromString(world_group_member(g, i));
		if (m == NULL) {
			Py_DECREF(members);
			return NULL;
		}
		PyList_SET_ITEM(members, (Py_ssize_t)i, m);
	}
	return members == NULL ? NULL : Py_BuildValue("sN", world_group_name(g), members);
}

static PyObject *
group_is_member(PyGroup *self, PyObject *args)
{
	struct world_group *g = group_get(self);
	const char *name = NULL;

	if (g == NULL || !PyArg_ParseTuple(args, "|z:is_member", &name)) {
		return NULL;
	}
	return PyBool_FromLong(world_group_is_member(g, name));
}

static PyObject *
group_barrier(PyGroup *self, PyObject *args)
{
	struct world_group *g = group_get(self);
	int timeout, rc;

	if (g == NULL || !PyArg_ParseTuple(args, "i:barrier", &timeout)) {
		return NULL;
	}
	Py_BEGIN_ALLOW_THREADS
	rc = world_group_barrier(g, timeout);
	Py_END_ALLOW_THREADS
	return rc < 0 ? pyworld_raise(rc) : Py_NewRef(Py_None);
}

static PyObject *
group_pair(PyGroup *self, PyObject *args)
{
	struct world_group *g = group_get(self);
	const char *key;
	Py_buffer data;
	int rc;

	if (g == NULL || !PyArg_ParseTuple(args, "sy*:pair", &key, &data)) {
		return NULL;
	}
	Py_BEGIN_ALLOW_THREADS
	rc = world_pair(g, key, NULL, data.buf, (size_t)data.len);
	Py_END_ALLOW_THREADS
	PyBuffer_Release(&data);
	return rc < 0 ? pyworld_raise(rc) : Py_NewRef(Py_None);
}

/* unpair, deregister: one key, no answer. */
static PyObject *
key_op(PyGroup *self, PyObject *args, int (*op)(struct world_group *, const char *))
{
	struct world_group *g = group_get(self);
	const char *key;
	int rc;

	if (g == NULL || !PyArg_ParseTuple(args, "s", &key)) {
		return NULL;
	}
	Py_BEGIN_ALLOW_THREADS
	rc = op(g, key);
	Py_END_ALLOW_THREADS
	return rc < 0 ? pyworld_raise(rc) : Py_NewRef(Py_None);
}

/* is_paired, is_registered: one key, a bool. */
static PyObject *
key_test(PyGroup *self, PyObject *args,
	 int (*op)(struct world_group *, const char *, bool *))
{
	struct world_group *g = group_get(self);
	const char *key;
	bool out = false;
	int rc;

	if (g == NULL || !PyArg_ParseTuple(args, "s", &key)) {
		return NULL;
	}
	Py_BEGIN_ALLOW_THREADS
	rc = op(g, key, &out);
	Py_END_ALLOW_THREADS
	return rc < 0 ? pyworld_raise(rc) : PyBool_FromLong(out);
}

static PyObject *
group_unpair(PyGroup *self, PyObject *args)
{
	return key_op(self, args, world_unpair);
}

static PyObject *
group_deregister(PyGroup *self, PyObject *args)
{
	return key_op(self, args, world_deregister);
}

static PyObject *
group_is_paired(PyGroup *self, PyObject *args)
{
	return key_test(self, args, world_is_paired);
}

static PyObject *
group_is_registered(PyGroup *self, PyObject *args)
{
	return key_test(self, args, world_is_registered);
}

static PyObject *
group_get_paired(PyGroup *self, PyObject *args)
{
	struct world_group *g = group_get(self);
	const char *key;
	void *blob = NULL;
	size_t len = 0;
	int timeout, rc;

	if (g == NULL || !PyArg_ParseTuple(args, "si:get_paired", &key, &timeout)) {
		return NULL;
	}
	Py_BEGIN_ALLOW_THREADS
	rc = world_get_paired(g, key, NULL, &blob, &len, timeout);
	Py_END_ALLOW_THREADS
	return rc < 0 ? pyworld_raise(rc) : take_blob(blob, len);
}

static PyObject *
group_register(PyGroup *self, PyObject *args)
{
	struct world_group *g = group_get(self);
	const char *key;
	PyObject *fn;
	int serial = 0, rc;

	if (g == NULL || !PyArg_ParseTuple(args, "sO|p:register", &key, &fn, &serial)) {
		return NULL;
	}
	rc = pyworld_register_handler(self->world, g, key, fn, serial);
	return rc < 0 ? pyworld_raise(rc) : Py_NewRef(Py_None);
}

/*
 * The calls: a service by key (member NULL) or a direct handler @name of
 * @member, waited for, as a future, or as a remote result.
 */
enum how { WAIT, ASYNC, REMOTE };

static PyObject *
new_future(PyGroup *group, struct world_future *f)
{
	PyFuture *self = PyObject_New(PyFuture, &PyFuture_Type);

	if (self == NULL) {
		world_future_free(f);
		return NULL;
	}
	self->group = (PyGroup *)Py_NewRef((PyObject *)group);
	self->f = f;
	self->result = NULL;
	self->code = 0;
	return (PyObject *)self;
}

static PyObject *
new_rref(PyGroup *group, struct world_rref *r)
{
	PyRRef *self = PyObject_New(PyRRef, &PyRRef_Type);

	if (self == NULL) {
		world_rref_release(r);
		return NULL;
	}
	self->group = (PyGroup *)Py_NewRef((PyObject *)group);
	self->r = r;
	return (PyObject *)self;
}

/*
 * A call's blob as the pickle's parts, lent to libworld by a call that
 * waits (no copy): their views stay taken until libworld releases them,
 * which it may do on its own thread, without the GIL, and long after a
 * call that timed out.
 */
struct lent {
	struct lent *next;
	Py_ssize_t n;
	Py_buffer views[];
};

/*
 * The one file-scope state here: views libworld gave back, for a thread
 * that holds the GIL to release (pyworld_lent_drain, at every call and
 * wait). One list for the process: libworld has one world per process.
 */
static pthread_mutex_t returned_mu = PTHREAD_MUTEX_INITIALIZER;
static struct lent *returned;

static void
give_back(void *arg)
{
	struct lent *l = arg;

	pthread_mutex_lock(&returned_mu);
	l->next = returned;
	returned = l;
	pthread_mutex_unlock(&returned_mu);
}

static void
release_views(struct lent *l)
{
	for (Py_ssize_t i = 0; i < l->n; i++) {
		PyBuffer_Release(&l->views[i]);
	}
	PyMem_RawFree(l);
}

void
pyworld_lent_drain(void)
{
	struct lent *l;

	pthread_mutex_lock(&returned_mu);
	l = returned;
	returned = NULL;
	pthread_mutex_unlock(&returned_mu);
	while (l != NULL) {
		struct lent *next = l->next;

		release_views(l);
		l = next;
	}
}

/* The views of @parts (a sequence of bytes-like objects) in *@out, and
 * their pieces in *@iov (PyMem_RawFree() it). */
static int
lend(PyObject *parts, struct lent **out, struct iovec **iov)
{
	PyObject *seq = PySequence_Fast(parts, "data: a list of bytes-like parts");
	struct lent *l = NULL;
	Py_ssize_t n;

	*out = NULL;
	*iov = NULL;
	if (seq == NULL) {
		return -1;
	}
	n = PySequence_Fast_GET_SIZE(seq);
	l = PyMem_RawCalloc(1, sizeof(*l) + (size_t)n * sizeof(Py_buffer));
	*iov = PyMem_RawCalloc((size_t)n + 1, sizeof(**iov));
	if (l == NULL || *iov == NULL) {
		PyMem_RawFree(l);
		PyMem_RawFree(*iov);
		Py_DECREF(seq);
		PyErr_NoMemory();
		return -1;
	}
	for (; l->n < n; l->n++) {
		Py_buffer *v = &l->views[l->n];

		if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(seq, l->n), v,
				       PyBUF_C_CONTIGUOUS) < 0) {
			release_views(l);
			PyMem_RawFree(*iov);
			Py_DECREF(seq);
			return -1;
		}
		(*iov)[l->n] = (struct iovec){ v->buf, (size_t)v->len };
	}
	/* Each view holds its object: the sequence may go. */
	Py_DECREF(seq);
	*out = l;
	return 0;
}

static PyObject *
call(PyGroup *self, const char *member, const char *name, PyObject *parts,
     int timeout, enum how how)
{
	struct world_call_spec spec = { .member = member, .key = name,
					.release = give_back, .timeout_ms = timeout };
	struct world_group *g = self->g;
	struct world_future *f = NULL;
	struct iovec *iov = NULL;
	struct lent *l = NULL;
	void *blob = NULL;
	size_t len = 0;
	int rc;

	if (lend(parts, &l, &iov) < 0) {
		return NULL;
	}
	spec.iov = iov;
	spec.iovcnt = (size_t)l->n;
	spec.release_arg = l;
	/* A call that returns at once copies: the program may change its
	 * arrays right after, as torch's RPC lets it. */
	if (how != WAIT) {
		spec.release = NULL;
	}
	Py_BEGIN_ALLOW_THREADS
	rc = how == WAIT ? world_callv(g, &spec, NULL, &blob, &len)
			 : world_callv_async(g, &spec, &f);
	Py_END_ALLOW_THREADS
	PyMem_RawFree(iov);
	if (spec.release == NULL) {
		give_back(l);
	}
	pyworld_lent_drain();
	if (rc < 0) {
		free(blob);
		return pyworld_raise(rc);
	}
	return how == WAIT ? take_blob(blob, len) : new_future(self, f);
}

/* A remote call: its result stays with the callee (an RRef). */
static PyObject *
call_remote(PyGroup *self, const char *member, const char *name, Py_buffer *data,
	    int timeout)
{
	struct world_group *g = self->g;
	struct world_rref *r = NULL;
	int rc;

	Py_BEGIN_ALLOW_THREADS
	rc = member != NULL
		? world_call_direct_remote(g, member, name, NULL, data->buf,
					   (size_t)data->len, timeout, &r)
		: world_call_remote(g, name, NULL, data->buf, (size_t)data->len, timeout,
				    &r);
	Py_END_ALLOW_THREADS
	PyBuffer_Release(data);
	return rc < 0 ? pyworld_raise(rc) : new_rref(self, r);
}

/* call and call_direct: @data is bytes-like (an RRef's call), or the
 * pickle's parts in a list (the others). */
static PyObject *
any_call(PyGroup *self, const char *member, const char *name, PyObject *data,
	 int timeout, int how)
{
	Py_buffer view;

	if (how != REMOTE) {
		return call(self, member, name, data, timeout, (enum how)how);
	}
	if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0) {
		return NULL;
	}
	return call_remote(self, member, name, &view, timeout);
}

static PyObject *
group_call(PyGroup *self, PyObject *args)
{
	const char *key;
	PyObject *data;
	int timeout, how;

	if (group_get(self) == NULL ||
	    !PyArg_ParseTuple(args, "sOii:call", &key, &data, &timeout, &how)) {
		return NULL;
	}
	return any_call(self, NULL, key, data, timeout, how);
}

static PyObject *
group_call_direct(PyGroup *self, PyObject *args)
{
	const char *member, *name;
	PyObject *data;
	int timeout, how;

	if (group_get(self) == NULL ||
	    !PyArg_ParseTuple(args, "ssOii:call_direct", &member, &name, &data, &timeout,
			      &how)) {
		return NULL;
	}
	return any_call(self, member, name, data, timeout, how);
}

static PyMethodDef group_methods[] = {
	{ "info", (PyCFunction)group_info, METH_NOARGS, "info() -> (name, members)" },
	{ "is_member", (PyCFunction)group_is_member, METH_VARARGS,
	  "is_member(name=None): whether name (None: this process) is a member" },
	{ "barrier", (PyCFunction)group_barrier, METH_VARARGS, "barrier(timeout_ms)" },
	{ "pair", (PyCFunction)group_pair, METH_VARARGS, "pair(key, data)" },
	{ "unpair", (PyCFunction)group_unpair, METH_VARARGS, "unpair(key)" },
	{ "is_paired", (PyCFunction)group_is_paired, METH_VARARGS, "is_paired(key)" },
	{ "get_paired", (PyCFunction)group_get_paired, METH_VARARGS,
	  "get_paired(key, timeout_ms) -> bytes" },
	{ "register", (PyCFunction)group_register, METH_VARARGS,
	  "register(key, fn, serial=False): fn(memoryview) -> bytes-like" },
	{ "deregister", (PyCFunction)group_deregister, METH_VARARGS, "deregister(key)" },
	{ "is_registered", (PyCFunction)group_is_registered, METH_VARARGS,
	  "is_registered(key)" },
	{ "call", (PyCFunction)group_call, METH_VARARGS,
	  "call(key, data, timeout_ms, how): how 0 waits (bytes), 1 a Future, 2 an RRef;\n"
	  "data a list of bytes-like parts, lent until answered (how 2: one bytes-like)" },
	{ "call_direct", (PyCFunction)group_call_direct, METH_VARARGS,
	  "call_direct(member, name, data, timeout_ms, how): as call" },
	{ "destroy", (PyCFunction)group_destroy_py, METH_NOARGS, "destroy()" },
	{ NULL, NULL, 0, NULL },
};

static PyTypeObject PyGroup_Type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "world._world.Group",
	.tp_basicsize = sizeof(PyGroup),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "libworld's RPC group",
	.tp_dealloc = (destructor)group_dealloc,
	.tp_methods = group_methods,
};

/* ---- futures ---- */

static void
future_dealloc(PyFuture *self)
{
	if (self->f != NULL && self->group->world->w != NULL) {
		world_future_free(self->f);
	}
	pyworld_lent_drain();
	Py_XDECREF(self->result);
	Py_XDECREF(self->group);
	PyObject_Free(self);
}

static PyObject *
future_wait(PyFuture *self, PyObject *args)
{
	void *blob = NULL;
	size_t len = 0;
	int timeout, rc;

	if (!PyArg_ParseTuple(args, "i:wait", &timeout)) {
		return NULL;
	}
	if (self->result != NULL) {
		return Py_NewRef(self->result);
	}
	if (self->code < 0) {
		return pyworld_raise(self->code);
	}
	Py_BEGIN_ALLOW_THREADS
	rc = world_future_wait(self->f, timeout, NULL, &blob, &len);
	Py_END_ALLOW_THREADS
	pyworld_lent_drain();
	/* A wait that timed out or was interrupted may be waited for again,
	 * unless the call's own time is over; any other end stays. */
	if (rc < 0 && ((rc != -ETIMEDOUT && rc != -EINTR) || world_future_test(self->f) == 1)) {
		self->code = rc;
	}
	if (rc < 0) {
		free(blob);
		return pyworld_raise(rc);
	}
	self->result = take_blob(blob, len);
	return self->result != NULL ? Py_NewRef(self->result) : NULL;
}

static PyObject *
future_done(PyFuture *self, PyObject *unused)
{
	return PyBool_FromLong(self->result != NULL || self->code < 0 ||
			       world_future_test(self->f) == 1);
}

static PyMethodDef future_methods[] = {
	{ "wait", (PyCFunction)future_wait, METH_VARARGS, "wait(timeout_ms) -> bytes" },
	{ "done", (PyCFunction)future_done, METH_NOARGS, "done() -> bool" },
	{ NULL, NULL, 0, NULL },
};

static PyTypeObject PyFuture_Type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "world._world.Future",
	.tp_basicsize = sizeof(PyFuture),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "the result of a call, later",
	.tp_dealloc = (destructor)future_dealloc,
	.tp_methods = future_methods,
};

/* ---- remote results ---- */

static void
rref_dealloc(PyRRef *self)
{
	if (self->r != NULL && self->group->world->w != NULL) {
		Py_BEGIN_ALLOW_THREADS
		world_rref_release(self->r);
		Py_END_ALLOW_THREADS
	}
	Py_XDECREF(self->group);
	PyObject_Free(self);
}

static PyObject *
rref_fetch(PyRRef *self, PyObject *args)
{
	void *blob = NULL;
	size_t len = 0;
	int timeout, rc;

	if (!PyArg_ParseTuple(args, "i:fetch", &timeout)) {
		return NULL;
	}
	Py_BEGIN_ALLOW_THREADS
	rc = world_rref_fetch(self->r, NULL, &blob, &len, timeout);
	Py_END_ALLOW_THREADS
	if (rc < 0) {
		free(blob);
		return pyworld_raise(rc);
	}
	return take_blob(blob, len);
}

static PyMethodDef rref_methods[] = {
	{ "fetch", (PyCFunction)rref_fetch, METH_VARARGS, "fetch(timeout_ms) -> bytes" },
	{ NULL, NULL, 0, NULL },
};

static PyTypeObject PyRRef_Type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "world._world.RRef",
	.tp_basicsize = sizeof(PyRRef),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "a result that stays with the callee until fetched",
	.tp_dealloc = (destructor)rref_dealloc,
	.tp_methods = rref_methods,
};

int
pyworld_group_types(PyObject *m)
{
	if (PyType_Ready(&PyGroup_Type) < 0 || PyType_Ready(&PyFuture_Type) < 0 ||
	    PyType_Ready(&PyRRef_Type) < 0) {
		return -1;
	}
	return PyModule_AddObjectRef(m, "Group", (PyObject *)&PyGroup_Type) < 0 ||
	       PyModule_AddObjectRef(m, "Future", (PyObject *)&PyFuture_Type) < 0 ||
	       PyModule_AddObjectRef(m, "RRef", (PyObject *)&PyRRef_Type) < 0 ? -1 : 0;
}
