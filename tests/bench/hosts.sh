#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# hosts.sh: launch across hosts, worldrun against mpiexec.hydra and
# mpirun.openmpi, in the same sitting:
#   ssh2, ssh3: 8 ranks of /bin/true over 2 and 3 hosts that are network
#     namespaces with a real sshd each (tests/cli/netns.bash), every tool
#     through the same ssh command (a wrapper with the test key); the
#     floor is that ssh to each host at once, running forkexec there;
#   sim64: 1024 ranks over 64 simulated hosts: the stand-in wr-rsh, which
#     runs the command through sh as sshd does, in mount and UTS
#     namespaces of its own (WR_RSH_SHELL=1 WR_RSH_UNSHARE=1), for
#     worldrun (--rsh) and Hydra (-launcher-exec) alike; the floor is 64
#     wr-rsh at once, each running forkexec 16.
# With PROG=ompi, ssh2 and ssh3 start 8 ranks of an Open MPI program that
# does MPI_Init and MPI_Finalize (wr-ompi init) instead, worldrun (its
# PMIx server) against mpirun.openmpi; Hydra and sim64 are left out.
# Each case runs RUNS times per round (hyperfine -N), in ROUNDS rounds
# whose order rotates; the table gives medians over rounds and ratios
# within a round. Targets (issue 12): worldrun at most the faster
# anchor's time over sshd, at most 0.5x Hydra's over the 64 simulated
# hosts; with PROG=ompi (issue 32), worldrun at most 0.5x mpirun's
# time. The verdicts are informational: the script exits 0 whenever it
# could measure. Root only (namespaces). See README.md.
#
# Usage: hosts.sh BUILD_DIR
# Settings (environment): ROUNDS=5 RUNS=5 TIMEOUT=300 (per hyperfine call)
#   ONLY="ssh2 ssh3 sim64" (the cases to run) OUT=DIR (raw output kept there)
#   PROG=true|ompi
set -u -o pipefail

ROUNDS=${ROUNDS:-5}
RUNS=${RUNS:-5}
PROG=${PROG:-true}
ONLY=${ONLY:-"ssh2 ssh3 sim64"}
TIMEOUT=${TIMEOUT:-300}
BENCH_NAME=hosts.sh
. "$(dirname "$0")/common.sh"

to_rows() {
	hyperfine_rows "$@"
}

trees_in_tmp() {
	local d
	for d in "$(readlink -f "$BUILD")" "$(readlink -f "$(dirname "$0")/../..")"; do
		case $d in /tmp/*) echo "$d" ;; esac
	done | sort -u
}

# The hosts of case ssh2 or ssh3 with their slots, for -H and -hosts.
ssh_hosts() {
	if [ "$1" = ssh2 ]; then
		echo "$(host_addr 1):4,$(host_addr 2):4"
	else
		echo "$(host_addr 1):3,$(host_addr 2):3,$(host_addr 3):2"
	fi
}

# The tool's command line for case "WHERE/TOOL".
tool_line() {
	local where=${1%/*} tool=${1#*/} hosts
	if [ "$where" = sim64 ]; then
		hosts=$(seq -f 'h%g:16' 1 64 | paste -sd,)
		case $tool in
		worldrun) printf '%s %q -H %s --rsh %q /bin/true' "$SIM_ENV" "$WORLDRUN" \
			"$hosts" "$WR_RSH" ;;
		hydra) printf '%s mpiexec.hydra -localhost 127.0.0.1 -launcher ssh -launcher-exec %q -hosts %s -n 1024 /bin/true' \
			"$SIM_ENV" "$WR_RSH" "$hosts" ;;
		floor) printf '%s bash %q/sim-floor' "$SIM_ENV" "$OUT" ;;
		esac
		return
	fi
	hosts=$(ssh_hosts "$where")
	case $tool in
	worldrun) printf '%q -H %s --rsh %q %s' "$WORLDRUN" "$hosts" "$WRAP" "$RANK_CMD" ;;
	hydra) printf 'mpiexec.hydra -localhost 198.18.0.1 -launcher ssh -launcher-exec %q -hosts %s -n 8 /bin/true' \
		"$WRAP" "$hosts" ;;
	mpirun) printf 'mpirun.openmpi --allow-run-as-root --mca plm_rsh_agent %q --mca oob_tcp_if_include 198.18.0.0/24 -H %s -n 8 %s' \
		"$WRAP" "$hosts" "$RANK_CMD" ;;
	floor) printf 'bash %q/%s-floor' "$OUT" "$where" ;;
	esac
}



# The floors: the same remote shells at once, each running forkexec.
write_floors() {
	local i
	{
		echo "$WRAP $(host_addr 1) $BENCH_DIR/forkexec 4 & $WRAP $(host_addr 2) $BENCH_DIR/forkexec 4 & wait"
	} >"$OUT/ssh2-floor"
	{
		for i in 1 2; do
			printf '%s %s %s/forkexec 3 & ' "$WRAP" "$(host_addr $i)" "$BENCH_DIR"
		done
		echo "$WRAP $(host_addr 3) $BENCH_DIR/forkexec 2 & wait"
	} >"$OUT/ssh3-floor"
	{
		for i in $(seq 64); do
			printf '%q h%s %q 16 &\n' "$WR_RSH" "$i" "$BENCH_DIR/forkexec"
		done
		echo wait
	} >"$OUT/sim-floor"
}

# The table, and the targets of issue 12 (PROG=true) or 32 (PROG=ompi:
# no Hydra, no sim64).
print_report() {
	awk -F '\t' -v rounds="$ROUNDS" -v prog="$PROG" "$STATS_AWK"'
	function row(c, base) {
		printf "%-6s %-9s %9s %17s %9s %8s %8s %8s\n", substr(c, 1, index(c, "/") - 1),
			substr(c, index(c, "/") + 1), cell(c, "median_ms", "%.1f"),
			span(c, "median_ms", "%.1f"), cell(c, "mean_ms", "%.1f"),
			rcell(c, base "/hydra", "median_ms"),
			base != "sim64" ? rcell(c, base "/mpirun", "median_ms") : "",
			rcell(c, base "/floor", "median_ms")
	}
	function faster(base,   h, m) {
		h = ratio(base "/worldrun", base "/hydra", "median_ms")
		m = ratio(base "/worldrun", base "/mpirun", "median_ms")
		return h == "" ? m : m == "" ? h : (h > m ? h : m)
	}
	END {
		printf "%-6s %-9s %9s %17s %9s %8s %8s %8s\n", "case", "tool", "median", "min-max",
			"mean", "x", "x", "x"
		printf "%-6s %-9s %9s %17s %9s %8s %8s %8s\n", "", "", "ms", "ms", "ms", "hydra",
			"mpirun", "floor"
		split("ssh2 ssh3", bases, " ")
		for (b = 1; b <= 2; b++) {
			row(bases[b] "/worldrun", bases[b])
			if (prog != "ompi")
				row(bases[b] "/hydra", bases[b])
			row(bases[b] "/mpirun", bases[b]); row(bases[b] "/floor", bases[b])
		}
		print ""
		if (prog == "ompi") {
			print "Targets (issue 32; ratios are medians of per-round ratios of medians):"
			verdict("ssh2: worldrun / mpirun, Open MPI program, <= 0.5",
				ratio("ssh2/worldrun", "ssh2/mpirun", "median_ms"), 0.5, 1)
			verdict("ssh3: worldrun / mpirun, Open MPI program, <= 0.5",
				ratio("ssh3/worldrun", "ssh3/mpirun", "median_ms"), 0.5, 1)
			exit
		}
		row("sim64/worldrun", "sim64"); row("sim64/hydra", "sim64"); row("sim64/floor", "sim64")
		print ""
		print "Targets (issue 12; ratios are medians of per-round ratios of medians):"
		verdict("ssh2: worldrun / the faster anchor, <= 1.0", faster("ssh2"), 1.0, 1)
		verdict("ssh3: worldrun / the faster anchor, <= 1.0", faster("ssh3"), 1.0, 1)
		verdict("sim64: worldrun / hydra, <= 0.5",
			ratio("sim64/worldrun", "sim64/hydra", "median_ms"), 0.5, 1)
	}' "$ROWS"
}

check_tools() {
	local t
	if [ "$(id -u)" != 0 ]; then
		echo "hosts.sh: needs root (network and mount namespaces)" >&2
		exit 2
	fi
	for t in hyperfine jq mpiexec.hydra mpirun.openmpi /usr/sbin/sshd ssh ip unshare nft; do
		if ! command -v "$t" >/dev/null 2>&1; then
			echo "hosts.sh: missing $t (apt-get install hyperfine jq mpich openmpi-bin openssh-server iproute2 nftables)" >&2
			exit 2
		fi
	done
}

main() {
	local name
	[ $# -eq 1 ] || { echo "usage: hosts.sh BUILD_DIR" >&2; exit 2; }
	BUILD=$1
	bench_binaries forkexec -- "$BUILD"
	WR_RSH=$BUILD/tests/helpers/wr-rsh
	RANK_CMD=/bin/true
	if [ "$PROG" = ompi ]; then
		RANK_CMD="$BUILD/tests/helpers/wr-ompi init"
		[ -x "$BUILD/tests/helpers/wr-ompi" ] ||
			{ echo "hosts.sh: $BUILD has no wr-ompi (needs libopenmpi-dev)" >&2; exit 2; }
		# Open MPI refuses root unless told (mpirun: --allow-run-as-root).
		export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
	fi
	check_tools
	OUT=${OUT:-$(mktemp -d /tmp/worldrun-hosts.XXXXXX)}
	mkdir -p "$OUT"
	ROWS=$OUT/rows.tsv
	: >"$ROWS"
	: >"$OUT/raw.log"
	bench_hosts_up
	SIM_ENV="env WR_RSH_SHELL=1 WR_RSH_UNSHARE=1 WR_RSH_KEEP=$(trees_in_tmp | paste -sd:)"
	write_floors
	# Hydra's proxies run in its working directory, which every host has.
	cd /
	CASES=()
	for name in ssh2/worldrun ssh2/hydra ssh2/mpirun ssh2/floor ssh3/worldrun ssh3/hydra \
		ssh3/mpirun ssh3/floor sim64/worldrun sim64/hydra sim64/floor; do
		if [ "$PROG" = ompi ]; then
			case $name in */hydra | sim64/*) continue ;; esac
		fi
		case " $ONLY " in *" ${name%/*} "*) CASES+=("$name") ;; esac
	done
	echo "hosts.sh: $(nproc) cpus, load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "hosts.sh: $ROUNDS rounds of $RUNS runs per case, order rotating; ssh is:"
	echo "  $RSH"
	echo "hosts.sh: commands:"
	for name in "${CASES[@]}"; do
		echo "  $name: $(tool_line "$name")"
	done
	run_rounds
	echo "hosts.sh: load average at end: $(cut -d' ' -f1-3 /proc/loadavg); raw output in $OUT"
	echo
	print_report
	echo
	echo "Verdicts are informational. floor: the same remote shells at once, each running"
	echo "forkexec (fork and exec its ranks' /bin/true, then wait), and nothing else."
}

main "$@"
exit 0
