# SPDX-License-Identifier: MIT
"""Machin's surface on the world package beyond the scenarios of
test_rpc.py and test_coll.py, under worldrun -n 3: each test names the
behaviour."""
import logging
import os
import time

import numpy as np
import pytest
import torch
import torch.distributed as dist

import world

T = 30


def fail(text):
    raise ValueError(text)


@pytest.fixture
def g(w):
    group = w.create_rpc_group("machin", ["0", "1", "2"], timeout=T)
    yield group
    group.barrier(timeout=T)
    group.destroy()
    w.barrier("machin-destroyed", timeout=T)  # before any member creates it again


@pytest.fixture
def cg(w):
    group = w.create_collective_group(ranks=[0, 1, 2], timeout=T)
    yield group
    group.destroy()


# ---- Machin's RuntimeErrors

def test_machin_runtime_errors_are_runtime_errors(w, g):
    if w.rank == 0:
        g.register("fail", fail)
    g.barrier(timeout=T)
    with pytest.raises(RuntimeError) as e:                  # a remote exception
        g.registered_sync("fail", args=("x",), timeout=T)
    assert isinstance(e.value, world.RpcException)
    with pytest.raises(RuntimeError, match="ValueError"):
        g.rpc_sync("1", fail, args=("y",), timeout=T)
    with pytest.raises(RuntimeError, match="already exists"):  # a group name taken
        w.create_rpc_group("machin", ["0", "1", "2"], timeout=T)
    with pytest.raises(RuntimeError, match=r"Creator Process \[\d\] not in Group"):
        w.create_rpc_group("other", [str((w.rank + 1) % 3)], timeout=T)
    # world's own classes keep the built-ins Machin's tests catch.
    with pytest.raises(KeyError, match="already exists"):
        w.create_rpc_group("machin", ["0", "1", "2"], timeout=T)
    with pytest.raises(world.InvalidError):
        w.create_rpc_group("other", [str((w.rank + 1) % 3)], timeout=T)
    for cls in (world.NotFoundError, world.ExistsError, world.NotOwnerError,
                world.NotMemberError, world.WorldTimeoutError, world.PeerDeadError,
                world.RemoteError, world.RegistryError, world.AuthError,
                world.ProtocolError, world.FabricError, world.UnsupportedError,
                world.InvalidError, world.TooBigError, world.OutOfMemoryError):
        assert issubclass(cls, world.WorldError) and issubclass(cls, RuntimeError)
    assert issubclass(world.ExistsError, KeyError)
    assert issubclass(world.NotFoundError, KeyError)
    assert issubclass(world.InvalidError, ValueError)
    assert issubclass(world.WorldTimeoutError, TimeoutError)
    assert issubclass(world.UnsupportedError, NotImplementedError)
