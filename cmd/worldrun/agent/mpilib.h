/* SPDX-License-Identifier: MIT */
/*
 * mpilib: whether a program links an MPI library, as its ELF dynamic
 * section names them (libelf): what tells a rank that ran alone, having
 * found no PMI server it speaks, from one that is not MPI at all. A
 * program that loads its MPI later (Python's mpi4py) is not seen.
 */
#ifndef WR_MPILIB_H
#define WR_MPILIB_H

#include <stdbool.h>
#include <stddef.h>

/* Whether @path's needed libraries include an MPI or PMI one (libmpi,
 * libmpich, libpmi, libpmix...); its name into @name. False for what
 * cannot be read or is not a dynamic ELF. */
bool wr_mpilib_linked(const char *path, char *name, size_t size);

#endif
