/* SPDX-License-Identifier: MIT */
/*
 * blob: bytes that libworld malloc'd, owned by a Python object that
 * frees them when the last view of them goes: a call's answer reaches
 * pickle (and the arrays it rebuilds from out-of-band buffers) without a
 * copy. Writable, so that numpy and torch rebuild writable arrays.
 */
#include "pyworld.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
	PyObject_HEAD
	void *data;
	Py_ssize_t len;
} PyBlob;

static PyTypeObject PyBlob_Type;

PyObject *
pyworld_blob_take(void *data, size_t len)
{
	PyBlob *b = PyObject_New(PyBlob, &PyBlob_Type);

	if (b == NULL) {
		free(data);
		return NULL;
	}
	b->data = data;
	b->len = (Py_ssize_t)len;
	return (PyObject *)b;
}

PyObject *
pyworld_blob_copy(const void *data, size_t len)
{
	void *copy = malloc(len > 0 ? len : 1);

	if (copy == NULL) {
		return PyErr_NoMemory();
	}
	if (len > 0) {
		memcpy(copy, data, len);
	}
	return pyworld_blob_take(copy, len);
}

static int
blob_getbuffer(PyBlob *self, Py_buffer *view, int flags)
{
	return PyBuffer_FillInfo(view, (PyObject *)self, self->data != NULL ? self->data : "",
				 self->len, 0, flags);
}

static void
blob_dealloc(PyBlob *self)
{
	/* A large one's memory is kept for the next (a model pushed again). */
	world_blob_free(self->data, (size_t)self->len);
	PyObject_Free(self);
}

static Py_ssize_t
blob_length(PyBlob *self)
{
	return self->len;
}

static PyBufferProcs blob_as_buffer = {
	.bf_getbuffer = (getbufferproc)blob_getbuffer,
};

static PySequenceMethods blob_as_sequence = {
	.sq_length = (lenfunc)blob_length,
};

static PyTypeObject PyBlob_Type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "world._world.Blob",
	.tp_basicsize = sizeof(PyBlob),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "bytes from libworld, without a copy (the buffer protocol)",
	.tp_dealloc = (destructor)blob_dealloc,
	.tp_as_buffer = &blob_as_buffer,
	.tp_as_sequence = &blob_as_sequence,
};

int
pyworld_blob_type(PyObject *m)
{
	return PyType_Ready(&PyBlob_Type) < 0 ||
	       PyModule_AddObjectRef(m, "Blob", (PyObject *)&PyBlob_Type) < 0 ? -1 : 0;
}
