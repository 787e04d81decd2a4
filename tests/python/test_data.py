# SPDX-License-Identifier: MIT
"""What travels: large numpy arrays and torch tensors of every type, bit
for bit, without copies on the receiving side; arguments lent to a call
(no copy on the sending side) until it is answered, even after a timeout;
and Machin's services S1,
S2, S3 and S5 (reference/machin.md, section b), written as Machin writes
them (machin_like.py), under worldrun -n 3."""
import hashlib
import os
import pickle
import threading
import time

import numpy as np
import pytest
import torch

import world
from machin_like import (DistributedBuffer, OrderedServerSimpleImpl,
                         PushPullModelServerImpl)

T = 60


def echo(x):
    return x


def test_a_64_mib_array_and_tensors_round_trip_bit_identical(w):
    g = w.create_rpc_group("echo", ["0", "1", "2"], timeout=T)
    if w.rank == 0:
        g.register("echo", echo)
    g.barrier(timeout=T)
    if w.rank == 1:
        big = np.random.default_rng(1).integers(0, 255, 64 << 20, dtype=np.uint8)
        back = g.registered_sync("echo", args=(big,), timeout=T)
        assert back.dtype == big.dtype
        assert back.tobytes() == big.tobytes()
        # Arrays arrive on the answer's own bytes, and writable.
        assert not back.flags.owndata
        back[0] = 7
        for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float64,
                      torch.int64, torch.int8, torch.uint8, torch.bool):
            t = (torch.rand(1000, 3) * 100).to(dtype)
            u = g.rpc_sync("2", echo, args=(t,), timeout=T)
            assert u.dtype == dtype
            assert u.shape == t.shape
            assert torch.equal(u.view(-1).view(torch.uint8) if dtype != torch.bool else u,
                               t.view(-1).view(torch.uint8) if dtype != torch.bool else t)
        p = torch.nn.Parameter(torch.ones(4))
        q = g.rpc_sync("0", echo, args=({"w": p, "t": torch.arange(6).view(2, 3).t()},),
                       timeout=T)
        assert isinstance(q["w"], torch.nn.Parameter)
        assert q["w"].requires_grad
        assert torch.equal(q["t"], torch.arange(6).view(2, 3).t())
    g.barrier(timeout=T)
    g.destroy()


GO = threading.Event()
GOT = {}


def held(data):
    """Answers once go() is called; what it was sent goes to got()."""
    GO.wait(T)
    GOT["sum"] = hashlib.sha256(data).hexdigest()
    return True


def go():
    GO.set()


def got():
    return GOT.get("sum")


def lent(buf):
    """Whether libworld still holds a view of bytearray buf (lent to a
    call): a bytearray with views cannot change size."""
    try:
        buf.append(0)
    except BufferError:
        return True
    del buf[-1]
    return False


def test_arguments_are_lent_until_the_call_is_answered(w):
    g = w.create_rpc_group("lend", ["0", "1", "2"], timeout=T)
    if w.rank == 0:
        g.register("held", held)
        g.register("go", go)
        g.register("got", got)
    g.barrier(timeout=T)
    if w.rank == 1:
        buf = bytearray(np.random.default_rng(2).bytes(1 << 20))
        want = hashlib.sha256(buf).hexdigest()
        with pytest.raises(world.WorldTimeoutError):
            g.registered_sync("held", args=(pickle.PickleBuffer(buf),), timeout=0.3)
        pulled = os.environ.get("WORLD_PULL") != "0"
        # Pulled from this process by the callee, it stays lent after the
        # timeout, until answered; sent through the socket, it was copied.
        assert lent(buf) == pulled
        g.registered_sync("go", timeout=T)
        end = time.monotonic() + T
        while (g.registered_sync("got", timeout=T) != want or lent(buf)) and \
                time.monotonic() < end:
            time.sleep(0.01)
        assert g.registered_sync("got", timeout=T) == want
        assert not lent(buf)
        # A call that returns at once copies: the program may change its
        # arrays right after.
        fut = g.registered_async("held", args=(pickle.PickleBuffer(buf),), timeout=T)
        assert not lent(buf)
        assert fut.wait(T) is True
    g.barrier(timeout=T)
    g.destroy()


def test_s1_s2_ordered_server(w):
    g = w.create_rpc_group("ordered", ["0", "1"], timeout=T) if w.rank < 2 else None
    if w.rank == 0:
        impl = OrderedServerSimpleImpl("server", g)
        # S1, on the server itself.
        assert impl._push_service("a", "value", 1, None)
        assert not impl._push_service("a", "value1", 2, 0)
        assert impl._push_service("a", "value2", 2, 1)
        assert impl._push_service("a", "value3", -1, 2)
        assert impl._pull_service("a", None) == ("value3", -1)
        assert impl._pull_service("a", 2) == ("value2", 2)
        assert impl._pull_service("a", 1) is None
        assert impl._pull_service("b", None) is None
    if g is not None:
        g.barrier(timeout=T)
    if w.rank == 1:
        # S2, through the accessor another rank fetches.
        server = g.get_paired("server", timeout=T).to_here()
        assert server.push("b", "value", 1, None)
        assert server.push("b", "value2", 2, 1)
        assert server.push("b", "value3", 3, 2)
        assert server.pull("b", None) == ("value3", 3)
        assert server.pull("b", 2) == ("value2", 2)
        assert server.pull("b", 1) is None
        assert server.pull("c", None) is None
    if g is not None:
        g.barrier(timeout=T)
        g.destroy()
    w.barrier("s2", timeout=T)


def model():
    net = torch.nn.Linear(3, 1, bias=False)
    with torch.no_grad():
        net.weight.copy_(torch.tensor([[1.0, 2.0, 3.0]]))
    return net


def test_s3_a_model_pushed_ten_times(w):
    g = w.create_rpc_group("model", ["0", "1"], timeout=T) if w.rank < 2 else None
    if w.rank == 0:
        PushPullModelServerImpl("model_server", g)
    if g is not None:
        g.barrier(timeout=T)
    if w.rank == 1:
        server = g.get_paired("model_server", timeout=T).to_here()
        net = model()
        for i in range(10):
            with torch.no_grad():
                net.weight += 1
            assert server.push(net, pp_version=i + 1)
        fresh = torch.nn.Linear(3, 1, bias=False)
        assert server.pull(fresh) == 10
        assert torch.equal(fresh.weight, torch.tensor([[11.0, 12.0, 13.0]]))
    if g is not None:
        g.barrier(timeout=T)
        g.destroy()
    w.barrier("s3", timeout=T)


def transition(i):
    return {"state": torch.full((1, 4), float(i)), "reward": torch.tensor([[float(i)]])}


def test_s5_a_distributed_buffer_sampled_from_another_rank(w):
    g = w.create_rpc_group("buffer", ["0", "1", "2"], timeout=T)
    buf = DistributedBuffer("buffer", g, buffer_size=5)
    if w.rank in (0, 1):
        buf.store_episode([transition(10 * w.rank + i) for i in range(5)])
    g.barrier(timeout=T)
    if w.rank == 2:
        size, batch = buf.sample_batch(7)
        assert size > 0
        assert batch["state"].shape == (size, 4)
        assert batch["reward"].shape == (size, 1)
        assert buf.all_size() == 10
    g.barrier(timeout=T)
    if w.rank == 1:
        buf.clear()
    g.barrier(timeout=T)
    if w.rank == 2:
        assert buf.all_size() == 5
        buf.all_clear()
        assert buf.all_size() == 0
    g.barrier(timeout=T)
    g.destroy()
