#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# registry.sh: the registry of a worldrun job against Redis, same client
# shape, same transport, in the same sitting. regbench runs as the one
# rank of `worldrun -n 1`, against its job's registry:
#   round trip: one client, one kv.get at a time, timed per call from the
#     calling thread (regbench rtt: a blocking regclient on the Unix
#     socket, on TCP, frames made once as redis-benchmark does (-r), and
#     libworld's world_kv_get; and regclient again with WORLD_SPIN_US=0,
#     whose reads block at once), against
#     `redis-benchmark -c 1 -P 1 -t get` on a Unix socket and on TCP, and
#     a torch TCPStore get (tcpstore.py) when `import torch` works; and
#     the floor: regbench -r against regfloor, a server that answers every
#     frame without parsing it (what the transport and the client cost);
#   throughput: CONNS connections from one process (regbench tput: one
#     thread, one event loop, as redis-benchmark), no pipelining, SET then
#     GET, against `redis-benchmark -c CONNS -P 1 -t set,get`.
# redis-benchmark's mean and p50 time a request from its write to its
# answer's read; regbench times the whole call, its client's own work
# included. The time per request (1/req/s) counts both clients alike, so
# it is the round trip's verdict, with p50; the mean is shown without one.
# redis-server is started here on a Unix socket and on 127.0.0.1 with a
# free port, and stopped (by pid) at the end.
#
# On 2 cores a ping-pong's round trip depends on where the scheduler puts
# the two ends: on one CPU a wake-up is cheap, across CPUs it costs an
# interrupt and often a wake from idle, and the free-running figure jumps
# between the two from run to run. PIN=same runs every server and client
# on CPU 0 (taskset), PIN=split servers (worldrun and its registry,
# redis-server) on CPU 1 and clients (regbench, redis-benchmark) on CPU 0;
# the TCPStore server is a thread of its client's process, so under split
# that process runs unpinned. The cases run in ROUNDS
# rounds, in an order that rotates; the table gives medians over rounds,
# ratios are taken within a round. Targets: round trip at most Redis's;
# throughput at least 0.8x Redis's; round trip at most 0.5x TCPStore's.
# The verdicts are informational: the script exits 0 whenever it could
# measure. See README.md.
#
# Usage: registry.sh BUILD_DIR | registry.sh WORLDRUN BENCH_DIR
# Settings (environment): ROUNDS=5 RTT_N=50000 TPUT_N=200000 (requests
#   per run, all connections together, as redis-benchmark's -n) CONNS=8
#   DATA=3 (value bytes, as -d) WARMUP=1000 TORCH=auto|0 PYTHON=/usr/bin/python3
#   PIN=none|same|split TIMEOUT=300 (per run) OUT=DIR (raw output kept there)
set -u -o pipefail

ROUNDS=${ROUNDS:-5}
RTT_N=${RTT_N:-50000}
TPUT_N=${TPUT_N:-200000}
CONNS=${CONNS:-8}
DATA=${DATA:-3}
WARMUP=${WARMUP:-1000}
TORCH=${TORCH:-auto}
PIN=${PIN:-none}
PYTHON=${PYTHON:-/usr/bin/python3}
TIMEOUT=${TIMEOUT:-300}
KEY='key:__rand_int__' # the key redis-benchmark uses without -r
HERE=$(cd "$(dirname "$0")" && pwd)
REDIS_PID=
FLOOR_PID=
FLOOR_EP=
BENCH_NAME=registry.sh
. "$HERE/common.sh"

check_tools() {
	local missing="" pkgs="" pair
	for pair in redis-server:redis-server redis-benchmark:redis-tools \
		redis-cli:redis-tools timeout:coreutils taskset:util-linux; do
		if ! command -v "${pair%%:*}" >/dev/null 2>&1; then
			missing="$missing ${pair%%:*}"
			pkgs="$pkgs ${pair#*:}"
		fi
	done
	if [ -n "$missing" ]; then
		echo "registry.sh: missing:$missing" >&2
		echo "registry.sh: install them with: apt-get install$pkgs" >&2
		exit 2
	fi
	case $PIN in
	none) SERVER_PIN="" CLIENT_PIN="" ;;
	same) SERVER_PIN="taskset -c 0 " CLIENT_PIN="taskset -c 0 " ;;
	split) SERVER_PIN="taskset -c 1 " CLIENT_PIN="taskset -c 0 " ;;
	*) echo "registry.sh: PIN must be none, same or split" >&2; exit 2 ;;
	esac
	USE_TORCH=0
	if [ "$TORCH" != 0 ] && "$PYTHON" -c 'import torch.distributed' >/dev/null 2>&1; then
		USE_TORCH=1
	fi
}

stop_servers() {
	local pid
	for pid in "$REDIS_PID" "$FLOOR_PID"; do
		if [ -n "$pid" ]; then
			kill "$pid" 2>/dev/null
			wait "$pid" 2>/dev/null
		fi
	done
	REDIS_PID=
	FLOOR_PID=
}

# Starts regfloor on a Unix socket and a free loopback port; FLOOR_EP is
# the WORLD_REGISTRY value it prints.
start_floor() {
	local i
	${SERVER_PIN}"$BENCH_DIR/regfloor" "$OUT/floor.sock" -d "$DATA" >"$OUT/floor.ep" &
	FLOOR_PID=$!
	for ((i = 0; i < 50; i++)); do
		FLOOR_EP=$(head -n 1 "$OUT/floor.ep")
		if [ -n "$FLOOR_EP" ]; then
			return 0
		fi
		sleep 0.1
	done
	echo "registry.sh: unable to start regfloor" >&2
	exit 2
}

# Starts redis-server on $REDIS_SOCK and on a free loopback port (a port
# that turns out taken makes it exit; then another is tried).
start_redis() {
	local try i
	REDIS_SOCK=$OUT/redis/redis.sock
	mkdir -p "$OUT/redis"
	for ((try = 0; try < 10; try++)); do
		REDIS_PORT=$((20000 + RANDOM % 40000))
		${SERVER_PIN}redis-server --bind 127.0.0.1 --port "$REDIS_PORT" \
			--unixsocket "$REDIS_SOCK" --unixsocketperm 700 --save '' \
			--appendonly no --io-threads 1 --daemonize no --dir "$OUT/redis" \
			--logfile "$OUT/redis/redis.log" &
		REDIS_PID=$!
		for ((i = 0; i < 50; i++)); do
			if [ "$(redis-cli -p "$REDIS_PORT" ping 2>/dev/null)" = PONG ] &&
				[ "$(redis-cli -s "$REDIS_SOCK" ping 2>/dev/null)" = PONG ]; then
				return 0
			fi
			kill -0 "$REDIS_PID" 2>/dev/null || break
			sleep 0.1
		done
		kill "$REDIS_PID" 2>/dev/null
		wait "$REDIS_PID" 2>/dev/null
		REDIS_PID=
	done
	echo "registry.sh: unable to start redis-server (see $OUT/redis/redis.log)" >&2
	exit 2
}

# redis-benchmark's options for a transport.
redis_target() {
	if [ "$1" = unix ]; then
		printf -- '-s %q' "$REDIS_SOCK"
	else
		printf -- '-h 127.0.0.1 -p %s' "$REDIS_PORT"
	fi
}

# The command line of a case "KIND/CLIENT/TRANSPORT".
case_command() {
	local kind client transport
	IFS=/ read -r kind client transport <<<"$1"
	local ours tool=$CLIENT_PIN
	ours=$(printf '%s%q -n 1 %s%q' "$SERVER_PIN" "$WORLDRUN" "$CLIENT_PIN" "$REGBENCH")
	if [ "$PIN" = split ]; then
		tool=""
	fi
	case $kind/$client in
	rtt/ours) printf '%s rtt -t %s -n %s -w %s -d %s' "$ours" "$transport" \
		"$RTT_N" "$WARMUP" "$DATA" ;;
	rtt/raw) printf '%s rtt -r -t %s -n %s -w %s -d %s' "$ours" "$transport" \
		"$RTT_N" "$WARMUP" "$DATA" ;;
	rtt/block) printf 'env WORLD_SPIN_US=0 %s rtt -t %s -n %s -w %s -d %s' "$ours" \
		"$transport" "$RTT_N" "$WARMUP" "$DATA" ;;
	rtt/floor) printf 'env WORLD_REGISTRY=%q WORLD_SECRET=floor %s%q rtt -r -t %s -n %s -w %s -d %s' \
		"$FLOOR_EP" "$CLIENT_PIN" "$REGBENCH" "$transport" "$RTT_N" "$WARMUP" "$DATA" ;;
	rtt/libworld) printf '%s rtt -t world -n %s -w %s -d %s' "$ours" "$RTT_N" \
		"$WARMUP" "$DATA" ;;
	rtt/redis) printf '%sredis-benchmark %s -c 1 -P 1 -t get -n %s -d %s --csv' \
		"$CLIENT_PIN" "$(redis_target "$transport")" "$RTT_N" "$DATA" ;;
	rtt/torch) printf '%s%q %q %s %s %s' "$tool" "$PYTHON" "$HERE/tcpstore.py" \
		"$RTT_N" "$WARMUP" "$DATA" ;;
	tput/ours) printf '%s tput -t %s -c %s -n %s -d %s' "$ours" "$transport" \
		"$CONNS" "$TPUT_N" "$DATA" ;;
	tput/redis) printf '%sredis-benchmark %s -c %s -P 1 -t set,get -n %s -d %s --csv' \
		"$CLIENT_PIN" "$(redis_target "$transport")" "$CONNS" "$TPUT_N" "$DATA" ;;
	esac
}

# Turns one run's output into "case round metric value" rows: regbench's
# and tcpstore.py's name=value pairs, or redis-benchmark's CSV (ms).
to_rows() {
	local name=$1 round=$2
	awk -v c="$name" -v r="$round" '
	/^"(GET|SET)"/ {
		gsub(/"/, ""); split($0, f, ",")
		op = tolower(f[1])
		if (c ~ /^rtt/) {
			printf "%s\t%s\trps\t%s\n", c, r, f[2]
			printf "%s\t%s\tmean_us\t%s\n", c, r, f[3] * 1000
			printf "%s\t%s\tp50_us\t%s\n", c, r, f[5] * 1000
			printf "%s\t%s\tp99_us\t%s\n", c, r, f[7] * 1000
		} else {
			printf "%s\t%s\t%s_rps\t%s\n", c, r, op, f[2]
		}
		next
	}
	/^(rtt|tput) / {
		for (i = 2; i <= NF; i++) {
			split($i, kv, "=")
			if (kv[1] ~ /_us$|_rps$|^rps$/) printf "%s\t%s\t%s\t%s\n", c, r, kv[1], kv[2]
		}
	}'
}

print_report() {
	awk -F '\t' -v rounds="$ROUNDS" -v conns="$CONNS" -v data="$DATA" "$STATS_AWK"'
	function rtt_row(c, label, ref,   part) {
		split(c, part, "/")
		printf "%-5s %-30s %8s %12s %8s %8s %8s %7s %7s %7s\n", part[3], label,
			cell(c, "mean_us", "%.1f"), span(c, "mean_us", "%.1f"),
			cell(c, "p50_us", "%.1f"), cell(c, "p99_us", "%.1f"), cell(c, "rps", "%.0f"),
			ref == "" ? "" : rcell(c, ref, "mean_us"), ref == "" ? "" : rcell(c, ref, "p50_us"),
			ref == "" ? "" : rcell(ref, c, "rps")
	}
	# One line per transport: the ratio of cases @c1 and @c2 (without
	# their transport) in metric @m, a verdict against @limit (< 0: none).
	function per_transport(text, c1, c2, m, limit, below,   i, t, tr, label) {
		split("unix tcp", tr, " ")
		for (i = 1; i <= 2; i++) {
			t = tr[i]
			label = sprintf("%-5s %s", t ":", text)
			if (limit < 0) {
				printf "%-58s %7.2f  (no target)\n", label, ratio(c1 "/" t, c2 "/" t, m)
			} else {
				verdict(label, ratio(c1 "/" t, c2 "/" t, m), limit, below)
			}
		}
	}
	function tput_row(t, who, label, ref,   c) {
		c = "tput/" who "/" t
		printf "%-5s %-30s %9s %15s %9s %15s %7s %7s\n", t, label,
			cell(c, "set_rps", "%.0f"), span(c, "set_rps", "%.0f"),
			cell(c, "get_rps", "%.0f"), span(c, "get_rps", "%.0f"),
			ref ? rcell("tput/ours/" t, "tput/redis/" t, "set_rps") : "",
			ref ? rcell("tput/ours/" t, "tput/redis/" t, "get_rps") : ""
	}
	END {
		printf "Round trip of one get, one client, %d-byte value (us; median over rounds):\n", data
		printf "%-5s %-30s %8s %12s %8s %8s %8s %7s %7s %7s\n", "via", "client", "mean",
			"mean min-max", "p50", "p99", "req/s", "x redis", "x redis", "x redis"
		printf "%-5s %-30s %8s %12s %8s %8s %8s %7s %7s %7s\n", "", "", "", "", "", "", "", "mean",
			"p50", "1/rate"
		rtt_row("rtt/ours/unix", "registry (regclient)", "rtt/redis/unix")
		rtt_row("rtt/block/unix", "registry (regclient, no spin)", "rtt/redis/unix")
		rtt_row("rtt/raw/unix", "registry (frames made once)", "rtt/redis/unix")
		rtt_row("rtt/libworld/unix", "registry (world_kv_get)", "rtt/redis/unix")
		rtt_row("rtt/floor/unix", "floor (frames made once)", "rtt/redis/unix")
		rtt_row("rtt/redis/unix", "redis-benchmark", "")
		rtt_row("rtt/ours/tcp", "registry (regclient)", "rtt/redis/tcp")
		rtt_row("rtt/block/tcp", "registry (regclient, no spin)", "rtt/redis/tcp")
		rtt_row("rtt/raw/tcp", "registry (frames made once)", "rtt/redis/tcp")
		rtt_row("rtt/floor/tcp", "floor (frames made once)", "rtt/redis/tcp")
		rtt_row("rtt/redis/tcp", "redis-benchmark", "")
		if (have["rtt/torch/tcp", "mean_us"]) {
			rtt_row("rtt/torch/tcp", "torch TCPStore get", "rtt/redis/tcp")
		}
		print ""
		printf "Throughput, %d connections from one process, no pipelining (ops/s; median over rounds):\n", conns
		printf "%-5s %-30s %9s %15s %9s %15s %7s %7s\n", "via", "client", "SET/s", "min-max", "GET/s",
			"min-max", "x redis", "x redis"
		printf "%-5s %-30s %9s %15s %9s %15s %7s %7s\n", "", "", "", "", "", "", "SET", "GET"
		tput_row("unix", "ours", "registry (one event loop)", 1)
		tput_row("unix", "redis", "redis-benchmark", 0)
		tput_row("tcp", "ours", "registry (one event loop)", 1)
		tput_row("tcp", "redis", "redis-benchmark", 0)
		print ""
		print "Targets (issue 3; ratios are medians of per-round ratios):"
		per_transport("registry time per request / redis (1/req/s), <= 1.0",
			"rtt/redis", "rtt/ours", "rps", 1.0, 1)
		per_transport("the same, frames made once (as redis-benchmark)",
			"rtt/redis", "rtt/raw", "rps", 1.0, 1)
		per_transport("the same, regclient never spinning (WORLD_SPIN_US=0)",
			"rtt/redis", "rtt/block", "rps", -1, 0)
		per_transport("the same, the floor (a server that does nothing)",
			"rtt/redis", "rtt/floor", "rps", -1, 0)
		per_transport("registry round trip / redis (p50), <= 1.0",
			"rtt/ours", "rtt/redis", "p50_us", 1.0, 1)
		per_transport("registry round trip / redis (mean: redis times less)",
			"rtt/ours", "rtt/redis", "mean_us", -1, 1)
		per_transport(sprintf("%d-connection SET/s / redis, >= 0.8", conns),
			"tput/ours", "tput/redis", "set_rps", 0.8, 0)
		per_transport(sprintf("%d-connection GET/s / redis, >= 0.8", conns),
			"tput/ours", "tput/redis", "get_rps", 0.8, 0)
		if (have["rtt/torch/tcp", "mean_us"]) {
			verdict("tcp:  registry round trip / TCPStore get (mean), <= 0.5",
				ratio("rtt/ours/tcp", "rtt/torch/tcp", "mean_us"), 0.5, 1)
			verdict("unix: registry round trip / TCPStore get (mean), <= 0.5",
				ratio("rtt/ours/unix", "rtt/torch/tcp", "mean_us"), 0.5, 1)
			verdict("unix: world_kv_get / TCPStore get (mean), <= 0.5",
				ratio("rtt/libworld/unix", "rtt/torch/tcp", "mean_us"), 0.5, 1)
		}
	}' "$ROWS"
}

main() {
	local name
	bench_binaries regbench regfloor -- "$@"
	REGBENCH=$BENCH_DIR/regbench
	check_tools
	OUT=${OUT:-$(mktemp -d /tmp/worldrun-registry.XXXXXX)}
	mkdir -p "$OUT"
	ROWS=$OUT/rows.tsv
	: >"$ROWS"
	: >"$OUT/raw.log"
	trap stop_servers EXIT
	start_redis
	start_floor
	redis-cli -s "$REDIS_SOCK" set "$KEY" "$(printf "%${DATA}s" | tr ' ' x)" >/dev/null
	CASES=(rtt/ours/unix rtt/redis/unix rtt/ours/tcp rtt/redis/tcp rtt/libworld/unix
		rtt/raw/unix rtt/raw/tcp rtt/floor/unix rtt/floor/tcp rtt/block/unix rtt/block/tcp)
	if [ "$USE_TORCH" = 1 ]; then
		CASES+=(rtt/torch/tcp)
	fi
	CASES+=(tput/ours/unix tput/redis/unix tput/ours/tcp tput/redis/tcp)
	echo "registry.sh: $(nproc) cpus, load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "registry.sh: $(redis-server --version | cut -d' ' -f1-3); $ROUNDS rounds, order rotating;" \
		"PIN=$PIN; commands:"
	echo "  ${SERVER_PIN}redis-server --bind 127.0.0.1 --port $REDIS_PORT --unixsocket $REDIS_SOCK" \
		"--unixsocketperm 700 --save '' --appendonly no --io-threads 1 --daemonize no ..."
	for name in "${CASES[@]}"; do
		echo "  $(case_command "$name")"
	done
	if [ "$USE_TORCH" = 0 ]; then
		echo "  (torch TCPStore: skipped, '$PYTHON -c \"import torch.distributed\"' fails or TORCH=0)"
	fi
	run_rounds
	stop_servers
	echo "registry.sh: load average at end: $(cut -d' ' -f1-3 /proc/loadavg); raw output in $OUT"
	echo
	print_report
	echo
	echo "Verdicts are informational. regclient: runtime/core/regclient.c, a blocking client"
	echo "that looks for its answer for up to WORLD_SPIN_US (default 100 us, adapting; see"
	echo "runtime/core/spin.h) before its read blocks; world_kv_get: libworld, whose progress"
	echo "thread reads the answer while the caller waits the same way. floor: regfloor,"
	echo "a server that answers without parsing, so the floor's ratio is what the client"
	echo "and the transport alone cost against Redis."
}

main "$@"
exit 0
