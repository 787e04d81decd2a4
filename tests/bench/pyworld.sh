#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# pyworld.sh: the Python package world against Machin's own stack
# (torch.distributed.rpc over TensorPipe, and gloo, with Machin's lookup
# table on rank 0 for registered calls), in the same sitting, with
# /usr/bin/python3, and the package again in a world without worldrun
# (two processes started by hand, rank 0 hosting the registry, as
# Machin's programs start theirs): each stack is one 2-rank job of
# pyworld.py per round,
# in ROUNDS rounds whose order alternates, every case a median of up to
# ITERS calls within a BUDGET of seconds. The table gives medians over
# rounds and ratios within a round. Targets (issue 15): calls at most
# 0.3x torch RPC's time, state_dict pushes at most 0.5x, all_reduce at
# least 10x faster than gloo at 1 KiB and 2x at 16 MiB; and issue 30's:
# the world without worldrun against Machin's stack, registered_sync of
# 1 KiB at most 0.3x, all_reduce at most 0.1x at 1 KiB and 0.5x at 16
# MiB, and worldrun's world within 1.1x of it. The verdicts are
# informational: the script exits 0 whenever it could measure. See
# README.md.
#
# Usage: pyworld.sh BUILD_DIR
# Settings (environment): ROUNDS=5 ITERS=2000 BUDGET=3 TIMEOUT=300
#   OUT=DIR (raw output kept there)
set -u -o pipefail

ROUNDS=${ROUNDS:-5}
TIMEOUT=${TIMEOUT:-300}
export ITERS=${ITERS:-2000} BUDGET=${BUDGET:-3}
BENCH_NAME=pyworld.sh
. "$(dirname "$0")/common.sh"

CASES_PY="rpc_empty registered_small registered_1KiB push_1.5KB push_16MiB allreduce_1KiB allreduce_16MiB"

# One stack's job; its rows are pyworld.py's, the round put in. The world
# without worldrun is two processes of a shell, with the ranks' variables
# worldrun would have set (WORLD_RANK only: nothing that joins a job).
case_command() {
	local py
	py=$(printf '%q' "$(dirname "$0")/pyworld.py")
	if [ "$1" = alone ]; then
		printf 'env PYTHONPATH=%q ALONE_ADDR=tcp://127.0.0.1:%s sh -c %q' "$PYPATH" \
			"$(free_port)" "WORLD_RANK=0 /usr/bin/python3 $py alone & WORLD_RANK=1 /usr/bin/python3 $py alone; wait"
		return
	fi
	printf 'env PYTHONPATH=%q %q -n 2 /usr/bin/python3 %s %s' "$PYPATH" "$WORLDRUN" "$py" "$1"
}

free_port() {
	/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

to_rows() {
	awk -F '\t' -v round="$2" 'NF == 4 { print $1 "/" $2 "\t" round "\t" $3 "\t" $4 }'
}

print_report() {
	awk -F '\t' -v rounds="$ROUNDS" -v cases="$CASES_PY" "$STATS_AWK"'
	END {
		printf "%-18s %12s %12s %12s %8s %8s\n", "case", "world us", "alone us", "torch us",
			"x torch", "w/alone"
		n = split(cases, c, " ")
		for (i = 1; i <= n; i++)
			printf "%-18s %12s %12s %12s %8s %8s\n", c[i],
				cell(c[i] "/world", "median_us", "%.1f"),
				cell(c[i] "/alone", "median_us", "%.1f"),
				cell(c[i] "/torch", "median_us", "%.1f"),
				rcell(c[i] "/world", c[i] "/torch", "median_us"),
				rcell(c[i] "/world", c[i] "/alone", "median_us")
		printf "\nThe floor of a 16 MiB push, one copy of the state_dict (clone): %s us," \
			" %s x torch'"'"'s push\n", cell("push_16MiB/copy", "median_us", "%.1f"),
			rcell("push_16MiB/copy", "push_16MiB/torch", "median_us")
		print ""
		print "Targets (issue 15; ratios are medians of per-round ratios of medians):"
		verdict("empty rpc_sync: world / torch RPC, <= 0.3",
			ratio("rpc_empty/world", "rpc_empty/torch", "median_us"), 0.3, 1)
		verdict("registered_sync, small: world / torch RPC + LUT, <= 0.3",
			ratio("registered_small/world", "registered_small/torch", "median_us"), 0.3, 1)
		verdict("push of a 1.5 KB state_dict: world / torch, <= 0.5",
			ratio("push_1.5KB/world", "push_1.5KB/torch", "median_us"), 0.5, 1)
		verdict("push of a 16 MiB state_dict: world / torch, <= 0.5",
			ratio("push_16MiB/world", "push_16MiB/torch", "median_us"), 0.5, 1)
		verdict("all_reduce 1 KiB: world / gloo, <= 0.1",
			ratio("allreduce_1KiB/world", "allreduce_1KiB/torch", "median_us"), 0.1, 1)
		verdict("all_reduce 16 MiB: world / gloo, <= 0.5",
			ratio("allreduce_16MiB/world", "allreduce_16MiB/torch", "median_us"), 0.5, 1)
		print ""
		print "Targets (issue 30: the world without worldrun, and worldrun'"'"'s against it):"
		verdict("registered_sync 1 KiB: alone / torch RPC + LUT, <= 0.3",
			ratio("registered_1KiB/alone", "registered_1KiB/torch", "median_us"), 0.3, 1)
		verdict("all_reduce 1 KiB: alone / gloo, <= 0.1",
			ratio("allreduce_1KiB/alone", "allreduce_1KiB/torch", "median_us"), 0.1, 1)
		verdict("all_reduce 16 MiB: alone / gloo, <= 0.5",
			ratio("allreduce_16MiB/alone", "allreduce_16MiB/torch", "median_us"), 0.5, 1)
		split("registered_1KiB allreduce_1KiB allreduce_16MiB", w, " ")
		for (i = 1; i <= 3; i++)
			verdict(w[i] ": world / alone, <= 1.1",
				ratio(w[i] "/world", w[i] "/alone", "median_us"), 1.1, 1)
	}' "$ROWS"
}

main() {
	[ $# -eq 1 ] || { echo "usage: pyworld.sh BUILD_DIR" >&2; exit 2; }
	bench_binaries -- "$1"
	PYPATH=$(readlink -f "$1")/runtime/python
	if ! /usr/bin/python3 -c 'import torch' 2>/dev/null || [ ! -d "$PYPATH/world" ]; then
		echo "pyworld.sh: needs /usr/bin/python3 with torch (python3-torch) and the world" \
			"package built in $PYPATH" >&2
		exit 2
	fi
	OUT=${OUT:-$(mktemp -d /tmp/worldrun-pyworld.XXXXXX)}
	mkdir -p "$OUT"
	ROWS=$OUT/rows.tsv
	: >"$ROWS"
	: >"$OUT/raw.log"
	CASES=(world alone torch)
	echo "pyworld.sh: $(nproc) cpus, load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "pyworld.sh: $ROUNDS rounds, up to $ITERS calls or $BUDGET s per case"
	run_rounds
	echo "pyworld.sh: load average at end: $(cut -d' ' -f1-3 /proc/loadavg); raw output in $OUT"
	echo
	print_report
}

main "$@"
