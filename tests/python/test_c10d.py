# SPDX-License-Identifier: MIT
"""The torch.distributed backend "world" (world.c10d) under worldrun -n 4:
every collective on every dtype and op, against the result computed here
from every rank's input and against gloo on the same inputs; lists,
non-contiguous tensors, async works and their futures, subgroups, point
to point, DDP trained side by side with gloo, and the refusals."""
import datetime
import math

import pytest
import torch
import torch.distributed as dist
import torch.nn as nn

import world
import world.c10d  # noqa: F401 (registers the backend)

T = datetime.timedelta(seconds=60)
INTS = [torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8]
FLOATS = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
OPS = {
    "SUM": lambda xs: _fold(xs, lambda a, b: a + b),
    "PRODUCT": lambda xs: _fold(xs, lambda a, b: a * b),
    "MIN": lambda xs: _fold(xs, torch.minimum),
    "MAX": lambda xs: _fold(xs, torch.maximum),
    "BAND": lambda xs: _fold(xs, torch.bitwise_and),
    "BOR": lambda xs: _fold(xs, torch.bitwise_or),
    "BXOR": lambda xs: _fold(xs, torch.bitwise_xor),
}


def _fold(xs, f):
    acc = xs[0].clone()
    for x in xs[1:]:
        acc = f(acc, x)
    return acc


@pytest.fixture(scope="module")
def pg(w):
    # World() has initialised it (Machin's init_dist), torch being imported.
    assert dist.is_initialized()
    yield dist.group.WORLD


@pytest.fixture(scope="module")
def gloo(pg):
    return dist.new_group(backend="gloo")


def inputs(n, dtype, size, seed=7):
    """Every rank's input: small values, exact in every dtype and op."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        if dtype == torch.bool:
            out.append(torch.randint(0, 2, (size,), generator=g).bool())
        elif dtype in FLOATS:
            out.append(torch.randint(-3, 4, (size,), generator=g).to(dtype))
        else:
            lo = 0 if dtype == torch.uint8 else -3
            out.append(torch.randint(lo, 4, (size,), generator=g).to(dtype))
    return out


def test_the_default_group_is_worldruns_job(w, pg):
    assert dist.get_backend() == "world"
    assert dist.get_rank() == w.rank
    assert dist.get_world_size() == w.size


# Bitwise ops take integers and bool (floats: test_refusals_say_what_to_do).
@pytest.mark.parametrize("dtype,op", [
    (dtype, op) for dtype in INTS + FLOATS + [torch.bool] for op in OPS
    if dtype not in FLOATS or op not in ("BAND", "BOR", "BXOR")])
def test_all_reduce_of_every_dtype_and_op(w, pg, dtype, op):
    xs = inputs(w.size, dtype, 37)
    if dtype == torch.bool:
        ref = {"SUM": "BOR", "PRODUCT": "BAND"}.get(op, op)
        want = OPS[ref](xs)
    else:
        want = OPS[op](xs)
    t = xs[w.rank].clone()
    dist.all_reduce(t, op=getattr(dist.ReduceOp, op))
    assert t.dtype == dtype
    assert torch.equal(t, want)
    if dtype == torch.bool:
        # Each byte is 0 or 1, as torch's bools are (a sum of 3 trues
        # would read as True too, and break torch later).
        assert set(t.view(torch.uint8).tolist()) <= {0, 1}


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.float32, torch.float64,
                                   torch.float16, torch.uint8, torch.int8])
def test_all_reduce_equals_gloos(w, pg, gloo, dtype):
    xs = inputs(w.size, dtype, 1000, seed=11)
    for op in ("SUM", "MIN", "MAX", "PRODUCT"):
        a, b = xs[w.rank].clone(), xs[w.rank].clone()
        dist.all_reduce(a, op=getattr(dist.ReduceOp, op))
        dist.all_reduce(b, op=getattr(dist.ReduceOp, op), group=gloo)
        assert torch.equal(a, b), op


def test_all_reduce_coalesced_writes_each_tensor(w, pg):
    ts = [torch.full((3,), float(w.rank)), torch.full((2, 2), 1.0),
          torch.arange(4.0).reshape(2, 2).t()]
    dist.all_reduce_coalesced(ts)
    assert ts[0].tolist() == [float(sum(range(w.size)))] * 3
    assert ts[1].tolist() == [[float(w.size)] * 2] * 2
    assert torch.equal(ts[2], torch.arange(4.0).reshape(2, 2).t() * w.size)


def test_avg_of_floats_and_its_refusal_for_integers(w, pg):
    t = torch.full((5,), float(w.rank))
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    assert torch.equal(t, torch.full((5,), (w.size - 1) / 2))
    with pytest.raises(RuntimeError, match="AVG takes floating-point"):
        dist.all_reduce(torch.ones(2, dtype=torch.int32), op=dist.ReduceOp.AVG)


def test_broadcast_and_reduce_from_every_root(w, pg, gloo):
    for root in range(w.size):
        a = torch.arange(10.0) * (w.rank + 1)
        b = a.clone()
        dist.broadcast(a, root)
        dist.broadcast(b, root, group=gloo)
        assert torch.equal(a, torch.arange(10.0) * (root + 1))
        assert torch.equal(a, b)
        r = torch.full((3,), w.rank + 1, dtype=torch.int64)
        dist.reduce(r, root, op=dist.ReduceOp.PRODUCT)
        if w.rank == root:
            assert r.tolist() == [math.factorial(w.size)] * 3


def test_all_gather_forms(w, pg, gloo):
    x = torch.arange(6, dtype=torch.int16).reshape(2, 3) + 100 * w.rank
    out = [torch.zeros(2, 3, dtype=torch.int16) for _ in range(w.size)]
    dist.all_gather(out, x)
    ref = [torch.zeros(2, 3, dtype=torch.int32) for _ in range(w.size)]
    dist.all_gather(ref, x.int(), group=gloo)
    assert [o.int().tolist() for o in out] == [r.tolist() for r in ref]
    flat = torch.zeros(w.size * 6, dtype=torch.int16)
    dist._all_gather_base(flat, x)
    assert torch.equal(flat, torch.cat([o.reshape(-1) for o in out]))
    outs = [[torch.zeros(2) for _ in range(w.size)], [torch.zeros(1) for _ in range(w.size)]]
    dist.all_gather_coalesced(outs, [torch.full((2,), 1.0 * w.rank), torch.full((1,), -1.0 * w.rank)])
    assert [o.tolist() for o in outs[0]] == [[float(r)] * 2 for r in range(w.size)]
    assert [o.tolist() for o in outs[1]] == [[-float(r)] for r in range(w.size)]


def test_gather_and_scatter(w, pg):
    for root in (0, w.size - 1):
        got = [torch.zeros(4) for _ in range(w.size)] if w.rank == root else None
        dist.gather(torch.full((4,), float(w.rank)), got, dst=root)
        if w.rank == root:
            assert [g.tolist() for g in got] == [[float(r)] * 4 for r in range(w.size)]
        out = torch.zeros(3, dtype=torch.int64)
        parts = [torch.full((3,), 10 * r + root, dtype=torch.int64) for r in range(w.size)]
        dist.scatter(out, parts if w.rank == root else None, src=root)
        assert out.tolist() == [10 * w.rank + root] * 3


def test_reduce_scatter_forms(w, pg):
    parts = [torch.full((2,), float(w.rank + r)) for r in range(w.size)]
    out = torch.zeros(2)
    dist.reduce_scatter(out, parts)
    want = float(sum(rank + w.rank for rank in range(w.size)))
    assert out.tolist() == [want] * 2
    flat = torch.cat(parts)
    out2 = torch.zeros(2)
    dist._reduce_scatter_base(out2, flat, op=dist.ReduceOp.MAX)
    assert out2.tolist() == [float(w.size - 1 + w.rank)] * 2


def test_all_to_all_even_uneven_and_lists(w, pg, gloo):
    n = w.size
    x = torch.arange(n * 2, dtype=torch.float64) + 100 * w.rank
    a, b = torch.zeros(n * 2, dtype=torch.float64), torch.zeros(n * 2, dtype=torch.float64)
    dist.all_to_all_single(a, x)
    dist.all_to_all_single(b, x, group=gloo)
    assert torch.equal(a, b)
    # Rank r sends r+1 rows to every member; each gets j+1 rows from member j.
    rows = torch.full((n * (w.rank + 1), 2), float(w.rank))
    got = torch.zeros(sum(j + 1 for j in range(n)), 2)
    dist.all_to_all_single(got, rows, output_split_sizes=[j + 1 for j in range(n)],
                           input_split_sizes=[w.rank + 1] * n)
    want = torch.cat([torch.full((j + 1, 2), float(j)) for j in range(n)])
    assert torch.equal(got, want)
    ins = [torch.full((j + 1,), w.rank * 10 + j) for j in range(n)]
    outs = [torch.zeros(w.rank + 1, dtype=torch.int64) for _ in range(n)]
    dist.all_to_all(outs, ins)
    assert [o.tolist() for o in outs] == [[j * 10 + w.rank] * (w.rank + 1) for j in range(n)]


def test_non_contiguous_tensors_are_written_where_they_are(w, pg):
    base = torch.zeros(4, 6)
    col = base[:, 1]
    assert not col.is_contiguous()
    col.fill_(w.rank + 1)
    dist.all_reduce(col)
    assert base[:, 1].tolist() == [float(sum(range(1, w.size + 1)))] * 4
    assert base[:, 0].tolist() == [0.0] * 4
    t = torch.arange(12.0).reshape(3, 4).t()
    if w.rank != 0:
        t.zero_()
    dist.broadcast(t, 0)
    assert torch.equal(t, torch.arange(12.0).reshape(3, 4).t())


def test_async_works_and_their_futures(w, pg):
    works = [dist.all_reduce(torch.full((100,), float(i)), async_op=True) for i in range(8)]
    for i, wk in enumerate(works):
        wk.wait()
        assert wk.is_completed()
        assert wk.result()[0].tolist() == [float(i * w.size)] * 100
    t = torch.ones(10)
    fut = dist.all_reduce(t, async_op=True).get_future()
    chained = fut.then(lambda f: f.value()[0] * 2)
    assert chained.wait().tolist() == [2.0 * w.size] * 10
    dist.barrier()


def test_a_subgroup_not_the_whole_world(w, pg):
    members = list(range(1, w.size)) or [0]
    g = dist.new_group(members, backend="world")
    if w.rank not in members:
        assert g == dist.GroupMember.NON_GROUP_MEMBER
        return
    assert dist.get_rank(g) == members.index(w.rank)
    t = torch.tensor([w.rank], dtype=torch.int64)
    dist.all_reduce(t, group=g)
    assert t.item() == sum(members)
    b = torch.tensor([w.rank])
    dist.broadcast(b, src=members[-1], group=g)
    assert b.item() == members[-1]


def test_send_recv_and_any_source(w, pg):
    if w.size < 2:
        pytest.skip("one rank has no peer")
    if w.rank == 0:
        for peer in range(1, w.size):
            t = torch.zeros(3, dtype=torch.int32)
            assert dist.recv(t) in range(1, w.size)
        got = torch.zeros(2)
        dist.recv(got, src=1, tag=5)
        assert got.tolist() == [5.0, 5.0]
    else:
        dist.send(torch.full((3,), w.rank, dtype=torch.int32), 0)
        if w.rank == 1:
            dist.isend(torch.full((2,), 5.0), 0, tag=5).wait()
    dist.barrier()


def test_ddp_trains_as_with_gloo(w, pg, gloo):
    from torch.nn.parallel import DistributedDataParallel as DDP

    def train(group, bucket_mb):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
        ddp = DDP(model, process_group=group, bucket_cap_mb=bucket_mb)
        opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
        g = torch.Generator().manual_seed(100 + w.rank)
        for step in range(20):
            x, y = torch.randn(8, 16, generator=g), torch.randn(8, 4, generator=g)
            opt.zero_grad()
            if step % 4 == 1:
                with ddp.no_sync():
                    nn.functional.mse_loss(ddp(x), y).backward()
                x, y = torch.randn(8, 16, generator=g), torch.randn(8, 4, generator=g)
            nn.functional.mse_loss(ddp(x), y).backward()
            opt.step()
        return torch.cat([p.detach().reshape(-1) for p in model.parameters()])

    mine = train(pg, 0.001)
    theirs = train(gloo, 0.001)
    assert torch.allclose(mine, theirs, rtol=1e-5, atol=1e-6)
    every = [torch.zeros_like(mine) for _ in range(w.size)]
    dist.all_gather(every, mine)
    assert all(torch.equal(e, mine) for e in every)


def test_refusals_say_what_to_do(w, pg):
    with pytest.raises(RuntimeError, match="sparse"):
        dist.all_reduce(torch.eye(2).to_sparse())
    with pytest.raises(RuntimeError, match="ComplexFloat are not supported"):
        dist.send(torch.zeros(2, dtype=torch.complex64), (w.rank + 1) % w.size)
    with pytest.raises(RuntimeError, match="a tag is"):
        dist.send(torch.zeros(1), (w.rank + 1) % w.size, tag=world.c10d.TAG_MAX + 1)
    with pytest.raises(RuntimeError, match="rank 9 is not in the group"):
        dist.broadcast(torch.zeros(1), 9)
    with pytest.raises(RuntimeError, match="invalid|Invalid"):
        dist.all_reduce(torch.ones(2), op=dist.ReduceOp.BAND)
    dist.barrier()


def test_mismatched_calls_fail_on_every_rank(w, pg):
    if w.size < 2:
        pytest.skip("one rank cannot differ from another")
    with pytest.raises(RuntimeError, match="world: all_reduce: .*rank|member"):
        dist.all_reduce(torch.zeros(3 + (w.rank == 1)))
    t = torch.ones(2)
    dist.all_reduce(t)
    assert t.tolist() == [float(w.size)] * 2
