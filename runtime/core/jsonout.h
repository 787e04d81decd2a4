/* SPDX-License-Identifier: MIT */
/*
 * jsonout: compact JSON text of a message, byte for byte what jansson's
 * json_dumpb(JSON_COMPACT) writes, without its cost: jansson keeps a
 * hashtable of the containers it is in (to catch cycles) and formats
 * through snprintf, which made dumping the dearest part of a small
 * frame. It declines what it does not write the same way (a real) and
 * what is nested too deep (a cycle among them); jansson then dumps it.
 */
#ifndef WR_JSONOUT_H
#define WR_JSONOUT_H

#include <stddef.h>

#include <jansson.h>

/*
 * Write @j (borrowed) as compact JSON into @buf, @size bytes, without a
 * NUL. Returns the length of the whole text, which is more than @size
 * when it did not fit (then @buf holds a part); 0 when it declines: a
 * real anywhere, or containers nested deeper than 512 levels.
 */
size_t wr_jsonout_dump(const json_t *j, char *buf, size_t size);

#endif
