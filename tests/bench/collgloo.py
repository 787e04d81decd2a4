#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""collgloo.py: torch.distributed's gloo backend as an anchor of coll.sh,
and with COLL_BACKEND=world this project's c10d backend "world" (impl
c10d: libworld under torch.distributed's calls; the package on PYTHONPATH).

The same measurements as collmpi.c, the same rows (impl gloo, algo "-"):
latency (send/recv ping-pong between ranks 0 and 1, one-way time),
bandwidth (a window of 64 isend/irecv, then an ack), all_reduce (float32
sum), broadcast, all_gather, barrier, straggler N WORK and alone WORK (the
work is collwork.h's loop, called through ctypes from the shared object
named by COLLWORK_SO, so it is exactly the same work as the C programs').
Run with Debian's /usr/bin/python3 (torch), under a launcher that sets
RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT (env://), such as
`worldrun -n N /usr/bin/python3 collgloo.py MODE ...`. Rows go to stdout
from rank 0, comments to stderr.

Usage: collgloo.py MODE [-s MIN] [-S MAX] [-l LIST] [-n ITERS] [-r REPS] [-t MS]
       collgloo.py straggler N WORK | collgloo.py alone WORK
"""
import argparse
import ctypes
import os
import resource
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist

WINDOW = 64
BACKEND = os.environ.get("COLL_BACKEND", "gloo")
IMPL = "c10d" if BACKEND == "world" else "gloo"
SWEEPS = ("latency", "bandwidth", "all_reduce", "broadcast", "all_gather",
          "barrier")


def now_us():
    return time.perf_counter() * 1e6


def cpu_us():
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return (ru.ru_utime + ru.ru_stime) * 1e6


def all_max(x):
    t = torch.tensor([x], dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.item()


def sum_at_root(x):
    t = torch.tensor([x], dtype=torch.float64)
    dist.reduce(t, 0, op=dist.ReduceOp.SUM)
    return t.item()


class Bench:
    """One run's settings and buffers, as collmpi.c's struct bench."""

    def __init__(self, op, opts):
        self.op, self.opts = op, opts
        self.rank, self.size = dist.get_rank(), dist.get_world_size()
        self.sbuf = self.rbuf = self.gather = None
        self.ack = torch.zeros(4, dtype=torch.uint8)

    def buffers(self, nbytes):
        if self.op == "all_reduce":
            self.sbuf = torch.ones(nbytes // 4, dtype=torch.float32)
        else:
            self.sbuf = torch.ones(nbytes, dtype=torch.uint8)
            self.rbuf = torch.zeros(nbytes, dtype=torch.uint8)
        if self.op == "all_gather":
            self.gather = [torch.zeros(nbytes, dtype=torch.uint8)
                           for _ in range(self.size)]

    def one(self):
        op, rank = self.op, self.rank
        if op == "latency":
            if rank == 0:
                dist.send(self.sbuf, 1)
                dist.recv(self.rbuf, 1)
            elif rank == 1:
                dist.recv(self.rbuf, 0)
                dist.send(self.sbuf, 0)
        elif op == "bandwidth":
            if rank == 0:
                for r in [dist.isend(self.sbuf, 1) for _ in range(WINDOW)]:
                    r.wait()
                dist.recv(self.ack, 1)
            elif rank == 1:
                for r in [dist.irecv(self.rbuf, 0) for _ in range(WINDOW)]:
                    r.wait()
                dist.send(self.ack, 0)
        elif op == "all_reduce":
            dist.all_reduce(self.sbuf)
        elif op == "broadcast":
            dist.broadcast(self.sbuf, 0)
        elif op == "all_gather":
            dist.all_gather(self.gather, self.sbuf)
        else:
            dist.barrier()

    def run_ops(self, k):
        t0 = now_us()
        for _ in range(k):
            self.one()
        return now_us() - t0

    def measure(self, nbytes):
        """One size, as collmpi.c's measure(): probe, warm-up, reps blocks."""
        o = self.opts
        n = o.iters if nbytes <= 8192 else max(1, min(o.iters, int(o.iters * 8192 / nbytes)))
        self.buffers(nbytes)
        dist.barrier()
        est = max(all_max(self.run_ops(1)), 1)
        w = clamp(o.budget_us / 4 / est, 1, max(1, n // 10))
        dist.barrier()
        est = max(all_max(self.run_ops(w) / w), 1)
        k = clamp(o.budget_us / o.reps / est, 1, max(1, n // o.reps))
        blocks, cpu = [], 0.0
        for _ in range(o.reps):
            dist.barrier()
            c0 = cpu_us()
            t = self.run_ops(k)
            cpu += cpu_us() - c0
            blocks.append(all_max(t) / k)
        cpu = sum_at_root(cpu)
        per_op = {"latency": 2, "bandwidth": WINDOW}.get(self.op, 1)
        blocks.sort()
        r = len(blocks)
        med = blocks[r // 2] if r % 2 else (blocks[r // 2 - 1] + blocks[r // 2]) / 2
        if self.rank == 0:
            print("%s\t%s\t%d\t%d\t-\t%.3f\t%.3f" % (IMPL,
                self.op, self.size, nbytes, med / per_op, cpu / (r * k * per_op)),
                flush=True)
            print("collgloo: %s %d B: %d warm-up, %d x %d timed" % (
                self.op, nbytes, w, r, k), file=sys.stderr)

    def sweep(self):
        if self.op in ("latency", "bandwidth") and self.size < 2:
            sys.exit("collgloo: %s needs 2 ranks" % self.op)
        sizes = self.opts.sizes
        # The first ops set up connections: keep them out of the probe.
        self.buffers(sizes[0])
        self.run_ops(3)
        for nbytes in sizes:
            self.measure(nbytes)


def clamp(x, lo, hi):
    return int(lo if x < lo else hi if x > hi else x)


def straggle(computing, work):
    """Ranks below computing work, then all enter one all_reduce of one float.

    computing 0 is `alone`: one rank, the same work by itself.
    """
    lib = ctypes.CDLL(os.environ["COLLWORK_SO"])
    lib.coll_work_run.restype = ctypes.c_double
    lib.coll_work_run.argtypes = [ctypes.c_long]
    rank, size = dist.get_rank(), dist.get_world_size()
    x = torch.zeros(1, dtype=torch.float32)
    for _ in range(3):
        dist.all_reduce(x)
    dist.barrier()
    c0, t0 = cpu_us(), now_us()
    mine = rank < max(computing, 1)
    if mine:
        x[0] = lib.coll_work_run(work)
    dist.all_reduce(x)
    t, cpu = now_us() - t0, cpu_us() - c0
    t = all_max(t if mine else 0.0)
    cpu = sum_at_root(cpu)
    if rank == 0:
        op = "straggler%d" % computing if computing else "alone"
        print("%s\t%s\t%d\t4\t-\t%.1f\t%.1f" % (IMPL, op, size, t, cpu), flush=True)
        print("collgloo: result %g" % x.item(), file=sys.stderr)


def parse(argv):
    p = argparse.ArgumentParser(prog="collgloo.py")
    p.add_argument("mode", choices=SWEEPS + ("straggler", "alone"))
    p.add_argument("args", nargs="*", type=int)
    p.add_argument("-s", dest="min", type=int)
    p.add_argument("-S", dest="max", type=int)
    p.add_argument("-l", dest="list")
    p.add_argument("-n", dest="iters", type=int)
    p.add_argument("-r", dest="reps", type=int, default=5)
    p.add_argument("-t", dest="ms", type=float, default=300)
    o = p.parse_args(argv)
    p2p = o.mode in ("latency", "bandwidth")
    o.min = o.min or (8 if p2p else 4)
    o.max = o.max or (4194304 if p2p else 16777216)
    o.iters = o.iters or {"latency": 10000, "bandwidth": 100}.get(o.mode, 1000)
    o.budget_us = o.ms * 1000
    # As collmpi.c's make_sizes(): LIST as given, else powers of 2.
    if o.list:
        o.sizes = [int(x) for x in o.list.split(",")]
    else:
        o.sizes = [1 << i for i in range(31) if o.min <= 1 << i <= o.max]
    if o.mode == "all_reduce":
        o.sizes = [x for x in o.sizes if x >= 4]
    if o.mode == "barrier":
        o.sizes = [0]
    want = {"straggler": 2, "alone": 1}.get(o.mode, 0)
    if len(o.args) != want or o.reps < 1 or o.iters < 1 or not o.sizes:
        p.error("wrong arguments for %s" % o.mode)
    return o


def main():
    o = parse(sys.argv[1:])
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    torch.set_num_threads(1)
    if BACKEND == "world":
        import world.c10d  # noqa: F401 (registers the backend)
    dist.init_process_group(BACKEND, init_method="env://",
                            timeout=timedelta(seconds=120))
    if o.mode == "straggler":
        if not 1 <= o.args[0] <= dist.get_world_size():
            sys.exit("collgloo: straggler N: N must be 1..ranks")
        straggle(o.args[0], o.args[1])
    elif o.mode == "alone":
        if dist.get_world_size() != 1:
            sys.exit("collgloo: alone runs on 1 rank")
        straggle(0, o.args[0])
    else:
        Bench(o.mode, o).sweep()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
