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


# ---- names

def test_machin_names_are_there(w, g):
    for name in ("World", "CollectiveGroup", "RpcGroup", "get_world", "get_cur_rank",
                 "get_cur_name", "is_world_initialized", "debug_with_process"):
        assert name in world.__all__ and getattr(world, name) is not None
    assert world.RpcException is world.RemoteError
    assert w.world_size == 3
    assert g.group_name == "machin"
    assert g.group_members == ["0", "1", "2"]
    g.group_members.append("9")  # a copy: the group's own stays
    assert g.get_group_members() == ["0", "1", "2"]


def test_debug_with_process_logs_rank_and_caller_at_debug_only(w, caplog):
    caplog.set_level(logging.INFO, logger="world")
    world.debug_with_process("not at INFO")
    assert caplog.records == []
    caplog.set_level(logging.DEBUG, logger="world")
    world.debug_with_process("pushed")
    line = test_debug_with_process_logs_rank_and_caller_at_debug_only.__code__.co_firstlineno + 5
    assert [r.getMessage() for r in caplog.records] == [
        f"Process [{w.rank}]: <{__file__},L{line}> pushed"]
    assert caplog.records[0].levelno == logging.DEBUG


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
