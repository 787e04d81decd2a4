# SPDX-License-Identifier: MIT
"""Machin's surface on the world package beyond the scenarios of
test_rpc.py and test_coll.py, under worldrun -n 3: each test names the
behaviour. The last test kills rank 2."""
import logging
import os
import time

import numpy as np
import pytest
import torch
import torch.distributed as dist

import world

T = 30
PEERS_DIE = True  # conftest: the last test kills rank 2
GPU = "GPU collectives are not supported"


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


def test_every_libworld_code_raises_its_own_class():
    import errno
    from world import _world
    classes = {
        -4096: ("WORLD_EFRAME", world.ProtocolError),
        -4097: ("WORLD_EPROTO", world.ProtocolError),
        -4098: ("WORLD_ENOTMEMBER", world.NotMemberError),
        -4099: ("WORLD_EREMOTE", world.RemoteError),
        -4100: ("WORLD_EPEERDEAD", world.PeerDeadError),
        -4101: ("WORLD_EREGISTRY", world.RegistryError),
        -4102: ("WORLD_EAUTH", world.AuthError),
        -4103: ("WORLD_EFABRIC", world.FabricError),
        -4104: ("WORLD_EMISMATCH", world.MismatchError),
        -errno.ENOENT: ("ENOENT", world.NotFoundError),
        -errno.EEXIST: ("EEXIST", world.ExistsError),
        -errno.EPERM: ("EPERM", world.NotOwnerError),
        -errno.ETIMEDOUT: ("ETIMEDOUT", world.WorldTimeoutError),
        -errno.ENOTSUP: ("EOPNOTSUPP", world.UnsupportedError),  # one number on Linux
        -errno.EINVAL: ("EINVAL", world.InvalidError),
        -errno.EMSGSIZE: ("EMSGSIZE", world.TooBigError),
        -errno.ENOMEM: ("ENOMEM", world.OutOfMemoryError),
    }
    for code, (name, cls) in classes.items():
        with pytest.raises(cls) as raised:
            _world.raise_error(code)
        assert type(raised.value) is cls, name
        assert raised.value.code == code and raised.value.name == name
    # A code past libworld's last is its base class, and says so.
    with pytest.raises(world.WorldError) as raised:
        _world.raise_error(-4105)
    assert type(raised.value) is world.WorldError
    with pytest.raises(world.WorldError) as raised:
        _world.raise_error(-errno.ENOSPC)
    assert type(raised.value) is world.WorldError and "No space" in str(raised.value)


# ---- get_paired: the owner's object when called

def test_get_paired_sees_the_owner_change_its_object(w, g):
    d = {"v": 1}
    if w.rank == 0:
        g.pair("d", d)
    g.barrier(timeout=T)
    assert g.get_paired("d", timeout=T).to_here() == {"v": 1}
    g.barrier(timeout=T)
    if w.rank == 0:
        d["v"] = 2
    g.barrier(timeout=T)
    assert g.get_paired("d", timeout=T).to_here() == {"v": 2}
    g.barrier(timeout=T)
    if w.rank == 0:
        d["v"] = 3
        d["w"] = np.arange(4)
    g.barrier(timeout=T)
    got = g.get_paired("d", timeout=T).to_here()
    assert got["v"] == 3 and got["w"].tolist() == [0, 1, 2, 3]


def test_a_refused_pair_leaves_the_paired_object(w, g):
    if w.rank == 0:
        g.pair("k", "first")
        with pytest.raises(world.ExistsError, match="already paired to Group"):
            g.pair("k", "second")
    g.barrier(timeout=T)
    if w.rank == 1:
        with pytest.raises(KeyError, match="already paired to Group"):
            g.pair("k", "third")
    g.barrier(timeout=T)
    assert g.get_paired("k", timeout=T).to_here() == "first"


def test_get_paired_after_unpair_and_a_new_owner(w, g):
    if w.rank == 0:
        g.pair("moving", "from 0")
    g.barrier(timeout=T)
    assert g.get_paired("moving", timeout=T).to_here() == "from 0"  # owner cached
    g.barrier(timeout=T)
    if w.rank == 0:
        g.unpair("moving")
    g.barrier(timeout=T)
    with pytest.raises(KeyError, match=r"Value with key \[moving\] not found on Group"):
        g.get_paired("moving", timeout=T)
    g.barrier(timeout=T)
    if w.rank == 1:
        g.pair("moving", "from 1")
    g.barrier(timeout=T)
    assert g.get_paired("moving", timeout=T).to_here() == "from 1"


def test_a_destroyed_group_forgets_its_paired_objects(w):
    for turn in range(2):
        g = w.create_rpc_group("again", ["0", "1", "2"], timeout=T)
        if turn == 1:
            with pytest.raises(KeyError, match="not found on Group"):
                g.get_paired("k", timeout=T)
            g.barrier(timeout=T)
        if w.rank == 0:
            g.pair("k", f"turn {turn}")
        g.barrier(timeout=T)
        assert g.get_paired("k", timeout=T).to_here() == f"turn {turn}"
        g.barrier(timeout=T)
        g.destroy()
        w.barrier("again", timeout=T)


class Unpicklable:
    def __reduce__(self):
        raise TypeError("not this one")


def test_an_object_that_does_not_pickle_is_a_remote_error_when_fetched(w, g):
    if w.rank == 0:
        g.pair("bad", Unpicklable())  # pickled when fetched, not here
    g.barrier(timeout=T)
    if w.rank != 0:
        with pytest.raises(world.RemoteError, match="not this one"):
            g.get_paired("bad", timeout=T)


# ---- reductions

TORCH_OPS = {
    "SUM": 1 + 2 + 4, "PRODUCT": 1 * 2 * 4, "MIN": 1, "MAX": 4, "BAND": 0,
    "BOR": 7, "BXOR": 7,
}


def mine(w):
    return torch.tensor([1 << w.rank], dtype=torch.int64)


def test_torch_reduce_ops_of_1_13_and_2_x(w, cg):
    for name, want in TORCH_OPS.items():
        # 1.13: ReduceOp.MAX is a ReduceOp object whose .op is a RedOpType;
        # 2.x: ReduceOp.MAX is the RedOpType; ReduceOp(RedOpType) objects.
        for op in (getattr(dist.ReduceOp, name), getattr(dist.ReduceOp.RedOpType, name),
                   dist.ReduceOp(getattr(dist.ReduceOp.RedOpType, name))):
            t = mine(w)
            cg.all_reduce(t, op=op, timeout=T)
            assert t.item() == want, (name, op)
    t = torch.tensor([float(w.rank)])
    cg.all_reduce(t, op=dist.ReduceOp.AVG, timeout=T)
    assert t.item() == 1.0
    t = mine(w)
    cg.reduce(t, 2, op=dist.ReduceOp.MAX, timeout=T)
    if w.rank == 2:
        assert t.item() == 4
    out = torch.zeros(1, dtype=torch.int64)
    cg.reduce_scatter(out, [mine(w) * (i + 1) for i in range(3)], op=dist.ReduceOp.MIN,
                      timeout=T)
    assert out.item() == w.rank + 1
    with pytest.raises(world.UnsupportedError, match=GPU):
        cg.all_reduce(mine(w), op=dist.ReduceOp.PREMUL_SUM, timeout=T)
    cg.barrier(timeout=T)


def test_every_op_name_of_the_man_page(w, cg):
    for name, want in dict(TORCH_OPS, PROD=8).items():
        for op in (name, name.lower(), f"ReduceOp.{name}"):
            t = mine(w)
            cg.all_reduce(t, op=op, timeout=T)
            assert t.item() == want, op
    for name, want in TORCH_OPS.items():
        t = mine(w)
        cg.all_reduce(t, op=getattr(world.ReduceOp, name), timeout=T)
        assert t.item() == want, name
    t = np.array([float(w.rank)])
    cg.all_reduce(t, op="avg", timeout=T)
    assert t[0] == 1.0
    for bad in ("median", 99, -1, None):
        with pytest.raises(world.InvalidError, match="no such reduction"):
            cg.all_reduce(mine(w), op=bad, timeout=T)
    cg.barrier(timeout=T)


# ---- GPUs

def test_what_needs_a_gpu_is_refused_in_one_line(w, cg):
    for call in (lambda: cg.broadcast_multigpu([torch.zeros(1)], 0),
                 lambda: cg.all_reduce_multigpu([torch.zeros(1)]),
                 lambda: cg.reduce_multigpu([torch.zeros(1)], 0),
                 lambda: cg.all_gather_multigpu([[torch.zeros(1)]], [torch.zeros(1)]),
                 lambda: cg.all_reduce(torch.zeros(1, device="meta"), timeout=T)):
        with pytest.raises(world.UnsupportedError) as e:
            call()
        assert "\n" not in str(e.value)
        assert not isinstance(e.value, AttributeError)
    with pytest.raises(world.UnsupportedError, match=f"a meta tensor: {GPU}"):
        cg.broadcast(torch.zeros(1, device="meta"), 0, timeout=T)
    cg.barrier(timeout=T)


# ---- torch.distributed, as Machin's World initialises it

def test_world_initialises_torch_distributed_on_the_world_backend(w):
    assert dist.is_initialized()
    assert dist.get_backend() == "world"
    assert (dist.get_rank(), dist.get_world_size()) == (w.rank, w.size)
    t = torch.tensor([w.rank + 1.0])
    dist.all_reduce(t)
    assert t.item() == 6.0


def test_a_learner_group_trains_with_ddp_while_the_other_rank_serves(w):
    """Ape-X's shape: learners 0 and 1 wrap their model in DDP on their
    collective group's .group; rank 2 serves calls meanwhile."""
    from torch.nn.parallel import DistributedDataParallel as DDP

    g = w.create_rpc_group("apex", ["0", "1", "2"], timeout=T)
    learners = w.create_collective_group(ranks=[0, 1], timeout=T)
    if w.rank == 2:
        g.register("sample", lambda n: torch.full((n, 4), 1.0))
        assert learners.group == dist.GroupMember.NON_GROUP_MEMBER
    else:
        assert learners.group is learners.group
        assert learners.group.size() == 2
        torch.manual_seed(0)
        net = torch.nn.Linear(4, 2)
        ddp = DDP(net, process_group=learners.group)
        opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
        for step in range(5):
            batch = g.registered_sync("sample", args=(8,), timeout=T) * (w.rank + 1)
            opt.zero_grad()
            ddp(batch).sum().backward()
            opt.step()
        mine = torch.cat([p.detach().reshape(-1) for p in net.parameters()])
        other = mine.clone()
        dist.broadcast(other, 0, group=learners.group)
        assert torch.equal(mine, other)
    g.barrier(timeout=T)
    pg = learners.group
    learners.destroy()
    if w.rank != 2:
        # Gone from torch's tables with its group.
        with pytest.raises(RuntimeError):
            dist.get_rank(pg)
    g.destroy()
    w.barrier("apex-done", timeout=T)


# ---- last: a dead owner

def test_a_dead_owner_is_as_before(w):
    g = w.create_rpc_group("doomed", ["0", "1", "2"], timeout=T)
    if w.rank == 2:
        g.pair("doomed", "value")
    g.barrier(timeout=T)
    assert g.get_paired("doomed", timeout=T).to_here() == "value"
    g.barrier(timeout=T)
    if w.rank == 2:
        os._exit(0)
    start = time.monotonic()
    # Its entries are purged when it dies: a lookup finds none, or the
    # owner cached before is dead; either way soon, not at a timeout.
    with pytest.raises((world.PeerDeadError, world.NotFoundError)) as e:
        while True:
            g.get_paired("doomed", timeout=T)
            time.sleep(0.05)
            assert time.monotonic() - start < T / 2
    if isinstance(e.value, world.PeerDeadError):
        assert e.value.rank == 2
