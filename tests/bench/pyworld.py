# SPDX-License-Identifier: MIT
"""pyworld.py STACK: the world package against Machin's own stack, as
rank 1 of 2 (started by worldrun -n 2) measures it; rank 0 serves.

STACK world: world.World, an RPC group and a collective group.
STACK alone: the same in a world without worldrun, as Machin starts one:
two processes started by hand, each giving World() its rank, the size
and the address (ALONE_ADDR); rank 0's process hosts the registry.
STACK torch: torch.distributed.rpc over TensorPipe, and gloo, set up as
Machin's World does it (init_rpc, init_process_group), with Machin's
lookup table on rank 0: a registered call asks rank 0 who owns the key,
then calls the owner.

Cases (each prints "CASE STACK median_us VALUE" and "CASE STACK
mean_us VALUE"): an empty rpc_sync; registered_sync of a small argument
and of 1 KiB of bytes;
a 1.5 KB and a 16 MiB state_dict pushed to a server (and, as the
floor of such a push, one copy of the 16 MiB state_dict in this process:
stack "copy"); all_reduce of a 1 KiB and a 16 MiB float32 tensor. Iterations are bounded by ITERS and
by a time budget per case."""
import os
import statistics
import sys
import time

import torch

STACK = sys.argv[1]
RANK = int(os.environ["WORLD_RANK"])
ITERS = int(os.environ.get("ITERS", "2000"))
BUDGET = float(os.environ.get("BUDGET", "3"))  # seconds per case at most


def noop():
    return None


def echo(x):
    return x


SERVER = {}


def push(state_dict):
    SERVER["model"] = state_dict
    return True


# Machin's lookup table, on rank 0: (group, key) -> owner name.
LUT = {("bench", "echo"): "worker0", ("bench", "push"): "worker0"}


def lut_lookup(group, key):
    return LUT[(group, key)]


def registered(group, key, *args):
    """Machin's registered_sync: the owner from rank 0's table, then the call."""
    from torch.distributed import rpc
    owner = rpc.rpc_sync("worker0", lut_lookup, args=(group, key))
    return rpc.rpc_sync(owner, {"echo": echo, "push": push}[key], args=args)


def state_dict(nbytes):
    n = nbytes // 4
    a = max(1, n // 3)
    return {"layer.weight": torch.rand(a), "layer.bias": torch.rand(n - a)}


def measure(name, fn, iters=None, stack=STACK):
    """Time fn; with iters (a collective: both ranks run it as often),
    exactly that many times, else ITERS or the time budget."""
    fn()
    fn()
    times, end = [], time.monotonic() + BUDGET
    for _ in range(iters or ITERS):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e6)
        if iters is None and time.monotonic() > end:
            break
    if RANK == 1:
        print(f"{name}\t{stack}\tmedian_us\t{statistics.median(times):.2f}", flush=True)
        print(f"{name}\t{stack}\tmean_us\t{statistics.fmean(times):.2f}", flush=True)



SMALL = {"a": 1, "b": "two", "c": [3.0]}
KIB = bytes(range(256)) * 4
SD_SMALL, SD_BIG = state_dict(1536), state_dict(16 << 20)
# The collectives' tensors, and how often both ranks run them.
COLL = (("allreduce_1KiB", torch.rand(256), 1000), ("allreduce_16MiB", torch.rand(4 << 20), 20))


def cases_world():
    import world
    if STACK == "alone":
        w = world.World(str(RANK), rank=RANK, world_size=2,
                        rpc_init_method=os.environ["ALONE_ADDR"])
    else:
        w = world.World()
    g = w.create_rpc_group("bench", ["0", "1"])
    c = w.create_collective_group([0, 1])
    if RANK == 0:
        g.register("echo", echo)
        g.register("push", push)
    g.barrier()
    if RANK == 1:
        measure("rpc_empty", lambda: g.rpc_sync("0", noop))
        measure("registered_small", lambda: g.registered_sync("echo", args=(SMALL,)))
        measure("registered_1KiB", lambda: g.registered_sync("echo", args=(KIB,)))
        measure("push_1.5KB", lambda: g.registered_sync("push", args=(SD_SMALL,)))
        measure("push_16MiB", lambda: g.registered_sync("push", args=(SD_BIG,)))
        # The floor of any push: the one copy the server must end up with.
        measure("push_16MiB", lambda: {k: v.clone() for k, v in SD_BIG.items()},
                stack="copy")
    g.barrier()
    for name, t, n in COLL:
        measure(name, lambda: c.all_reduce(t), n)
    g.barrier()
    c.destroy()
    w.stop()


def cases_torch():
    import torch.distributed as dist
    from torch.distributed import rpc
    # Two rendezvous, as Machin's two init methods: MASTER_PORT, and the next.
    addr, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
    rpc.init_rpc(f"worker{RANK}", rank=RANK, world_size=2,
                 rpc_backend_options=rpc.TensorPipeRpcBackendOptions(
                     init_method=f"tcp://{addr}:{port}"))
    dist.init_process_group("gloo", init_method=f"tcp://{addr}:{port + 1}", rank=RANK,
                            world_size=2)
    if RANK == 1:
        measure("rpc_empty", lambda: rpc.rpc_sync("worker0", noop))
        measure("registered_small", lambda: registered("bench", "echo", SMALL))
        measure("registered_1KiB", lambda: registered("bench", "echo", KIB))
        measure("push_1.5KB", lambda: registered("bench", "push", SD_SMALL))
        measure("push_16MiB", lambda: registered("bench", "push", SD_BIG))
    dist.barrier()
    for name, t, n in COLL:
        measure(name, lambda: dist.all_reduce(t), n)
    dist.barrier()
    dist.destroy_process_group()
    rpc.shutdown()


if __name__ == "__main__":
    cases_world() if STACK in ("world", "alone") else cases_torch()
