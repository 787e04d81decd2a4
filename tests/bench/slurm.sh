#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# slurm.sh: launch inside a Slurm allocation, worldrun against
# mpiexec.hydra (-launcher slurm) and mpirun.openmpi, all three starting
# their daemons with srun, in the same allocation and sitting. A private
# Slurm (tests/cli/slurm.bash: a controller, munge and 3 emulated nodes
# on this host, SLURM_CPUS=32 each) is brought up for the run and taken
# down after it. For N = 8 and 64 ranks of /bin/true, one allocation
# "salloc -N3 -nN --ntasks-per-node=ceil(N/3)" holds every case of that
# N: the three tools, each given -n N (so the ranks fill the nodes' slots
# in order: 3+3+2, 22+22+20), and the floor, one srun step of one task per node
# (--overlap --whole, as worldrun's) each running forkexec for its node's
# ranks. Each case runs RUNS times per round (hyperfine -N), in ROUNDS
# rounds whose order rotates; the table gives medians over rounds and
# ratios within a round. Target (issue 14): worldrun at most the faster
# anchor's time. The verdicts are informational: the script exits 0
# whenever it could measure. Root only (slurmd). See README.md.
#
# Usage: slurm.sh BUILD_DIR
# Settings (environment): ROUNDS=5 RUNS=5 TIMEOUT=300 (per hyperfine call)
#   NS="8 64" (the rank counts) OUT=DIR (raw output kept there)
set -u -o pipefail

ROUNDS=${ROUNDS:-5}
RUNS=${RUNS:-5}
NS=${NS:-"8 64"}
TIMEOUT=${TIMEOUT:-300}
BENCH_NAME=slurm.sh
. "$(dirname "$0")/common.sh"

to_rows() {
	hyperfine_rows "$@"
}

# The ranks of each node when N fill the allocation's slots in node order
# (SLURM_TASKS_PER_NODE, "3(x3)" is "3 3 3"), as every tool places them.
node_counts() {
	local part left=$1 i
	for part in ${SLURM_TASKS_PER_NODE//,/ }; do
		if [[ $part =~ ^([0-9]+)\(x([0-9]+)\)$ ]]; then
			for ((i = 0; i < BASH_REMATCH[2]; i++)); do
				printf '%s ' "$((left < BASH_REMATCH[1] ? left : BASH_REMATCH[1]))"
				left=$((left < BASH_REMATCH[1] ? 0 : left - BASH_REMATCH[1]))
			done
		else
			printf '%s ' "$((left < part ? left : part))"
			left=$((left < part ? 0 : left - part))
		fi
	done
}

# The tool's command line for case "nN/TOOL", inside the allocation.
tool_line() {
	local n=${1%/*} tool=${1#*/}
	n=${n#n}
	case $tool in
	worldrun) printf '%q -n %s /bin/true' "$WORLDRUN" "$n" ;;
	hydra) printf 'mpiexec.hydra -launcher slurm -n %s /bin/true' "$n" ;;
	mpirun) printf 'mpirun.openmpi --allow-run-as-root --mca oob_tcp_if_include lo --mca btl_tcp_if_include lo -n %s /bin/true' "$n" ;;
	floor) printf 'bash %q/floor' "$OUT" ;;
	esac
}

# Inside the allocation of N ranks: every round of its cases.
inside() {
	local n=$1
	{
		printf 'export K_LIST=%q\n' "$(node_counts "$n")"
		printf 'exec srun --overlap --whole -N3 -n3 --ntasks-per-node=1 --mpi=none bash -c %q\n' \
			"set -- \$K_LIST; shift \$SLURM_NODEID; exec $BENCH_DIR/forkexec \$1"
	} >"$OUT/floor"
	echo "slurm.sh: allocation $SLURM_JOB_ID: $SLURM_JOB_NODELIST, tasks $SLURM_TASKS_PER_NODE, ranks $(node_counts "$n")"
	CASES=("n$n/worldrun" "n$n/hydra" "n$n/mpirun" "n$n/floor")
	for name in "${CASES[@]}"; do
		echo "  $name: $(tool_line "$name")"
	done
	run_rounds
}

print_report() {
	awk -F '\t' -v rounds="$ROUNDS" -v ns="$NS" "$STATS_AWK"'
	function row(c, base) {
		printf "%-4s %-9s %9s %17s %9s %8s %8s %8s\n", substr(c, 1, index(c, "/") - 1),
			substr(c, index(c, "/") + 1), cell(c, "median_ms", "%.1f"),
			span(c, "median_ms", "%.1f"), cell(c, "mean_ms", "%.1f"),
			rcell(c, base "/hydra", "median_ms"), rcell(c, base "/mpirun", "median_ms"),
			rcell(c, base "/floor", "median_ms")
	}
	function faster(base,   h, m) {
		h = ratio(base "/worldrun", base "/hydra", "median_ms")
		m = ratio(base "/worldrun", base "/mpirun", "median_ms")
		return h == "" ? m : m == "" ? h : (h > m ? h : m)
	}
	END {
		printf "%-4s %-9s %9s %17s %9s %8s %8s %8s\n", "N", "tool", "median", "min-max",
			"mean", "x", "x", "x"
		printf "%-4s %-9s %9s %17s %9s %8s %8s %8s\n", "", "", "ms", "ms", "ms", "hydra",
			"mpirun", "floor"
		k = split(ns, n, " ")
		for (i = 1; i <= k; i++) {
			b = "n" n[i]
			row(b "/worldrun", b); row(b "/hydra", b); row(b "/mpirun", b); row(b "/floor", b)
		}
		print ""
		print "Target (issue 14; ratios are medians of per-round ratios of medians):"
		for (i = 1; i <= k; i++)
			verdict(sprintf("%d ranks: worldrun / the faster anchor, <= 1.0", n[i]),
				faster("n" n[i]), 1.0, 1)
	}' "$ROWS"
}

check_tools() {
	local t
	if [ "$(id -u)" != 0 ]; then
		echo "slurm.sh: needs root (slurmd)" >&2
		exit 2
	fi
	for t in hyperfine jq mpiexec.hydra mpirun.openmpi slurmctld slurmd salloc srun munged; do
		if ! command -v "$t" >/dev/null 2>&1; then
			echo "slurm.sh: missing $t (apt-get install hyperfine jq mpich openmpi-bin slurmctld slurmd slurm-client munge)" >&2
			exit 2
		fi
	done
}

main() {
	local n
	if [ "${1:-}" = --inside ]; then
		bench_binaries forkexec -- "$3"
		inside "$2"
		return
	fi
	[ $# -eq 1 ] || { echo "usage: slurm.sh BUILD_DIR" >&2; exit 2; }
	BUILD=$(readlink -f "$1")
	bench_binaries forkexec -- "$BUILD"
	check_tools
	OUT=${OUT:-$(mktemp -d /tmp/worldrun-slurm.XXXXXX)}
	mkdir -p "$OUT"
	ROWS=$OUT/rows.tsv
	: >"$ROWS"
	: >"$OUT/raw.log"
	export OUT ROWS ROUNDS RUNS TIMEOUT
	SELF=$(readlink -f "$0")
	. "$(dirname "$0")/../cli/slurm.bash"
	SLURM_CPUS=32
	trap slurm_down EXIT
	trap "exit 143" TERM INT
	slurm_up || { echo "slurm.sh: the private Slurm did not come up" >&2; exit 2; }
	echo "slurm.sh: $(nproc) cpus, load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "slurm.sh: $ROUNDS rounds of $RUNS runs per case, order rotating"
	cd /
	for n in $NS; do
		timeout -k 5 3600 salloc -Q -N3 -n "$n" --ntasks-per-node=$(((n + 2) / 3)) \
			bash "$SELF" --inside "$n" "$BUILD" ||
			echo "slurm.sh: the allocation for $n ranks failed" >&2
	done
	echo "slurm.sh: load average at end: $(cut -d' ' -f1-3 /proc/loadavg); raw output in $OUT"
	echo
	print_report
}

main "$@"
