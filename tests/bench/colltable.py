#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""colltable.py: coll.sh's tables and plots, from its rows.

Rows: impl op ranks bytes algo median_us cpu_us_per_op (tab-separated).
Rows with the same impl, algo and (op, ranks, bytes) (rounds, repeated
fi_pingpong runs) are merged by their median. One table per op: a line per
(ranks, bytes) and libworld algorithm, the median time of each impl (MB/s
for bandwidth), ratios of times (above 1: the first is slower), and the
CPU-us per op of all ranks together. Then the straggler table. An impl
without a figure shows "missing"; a ratio without both sides "-". With
--plots DIR, a log-log PNG of time against size per op and ranks (gnuplot).
Plain python3, no torch.

Usage: colltable.py [--straggler-ranks N] [--plots DIR] ROWS.tsv
"""
import argparse
import os
import statistics
import subprocess
import sys

ANCHORS = ("mpich", "openmpi", "gloo", "c10d")
SHORT = {"fi_pingpong": "fi_pp", "openmpi": "ompi"}  # column heads
SWEEP_OPS = ("latency", "bandwidth", "all_reduce", "broadcast", "all_gather",
             "barrier")


def load(path):
    """{(op, ranks, bytes): {(impl, algo): (median_us, cpu or None)}}."""
    raw = {}
    with open(path) as f:
        for line in f:
            c = line.rstrip("\n").split("\t")
            if len(c) != 7:
                continue
            try:
                key = (c[1], int(c[2]), int(c[3]))
                t = float(c[5])
                cpu = None if c[6] == "-" else float(c[6])
            except ValueError:
                continue
            raw.setdefault(key, {}).setdefault((c[0], c[4]), []).append((t, cpu))
    rows = {}
    for key, impls in raw.items():
        for ia, vals in impls.items():
            cpus = [x for _, x in vals if x is not None]
            rows.setdefault(key, {})[ia] = (
                statistics.median(t for t, _ in vals),
                statistics.median(cpus) if cpus else None)
    return rows


def fmt(x):
    if x is None:
        return "missing"
    return "%.2f" % x if x < 10 else "%.1f" % x if x < 1000 else "%.0f" % x


def ratio(a, b):
    return "-" if a is None or b is None or b <= 0 else "%.2f" % (a / b)


def pick(cell, impl, algo=None):
    """The (time, cpu) of impl (libworld: of algo) in one cell, else Nones."""
    for (i, a), v in cell.items():
        if i == impl and (algo is None or a == algo):
            return v
    return (None, None)


def lw_algos(cell):
    algos = sorted(a for i, a in cell if i == "libworld")
    return algos or ["-"]


def op_table(rows, op, out):
    keys = sorted(k for k in rows if k[0] == op)
    if not keys:
        return
    p2p = op in ("latency", "bandwidth")
    cols = ["libworld"] + (["fi_pingpong"] if p2p else []) + list(ANCHORS)
    unit = "MB/s (1 MB = 10^6 B)" if op == "bandwidth" else "us per op, median"
    print("%s: %s; ratios of times; cpu: CPU-us per op, all ranks" % (op, unit), file=out)
    head = ["ranks", "bytes", "algo"] + [SHORT.get(c, c) for c in cols]
    head += (["lw/fi"] if p2p else []) + ["lw/minMPI", "lw/ompi", "mpich/lw", "gloo/lw",
                                          "c10d/lw", "c10d/gloo"]
    head += ["cpu:lw" if c == "libworld" else "cpu:" + SHORT.get(c, c)
             for c in cols if c != "fi_pingpong"]
    lines = [head]
    for key in keys:
        cell = rows[key]
        for algo in lw_algos(cell):
            t = {c: pick(cell, c, algo if c == "libworld" else None) for c in cols}
            shown = {c: (None if t[c][0] is None else key[2] / t[c][0])
                     if op == "bandwidth" else t[c][0] for c in cols}
            lw = t["libworld"][0]
            mpis = [t[c][0] for c in ("mpich", "openmpi") if t[c][0] is not None]
            line = [str(key[1]), str(key[2]), algo] + [fmt(shown[c]) for c in cols]
            if p2p:
                line.append(ratio(lw, t["fi_pingpong"][0]))
            line += [ratio(lw, min(mpis) if mpis else None), ratio(lw, t["openmpi"][0]),
                     ratio(t["mpich"][0], lw), ratio(t["gloo"][0], lw),
                     ratio(t["c10d"][0], lw), ratio(t["c10d"][0], t["gloo"][0])]
            line += [fmt(t[c][1]) for c in cols if c != "fi_pingpong"]
            lines.append(line)
    width = [max(len(r[i]) for r in lines) for i in range(len(head))]
    for r in lines:
        print("  ".join(x.rjust(w) for x, w in zip(r, width)), file=out)
    print(file=out)


def straggler_table(rows, ranks, out):
    impls = ["libworld", "openmpi", "mpich", "gloo", "c10d"]
    print("straggler, %d ranks: the computing ranks' compute + all_reduce time "
          "against the same work alone; CPU-s of all ranks for the whole run" % ranks,
          file=out)
    head = ["impl", "computing", "time s", "alone s", "time/alone", "cpu s all",
            "alone cpu s", "cpu/alone"]
    lines = [head]
    for impl in impls:
        alone = pick(rows.get(("alone", 1, 4), {}), impl)
        for k in (1, 2):
            t = pick(rows.get(("straggler%d" % k, ranks, 4), {}), impl)
            s = [None if x is None else x / 1e6 for x in (t[0], alone[0], t[1], alone[1])]
            lines.append([impl, str(k), fmt(s[0]), fmt(s[1]), ratio(s[0], s[1]),
                          fmt(s[2]), fmt(s[3]), ratio(s[2], s[3])])
    width = [max(len(r[i]) for r in lines) for i in range(len(head))]
    for r in lines:
        print("  ".join(x.rjust(w) for x, w in zip(r, width)), file=out)
    print(file=out)


def plot(rows, outdir):
    """One PNG per (op, ranks) with sizes: time (us) against bytes, log-log."""
    groups = {}
    for (op, ranks, nbytes), cell in rows.items():
        if op in SWEEP_OPS and nbytes > 0:
            for (impl, algo), (t, _) in cell.items():
                name = impl if algo == "-" else "%s %s" % (impl, algo)
                groups.setdefault((op, ranks), {}).setdefault(name, []).append((nbytes, t))
    made = []
    for (op, ranks), lines in sorted(groups.items()):
        base = os.path.join(outdir, "coll-%s-%d" % (op, ranks))
        plots = []
        with open(base + ".dat", "w") as f:
            for i, (name, pts) in enumerate(sorted(lines.items())):
                f.write("# %s\n" % name)
                for b, t in sorted(pts):
                    f.write("%d %g\n" % (b, t))
                f.write("\n\n")
                plots.append("'%s.dat' index %d with linespoints title '%s'" % (base, i, name))
        ylabel = "us per message" if op == "bandwidth" else "us per op (median)"
        script = "\n".join([
            "set terminal pngcairo size 900,600",
            "set output '%s.png'" % base,
            "set title '%s, %d ranks'" % (op, ranks),
            "set termoption noenhanced",
            "set logscale x 4", "set logscale y", "set format x '%.0b%BB'",
            "set xlabel 'message bytes'", "set ylabel '%s'" % ylabel,
            "set key top left", "set grid",
            "plot " + ", ".join(plots), ""])
        try:
            subprocess.run(["gnuplot"], input=script, text=True, check=True,
                           stderr=subprocess.PIPE)
            made.append(base + ".png")
        except (OSError, subprocess.CalledProcessError) as e:
            print("colltable: gnuplot failed for %s: %s" % (base, e), file=sys.stderr)
    return made


def main():
    p = argparse.ArgumentParser(prog="colltable.py")
    p.add_argument("rows")
    p.add_argument("--straggler-ranks", type=int, default=8)
    p.add_argument("--plots")
    o = p.parse_args()
    rows = load(o.rows)
    for op in SWEEP_OPS:
        op_table(rows, op, sys.stdout)
    straggler_table(rows, o.straggler_ranks, sys.stdout)
    if o.plots:
        made = plot(rows, o.plots)
        print("plots: %d PNGs in %s (coll-OP-RANKS.png)" % (len(made), o.plots))


if __name__ == "__main__":
    main()
