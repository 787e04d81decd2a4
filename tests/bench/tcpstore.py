#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tcpstore.py: the round trip of one torch TCPStore get, for registry.sh.

A TCPStore server (is_master) and a separate client store live in this
process and talk over loopback TCP; the client sets one key (BYTES long)
and then times N gets of it, one at a time, from this thread, after
WARMUP untimed ones. Prints one line of name=value pairs, as regbench
does (microseconds).

Usage: tcpstore.py [N [WARMUP [BYTES]]]
"""
import sys
import time
from datetime import timedelta

import torch.distributed as dist


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    warmup = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    size = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    timeout = timedelta(seconds=30)
    server = dist.TCPStore("127.0.0.1", 0, None, True, timeout,
                           wait_for_workers=False)
    client = dist.TCPStore("127.0.0.1", server.port, None, False, timeout)
    key = "key:__rand_int__"
    client.set(key, b"x" * size)
    for _ in range(warmup):
        client.get(key)
    lat = [0] * n
    clock = time.perf_counter_ns
    start = clock()
    for i in range(n):
        t = clock()
        client.get(key)
        lat[i] = clock() - t
    secs = (clock() - start) / 1e9
    lat.sort()

    def pct(p):
        return lat[max(0, -(-n * p // 100) - 1)] / 1e3

    print("rtt transport=torch n=%d rps=%.0f mean_us=%.2f p50_us=%.2f "
          "p99_us=%.2f min_us=%.2f" % (n, n / secs, sum(lat) / n / 1e3,
                                       pct(50), pct(99), lat[0] / 1e3))


if __name__ == "__main__":
    main()
