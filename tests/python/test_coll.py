# SPDX-License-Identifier: MIT
"""Machin's collective scenarios K1-K13 (reference/machin.md, section b)
on the world package, under worldrun -n 6: Machin's groups of world
ranks [0, 1, 2], created by every rank (K12), so that ranks 3-5 are the
non-members; then what goes beyond Machin: every element type, on numpy
arrays and torch tensors, a group of all six, reduce_scatter, all_to_all
and started collectives."""
import errno
import signal
import threading
import time

import numpy as np
import pytest
import torch

import world

T = 60
MEMBERS = [0, 1, 2]


@pytest.fixture
def g(w):
    group = w.create_collective_group(ranks=MEMBERS, timeout=T)
    yield group
    group.destroy()
    group.destroy()  # K13: idempotent


def member(w):
    return w.rank in MEMBERS


def test_k1_send_recv_from_any_source(w, g):
    if w.rank == 0:
        g.send(torch.zeros(5), 1, timeout=T)
        g.send(torch.zeros(5), 2, timeout=T)
    elif member(w):
        a = torch.ones(5)
        assert g.recv(a, timeout=T) == 0
        assert torch.equal(a, torch.zeros(5))


def test_k2_isend_irecv(w, g):
    if w.rank == 0:
        g.isend(torch.zeros(5), 1).wait(T)
        g.isend(torch.zeros(5), 2).wait(T)
    elif member(w):
        a = torch.ones(5)
        assert g.irecv(a).wait(T) == 0
        assert torch.equal(a, torch.zeros(5))


def test_k3_broadcast(w, g):
    if member(w):
        a = torch.ones(5) if w.rank == 0 else torch.zeros(5)
        g.broadcast(a, 0, timeout=T)
        assert torch.equal(a, torch.ones(5))


def test_k4_all_reduce(w, g):
    if member(w):
        a = torch.full((5,), float(w.rank))
        g.all_reduce(a, timeout=T)
        assert torch.equal(a, torch.full((5,), 3.0))


def test_k5_reduce(w, g):
    if member(w):
        a = torch.full((5,), float(5 - w.rank))
        g.reduce(a, 1, timeout=T)
        if w.rank == 1:
            assert torch.equal(a, torch.full((5,), 12.0))


def test_k6_all_gather(w, g):
    if member(w):
        out = [torch.full((5,), -1.0) for _ in MEMBERS]
        g.all_gather(out, torch.full((5,), float(w.rank)), timeout=T)
        for i in MEMBERS:
            assert torch.equal(out[i], torch.full((5,), float(i)))


def test_k7_gather(w, g):
    if member(w):
        out = [torch.full((5,), -1.0) for _ in MEMBERS] if w.rank == 1 else None
        g.gather(torch.full((5,), float(w.rank)), out, dst=1, timeout=T)
        if w.rank == 1:
            for i in MEMBERS:
                assert torch.equal(out[i], torch.full((5,), float(i)))


def test_k8_scatter(w, g):
    if member(w):
        parts = [torch.full((5,), float(i)) for i in MEMBERS] if w.rank == 0 else None
        a = torch.full((5,), -1.0)
        g.scatter(a, parts, src=0, timeout=T)
        assert torch.equal(a, torch.full((5,), float(w.rank)))


def test_k9_size_and_barrier(w, g):
    assert g.size() == 3
    if member(w):
        g.barrier(timeout=T)


def test_k11_non_members_and_global_ranks(w, g):
    if not member(w):
        assert g.current_rank is None
        assert g.irecv(torch.zeros(1)).wait(T) == -1
        with pytest.raises(world.NotMemberError):
            g.all_reduce(torch.zeros(1))
    else:
        assert g.current_rank == w.rank
    # A group of the others: ranks are world ranks, not group ranks.
    sub = w.create_collective_group(ranks=[3, 4, 5], timeout=T)
    if w.rank == 3:
        sub.send(torch.full((2,), 3.0), 5, tag=7, timeout=T)
    if w.rank == 5:
        a = torch.zeros(2)
        assert sub.irecv(a, src=3, tag=7).wait(T) == 3
        assert torch.equal(a, torch.full((2,), 3.0))
    sub.destroy()


def test_rooted_operations_on_a_group_whose_ranks_are_not_the_worlds(w):
    # Group ranks 0, 1, 2 are world ranks 1, 4, 5: src and dst are world
    # ranks, and so is what an any-source receive reports.
    ranks = [1, 4, 5]
    sub = w.create_collective_group(ranks=ranks, timeout=T)
    if w.rank in ranks:
        a = torch.full((3,), float(w.rank))
        sub.broadcast(a, 4, timeout=T)
        assert torch.equal(a, torch.full((3,), 4.0))
        a = torch.full((3,), float(w.rank))
        sub.reduce(a, 5, timeout=T)
        if w.rank == 5:
            assert torch.equal(a, torch.full((3,), 10.0))
        out = [torch.full((3,), -1.0) for _ in ranks] if w.rank == 4 else None
        sub.gather(torch.full((3,), float(w.rank)), out, dst=4, timeout=T)
        if w.rank == 4:
            assert [t[0].item() for t in out] == [1.0, 4.0, 5.0]
        parts = [torch.full((3,), float(10 * r)) for r in ranks] if w.rank == 5 else None
        a = torch.full((3,), -1.0)
        sub.scatter(a, parts, src=5, timeout=T)
        assert torch.equal(a, torch.full((3,), float(10 * w.rank)))
        if w.rank == 4:
            sub.send(torch.full((2,), 4.0), 1, tag=3, timeout=T)
        if w.rank == 1:
            b = torch.zeros(2)
            assert sub.recv(b, tag=3, timeout=T) == 4
            assert torch.equal(b, torch.full((2,), 4.0))
        sub.barrier(timeout=T)
    sub.destroy()


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8,
                                   np.uint16, np.uint32, np.uint64, np.float16,
                                   np.float32, np.float64])
def test_every_numpy_type_all_reduces(w, dtype):
    every = w.create_collective_group(ranks=range(6), timeout=T)
    a = np.arange(7).astype(dtype) + w.rank
    every.all_reduce(a, timeout=T)
    assert (a == (np.arange(7) * 6 + 15).astype(dtype)).all()
    every.destroy()


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32,
                                   torch.float64, torch.int32, torch.int64, torch.uint8])
def test_every_torch_type_all_reduces_bit_identical(w, dtype):
    every = w.create_collective_group(ranks=range(6), timeout=T)
    gen = torch.Generator().manual_seed(w.rank)
    a = (torch.rand(1000, generator=gen) * 10).to(dtype)
    every.all_reduce(a, op=world.ReduceOp.SUM, timeout=T)
    mine = a.view(torch.uint8) if a.element_size() > 1 else a
    all_of = [torch.empty_like(mine) for _ in range(6)]
    every.all_gather(all_of, mine.contiguous(), timeout=T)
    for other in all_of:
        assert torch.equal(other, all_of[0])
    every.destroy()


def test_reductions_and_their_limits(w):
    every = w.create_collective_group(ranks=range(6), timeout=T)
    a = np.full(4, w.rank + 1, dtype=np.int32)
    every.all_reduce(a, op="max", timeout=T)
    assert (a == 6).all()
    b = np.full(4, 1 << w.rank, dtype=np.uint32)
    every.all_reduce(b, op=world.ReduceOp.BOR, timeout=T)
    assert (b == 63).all()
    c = torch.full((3,), float(w.rank))
    every.all_reduce(c, op=world.ReduceOp.AVG, timeout=T)
    assert torch.equal(c, torch.full((3,), 2.5))
    with pytest.raises(world.InvalidError):
        every.all_reduce(torch.zeros(3), op=world.ReduceOp.BXOR, timeout=T)
    every.destroy()


def test_reduce_scatter_all_to_all_and_started_collectives(w):
    every = w.create_collective_group(ranks=range(6), timeout=T)
    out = torch.zeros(2)
    every.reduce_scatter(out, [torch.full((2,), float(i)) for i in range(6)], timeout=T)
    assert torch.equal(out, torch.full((2,), 6.0 * w.rank))
    src = torch.arange(6, dtype=torch.int64) + 10 * w.rank
    dst = torch.zeros(6, dtype=torch.int64)
    every.all_to_all(dst, src, timeout=T)
    assert dst.tolist() == [10 * i + w.rank for i in range(6)]
    a = torch.ones(100)
    work = every.all_reduce(a, async_op=True)
    assert work.wait(T) is None
    assert work.is_completed()
    assert torch.equal(a, torch.full((100,), 6.0))
    every.barrier(async_op=True).wait(T)
    every.destroy()


def test_bad_buffers_are_refused(w):
    every = w.create_collective_group(ranks=range(6), timeout=T)
    with pytest.raises(world.InvalidError, match="contiguous"):
        every.all_reduce(torch.zeros(4, 4).t(), timeout=T)
    with pytest.raises(world.InvalidError):
        every.all_reduce(torch.zeros(2, dtype=torch.complex64), timeout=T)
    with pytest.raises(ValueError):
        every.all_to_all(torch.zeros(7), torch.zeros(7), timeout=T)
    every.barrier(timeout=T)
    every.destroy()


def test_collectives_called_differently_fail_on_every_member(w):
    """Issue 30's cases: all_reduce of 4 elements on rank 0 and 3 on rank 1,
    float32 against float64, an op, a root, a barrier against an
    all_reduce, a started one: MismatchError on every member, naming the
    first member that differs; the group then works."""
    every = w.create_collective_group(ranks=range(6), timeout=T)
    cases = [
        (lambda: every.all_reduce(torch.ones(3 if w.rank == 1 else 4), timeout=T),
         "member 1 has count 3 where member 0 has 4"),
        (lambda: every.all_reduce(torch.ones(4, dtype=torch.float64 if w.rank >= 2
                                             else torch.float32), timeout=T),
         "member 2 has dtype float64 where member 0 has float32"),
        (lambda: every.all_reduce(np.ones(4, dtype=np.int32),
                                  op="max" if w.rank == 5 else "sum", timeout=T),
         "member 5 has op max where member 0 has sum"),
        (lambda: every.broadcast(torch.ones(4), src=2 if w.rank == 3 else 0, timeout=T),
         "member 3 has root 2 where member 0 has 0"),
        (lambda: every.barrier(timeout=T) if w.rank == 4
         else every.all_reduce(torch.ones(4), timeout=T),
         "member 4 calls barrier where member 0 calls all_reduce"),
        (lambda: every.all_reduce(torch.ones(5 if w.rank == 1 else 4),
                                  async_op=True).wait(T),
         "member 1 has count 5 where member 0 has 4"),
    ]
    for call, message in cases:
        with pytest.raises(world.MismatchError, match=message) as failed:
            call()
        assert isinstance(failed.value, world.WorldError)
        assert failed.value.name == "WORLD_EMISMATCH"
        a = torch.full((4,), float(w.rank))
        every.all_reduce(a, timeout=T)
        assert torch.equal(a, torch.full((4,), 15.0))
    assert "MismatchError" in world.__all__
    every.destroy()


def test_ctrl_c_ends_a_wait_in_a_collective_and_poisons_the_group(w):
    """SIGINT while a receive and an all_reduce wait for a member that
    does not come: KeyboardInterrupt within a slice, not at the timeout;
    the members are then at different steps, so the group fails every
    later operation with the interruption's code."""
    groups = [w.create_collective_group(ranks=[0, 1], timeout=T) for _ in range(2)] \
        if w.rank in (0, 1) else []
    if w.rank == 1:
        main = threading.main_thread().ident
        for wait in (lambda: groups[0].recv(torch.zeros(4), src=0, timeout=20),
                     lambda: groups[1].all_reduce(torch.zeros(4), timeout=20)):
            threading.Timer(0.3, signal.pthread_kill, (main, signal.SIGINT)).start()
            start = time.monotonic()
            with pytest.raises(KeyboardInterrupt):
                wait()
            assert time.monotonic() - start < 10
        with pytest.raises(world.WorldError) as failed:
            groups[1].barrier(timeout=T)
        assert failed.value.code == -errno.EINTR
    w.barrier("ctrl-c-coll", timeout=T)
    for c in groups:
        c.destroy()
