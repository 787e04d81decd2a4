# SPDX-License-Identifier: MIT
#
# common.sh: what the benchmark scripts share, sourced by them: finding
# worldrun and the bench programs, running cases in rotating rounds, and
# the awk functions that take medians and per-round ratios. A script sets
# BENCH_NAME before sourcing this and defines case_command NAME and
# to_rows NAME ROUND (one run's output on stdin, rows on stdout).

# bench_binaries PROGRAM... -- ARGS: sets WORLDRUN and BENCH_DIR from
# ARGS (BUILD_DIR, or WORLDRUN BENCH_DIR) and checks that worldrun and
# every PROGRAM in BENCH_DIR are executable.
bench_binaries() {
	local progs=() bin
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		progs+=("$1")
		shift
	done
	shift
	if [ $# -eq 1 ]; then
		WORLDRUN=$1/cmd/worldrun/worldrun
		BENCH_DIR=$1/tests/bench
	elif [ $# -eq 2 ]; then
		WORLDRUN=$1
		BENCH_DIR=$2
	else
		echo "usage: $BENCH_NAME BUILD_DIR | $BENCH_NAME WORLDRUN BENCH_DIR" >&2
		exit 2
	fi
	for bin in "$WORLDRUN" "${progs[@]/#/$BENCH_DIR/}"; do
		if [ ! -x "$bin" ]; then
			echo "$BENCH_NAME: $bin: not found or not executable" \
				"(build with: meson setup B -Dbuildtype=release && ninja -C B)" >&2
			exit 2
		fi
	done
	# Absolute: the scripts that start remote hosts run from /.
	WORLDRUN=$(readlink -f "$WORLDRUN")
	BENCH_DIR=$(readlink -f "$BENCH_DIR")
}

# wait_until SECONDS COMMAND...: what netns.bash and slurm.bash need from
# the tests' helpers: COMMAND every 50 ms until it succeeds, at most
# SECONDS.
wait_until() {
	local limit=$1 i=0
	shift
	while ! "$@" >/dev/null 2>&1; do
		i=$((i + 1))
		[ "$i" -lt $((limit * 20)) ] || return 1
		sleep 0.05
	done
}

# run_case NAME ROUND: one run under timeout; its rows go to $ROWS, its
# command and output to $OUT/raw.log.
run_case() {
	local name=$1 round=$2 cmd out
	cmd=$(case_command "$name")
	echo "== round $round: $cmd" >>"$OUT/raw.log"
	if ! out=$(eval "timeout -k 5 $TIMEOUT $cmd" 2>>"$OUT/raw.log" </dev/null); then
		echo "$BENCH_NAME: round $round: $name failed (see $OUT/raw.log)" >&2
	fi
	echo "$out" >>"$OUT/raw.log"
	to_rows "$name" "$round" <<<"$out" >>"$ROWS"
}

# For scripts whose cases are single command lines (tool_line NAME):
# each run of a case is hyperfine -N over RUNS runs, and its rows are the
# runs' median and mean in ms.
case_command() {
	printf 'hyperfine -N -w 1 -r %s --style none --export-json /dev/stdout %q' \
		"$RUNS" "$(tool_line "$1")"
}

hyperfine_rows() {
	jq -r --arg c "$1" --arg r "$2" '.results[0] |
		"\($c)\t\($r)\tmedian_ms\t\(.median * 1000)",
		"\($c)\t\($r)\tmean_ms\t\(.mean * 1000)"' 2>/dev/null
}

# bench_out: OUT (a new directory under /tmp unless set), with ROWS, its
# empty rows.tsv, and an empty raw.log.
bench_out() {
	OUT=${OUT:-$(mktemp -d "/tmp/worldrun-${BENCH_NAME%.sh}.XXXXXX")}
	mkdir -p "$OUT"
	ROWS=$OUT/rows.tsv
	: >"$ROWS"
	: >"$OUT/raw.log"
}

# bench_sitting: the load, every case of CASES with its command line,
# the rounds (run_rounds), and the load again.
bench_sitting() {
	local name
	echo "$BENCH_NAME: $(nproc) cpus, load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "$BENCH_NAME: $ROUNDS rounds, order rotating; commands:"
	for name in "${CASES[@]}"; do
		echo "  $name: $(case_command "$name")"
	done
	run_rounds
	echo "$BENCH_NAME: load average at end: $(cut -d' ' -f1-3 /proc/loadavg); raw output in $OUT"
	echo
}

# run_rounds: every case of CASES in each of ROUNDS rounds, the order
# rotating by one each round.
run_rounds() {
	local round k i
	k=${#CASES[@]}
	for ((round = 1; round <= ROUNDS; round++)); do
		for ((i = 0; i < k; i++)); do
			run_case "${CASES[$(((i + round) % k))]}" "$round"
		done
		echo "$BENCH_NAME: round $round done, load average $(cut -d' ' -f1-3 /proc/loadavg)"
	done
}

# Awk functions over rows "case round metric value" loaded as
# v[case, metric, round] (have[case, metric] counts them): med() is the
# median over rounds (LO and HI the extremes), ratio() the median of the
# per-round ratios c1/c2, cell()/span()/rcell() format them ("-" when
# missing), verdict() prints a target line.
STATS_AWK='
{ v[$1, $3, $2] = $4; have[$1, $3]++ }
function sort(a, n,   i, j, t) {
	for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) {
		t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
	}
}
function mid(a, n) {
	return n == 0 ? "" : (n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2)
}
function med(c, m,   n, r, a) {
	n = 0
	for (r = 1; r <= rounds; r++) if ((c, m, r) in v) a[++n] = v[c, m, r] + 0
	sort(a, n); LO = a[1]; HI = a[n]
	return mid(a, n)
}
function ratio(c1, c2, m,   n, r, a) {
	n = 0
	for (r = 1; r <= rounds; r++)
		if ((c1, m, r) in v && (c2, m, r) in v && v[c2, m, r] > 0)
			a[++n] = v[c1, m, r] / v[c2, m, r]
	sort(a, n)
	return mid(a, n)
}
function cell(c, m, fmt,   x) {
	x = med(c, m)
	return x == "" ? "-" : sprintf(fmt, x)
}
function span(c, m, fmt,   x) {
	x = med(c, m)
	return x == "" ? "-" : sprintf(fmt "-" fmt, LO, HI)
}
function rcell(c1, c2, m,   x) {
	x = ratio(c1, c2, m)
	return x == "" ? "-" : sprintf("%.2f", x)
}
# below: pass when x <= limit (strictly below when below == 2), else x >= limit.
function verdict(text, x, limit, below,   ok) {
	if (x == "") { printf "%-58s    -   NO DATA\n", text; return }
	ok = below == 2 ? x < limit : (below ? x <= limit : x >= limit)
	printf "%-58s %7.2f  %s\n", text, x, ok ? "PASS" : "MISS"
}
'

# bench_hosts_up: the sshd test hosts (tests/cli/netns.bash) up until the
# script exits, and WRAP, one ssh command for all of them; or exit 2.
# Needs trees_in_tmp (the trees under /tmp the hosts must see).
bench_hosts_up() {
	. "$(dirname "$0")/../cli/netns.bash"
	trap hosts_down EXIT
	hosts_up || { echo "$BENCH_NAME: unable to bring the test hosts up" >&2; exit 2; }
	# The sshd jobs are hosts_down's to end, without a word from bash.
	disown -a
	WRAP=$HOSTS_DIR/ssh
	printf '#!/bin/sh\nexec %s "$@"\n' "$RSH" >"$WRAP"
	chmod +x "$WRAP"
}
