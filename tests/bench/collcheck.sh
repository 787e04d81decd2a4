#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# collcheck.sh: what comparing every collective's arguments across its
# members costs (issue 30, point 5): collbench from a build with the check
# and from one without (meson setup -Dcoll-check=false), side by side in
# the same sitting, ROUNDS rounds whose order rotates; the table gives
# medians over rounds, the median of the per-round ratios, and the fastest
# round of each with their ratio (on a loaded machine, the rounds that
# nothing else disturbed; the medians mix them with those it did).
# Targets: at most 1.03 on a 4 B all_reduce of 8 ranks, nothing
# measurable above 64 KiB. The verdicts are informational: the script
# exits 0 whenever it could measure. See README.md.
#
# Usage: collcheck.sh CHECK_BUILD_DIR NOCHECK_BUILD_DIR
# Settings (environment): RANKS=8 OPS="all_reduce broadcast barrier"
#   SIZES=4,65536,1048576 ROUNDS=6 ITERS=1000 REPS=5 BUDGET_MS=300
#   TIMEOUT=300 OUT=DIR (raw output kept there); WORLD_FABRIC passes on
#   (tcp: the message path; default shm: the shared area)
set -u -o pipefail

RANKS=${RANKS:-8}
OPS=${OPS:-"all_reduce broadcast barrier"}
SIZES=${SIZES:-4,65536,1048576}
ROUNDS=${ROUNDS:-6}
ITERS=${ITERS:-1000}
REPS=${REPS:-5}
BUDGET_MS=${BUDGET_MS:-300}
TIMEOUT=${TIMEOUT:-300}
BENCH_NAME=collcheck.sh
. "$(dirname "$0")/common.sh"

# The command line of case "BUILD/OP", BUILD check or nocheck.
case_command() {
	local dir=$CHECK_DIR op=${1#*/}
	[ "${1%%/*}" = nocheck ] && dir=$NOCHECK_DIR
	printf '%q -n %s %q %s -l %s -n %s -r %s -t %s' "$dir/cmd/worldrun/worldrun" \
		"$RANKS" "$dir/tests/bench/collbench" "$op" "$SIZES" "$ITERS" "$REPS" "$BUDGET_MS"
}

# collbench's rows (impl op ranks bytes algo median_us cpu) as
# "case round bytes median_us".
to_rows() {
	awk -F '\t' -v c="$1" -v r="$2" 'NF == 7 { printf "%s\t%s\t%s\t%s\n", c, r, $4, $6 }'
}

print_report() {
	awk -F '\t' -v rounds="$ROUNDS" -v ops="$OPS" -v sizes="$SIZES" "$STATS_AWK"'
	END {
		printf "%-11s %8s %10s %10s %8s %10s %10s %8s %9s\n", "op", "bytes", "check us",
			"nocheck us", "ratio", "check min", "nocheck min", "ratio", "extra us"
		no = split(ops, o, " ")
		ns = split(sizes, s, ",")
		for (i = 1; i <= no; i++) {
			for (j = 1; j <= (o[i] == "barrier" ? 1 : ns); j++) {
				b = o[i] == "barrier" ? 0 : s[j]
				x = cell("check/" o[i], b, "%.2f")
				lc = LO
				y = cell("nocheck/" o[i], b, "%.2f")
				printf "%-11s %8s %10s %10s %8s %10.2f %10.2f %8.2f %9s\n", o[i], b, x, y,
					rcell("check/" o[i], "nocheck/" o[i], b), lc, LO,
					(LO > 0 ? lc / LO : 0),
					(x == "-" || y == "-" ? "-" : sprintf("%.2f", x - y))
			}
		}
		# Over messages the check is an agreement before the algorithm
		# (collcheck.h): a checked barrier is that agreement alone, the
		# floor of the "extra" column there.
		a = cell("check/barrier", 0, "%.2f")
		if (a != "-")
			printf "\nthe agreement alone (a checked barrier): %s us; a barrier without it: %s us\n",
				a, cell("nocheck/barrier", 0, "%.2f")
		print ""
		print "Targets (issue 30; ratios are medians of per-round ratios of medians):"
		verdict("all_reduce 4 B: check / nocheck, <= 1.03",
			ratio("check/all_reduce", "nocheck/all_reduce", 4), 1.03, 1)
	}' "$ROWS"
}

main() {
	local op
	[ $# -eq 2 ] || { echo "usage: collcheck.sh CHECK_BUILD_DIR NOCHECK_BUILD_DIR" >&2; exit 2; }
	CHECK_DIR=$1
	NOCHECK_DIR=$2
	bench_binaries collbench -- "$CHECK_DIR"
	bench_binaries collbench -- "$NOCHECK_DIR"
	bench_out
	CASES=()
	for op in $OPS; do
		CASES+=("check/$op" "nocheck/$op")
	done
	bench_sitting
	print_report
}

main "$@"
exit 0
