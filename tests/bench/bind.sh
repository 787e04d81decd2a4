#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bind.sh: what binding ranks to cores buys on this machine (issue 35):
# bindwork's memory-bound triad and cache-bound sums on RANKS ranks (by
# default 1, one per core, and two per core), each with --bind-to none
# and --bind-to core, side by side in ROUNDS rounds whose order rotates.
# A row is the ranks' summed rate (GB/s, 10^9 B) and their CPU changes,
# medians over rounds, and core/none: above 1 binding helps. No target:
# the figures are reported as they come, nothing at all included.
#
# Usage: bind.sh BUILD_DIR | bind.sh WORLDRUN BENCH_DIR
# Settings (environment): RANKS="1 NCPU 2*NCPU" MODES="mem cache" SECS=3
#   ROUNDS=5 TIMEOUT=120 OUT=DIR (raw output kept there)
set -u -o pipefail
BENCH_NAME=bind.sh
. "$(dirname "$0")/common.sh"

NCPU=$(nproc)
RANKS=${RANKS:-"1 $NCPU $((2 * NCPU))"}
MODES=${MODES:-"mem cache"}
SECS=${SECS:-3}
ROUNDS=${ROUNDS:-5}
TIMEOUT=${TIMEOUT:-120}

# Case "BIND/MODE/RANKS".
case_command() {
	local bind=${1%%/*} rest=${1#*/}
	printf '%q -n %s --bind-to %s %q %s %s' "$WORLDRUN" "${rest#*/}" "$bind" \
		"$BENCH_DIR/bindwork" "${rest%%/*}" "$SECS"
}

# bindwork's lines (rank mode gbps migrations) as "case round gbps SUM"
# and "case round moves SUM".
to_rows() {
	awk -v c="$1" -v r="$2" 'NF == 4 && $3 ~ /^[0-9.]+$/ { g += $3; m += $4; n++ }
		END { if (n > 0) { printf "%s\t%s\tgbps\t%.3f\n%s\t%s\tmoves\t%d\n", c, r, g, c, r, m } }'
}

print_report() {
	awk -F '\t' -v rounds="$ROUNDS" -v modes="$MODES" -v ranks="$RANKS" "$STATS_AWK"'
	END {
		printf "%-6s %6s %12s %12s %8s %12s %12s\n", "mode", "ranks", "none GB/s",
			"core GB/s", "core/none", "none moves", "core moves"
		nm = split(modes, m, " ")
		nr = split(ranks, n, " ")
		for (i = 1; i <= nm; i++) {
			for (j = 1; j <= nr; j++) {
				k = m[i] "/" n[j]
				printf "%-6s %6s %12s %12s %8s %12s %12s\n", m[i], n[j],
					cell("none/" k, "gbps", "%.2f"), cell("core/" k, "gbps", "%.2f"),
					rcell("core/" k, "none/" k, "gbps"),
					cell("none/" k, "moves", "%.0f"), cell("core/" k, "moves", "%.0f")
			}
		}
	}' "$ROWS"
}

main() {
	local mode n
	bench_binaries bindwork -- "$@"
	bench_out
	CASES=()
	for mode in $MODES; do
		for n in $RANKS; do
			CASES+=("none/$mode/$n" "core/$mode/$n")
		done
	done
	bench_sitting
	print_report
}

main "$@"
exit 0
