#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# launch.sh: time `worldrun -n N /bin/true` against mpiexec.hydra,
# mpirun.openmpi and the fork/exec floor (forkexec N), for each N, in the
# same sitting. Prints a table and PASS/MISS for the targets (worldrun at
# most 0.6x Hydra and at most 1.5x the floor); the verdicts are
# informational and the script exits 0 whenever it could measure. See
# README.md.
#
# Usage: launch.sh BUILD_DIR | launch.sh WORLDRUN BENCH_DIR
# Settings (environment): SIZES="8 64 256" RUNS=30 ROUNDS=10 WARMUP=3
#   PROBES=5 TIMEOUT=20 (seconds per run) HANG_LIMIT=10 OUT=DIR (JSON,
#   logs and every run's time are kept there).
#
# The machine is shared, so the tools are interleaved: RUNS are split into
# ROUNDS, and each round runs `hyperfine -N` once over the tools with
# RUNS/ROUNDS runs each (WARMUP warm-ups in the first round only), in an
# order that rotates from round to round. ROUNDS=1 is one plain
# `hyperfine -N -w 3 -r 30` per N.
#
# mpirun.openmpi often hangs here when its ranks exit at once (N >= 64).
# Every tool first gets PROBES runs under `timeout`. mpirun, and any tool
# that hung in a probe, is then timed by a loop in this script, each run
# under `timeout` (that costs it about a millisecond), in the same rounds;
# a run that ends with 124/137 counts as hung and is left out of the
# figures, and after HANG_LIMIT hung runs that tool is not run again at
# that N. The others are timed bare by hyperfine, because `timeout` costs
# a lot next to forkexec 8; each hyperfine call has a backstop timeout.
set -u -o pipefail
BENCH_NAME=launch.sh
. "$(dirname "$0")/common.sh"

SIZES=${SIZES:-"8 64 256"}
RUNS=${RUNS:-30}
ROUNDS=${ROUNDS:-10}
WARMUP=${WARMUP:-3}
PROBES=${PROBES:-5}
TIMEOUT=${TIMEOUT:-20}
HANG_LIMIT=${HANG_LIMIT:-10}
TOOLS="worldrun hydra mpirun floor"

check_tools() {
	local missing="" pkgs="" pair
	for pair in hyperfine:hyperfine mpiexec.hydra:mpich \
		mpirun.openmpi:openmpi-bin jq:jq timeout:coreutils; do
		if ! command -v "${pair%%:*}" >/dev/null 2>&1; then
			missing="$missing ${pair%%:*}"
			pkgs="$pkgs ${pair#*:}"
		fi
	done
	if [ -n "$missing" ]; then
		echo "launch.sh: missing:$missing" >&2
		echo "launch.sh: install them with: apt-get install$pkgs" >&2
		exit 2
	fi
	if [ "$ROUNDS" -lt 1 ] || [ $((RUNS % ROUNDS)) -ne 0 ]; then
		echo "launch.sh: RUNS ($RUNS) must be a multiple of ROUNDS ($ROUNDS)" >&2
		exit 2
	fi
}

# The command line of TOOL at size N, words quoted for hyperfine -N.
tool_command() {
	local tool=$1 n=$2
	case $tool in
	worldrun) printf '%q -n %s /bin/true' "$WORLDRUN" "$n" ;;
	hydra) printf 'mpiexec.hydra -n %s /bin/true' "$n" ;;
	mpirun) printf 'mpirun.openmpi --oversubscribe --allow-run-as-root -n %s /bin/true' "$n" ;;
	floor) printf '%q %s' "$FORKEXEC" "$n" ;;
	esac
}

# Runs a command line under timeout; prints "MICROSECONDS STATUS".
timed_run() {
	local start end rc
	start=${EPOCHREALTIME/[.,]/}
	eval "timeout -k 2 $TIMEOUT $1" >/dev/null 2>&1 </dev/null
	rc=$?
	end=${EPOCHREALTIME/[.,]/}
	echo "$((end - start)) $rc"
}

is_hung() {
	[ "$1" -eq 124 ] || [ "$1" -eq 137 ]
}

# Runs TOOL at size N PROBES times under timeout; prints "hung failed".
probe_tool() {
	local tool=$1 n=$2 hung=0 failed=0 i us rc cmd
	cmd=$(tool_command "$tool" "$n")
	for ((i = 0; i < PROBES; i++)); do
		read -r us rc < <(timed_run "$cmd")
		if is_hung "$rc"; then
			hung=$((hung + 1))
		elif [ "$rc" -ne 0 ]; then
			failed=$((failed + 1))
		fi
	done
	echo "$hung $failed"
}

# The tools in an order rotated by ROUND, one per line.
rotated_tools() {
	local round=$1 k i
	local -a list
	read -r -a list <<<"$TOOLS"
	k=${#list[@]}
	for ((i = 0; i < k; i++)); do
		echo "${list[$(((i + round) % k))]}"
	done
}

# One round at size N: hyperfine over the bare tools, then the loop over
# the others. Appends "N tool seconds status" lines to $TIMES.
run_round() {
	local n=$1 round=$2 per=$((RUNS / ROUNDS)) warm=0 tool i us rc
	local json=$OUT/launch-$n-round$round.json backstop
	local -a names=() cmds=()
	if [ "$round" -eq 0 ]; then
		warm=$WARMUP
	fi
	while read -r tool; do
		if [ -z "${LOOPED[$tool]:-}" ]; then
			names+=("$tool")
			cmds+=("$(tool_command "$tool" "$n")")
		fi
	done < <(rotated_tools "$round")
	backstop=$(((warm + per) * ${#cmds[@]} * TIMEOUT + 60))
	if timeout -k 5 "$backstop" hyperfine -N -w "$warm" -r "$per" \
		--ignore-failure --style basic --export-json "$json" \
		"${cmds[@]}" >>"$OUT/hyperfine-$n.log" 2>&1 && [ -s "$json" ]; then
		jq -r --arg n "$n" --argjson names "$(printf '%s\n' "${names[@]}" | jq -R . | jq -s .)" '
			.results | to_entries[] | .key as $i
			| [.value.times, .value.exit_codes] | transpose[]
			| [$n, $names[$i], .[0], .[1]] | @tsv' "$json" >>"$TIMES"
	else
		echo "launch.sh: N=$n round $round: hyperfine did not finish" \
			"(see $OUT/hyperfine-$n.log)" >&2
	fi
	for tool in $TOOLS; do
		if [ -z "${LOOPED[$tool]:-}" ]; then
			continue
		fi
		for ((i = 0; i < per; i++)); do
			if [ "${HUNG[$tool]}" -ge "$HANG_LIMIT" ]; then
				break
			fi
			read -r us rc < <(timed_run "$(tool_command "$tool" "$n")")
			if is_hung "$rc"; then
				HUNG[$tool]=$((HUNG[$tool] + 1))
			fi
			printf '%s\t%s\t%s.%06d\t%s\n' "$n" "$tool" $((us / 1000000)) \
				$((us % 1000000)) "$rc" >>"$TIMES"
		done
	done
}

measure_size() {
	local n=$1 tool hung failed round looped=""
	declare -gA LOOPED=() HUNG=()
	for tool in $TOOLS; do
		read -r hung failed < <(probe_tool "$tool" "$n")
		printf '%s\t%s\t%s\t%s\n' "$n" "$tool" "$hung" "$failed" >>"$PROBE_ROWS"
		HUNG[$tool]=0
		if [ "$tool" = mpirun ] || [ "$hung" -gt 0 ]; then
			LOOPED[$tool]=1
			looped="$looped $tool"
			echo "  timeout -k 2 $TIMEOUT $(tool_command "$tool" "$n")   (loop)" >>"$OUT/commands.txt"
		else
			echo "  $(tool_command "$tool" "$n")   (hyperfine)" >>"$OUT/commands.txt"
		fi
	done
	echo "launch.sh: N=$n: probes done; $ROUNDS rounds (timed by loop under timeout:$looped)" >&2
	for ((round = 0; round < ROUNDS; round++)); do
		run_round "$n" "$round"
	done
}

print_report() {
	awk -F '\t' -v probes="$PROBES" '
	FILENAME == ARGV[1] { phung[$1, $2] = $3; pfail[$1, $2] = $4; next }
	{
		n = $1; key = n SUBSEP $2
		if (!(n in seen)) { seen[n] = 1; order[++nsizes] = n }
		if ($4 == 0) {
			ms = $3 * 1000
			ok[key]++; sum[key] += ms; sq[key] += ms * ms
			if (!(key in lo) || ms < lo[key]) lo[key] = ms
			if (!(key in hi) || ms > hi[key]) hi[key] = ms
		} else if ($4 == 124 || $4 == 137) {
			hung[key]++
		} else {
			failed[key]++
		}
	}
	function mean(k) { return sum[k] / ok[k] }
	function sd(k) {
		return ok[k] > 1 ? sqrt((sq[k] - sum[k] * sum[k] / ok[k]) / (ok[k] - 1)) : 0
	}
	function ratio(a, b) {
		return (ok[a] > 0 && ok[b] > 0) ? sprintf("%.2f", mean(a) / mean(b)) : "-"
	}
	function verdict(a, b, limit, what,   r) {
		if (ok[a] == 0 || ok[b] == 0) {
			printf "N=%-4s worldrun / %-5s   -   (target <= %.1f)  NO DATA\n", n, what, limit
			return
		}
		r = mean(a) / mean(b)
		printf "N=%-4s worldrun / %-5s %5.2f  (target <= %.1f)  %s\n", n, what, r,
			limit, r <= limit ? "PASS" : "MISS"
	}
	END {
		split("worldrun hydra mpirun floor", tools, " ")
		fmt = "%-5s %-9s %9s %8s %17s %10s %8s %7s %7s\n"
		printf fmt, "N", "tool", "mean ms", "sd ms", "min-max ms", "ok/hung/", "probes", "x", "x"
		printf fmt, "", "", "", "", "", "failed", "hung", "hydra", "floor"
		for (i = 1; i <= nsizes; i++) {
			n = order[i]
			for (j = 1; j <= 4; j++) {
				key = n SUBSEP tools[j]
				if (ok[key] > 0) {
					m = sprintf("%.2f", mean(key)); s = sprintf("%.2f", sd(key))
					r = sprintf("%.2f-%.2f", lo[key], hi[key])
				} else {
					m = hung[key] > 0 ? "hung" : "no data"; s = "-"; r = "-"
				}
				st = sprintf("%d/%d/%d", ok[key], hung[key], failed[key])
				pr = sprintf("%d/%d", phung[key], probes)
				if (pfail[key] > 0) pr = pr sprintf("+%df", pfail[key])
				printf fmt, n, tools[j], m, s, r, st, pr,
					ratio(key, n SUBSEP "hydra"), ratio(key, n SUBSEP "floor")
			}
		}
		print ""
		print "Targets (issue 2), on the means:"
		for (i = 1; i <= nsizes; i++) {
			n = order[i]
			verdict(n SUBSEP "worldrun", n SUBSEP "hydra", 0.6, "hydra")
			verdict(n SUBSEP "worldrun", n SUBSEP "floor", 1.5, "floor")
		}
	}' "$PROBE_ROWS" "$TIMES"
}

main() {
	local n
	bench_binaries forkexec -- "$@"
	FORKEXEC=$BENCH_DIR/forkexec
	check_tools
	OUT=${OUT:-$(mktemp -d /tmp/worldrun-launch.XXXXXX)}
	mkdir -p "$OUT"
	TIMES=$OUT/times.tsv
	PROBE_ROWS=$OUT/probes.tsv
	: >"$TIMES"
	: >"$PROBE_ROWS"
	: >"$OUT/commands.txt"
	echo "launch.sh: $(nproc) cpus, load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "launch.sh: per N: $PROBES probe runs per tool, then $ROUNDS rounds of" \
		"hyperfine -N -r $((RUNS / ROUNDS)) --ignore-failure (-w $WARMUP in the first)" \
		"plus the looped tools; per-run timeout ${TIMEOUT}s"
	for n in $SIZES; do
		measure_size "$n"
	done
	echo "launch.sh: commands (JSON, logs and times.tsv in $OUT):"
	cat "$OUT/commands.txt"
	echo "launch.sh: load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo
	print_report
	echo
	echo "ok/hung/failed: timed runs that exited 0 / hit the ${TIMEOUT}s timeout / failed"
	echo "(a looped tool stops after $HANG_LIMIT hung runs); figures are over the runs"
	echo "that exited 0; probes hung: probe runs that hit the timeout. Verdicts are"
	echo "informational."
}

main "$@"
exit 0
