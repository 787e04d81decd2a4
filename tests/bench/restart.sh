#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# restart.sh: how long --max-restarts takes to bring a job back, against
# a fresh launch of the same job, in the same sitting (issue 33's goal:
# a restart of a 64-rank job at most 1.5x a fresh launch).
#
# fresh:   from just before `worldrun -n N` starts to the moment the last
#          of its N ranks runs;
# restart: from worldrun's failure line for rank 0 of attempt 0 (which
#          exits 3 at once) to the moment the last rank of attempt 1 runs,
#          as the issue measures it. Rank 0 fails while the others may
#          still be starting: the failure line waits for them, and so
#          "from the rank's exit" (also shown) counts the rest of the first
#          launch too.
# Every rank is `bash -c` reading $EPOCHREALTIME (no fork), in both;
# worldrun's stderr lines are stamped as they come. The runs alternate,
# RUNS of each; the table gives medians and the ratio restart / fresh.
#
# With HOSTS=3 the ranks go over the three network namespaces with a
# real sshd each (tests/cli/netns.bash; root only), N/3 per host through
# one ssh wrapper, and a third column gives the ssh floor: that ssh to
# each host at once running true (a restart starts every agent anew).
#
# Usage: restart.sh BUILD_DIR | restart.sh WORLDRUN BENCH_DIR
# Settings (environment): SIZES="8 64" RUNS=15 TIMEOUT=60 OUT=DIR HOSTS=0|3
set -u -o pipefail
BENCH_NAME=restart.sh
. "$(dirname "$0")/common.sh"

SIZES=${SIZES:-"8 64"}
RUNS=${RUNS:-15}
TIMEOUT=${TIMEOUT:-60}
HOSTS=${HOSTS:-0}
bench_binaries -- "$@"
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
WHERE=()
# trees_in_tmp: the trees under /tmp that the hosts must see (netns.bash).
trees_in_tmp() {
	local d
	for d in "$(readlink -f "$(dirname "$WORLDRUN")")" "$(readlink -f "$(dirname "$0")/../..")"; do
		case $d in /tmp/*) echo "$d" ;; esac
	done | sort -u
}

if [ "$HOSTS" != 0 ]; then
	[ "$HOSTS" = 3 ] || { echo "restart.sh: HOSTS is 0 or 3" >&2; exit 2; }
	bench_hosts_up
	cd /
fi

# where N: the options that put N ranks where the settings say.
where() {
	local i list=
	WHERE=()
	[ "$HOSTS" != 0 ] || { WHERE=(-n "$1"); return; }
	for i in $(seq "$HOSTS"); do
		list+=${list:+,}$(host_addr "$i"):$(($1 / HOSTS + (i <= $1 % HOSTS)))
	done
	WHERE=(-H "$list" --rsh "$WRAP")
}

# floor: seconds for one ssh to every host at once, running true.
floor() {
	local t0 i
	t0=$EPOCHREALTIME
	for i in $(seq "$HOSTS"); do
		"$WRAP" "$(host_addr "$i")" true &
	done
	wait
	awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.4f\n", b - a }'
}

# The rank: attempt 0's rank 0 notes when it fails, then fails; the other
# ranks of attempt 0 wait to be stopped; every rank notes when it runs.
RANK='echo "run $WORLD_RESTART_COUNT $EPOCHREALTIME"
if [ "$WORLD_RESTART_COUNT" = 0 ] && [ "$RESTARTS" = 1 ]; then
	if [ "$WORLD_RANK" = 0 ]; then echo "fail $EPOCHREALTIME"; exit 3; fi
	exec sleep 60
fi'

# one N RESTARTS: prints the seconds it measured (restart: from the
# failure line, then from the rank's exit).
one() {
	local n=$1 restarts=$2 t0 out
	t0=$EPOCHREALTIME
	where "$n"
	out=$({ RESTARTS=$restarts timeout -k 5 "$TIMEOUT" "$WORLDRUN" "${WHERE[@]}" -x RESTARTS \
		--max-restarts "$restarts" --monitor-interval 0.001 bash --norc -c "$RANK" 2>&1 1>&3 |
		while IFS= read -r line; do echo "err $EPOCHREALTIME $line"; done; } 3>&1)
	echo "$out" >>"$OUT/raw.log"
	awk -v t0="$t0" -v r="$restarts" '
		$1 == "fail" { fail = $2 }
		$1 == "err" && line == "" && / exited with status 3 / { line = $2 }
		$1 == "run" && $2 == r && $3 > last { last = $3 }
		END { if (r == 1) printf "%.4f %.4f\n", last - line, last - fail
		      else printf "%.4f\n", last - t0 }' <<<"$out"
}

# median [COLUMN]: of the numbers in COLUMN (default 1) of stdin.
median() {
	awk -v c="${1:-1}" '{ print $c }' | sort -n |
		awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

[ "$HOSTS" = 0 ] || echo "restart.sh: over $HOSTS sshd hosts; ssh floor: one ssh to each at once"
printf '%-6s %12s %12s %8s  %s\n' ranks "fresh (ms)" "restart (ms)" ratio \
	"(restart from the rank's exit)"
for n in $SIZES; do
	: >"$OUT/fresh.$n"
	: >"$OUT/restart.$n"
	: >"$OUT/floor"
	for _ in $(seq "$RUNS"); do
		one "$n" 0 >>"$OUT/fresh.$n"
		one "$n" 1 >>"$OUT/restart.$n"
		[ "$HOSTS" = 0 ] || floor >>"$OUT/floor"
	done
	f=$(median <"$OUT/fresh.$n")
	r=$(median 1 <"$OUT/restart.$n")
	e=$(median 2 <"$OUT/restart.$n")
	awk -v n="$n" -v f="$f" -v r="$r" -v e="$e" 'BEGIN {
		printf "%-6s %12.1f %12.1f %8.2f  %s (%.1f ms, %.2fx)\n", n, f * 1e3, r * 1e3,
		       r / f, r / f <= 1.5 ? "PASS (<= 1.5x)" : "MISS (> 1.5x)", e * 1e3, e / f }'
	if [ "$HOSTS" != 0 ]; then
		awk -v f="$(median <"$OUT/floor")" 'BEGIN { printf "%-6s %12.1f  (ssh floor)\n", "", f * 1e3 }'
	fi
done
echo "runs and raw output: $OUT"
