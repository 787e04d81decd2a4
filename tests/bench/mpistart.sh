#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# mpistart.sh: the start-up of an MPI program that does MPI_Init and
# MPI_Finalize only (wr-mpi init), under worldrun and under the MPI's own
# launcher, for N ranks on this machine, in the same sitting: MPICH's
# (wr-mpi, worldrun's PMI-1 server) against mpiexec.hydra, or with
# MPI=openmpi Open MPI's (wr-ompi, worldrun's PMIx server) against
# mpirun. Each case RUNS times per round (hyperfine -N), in ROUNDS rounds
# whose order rotates; the table gives medians over rounds and ratios
# within a round. Targets: worldrun at most the anchor's time at each N
# (issues 13 and 32). The verdicts are informational: the script exits 0
# whenever it could measure. See README.md.
#
# Usage: mpistart.sh BUILD_DIR
# Settings (environment): MPI=mpich|openmpi SIZES="1 8 64" ROUNDS=5 RUNS=5
#   TIMEOUT=300 OUT=DIR (raw output kept there)
set -u -o pipefail

MPI=${MPI:-mpich}
SIZES=${SIZES:-"1 8 64"}
ROUNDS=${ROUNDS:-5}
RUNS=${RUNS:-5}
TIMEOUT=${TIMEOUT:-300}
BENCH_NAME=mpistart.sh
. "$(dirname "$0")/common.sh"

to_rows() {
	hyperfine_rows "$@"
}

# The command line of case "N/TOOL".
tool_line() {
	local n=${1%/*} tool=${1#*/}
	case $tool in
	worldrun) printf '%q -n %s %q init' "$WORLDRUN" "$n" "$MPIPROG" ;;
	hydra) printf 'mpiexec.hydra -n %s %q init' "$n" "$MPIPROG" ;;
	mpirun) printf 'mpirun.openmpi --oversubscribe -n %s %q init' "$n" "$MPIPROG" ;;
	esac
}



print_report() {
	awk -F '\t' -v rounds="$ROUNDS" -v sizes="$SIZES" -v anchor="$ANCHOR" "$STATS_AWK"'
	END {
		printf "%-5s %-9s %9s %17s %8s\n", "N", "tool", "median", "min-max", "x " anchor
		n = split(sizes, s, " ")
		for (i = 1; i <= n; i++) {
			for (t = 0; t < 2; t++) {
				c = s[i] "/" (t ? anchor : "worldrun")
				printf "%-5s %-9s %9s %17s %8s\n", s[i], t ? anchor : "worldrun",
					cell(c, "median_ms", "%.1f"), span(c, "median_ms", "%.1f"),
					rcell(c, s[i] "/" anchor, "median_ms")
			}
		}
		print ""
		print "Target (issues 13, 32; ratios are medians of per-round ratios of medians):"
		for (i = 1; i <= n; i++) {
			verdict(sprintf("N=%s: worldrun / %s, <= 1.0", s[i], anchor),
				ratio(s[i] "/worldrun", s[i] "/" anchor, "median_ms"), 1.0, 1)
		}
	}' "$ROWS"
}

main() {
	local name n
	[ $# -eq 1 ] || { echo "usage: mpistart.sh BUILD_DIR" >&2; exit 2; }
	bench_binaries -- "$1"
	case $MPI in
	mpich) MPIPROG=$1/tests/helpers/wr-mpi ANCHOR=hydra LAUNCHER=mpiexec.hydra
		PKGS="mpich libmpich-dev" ;;
	openmpi) MPIPROG=$1/tests/helpers/wr-ompi ANCHOR=mpirun LAUNCHER=mpirun.openmpi
		PKGS="openmpi-bin libopenmpi-dev"
		# Open MPI runs as root only when told (CI and this bench do).
		export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 ;;
	*) echo "mpistart.sh: MPI=$MPI: expected mpich or openmpi" >&2; exit 2 ;;
	esac
	for t in hyperfine jq "$LAUNCHER" "$MPIPROG"; do
		if ! command -v "$t" >/dev/null 2>&1; then
			echo "mpistart.sh: missing $t (apt-get install hyperfine jq $PKGS)" >&2
			exit 2
		fi
	done
	OUT=${OUT:-$(mktemp -d /tmp/worldrun-mpistart.XXXXXX)}
	mkdir -p "$OUT"
	ROWS=$OUT/rows.tsv
	: >"$ROWS"
	: >"$OUT/raw.log"
	CASES=()
	for n in $SIZES; do
		CASES+=("$n/worldrun" "$n/$ANCHOR")
	done
	echo "mpistart.sh: $(nproc) cpus, load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "mpistart.sh: $ROUNDS rounds of $RUNS runs per case, order rotating; commands:"
	for name in "${CASES[@]}"; do
		echo "  $name: $(tool_line "$name")"
	done
	run_rounds
	echo "mpistart.sh: load average at end: $(cut -d' ' -f1-3 /proc/loadavg); raw output in $OUT"
	echo
	print_report
}

main "$@"
exit 0
