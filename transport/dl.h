/* SPDX-License-Identifier: MIT */
/*
 * dl: libfabric, loaded when the first endpoint opens rather than linked,
 * so that a program that links libworld and never uses collectives does
 * not load it, nor its providers' libraries: libinfinipath and libpsm2
 * install signal handlers from their constructors that turn a crash's
 * status into 1 and write backtrace files. The signal dispositions the
 * program had before the load are put back after it. Only the five
 * functions libfabric exports that we call go through here; the rest of
 * its API is inline calls through the objects' operations.
 */
#ifndef WR_DL_H
#define WR_DL_H

#include <stdint.h>

#include <rdma/fabric.h>

/* Load libfabric once per process: 0, or -ENOENT when it cannot be. */
int wr_dl_load(void);

/* The functions of libfabric.so.1, after wr_dl_load() succeeded. */
int wr_fi_getinfo(uint32_t version, const char *node, const char *service,
		  uint64_t flags, const struct fi_info *hints, struct fi_info **info);
void wr_fi_freeinfo(struct fi_info *info);
struct fi_info *wr_fi_dupinfo(const struct fi_info *info);
int wr_fi_fabric(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
		 void *context);
const char *wr_fi_strerror(int errnum);

#endif
