#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# coll.sh: libworld's collectives against their anchors, side by side in
# the same sitting. libworld's collbench runs under worldrun (when it is
# built); the anchors are MPICH and Open MPI (collmpi.c, built here with
# each MPI's own mpicc), torch's gloo and, through the same calls, this
# project's c10d backend "world" (impl c10d: collgloo.py under worldrun)
# and, for point-to-point, libfabric's fi_pingpong on shm (the raw
# transport floor). For each N of RANKS: all_reduce (float32 sum), broadcast,
# all_gather and barrier; on 2 ranks ping-pong latency and windowed
# bandwidth; on STRAGGLER_RANKS ranks the straggler (1 or 2 ranks compute
# WORK steps of collwork.h while the others wait in one all_reduce)
# against the same work alone. Every program prints rows
#   impl op ranks bytes algo median_us cpu_us_per_op
# gathered in OUT_DIR/rows.tsv; colltable.py prints the tables (also in
# OUT_DIR/table.txt) and writes OUT_DIR/*.png. An anchor that cannot run
# here shows "missing", never a figure from elsewhere. See README.md.
#
# Usage: coll.sh OUT_DIR BUILD_DIR | coll.sh OUT_DIR WORLDRUN BENCH_DIR
# Settings (environment): RANKS="2 4 8" QUICK=0|1 (few sizes, few
#   iterations: a smoke run) IMPLS="libworld mpich openmpi gloo c10d fi_pingpong"
#   ALGOS="" (libworld once per WORLD_COLL_ALGO value; empty: its default)
#   SIZES_MAX=16777216 P2P_MAX=4194304 (powers of 2 from 4 and 8 B) or
#   SIZES=LIST P2P_SIZES=LIST ("4,1024,65536"); ITERS=1000 LAT_ITERS=10000
#   BW_ITERS=100 (windows of 64) timed ops per size up to 8 KiB, halved
#   per doubling above; REPS=5 (timed blocks per size, the row is their
#   median) BUDGET_MS=300 (timed time per size, about; bounds the slow
#   ones) FI_REPS=3 (fi_pingpong runs per size) STRAGGLER_RANKS=8
#   STRAGGLER_SECONDS=0.8 (WORK is calibrated to last that alone) WORK=N
#   PYTHON=/usr/bin/python3 (torch) ROUNDS=1 TIMEOUT=300 (per run)
set -u -o pipefail

QUICK=${QUICK:-0}
if [ "$QUICK" = 1 ]; then
	: "${SIZES:=4,1024,65536,1048576}" "${P2P_SIZES:=8,1024,65536,1048576}"
	: "${ITERS:=50}" "${LAT_ITERS:=200}" "${BW_ITERS:=5}" "${REPS:=3}"
	: "${BUDGET_MS:=30}" "${FI_REPS:=1}" "${STRAGGLER_SECONDS:=0.2}" "${TIMEOUT:=60}"
fi
RANKS=${RANKS:-2 4 8}
IMPLS=${IMPLS:-libworld mpich openmpi gloo c10d fi_pingpong}
ALGOS=${ALGOS:-}
SIZES=${SIZES:-}
P2P_SIZES=${P2P_SIZES:-}
SIZES_MAX=${SIZES_MAX:-16777216}
P2P_MAX=${P2P_MAX:-4194304}
ITERS=${ITERS:-1000}
LAT_ITERS=${LAT_ITERS:-10000}
BW_ITERS=${BW_ITERS:-100}
REPS=${REPS:-5}
BUDGET_MS=${BUDGET_MS:-300}
FI_REPS=${FI_REPS:-3}
STRAGGLER_RANKS=${STRAGGLER_RANKS:-8}
STRAGGLER_SECONDS=${STRAGGLER_SECONDS:-0.8}
WORK=${WORK:-auto}
PYTHON=${PYTHON:-/usr/bin/python3}
ROUNDS=${ROUNDS:-1}
TIMEOUT=${TIMEOUT:-300}
HERE=$(cd "$(dirname "$0")" && pwd)
TMP=
BENCH_NAME=coll.sh
. "$HERE/common.sh"

declare -A HAVE # impl -> 1 when it can run here

# The arguments every program gets for a sweep of MODE.
sweep_args() {
	local list=$SIZES max=$SIZES_MAX iters=$ITERS
	case $1 in
	latency | bandwidth) list=$P2P_SIZES max=$P2P_MAX ;;
	esac
	case $1 in
	latency) iters=$LAT_ITERS ;;
	bandwidth) iters=$BW_ITERS ;;
	esac
	if [ -n "$list" ]; then
		printf -- '-l %s' "$list"
	else
		printf -- '-S %s' "$max"
	fi
	printf -- ' -n %s -r %s -t %s' "$iters" "$REPS" "$BUDGET_MS"
}

# A free TCP port on localhost, for fi_pingpong's control connection.
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# fi_pingpong's server in the background, then its client (retried while
# the server is not listening yet); the client's table on stdout.
FI_SCRIPT='fi="fi_pingpong -p shm -e rdm -m tagged -S $1 -I $2"
$fi -B "$3" >/dev/null 2>&1 &
for try in 1 2 3 4 5; do
	sleep 0.2
	$fi -P "$3" localhost 2>/dev/null && break
done
wait'

# The command line of a case IMPL[:ALGO]/MODE/N[/BYTES].
case_command() {
	local impl=${1%%/*} rest=${1#*/} mode n algo="" args bytes
	mode=${rest%%/*}
	rest=${rest#*/}
	n=${rest%%/*}
	case $impl in
	*:*) algo=${impl#*:} impl=${impl%%:*} ;;
	esac
	case $mode in
	alone) args="alone $WORK" ;;
	straggler*) args="straggler ${mode#straggler} $WORK" ;;
	*) args="$mode $(sweep_args "$mode")" ;;
	esac
	case $impl in
	libworld)
		# worldrun drops inherited WORLD_* names: -x hands it to the ranks.
		printf '%q -n %s ' "$WORLDRUN" "$n"
		[ -n "$algo" ] && printf -- '-x WORLD_COLL_ALGO=%q ' "$algo"
		printf '%q %s' "$BENCH_DIR/collbench" "$args" ;;
	mpich) printf 'mpiexec.mpich -n %s %q mpich %s' "$n" "$TMP/collmpi-mpich" "$args" ;;
	openmpi) printf 'mpirun.openmpi --allow-run-as-root --oversubscribe -n %s %q openmpi %s' \
		"$n" "$TMP/collmpi-openmpi" "$args" ;;
	gloo) printf 'env COLLWORK_SO=%q %q -n %s %q %q %s' "$TMP/libcollwork.so" "$WORLDRUN" \
		"$n" "$PYTHON" "$HERE/collgloo.py" "$args" ;;
	c10d) printf 'env COLLWORK_SO=%q COLL_BACKEND=world PYTHONPATH=%q %q -n %s %q %q %s' \
		"$TMP/libcollwork.so" "$PYPATH" "$WORLDRUN" "$n" "$PYTHON" "$HERE/collgloo.py" "$args" ;;
	fi_pingpong)
		bytes=${rest#*/}
		printf 'bash -c %q fi_pingpong %s %s %s' "$FI_SCRIPT" "$bytes" \
			"$(fi_iters "$bytes")" "$(free_port)" ;;
	esac
}

# collmpi's count for one size: LAT_ITERS up to 8 KiB, halved per doubling.
fi_iters() {
	local k=$LAT_ITERS b=$1
	while [ "$b" -gt 8192 ] && [ "$k" -gt 1 ]; do
		b=$((b / 2))
		k=$((k / 2))
	done
	echo "$k"
}

# One run's rows: the programs print them already; fi_pingpong's client
# table line becomes a latency row (usec/xfer: half its round trip) and a
# bandwidth row (us per message from its MB/sec); its CPU is not measured.
to_rows() {
	case $1 in
	fi_pingpong/*)
		awk -v b="${1##*/}" 'NR > 1 && NF == 8 && $6 > 0 {
			printf "fi_pingpong\tlatency\t2\t%s\t-\t%s\t-\n", b, $7
			printf "fi_pingpong\tbandwidth\t2\t%s\t-\t%.3f\t-\n", b, b / $6
		}' ;;
	*) awk -F '\t' 'NF == 7' ;;
	esac
}

# Builds what the anchors need into TMP and sets HAVE[impl] for those that
# can run; says why the others are missing.
prepare() {
	local impl
	TMP=$(mktemp -d /tmp/worldrun-coll.XXXXXX)
	for impl in $IMPLS; do
		case $impl in
		libworld)
			if [ -x "$BENCH_DIR/collbench" ]; then
				HAVE[$impl]=1
			else
				echo "coll.sh: libworld: missing ($BENCH_DIR/collbench is not built)"
			fi ;;
		mpich | openmpi)
			if "mpicc.$impl" -O2 -o "$TMP/collmpi-$impl" "$HERE/collmpi.c" 2>>"$OUT/raw.log"; then
				HAVE[$impl]=1
			else
				echo "coll.sh: $impl: missing (mpicc.$impl could not build collmpi.c)"
			fi ;;
		gloo)
			if "$PYTHON" -c 'import torch.distributed' 2>/dev/null; then
				HAVE[$impl]=1
			else
				echo "coll.sh: gloo: missing ($PYTHON cannot import torch.distributed)"
			fi ;;
		c10d)
			PYPATH=$(readlink -f "$BENCH_DIR/../../runtime/python")
			if PYTHONPATH=$PYPATH "$PYTHON" -c 'import world.c10d' 2>/dev/null; then
				HAVE[$impl]=1
			else
				echo "coll.sh: c10d: missing (the backend is not built in $PYPATH: libtorch-dev)"
			fi ;;
		fi_pingpong)
			if fi_info -p shm >/dev/null 2>&1; then
				HAVE[$impl]=1
			else
				echo "coll.sh: fi_pingpong: missing (no fi_info, or no shm provider)"
			fi ;;
		*) echo "coll.sh: unknown impl $impl" >&2; exit 2 ;;
		esac
	done
	if ! cc -O2 -shared -fPIC -o "$TMP/libcollwork.so" "$HERE/collwork.c" 2>>"$OUT/raw.log"; then
		echo "coll.sh: cannot build collwork.c; no straggler" >&2
	fi
}

# The straggler's WORK: the steps of collwork.h that take STRAGGLER_SECONDS
# of CPU here, found by doubling a short run. CPU time, not wall time: on
# a shared machine a loaded moment would otherwise halve the work.
calibrate_work() {
	python3 - "$TMP/libcollwork.so" "$STRAGGLER_SECONDS" <<'EOF'
import ctypes, sys, time
run = ctypes.CDLL(sys.argv[1]).coll_work_run
run.restype, run.argtypes = ctypes.c_double, [ctypes.c_long]
n = 1000000
while True:
    t = time.process_time()
    run(n)
    t = time.process_time() - t
    if t > 0.1:
        break
    n *= 2
print(int(n * float(sys.argv[2]) / t))
EOF
}

# The impls of a libworld case: one per forced algorithm, or the default.
variants() {
	local a
	if [ "$1" = libworld ] && [ -n "$ALGOS" ]; then
		for a in $ALGOS; do echo "libworld:$a"; done
	else
		echo "$1"
	fi
}

# CASES, grouped by (op, ranks) with the impls next to each other, so a
# change of load falls on all of them alike.
make_cases() {
	local n op impl v b
	CASES=()
	# One fi_pingpong run gives both its latency and its bandwidth row.
	if [ -n "${HAVE[fi_pingpong]:-}" ]; then
		for b in $(fi_sizes); do
			for ((v = 0; v < FI_REPS; v++)); do CASES+=("fi_pingpong/latency/2/$b"); done
		done
	fi
	for op in latency bandwidth; do
		for impl in $IMPLS; do
			[ -n "${HAVE[$impl]:-}" ] && [ "$impl" != fi_pingpong ] || continue
			for v in $(variants "$impl"); do CASES+=("$v/$op/2"); done
		done
	done
	for n in $RANKS; do
		for op in all_reduce broadcast all_gather barrier; do
			for impl in $IMPLS; do
				[ -n "${HAVE[$impl]:-}" ] && [ "$impl" != fi_pingpong ] || continue
				for v in $(variants "$impl"); do CASES+=("$v/$op/$n"); done
			done
		done
	done
	[ -s "$TMP/libcollwork.so" ] || return 0
	for op in alone straggler1 straggler2; do
		for impl in $IMPLS; do
			[ -n "${HAVE[$impl]:-}" ] && [ "$impl" != fi_pingpong ] || continue
			if [ "$op" = alone ]; then
				CASES+=("$impl/alone/1")
			else
				CASES+=("$impl/$op/$STRAGGLER_RANKS")
			fi
		done
	done
}

# The point-to-point sizes, as collmpi makes them.
fi_sizes() {
	local b=8
	if [ -n "$P2P_SIZES" ]; then
		tr , ' ' <<<"$P2P_SIZES"
		return
	fi
	while [ "$b" -le "$P2P_MAX" ]; do
		echo "$b"
		b=$((b * 2))
	done
}

cleanup() {
	[ -n "$TMP" ] && rm -rf "$TMP"
}

main() {
	local name
	if [ $# -lt 2 ]; then
		echo "usage: coll.sh OUT_DIR BUILD_DIR | coll.sh OUT_DIR WORLDRUN BENCH_DIR" >&2
		exit 2
	fi
	OUT=$1
	shift
	bench_binaries -- "$@"
	mkdir -p "$OUT" || exit 2
	ROWS=$OUT/rows.tsv
	: >"$ROWS"
	: >"$OUT/raw.log"
	trap cleanup EXIT
	echo "coll.sh: $(nproc) cpus, load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
	prepare
	if [ "$WORK" = auto ] && [ -s "$TMP/libcollwork.so" ]; then
		WORK=$(calibrate_work)
		echo "coll.sh: WORK=$WORK steps (about ${STRAGGLER_SECONDS} s alone, calibrated now)"
	fi
	make_cases
	echo "coll.sh: ${#CASES[@]} runs, RANKS=\"$RANKS\", QUICK=$QUICK; commands:"
	for name in "${CASES[@]}"; do
		[ "${name#fi_pingpong/}" = "$name" ] && echo "  $(case_command "$name")"
	done
	[ -n "${HAVE[fi_pingpong]:-}" ] && echo "  fi_pingpong -p shm -e rdm -m tagged -S BYTES -I ITERS" \
		"-B PORT & fi_pingpong ... -P PORT localhost (each size, $FI_REPS runs)"
	run_rounds
	echo "coll.sh: load average at end: $(cut -d' ' -f1-3 /proc/loadavg); rows in $ROWS"
	echo
	python3 "$HERE/colltable.py" --straggler-ranks "$STRAGGLER_RANKS" --plots "$OUT" \
		"$ROWS" | tee "$OUT/table.txt"
}

main "$@"
exit 0
