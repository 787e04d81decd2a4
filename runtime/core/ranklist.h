/* SPDX-License-Identifier: MIT */
/*
 * ranklist: the one way a set of ranks is written for people, "0,2-7",
 * in the hang report, the registry's survey and --display-map. It only
 * writes: it reads no list back.
 */
#ifndef WR_RANKLIST_H
#define WR_RANKLIST_H

#include <stddef.h>

/*
 * @n ranks, sorted, as "0,2-7" into @buf (cut to @room with "..."):
 * the length it needed.
 */
size_t wr_ranklist_text(const int *ranks, size_t n, char *buf, size_t room);

#endif
