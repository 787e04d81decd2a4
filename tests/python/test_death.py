# SPDX-License-Identifier: MIT
"""A peer that dies while others wait for it, under worldrun -n 3: in a
barrier (rank 2), then in a call it was serving (rank 1). The waiting
ranks get PeerDeadError naming the dead rank, at once, not a timeout.
The dying ranks exit 0, so that worldrun does not stop the job."""
import os
import time

import pytest

import world

T = 60
PEERS_DIE = True  # conftest: stop() may find them dead


def test_a_peer_dead_in_a_barrier_is_peer_dead_error(w):
    g = w.create_rpc_group("doomed", ["0", "1", "2"], timeout=T)
    if w.rank == 2:
        time.sleep(0.5)  # the others are in the barrier by now
        os._exit(0)
    start = time.monotonic()
    with pytest.raises(world.PeerDeadError) as e:
        g.barrier(timeout=T)
    assert e.value.rank == 2
    assert time.monotonic() - start < T / 2


def die():
    os._exit(0)


def test_a_peer_dead_in_a_call_is_peer_dead_error(w):
    g = w.create_rpc_group("victim", ["0", "1"], timeout=T)
    if w.rank == 1:
        g.register("die", die)
    g.barrier(timeout=T)
    if w.rank == 0:
        with pytest.raises(world.PeerDeadError) as e:
            g.registered_sync("die", timeout=T)
        assert e.value.rank == 1
        with pytest.raises(world.PeerDeadError) as e:
            g.rpc_sync("1", time.time, timeout=T)
        assert e.value.rank == 1
    else:
        time.sleep(T)  # until the call kills this rank
