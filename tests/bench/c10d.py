# SPDX-License-Identifier: MIT
"""c10d.py: the torch.distributed backend "world" against gloo in one job
(worldrun -n N runs it on every rank; rank 0 prints). One process group
of each over all ranks, used in turn on the same inputs:

- all_reduce of a 1 KiB and a 16 MiB float32 tensor through
  dist.all_reduce on each group, and through the world package's own
  CollectiveGroup.all_reduce (libworld without the c10d layer: "direct");
- a DistributedDataParallel training step (forward, backward with its
  bucketed all_reduces, SGD step) of an MLP of about 1 M parameters and of
  a ResNet-18-shaped network (about 11.2 M), on each group; and the same
  step of the model alone, with no communication ("floor": what the ranks'
  computing on the machine's cores costs, which no backend goes below).

Each case prints "CASE BACKEND median_us VALUE": the median over samples
of up to ITERS calls within BUDGET seconds, after a few to warm up; a
sample of the 1 KiB all_reduce is 50 calls back to back."""
import os
import statistics
import time

import torch
import torch.distributed as dist
import torch.nn as nn

import world
import world.c10d  # noqa: F401 (registers the backend)

ITERS = int(os.environ.get("ITERS", "2000"))
BUDGET = float(os.environ.get("BUDGET", "3"))
STEPS = int(os.environ.get("STEPS", "8"))


def timed(fn, iters, sync, warm=3, reps=1):
    """The median time of fn in us, after warm calls: each sample is reps
    calls back to back after one sync (as OSU's loops), so that no sample
    is one call's wait for a late peer. Every rank takes as many samples
    (rank 0 decides)."""
    for _ in range(warm):
        fn()
    times = []
    start = time.perf_counter()
    n = torch.tensor([0])
    while True:
        sync()
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        times.append((time.perf_counter() - t0) / reps)
        n[0] = 1 if len(times) * reps >= iters or time.perf_counter() - start > BUDGET else 0
        dist.broadcast(n, 0, group=CONTROL)
        if n.item():
            return statistics.median(times) * 1e6


def block(cin, cout, stride):
    down = None
    if stride != 1 or cin != cout:
        down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False),
                                   nn.BatchNorm2d(cout), nn.ReLU(),
                                   nn.Conv2d(cout, cout, 3, 1, 1, bias=False),
                                   nn.BatchNorm2d(cout))
            self.down = down

        def forward(self, x):
            return torch.relu(self.a(x) + (x if self.down is None else self.down(x)))
    return Block()


def resnet18_shaped():
    """ResNet-18's layers (torchvision is not in Debian 12): 11.2 M parameters."""
    layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
              nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        layers += [block(cin, cout, stride), block(cout, cout, 1)]
        cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 10)]
    return nn.Sequential(*layers)


def mlp():
    """About 1.05 M parameters."""
    return nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 512), nn.ReLU(),
                         nn.Linear(512, 10))


def no_comm(state, bucket):
    """A DDP communication hook that communicates nothing: the bucket's
    gradients as they are, at once."""
    fut = torch.futures.Future()
    fut.set_result(bucket.buffer())
    return fut


def ddp_step(make, shape, group, talk=True):
    """A training step of make()'s model, wrapped in DDP on group (None:
    not wrapped, no communication at all: the floor of the step; talk
    False: DDP's own work, its buckets, but no communication, the floor
    of any backend under DDP)."""
    from torch.nn.parallel import DistributedDataParallel as DDP
    torch.manual_seed(0)
    model = make() if group is None else DDP(make(), process_group=group)
    if not talk:
        model.register_comm_hook(None, no_comm)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(*shape)
    y = torch.randint(0, 10, (shape[0],))

    def step():
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    return step


def main():
    global CONTROL
    w = world.World()
    assert dist.get_backend() == "world"
    gloo = dist.new_group(backend="gloo")
    CONTROL = gloo
    # ORDER=gloo: gloo's turn first in each case (the script alternates).
    groups = {"world": dist.group.WORLD, "gloo": gloo}
    if os.environ.get("ORDER") == "gloo":
        groups = {"gloo": gloo, "world": dist.group.WORLD}
    cg = w.create_collective_group(list(range(w.size)))
    out = []
    for name, numel in (("allreduce_1KiB", 256), ("allreduce_16MiB", 4 << 20)):
        t = torch.ones(numel)
        small = numel < 4096
        iters = ITERS if small else max(10, ITERS // 100)
        reps = 50 if small else 1
        for backend, group in groups.items():
            us = timed(lambda: dist.all_reduce(t, group=group), iters,
                       lambda: dist.barrier(group=gloo), reps=reps)
            out.append((name, backend, us))
        us = timed(lambda: cg.all_reduce(t), iters, lambda: dist.barrier(group=gloo), reps=reps)
        out.append((name, "direct", us))
    for name, make, shape in (("ddp_mlp_1M", mlp, (32, 512)),
                              ("ddp_resnet18_11M", resnet18_shaped, (4, 3, 64, 64))):
        # A model that is not measured first: torch's kernels warm up.
        timed(ddp_step(make, shape, None), 3, lambda: dist.barrier(group=gloo))
        for backend, group in [("floor", None), ("ddpfloor", gloo)] + list(groups.items()):
            step = ddp_step(make, shape, group, talk=backend != "ddpfloor")
            us = timed(step, STEPS, lambda: dist.barrier(group=gloo), warm=5)
            out.append((name, backend, us))
    if w.rank == 0:
        for case, backend, us in out:
            print(f"{case}\t{backend}\tmedian_us\t{us:.1f}", flush=True)
    w.stop()


if __name__ == "__main__":
    main()
