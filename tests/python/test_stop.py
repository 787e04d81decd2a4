# SPDX-License-Identifier: MIT
"""Machin's W4 under worldrun -n 3: ranks 0 and 1 are done and stop at
once; rank 2 comes later and still calls their services, because a
stopping rank answers peers until every rank has stopped."""
import time

import world

T = 60


def test_w4_a_stopping_rank_keeps_serving(w):
    g = w.create_rpc_group("late", ["0", "1", "2"], timeout=T)
    if w.rank < 2:
        g.register(f"size/{w.rank}", lambda r=w.rank: 5 + r)
    g.barrier(timeout=T)
    if w.rank < 2:
        w.stop(timeout=T)
        return
    time.sleep(1)
    assert g.registered_sync("size/0", timeout=T) == 5
    assert g.registered_sync("size/1", timeout=T) == 6
