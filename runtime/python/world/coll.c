/* SPDX-License-Identifier: MIT */
/*
 * coll: libworld's collective groups for Python (Coll), and the requests
 * of what they start (CollReq). Buffers are any C-contiguous buffer of the
 * element type the caller names (world/_coll.py finds it from a numpy
 * array or a torch tensor); every size is checked here, before libworld,
 * which trusts its callers. Ranks are group ranks; timeouts milliseconds.
 */
#include "pyworld.h"

#include <errno.h>
#include <stdlib.h>

typedef struct {
	PyObject_HEAD
	PyWorld *world;
	struct world_coll *c;
} PyColl;

/* A started operation: it holds the buffers it uses until it is done. */
typedef struct {
	PyObject_HEAD
	PyColl *coll;
	struct world_coll_req *r;
	Py_buffer in, out;
	bool has_in, has_out;
	bool done;
	int source;
} PyCollReq;

static PyTypeObject PyColl_Type, PyCollReq_Type;

/* The operations of Coll.run(). */
enum kind {
	K_BROADCAST, K_ALL_REDUCE, K_REDUCE, K_ALL_GATHER, K_GATHER, K_SCATTER,
	K_REDUCE_SCATTER, K_ALL_TO_ALL, K_BARRIER,
};

struct op_args {
	enum kind kind;
	void *in, *out;
	size_t count;
	enum world_dtype dtype;
	enum world_op op;
	int root;
};

static struct world_coll *
coll_get(PyColl *self)
{
	if (self->c == NULL) {
		PyErr_SetString(PyExc_RuntimeError, "the collective group is destroyed");
	}
	return self->c;
}

PyObject *
pyworld_coll_create(PyWorld *self, PyObject *args)
{
	struct world *w = pyworld_get(self);
	struct world_coll *c = NULL;
	PyObject *list, *seq;
	PyColl *obj;
	int *ranks, timeout, rc;
	Py_ssize_t n;

	if (w == NULL || !PyArg_ParseTuple(args, "Oi:create_coll", &list, &timeout)) {
		return NULL;
	}
	seq = PySequence_Fast(list, "ranks: a sequence of world ranks");
	if (seq == NULL) {
		return NULL;
	}
	n = PySequence_Fast_GET_SIZE(seq);
	ranks = calloc((size_t)n + 1, sizeof(*ranks));
	for (Py_ssize_t i = 0; ranks != NULL && i < n; i++) {
		long r = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));

		if (r == -1 && PyErr_Occurred()) {
			free(ranks);
			Py_DECREF(seq);
			return NULL;
		}
		ranks[i] = r < -1 || r > 1 << 30 ? -1 : (int)r;
	}
	Py_DECREF(seq);
	if (ranks == NULL) {
		return PyErr_NoMemory();
	}
	Py_BEGIN_ALLOW_THREADS
	rc = world_coll_create(w, ranks, (size_t)n, timeout, &c);
	Py_END_ALLOW_THREADS
	free(ranks);
	if (rc < 0) {
		return pyworld_raise(rc);
	}
	obj = PyObject_New(PyColl, &PyColl_Type);
	if (obj == NULL) {
		world_coll_destroy(c);
		return NULL;
	}
	obj->world = (PyWorld *)Py_NewRef((PyObject *)self);
	obj->c = c;
	return (PyObject *)obj;
}

static void
coll_destroy_now(PyColl *self)
{
	struct world_coll *c = self->c;

	self->c = NULL;
	if (c != NULL && self->world->w != NULL) {
		Py_BEGIN_ALLOW_THREADS
		world_coll_destroy(c);
		Py_END_ALLOW_THREADS
	}
}

static void
coll_dealloc(PyColl *self)
{
	coll_destroy_now(self);
	Py_XDECREF(self->world);
	PyObject_Free(self);
}

static PyObject *
coll_destroy_py(PyColl *self, PyObject *unused)
{
	coll_destroy_now(self);
	Py_RETURN_NONE;
}

static PyObject *
coll_info(PyColl *self, PyObject *unused)
{
	struct world_coll *c = coll_get(self);
	PyObject *ranks;
	int n;

	if (c == NULL) {
		return NULL;
	}
	n = world_coll_size(c);
	ranks = PyList_New(n);
	for (int i = 0; ranks != NULL && i < n; i++) {
		PyList_SET_ITEM(ranks, i, PyLong_FromLong(world_coll_world_rank(c, i)));
	}
	return ranks == NULL ? NULL : Py_BuildValue("iN", world_coll_rank(c), ranks);
}

/* @obj as a C-contiguous buffer (writable for @out) of whole elements of
 * @esize bytes: 0, or -1 with an exception. */
static int
get_buffer(PyObject *obj, Py_buffer *b, bool writable, size_t esize, const char *what)
{
	if (PyObject_GetBuffer(obj, b, PyBUF_C_CONTIGUOUS |
					 (writable ? PyBUF_WRITABLE : 0)) < 0) {
		return -1;
	}
	if (esize == 0 || (size_t)b->len % esize != 0) {
		PyBuffer_Release(b);
		PyErr_Format(PyExc_ValueError, "%s: %zd bytes are not whole elements of %zu",
			     what, b->len, esize);
		return -1;
	}
	return 0;
}

static size_t
elems(const Py_buffer *b, size_t esize)
{
	return (size_t)b->len / esize;
}

/*
 * The element count of @a's operation from its buffers, checked: the
 * in-place ones take @in's; gathers an @out of size times @in; scatters
 * an @in of size times @out; all_to_all blocks of @in / size. 0, or -1
 * with ValueError.
 */
static int
count_of(struct op_args *a, const Py_buffer *in, const Py_buffer *out, size_t esize,
	 size_t size, bool here_root)
{
	size_t nin = in != NULL ? elems(in, esize) : 0, nout = out != NULL ? elems(out, esize) : 0;
	bool ok = true;

	switch (a->kind) {
	case K_BROADCAST:
	case K_ALL_REDUCE:
	case K_REDUCE:
		a->count = nin;
		break;
	case K_ALL_GATHER:
		a->count = nin;
		ok = nout == size * nin;
		break;
	case K_GATHER:
		a->count = nin;
		ok = !here_root || nout == size * nin;
		break;
	case K_SCATTER:
		a->count = nout;
		ok = !here_root || nin == size * nout;
		break;
	case K_REDUCE_SCATTER:
		a->count = nout;
		ok = nin == size * nout;
		break;
	case K_ALL_TO_ALL:
		a->count = nin / (size > 0 ? size : 1);
		ok = nin % (size > 0 ? size : 1) == 0 && nout == nin;
		break;
	case K_BARRIER:
		a->count = 0;
		break;
	}
	if (!ok) {
		PyErr_SetString(PyExc_ValueError, "the buffers' sizes do not fit the group's "
				"size (gathers: out = size x in; scatters: in = size x out)");
		return -1;
	}
	return 0;
}

static int
run_blocking(struct world_coll *c, const struct op_args *a, int timeout)
{
	switch (a->kind) {
	case K_BROADCAST:
		return world_coll_broadcast(c, a->in, a->count, a->dtype, a->root, timeout);
	case K_ALL_REDUCE:
		return world_coll_all_reduce(c, a->in, a->count, a->dtype, a->op, timeout);
	case K_REDUCE:
		return world_coll_reduce(c, a->in, a->count, a->dtype, a->op, a->root, timeout);
	case K_ALL_GATHER:
		return world_coll_all_gather(c, a->in, a->out, a->count, a->dtype, timeout);
	case K_GATHER:
		return world_coll_gather(c, a->in, a->out, a->count, a->dtype, a->root, timeout);
	case K_SCATTER:
		return world_coll_scatter(c, a->in, a->out, a->count, a->dtype, a->root, timeout);
	case K_REDUCE_SCATTER:
		return world_coll_reduce_scatter(c, a->in, a->out, a->count, a->dtype, a->op,
						 timeout);
	case K_ALL_TO_ALL:
		return world_coll_all_to_all(c, a->in, a->out, a->count, a->dtype, timeout);
	case K_BARRIER:
		return world_coll_barrier(c, timeout);
	}
	return -EINVAL;
}

static int
run_started(struct world_coll *c, const struct op_args *a, struct world_coll_req **r)
{
	switch (a->kind) {
	case K_BROADCAST:
		return world_coll_ibroadcast(c, a->in, a->count, a->dtype, a->root, r);
	case K_ALL_REDUCE:
		return world_coll_iall_reduce(c, a->in, a->count, a->dtype, a->op, r);
	case K_REDUCE:
		return world_coll_ireduce(c, a->in, a->count, a->dtype, a->op, a->root, r);
	case K_ALL_GATHER:
		return world_coll_iall_gather(c, a->in, a->out, a->count, a->dtype, r);
	case K_GATHER:
		return world_coll_igather(c, a->in, a->out, a->count, a->dtype, a->root, r);
	case K_SCATTER:
		return world_coll_iscatter(c, a->in, a->out, a->count, a->dtype, a->root, r);
	case K_REDUCE_SCATTER:
		return world_coll_ireduce_scatter(c, a->in, a->out, a->count, a->dtype, a->op, r);
	case K_ALL_TO_ALL:
		return world_coll_iall_to_all(c, a->in, a->out, a->count, a->dtype, r);
	case K_BARRIER:
		return world_coll_ibarrier(c, r);
	}
	return -EINVAL;
}

/* A request that owns the buffers (moved into it) from now on. */
static PyObject *
new_req(PyColl *coll, struct world_coll_req *r, Py_buffer *in, Py_buffer *out)
{
	PyCollReq *self = PyObject_New(PyCollReq, &PyCollReq_Type);

	if (self == NULL) {
		Py_BEGIN_ALLOW_THREADS
		world_coll_req_free(r);
		Py_END_ALLOW_THREADS
		if (in != NULL) {
			PyBuffer_Release(in);
		}
		if (out != NULL) {
			PyBuffer_Release(out);
		}
		return NULL;
	}
	self->coll = (PyColl *)Py_NewRef((PyObject *)coll);
	self->r = r;
	self->has_in = in != NULL;
	self->has_out = out != NULL;
	if (in != NULL) {
		self->in = *in;
	}
	if (out != NULL) {
		self->out = *out;
	}
	self->done = false;
	self->source = -1;
	return (PyObject *)self;
}

/*
 * run(kind, in, out, dtype, op, root, timeout_ms, start): one collective.
 * @in is the in-place buffer of broadcast and the reductions; None where
 * a buffer is not used (gather's @out off the root, scatter's @in).
 */
static PyObject *
coll_run(PyColl *self, PyObject *args)
{
	struct world_coll *c = coll_get(self);
	struct op_args a = { 0 };
	PyObject *in_obj, *out_obj;
	Py_buffer in, out;
	bool has_in = false, has_out = false, writable_in;
	int kind, dtype, op, root, timeout, start, rc;
	struct world_coll_req *r = NULL;
	size_t esize;

	if (c == NULL || !PyArg_ParseTuple(args, "iOOiiiip:run", &kind, &in_obj, &out_obj,
					   &dtype, &op, &root, &timeout, &start)) {
		return NULL;
	}
	if (kind < K_BROADCAST || kind > K_BARRIER) {
		PyErr_SetString(PyExc_ValueError, "no such collective");
		return NULL;
	}
	a.kind = (enum kind)kind;
	a.dtype = (enum world_dtype)dtype;
	a.op = (enum world_op)op;
	a.root = root;
	esize = world_dtype_size(a.dtype);
	writable_in = a.kind <= K_REDUCE;
	if (in_obj != Py_None) {
		if (get_buffer(in_obj, &in, writable_in, esize, "in") < 0) {
			return NULL;
		}
		has_in = true;
	}
	if (out_obj != Py_None) {
		if (get_buffer(out_obj, &out, true, esize, "out") < 0) {
			if (has_in) {
				PyBuffer_Release(&in);
			}
			return NULL;
		}
		has_out = true;
	}
	a.in = has_in ? in.buf : NULL;
	a.out = has_out ? out.buf : NULL;
	rc = count_of(&a, has_in ? &in : NULL, has_out ? &out : NULL, esize,
		      (size_t)world_coll_size(c), root == world_coll_rank(c)) < 0 ? 1 : 0;
	if (rc == 0) {
		Py_BEGIN_ALLOW_THREADS
		rc = start ? run_started(c, &a, &r) : run_blocking(c, &a, timeout);
		Py_END_ALLOW_THREADS
	}
	if (rc == 0 && start) {
		return new_req(self, r, has_in ? &in : NULL, has_out ? &out : NULL);
	}
	if (has_in) {
		PyBuffer_Release(&in);
	}
	if (has_out) {
		PyBuffer_Release(&out);
	}
	if (rc == 1) {
		return NULL; /* count_of() said why */
	}
	return rc < 0 ? pyworld_raise(rc) : Py_NewRef(Py_None);
}

/*
 * p2p(send, buf, dtype, peer, tag, timeout_ms, start): send to group rank
 * @peer, or receive from it (-1: anyone). A blocking receive returns the
 * sender's group rank; a started one a CollReq whose wait() does.
 */
static PyObject *
coll_p2p(PyColl *self, PyObject *args)
{
	struct world_coll *c = coll_get(self);
	struct world_coll_req *r = NULL;
	int send, dtype, peer, tag, timeout, start, rc, source = -1;
	PyObject *obj;
	Py_buffer b;
	size_t esize, count;

	if (c == NULL || !PyArg_ParseTuple(args, "pOiiiip:p2p", &send, &obj, &dtype, &peer,
					   &tag, &timeout, &start)) {
		return NULL;
	}
	esize = world_dtype_size((enum world_dtype)dtype);
	if (get_buffer(obj, &b, !send, esize, send ? "send" : "recv") < 0) {
		return NULL;
	}
	count = elems(&b, esize);
	Py_BEGIN_ALLOW_THREADS
	if (send && start) {
		rc = world_coll_isend(c, b.buf, count, (enum world_dtype)dtype, peer, tag, &r);
	} else if (send) {
		rc = world_coll_send(c, b.buf, count, (enum world_dtype)dtype, peer, tag, timeout);
	} else if (start) {
		rc = world_coll_irecv(c, b.buf, count, (enum world_dtype)dtype, peer, tag, &r);
	} else {
		rc = world_coll_recv(c, b.buf, count, (enum world_dtype)dtype, peer, tag, timeout,
				     &source);
	}
	Py_END_ALLOW_THREADS
	if (rc == 0 && start) {
		return new_req(self, r, send ? &b : NULL, send ? NULL : &b);
	}
	PyBuffer_Release(&b);
	if (rc < 0) {
		return pyworld_raise(rc);
	}
	return send ? Py_NewRef(Py_None) : PyLong_FromLong(source);
}

static PyMethodDef coll_methods[] = {
	{ "info", (PyCFunction)coll_info, METH_NOARGS, "info() -> (rank, world ranks)" },
	{ "run", (PyCFunction)coll_run, METH_VARARGS,
	  "run(kind, in, out, dtype, op, root, timeout_ms, start) -> None or CollReq" },
	{ "p2p", (PyCFunction)coll_p2p, METH_VARARGS,
	  "p2p(send, buf, dtype, peer, tag, timeout_ms, start) -> source, None or CollReq" },
	{ "destroy", (PyCFunction)coll_destroy_py, METH_NOARGS, "destroy()" },
	{ NULL, NULL, 0, NULL },
};

static PyTypeObject PyColl_Type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "world._world.Coll",
	.tp_basicsize = sizeof(PyColl),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "libworld's collective group",
	.tp_dealloc = (destructor)coll_dealloc,
	.tp_methods = coll_methods,
};

/* ---- requests ---- */

static void
req_release(PyCollReq *self)
{
	if (self->has_in) {
		PyBuffer_Release(&self->in);
		self->has_in = false;
	}
	if (self->has_out) {
		PyBuffer_Release(&self->out);
		self->has_out = false;
	}
}

static void
req_dealloc(PyCollReq *self)
{
	/* Freeing one not done waits for it: the buffers are its until then. */
	if (self->r != NULL && self->coll->c != NULL && self->coll->world->w != NULL) {
		Py_BEGIN_ALLOW_THREADS
		world_coll_req_free(self->r);
		Py_END_ALLOW_THREADS
	}
	req_release(self);
	Py_XDECREF(self->coll);
	PyObject_Free(self);
}

static PyObject *
req_wait(PyCollReq *self, PyObject *args)
{
	int timeout, rc, source = -1;

	if (!PyArg_ParseTuple(args, "i:wait", &timeout)) {
		return NULL;
	}
	if (self->done) {
		return PyLong_FromLong(self->source);
	}
	Py_BEGIN_ALLOW_THREADS
	rc = world_coll_wait(self->r, timeout, &source);
	Py_END_ALLOW_THREADS
	if (rc == -ETIMEDOUT) {
		return pyworld_raise(rc);
	}
	self->done = true;
	self->source = source;
	req_release(self);
	return rc < 0 ? pyworld_raise(rc) : PyLong_FromLong(source);
}

static PyObject *
req_test(PyCollReq *self, PyObject *unused)
{
	return PyBool_FromLong(self->done || world_coll_test(self->r) == 1);
}

static PyMethodDef req_methods[] = {
	{ "wait", (PyCFunction)req_wait, METH_VARARGS,
	  "wait(timeout_ms) -> the sender's group rank for a receive, else -1" },
	{ "test", (PyCFunction)req_test, METH_NOARGS, "test() -> bool" },
	{ NULL, NULL, 0, NULL },
};

static PyTypeObject PyCollReq_Type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "world._world.CollReq",
	.tp_basicsize = sizeof(PyCollReq),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "a started collective or point-to-point operation",
	.tp_dealloc = (destructor)req_dealloc,
	.tp_methods = req_methods,
};

int
pyworld_coll_types(PyObject *m)
{
	if (PyType_Ready(&PyColl_Type) < 0 || PyType_Ready(&PyCollReq_Type) < 0) {
		return -1;
	}
	return PyModule_AddObjectRef(m, "Coll", (PyObject *)&PyColl_Type) < 0 ||
	       PyModule_AddObjectRef(m, "CollReq", (PyObject *)&PyCollReq_Type) < 0 ? -1 : 0;
}
