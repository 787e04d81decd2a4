/* SPDX-License-Identifier: MIT */
/*
 * pyworld: what the files of the _world extension share: the world's
 * object, and each file's entry points. Nothing outside them includes it.
 */
#ifndef PYWORLD_H
#define PYWORLD_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "world.h"

typedef struct {
	PyObject_HEAD
	struct world *w; /* NULL once stopped */
	PyObject *keep;  /* handlers libworld may call until the world stops */
} PyWorld;

extern PyTypeObject PyWorld_Type;

/* The world, or NULL with RuntimeError once it was stopped. */
struct world *pyworld_get(PyWorld *self);

/* Register @fn for @key in @g (kept alive with the world): 0 or a code. */
int pyworld_register_handler(PyWorld *world, struct world_group *g, const char *key,
			     PyObject *fn, int serial);

/* group.c: World.create_group, World.open_group, and the types. */
PyObject *pyworld_group_create(PyWorld *self, PyObject *args);
PyObject *pyworld_group_open(PyWorld *self, PyObject *args);
int pyworld_group_types(PyObject *module);
/* Release the views of calls' parts that libworld gave back (GIL held). */
void pyworld_lent_drain(void);

/* coll.c: World.create_coll, and the types. */
PyObject *pyworld_coll_create(PyWorld *self, PyObject *args);
int pyworld_coll_types(PyObject *module);

/* blob.c: a libworld blob (malloc'd; stolen, even on failure), or a
 * copy of @data, as a Python object with the buffer protocol. */
PyObject *pyworld_blob_take(void *data, size_t len);
PyObject *pyworld_blob_copy(const void *data, size_t len);
int pyworld_blob_type(PyObject *module);

/* errors.c: raise the exception of libworld code @code (with what
 * world_last_failure() says of it); returns NULL. */
PyObject *pyworld_raise(int code);
int pyworld_errors(PyObject *module);

#endif
