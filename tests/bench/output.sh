#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# output.sh: output throughput of worldrun against a plain pipe. The same
# writer binary runs as NP processes of BYTES each (100-byte lines):
#   direct:  NP writers started by this shell into one pipe | cat >/dev/null
#   worldrun -l:  worldrun -n NP -l writer BYTES | cat >/dev/null
#   worldrun:     the same without -l (for comparison only, no target)
# RUNS timed runs of each, interleaved, median reported; rates are payload
# bytes (NP * BYTES, labels not counted) per second, 1 MB = 10^6 B. A
# separate verification run pipes each into `wc -lc` and, for worldrun,
# checks every line (label, writer id, sequence, length) with awk. Target:
# worldrun -l at least 0.5x the direct rate; the verdict is informational.
#
# Usage: output.sh BUILD_DIR | output.sh WORLDRUN BENCH_DIR
# Settings (environment): NP=4 BYTES=256M RUNS=3 TIMEOUT=300 (per run)
set -u -o pipefail
BENCH_NAME=output.sh
. "$(dirname "$0")/common.sh"

NP=${NP:-4}
BYTES=${BYTES:-256M}
RUNS=${RUNS:-3}
TIMEOUT=${TIMEOUT:-300}
LINE=100

bytes_value() {
	case $1 in
	*K) echo $((${1%K} << 10)) ;;
	*M) echo $((${1%M} << 20)) ;;
	*G) echo $((${1%G} << 30)) ;;
	*) echo $(($1)) ;;
	esac
}

# The writers of the direct case, each with its own id, into one pipe.
direct_writers() {
	local i
	for ((i = 0; i < NP; i++)); do
		"$WRITER" -i "$i" "$BYTES" &
	done
	wait
}

# Runs one case into SINK ("null" or "wc"); stdout gets the sink's output.
run_case() {
	local what=$1 sink=$2
	local -a consume=(cat)
	if [ "$sink" = wc ]; then
		consume=(wc -lc)
	fi
	case $what in
	direct)
		direct_writers | "${consume[@]}" ;;
	labelled)
		timeout -k 5 "$TIMEOUT" "$WORLDRUN" -n "$NP" -l "$WRITER" "$BYTES" |
			"${consume[@]}" ;;
	plain)
		timeout -k 5 "$TIMEOUT" "$WORLDRUN" -n "$NP" "$WRITER" "$BYTES" |
			"${consume[@]}" ;;
	esac
}

# Prints the seconds one run of a case takes, or "fail".
time_case() {
	local what=$1 start end
	start=$EPOCHREALTIME
	if ! run_case "$what" null >/dev/null; then
		echo fail
		return
	fi
	end=$EPOCHREALTIME
	awk -v a="$start" -v b="$end" 'BEGIN { printf "%.4f\n", b - a }'
}

# Checks every line of worldrun -l output on stdin: "R: wR SEQ xxx",
# SEQ consecutive from 0 per rank, full length except each rank's last.
check_lines() {
	awk -v np="$NP" -v full=$((LINE + 2)) -v lines="$LINES_PER_WRITER" '
	{
		id = $1; sub(/:$/, "", id)
		if ($1 != id ":" || $2 != "w" id || id !~ /^[0-9]+$/ || id >= np) {
			bad++; next
		}
		if (done[id]) { bad++ }
		if (length($0) != full) { done[id] = 1 }
		# A short last line may end inside its sequence number.
		if (length($0) == full && $3 + 0 != count[id]) { bad++ }
		count[id]++
	}
	END {
		for (i = 0; i < np; i++) {
			if (count[i] != lines) { bad++ }
		}
		printf "%d\n", bad
	}'
}

verify() {
	local total lines expect_l expect_b got bad
	total=$((NP * PAYLOAD))
	lines=$((NP * LINES_PER_WRITER))
	VERIFY_OK=1
	got=$(run_case direct wc | awk '{ print $1, $2 }')
	printf "verify direct:      wc -lc %-22s expected %d %d\n" "$got" "$lines" "$total"
	[ "$got" = "$lines $total" ] || VERIFY_OK=0
	for what in labelled plain; do
		if [ "$what" = labelled ]; then
			expect_b=$((total + 3 * lines))
		else
			expect_b=$total
		fi
		expect_l=$lines
		got=$(run_case "$what" wc | awk '{ print $1, $2 }')
		printf "verify worldrun%-4s wc -lc %-22s expected %d %d\n" \
			"$([ "$what" = labelled ] && echo ' -l' || echo '')" "$got" \
			"$expect_l" "$expect_b"
		[ "$got" = "$expect_l $expect_b" ] || VERIFY_OK=0
	done
	bad=$(timeout -k 5 "$TIMEOUT" "$WORLDRUN" -n "$NP" -l "$WRITER" "$BYTES" | check_lines)
	echo "verify worldrun -l line by line (label, id, sequence, length): $bad bad"
	[ "$bad" = 0 ] || VERIFY_OK=0
}

median() {
	printf '%s\n' "$@" | grep -v fail | sort -g |
		awk '{ v[NR] = $1 } END { if (NR == 0) print "fail"; else print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

main() {
	local r what t
	local -a t_direct=() t_labelled=() t_plain=()
	bench_binaries writer -- "$@"
	WRITER=$BENCH_DIR/writer
	if [ "$NP" -gt 10 ]; then
		echo "output.sh: NP must be at most 10 (labels are then 3 bytes)" >&2
		exit 2
	fi
	PAYLOAD=$(bytes_value "$BYTES")
	LINES_PER_WRITER=$(((PAYLOAD + LINE - 1) / LINE))
	echo "output.sh: $NP writers x $BYTES ($PAYLOAD B) of $LINE-byte lines;" \
		"$(nproc) cpus, load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "  direct:      (for i in 0..$((NP - 1)); do $WRITER -i \$i $BYTES & done; wait) | cat >/dev/null"
	echo "  worldrun -l: $WORLDRUN -n $NP -l $WRITER $BYTES | cat >/dev/null"
	echo "  worldrun:    $WORLDRUN -n $NP $WRITER $BYTES | cat >/dev/null"
	verify
	for ((r = 1; r <= RUNS; r++)); do
		t_direct+=("$(time_case direct)")
		t_labelled+=("$(time_case labelled)")
		t_plain+=("$(time_case plain)")
		echo "run $r: direct ${t_direct[-1]} s, worldrun -l ${t_labelled[-1]} s," \
			"worldrun ${t_plain[-1]} s"
	done
	echo "output.sh: load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo
	report "$(median "${t_direct[@]}")" "$(median "${t_labelled[@]}")" \
		"$(median "${t_plain[@]}")"
}

report() {
	awk -v d="$1" -v l="$2" -v p="$3" -v bytes=$((NP * PAYLOAD)) \
		-v runs="$RUNS" -v ok="$VERIFY_OK" '
	function row(name, t) {
		if (t == "fail") {
			printf "%-12s %10s %10s %8s\n", name, "fail", "-", "-"
			return
		}
		printf "%-12s %10.3f %10.0f %8.2f\n", name, t, bytes / t / 1e6,
			(d == "fail") ? 0 : d / t
	}
	BEGIN {
		printf "%-12s %10s %10s %8s\n", "case", "median s", "MB/s", "x direct"
		row("direct", d); row("worldrun -l", l); row("worldrun", p)
		print ""
		printf "(median of %d runs; MB/s = %d payload bytes / s / 1e6)\n", runs, bytes
		if (d == "fail" || l == "fail") {
			print "Target: worldrun -l >= 0.5x direct: NO DATA"
		} else {
			printf "Target: worldrun -l >= 0.5x direct: %.2f %s\n", d / l,
				(d / l >= 0.5) ? "PASS" : "MISS"
		}
		printf "Verification (line and byte counts): %s\n", ok ? "OK" : "FAILED"
	}'
}

main "$@"
exit 0
