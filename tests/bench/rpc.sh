#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# rpc.sh: libworld's RPC between ranks of one worldrun job (rpcbench), on
# the Unix socket and on loopback TCP:
#   round trip: `worldrun -n 2 rpcbench rtt`: rank 1 times world_call of an
#     empty service on rank 0, one at a time, alternating in blocks with
#     world_kv_get (the registry through the same library), and
#     `worldrun -n 1 regbench rtt` gives the registry's round trip with
#     its blocking client (as registry.sh measures it); the rpcbench run
#     again with WORLD_SPIN_US=0 shows what looking before sleeping gives;
#   throughput: `worldrun -n 1+CALLERS rpcbench tput`: ranks 1..CALLERS
#     call the empty service on rank 0 for SECONDS;
#   blobs: `worldrun -n 2 rpcbench blob`: one-way MB/s of BLOB_BYTES calls
#     with an empty reply (1 MB = 10^6 B).
# The cases run in ROUNDS rounds, in an order that rotates; the table gives
# medians over rounds, ratios are taken within a round. Targets: call p50
# under 2x the registry's round trip; blobs at least 1000 MB/s. The
# verdicts are informational: the script exits 0 whenever it could
# measure. See README.md.
#
# Usage: rpc.sh BUILD_DIR | rpc.sh WORLDRUN BENCH_DIR
# Settings (environment): ROUNDS=3 RTT_N=20000 WARMUP=500 CALLERS=8
#   SECONDS_=5 BLOB_BYTES=16777216 BLOB_N=20 TIMEOUT=300 (per run)
#   PIN=none|same (same: every process of a run on CPU 0, as registry.sh)
#   OUT=DIR (raw output kept there)
set -u -o pipefail

ROUNDS=${ROUNDS:-3}
RTT_N=${RTT_N:-20000}
WARMUP=${WARMUP:-500}
CALLERS=${CALLERS:-8}
SECONDS_=${SECONDS_:-5}
BLOB_BYTES=${BLOB_BYTES:-16777216}
BLOB_N=${BLOB_N:-20}
TIMEOUT=${TIMEOUT:-300}
PIN=${PIN:-none}
BENCH_NAME=rpc.sh
. "$(dirname "$0")/common.sh"

# The command line of a case "KIND/TRANSPORT".
case_command() {
	local kind=${1%/*} t=${1#*/}

	[ "$PIN" = same ] && printf 'taskset -c 0 '
	case $kind in
	rtt) printf '%q -n 2 %q rtt -t %s -n %s -w %s' "$WORLDRUN" "$RPCBENCH" "$t" \
		"$RTT_N" "$WARMUP" ;;
	block) printf 'env WORLD_SPIN_US=0 %q -n 2 %q rtt -t %s -n %s -w %s' "$WORLDRUN" \
		"$RPCBENCH" "$t" "$RTT_N" "$WARMUP" ;;
	registry) printf '%q -n 1 %q rtt -t %s -n %s -w %s' "$WORLDRUN" "$REGBENCH" "$t" \
		"$RTT_N" "$WARMUP" ;;
	tput) printf '%q -n %s %q tput -t %s -s %s -w %s' "$WORLDRUN" $((CALLERS + 1)) \
		"$RPCBENCH" "$t" "$SECONDS_" "$WARMUP" ;;
	blob) printf '%q -n 2 %q blob -t %s -b %s -n %s -w 2' "$WORLDRUN" "$RPCBENCH" \
		"$t" "$BLOB_BYTES" "$BLOB_N" ;;
	esac
}

# One run's name=value lines as "case round metric value" rows; the case
# of an rtt line is rtt-WHAT/TRANSPORT (block-WHAT/TRANSPORT without spinning).
to_rows() {
	local name=$1 round=$2
	awk -v c="$name" -v r="$round" '
	/^(rtt|tput|blob) / {
		k = c
		for (i = 2; i <= NF; i++) {
			split($i, kv, "=")
			if (kv[1] == "what") k = substr(c, 1, index(c, "/") - 1) "-" kv[2] "/" \
				substr(c, index(c, "/") + 1)
		}
		for (i = 2; i <= NF; i++) {
			split($i, kv, "=")
			if (kv[1] ~ /_us$|^cps$|^caller_m|^mbps$/) printf "%s\t%s\t%s\t%s\n", k, r, kv[1], kv[2]
		}
	}'
}

print_report() {
	awk -F '\t' -v rounds="$ROUNDS" -v callers="$CALLERS" -v bytes="$BLOB_BYTES" "$STATS_AWK"'
	function rtt_row(t, c, label) {
		printf "%-5s %-28s %8s %8s %13s %8s %7s %7s %7s\n", t, label, cell(c, "mean_us", "%.1f"),
			cell(c, "p50_us", "%.1f"), span(c, "p50_us", "%.1f"), cell(c, "p99_us", "%.1f"),
			c ~ /^rtt-call/ ? rcell(c, "rtt-kv_get/" t, "p50_us") : "",
			c ~ /^rtt-call/ ? rcell(c, "registry/" t, "p50_us") : "",
			c ~ /^rtt-call/ ? rcell(c, "registry/" t, "p99_us") : ""
	}
	END {
		print "Round trip, one caller thread, one call at a time (us; median over rounds):"
		printf "%-5s %-28s %8s %8s %13s %8s %7s %7s %7s\n", "via", "what", "mean", "p50",
			"p50 min-max", "p99", "p50 x", "p50 x", "p99 x"
		printf "%-5s %-28s %8s %8s %13s %8s %7s %7s %7s\n", "", "", "", "", "", "",
			"kv_get", "regcli", "regcli"
		for (t = 0; t < 2; t++) {
			tr = t ? "tcp" : "unix"
			rtt_row(tr, "rtt-call/" tr, "world_call, empty")
			rtt_row(tr, "rtt-kv_get/" tr, "world_kv_get (registry)")
			rtt_row(tr, "registry/" tr, "regclient kv.get (registry)")
			rtt_row(tr, "block-call/" tr, "world_call, no spin")
			rtt_row(tr, "block-kv_get/" tr, "world_kv_get, no spin")
		}
		print ""
		printf "Throughput, %d ranks calling one service on rank 0 (calls/s; median over rounds):\n", callers
		printf "%-5s %10s %21s %12s %12s\n", "via", "calls/s", "min-max", "slowest", "fastest"
		printf "%-5s %10s %21s %12s %12s\n", "", "", "", "caller", "caller"
		for (t = 0; t < 2; t++) {
			tr = t ? "tcp" : "unix"
			printf "%-5s %10s %21s %12s %12s\n", tr, cell("tput/" tr, "cps", "%.0f"),
				span("tput/" tr, "cps", "%.0f"), cell("tput/" tr, "caller_min", "%.0f"),
				cell("tput/" tr, "caller_max", "%.0f")
		}
		print ""
		printf "One-way blob calls, %d B each, empty reply (median over rounds):\n", bytes
		printf "%-5s %8s %13s %12s %12s\n", "via", "MB/s", "min-max", "p50 ms/call", "p99 ms/call"
		for (t = 0; t < 2; t++) {
			tr = t ? "tcp" : "unix"
			p50 = med("blob/" tr, "p50_us"); p99 = med("blob/" tr, "p99_us")
			printf "%-5s %8s %13s %12s %12s\n", tr, cell("blob/" tr, "mbps", "%.0f"),
				span("blob/" tr, "mbps", "%.0f"), p50 == "" ? "-" : sprintf("%.1f", p50 / 1000),
				p99 == "" ? "-" : sprintf("%.1f", p99 / 1000)
		}
		print ""
		print "Targets (issue 3; ratios are medians of per-round ratios):"
		for (t = 0; t < 2; t++) {
			tr = t ? "tcp" : "unix"
			verdict(sprintf("%-5s call p50 / world_kv_get p50, < 2.0", tr ":"),
				ratio("rtt-call/" tr, "rtt-kv_get/" tr, "p50_us"), 2.0, 2)
			verdict(sprintf("%-5s call p99 / world_kv_get p99, < 2.0", tr ":"),
				ratio("rtt-call/" tr, "rtt-kv_get/" tr, "p99_us"), 2.0, 2)
			verdict(sprintf("%-5s call p50 / regclient kv.get p50, < 2.0", tr ":"),
				ratio("rtt-call/" tr, "registry/" tr, "p50_us"), 2.0, 2)
			verdict(sprintf("%-5s blob MB/s, >= 1000", tr ":"), med("blob/" tr, "mbps"), 1000, 0)
		}
	}' "$ROWS"
}

main() {
	local name
	bench_binaries rpcbench regbench -- "$@"
	RPCBENCH=$BENCH_DIR/rpcbench
	REGBENCH=$BENCH_DIR/regbench
	OUT=${OUT:-$(mktemp -d /tmp/worldrun-rpc.XXXXXX)}
	mkdir -p "$OUT"
	ROWS=$OUT/rows.tsv
	: >"$ROWS"
	: >"$OUT/raw.log"
	CASES=(rtt/unix registry/unix rtt/tcp registry/tcp block/unix block/tcp tput/unix tput/tcp
		blob/unix blob/tcp)
	echo "rpc.sh: $(nproc) cpus, load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
	case $PIN in
	none | same) ;;
	*) echo "rpc.sh: PIN must be none or same" >&2; exit 2 ;;
	esac
	echo "rpc.sh: $ROUNDS rounds, order rotating, PIN=$PIN; commands:"
	for name in "${CASES[@]}"; do
		echo "  $(case_command "$name")"
	done
	run_rounds
	echo "rpc.sh: load average at end: $(cut -d' ' -f1-3 /proc/loadavg); raw output in $OUT"
	echo
	print_report
	echo
	echo "Verdicts are informational. kv_get: world_kv_get in the same job, alternating"
	echo "with the calls in blocks of 500; regcli: regbench's blocking regclient, its own job."
	echo "-t tcp: the registry and peer connections over loopback TCP instead of the Unix socket."
	echo "no spin: the same rpcbench run with WORLD_SPIN_US=0, every wait sleeping at once."
}

main "$@"
exit 0
