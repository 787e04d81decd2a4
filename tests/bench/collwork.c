/* SPDX-License-Identifier: MIT */
/*
 * collwork.c: collwork.h's computation as an exported function, for
 * collgloo.py to call through ctypes (coll.sh builds it as a shared object).
 */
#include "collwork.h"

double coll_work_run(long steps);

double
coll_work_run(long steps)
{
	return coll_work(steps);
}
