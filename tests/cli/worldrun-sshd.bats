#!/usr/bin/env bats
# worldrun across real hosts: three network namespaces on a bridge
# (198.18.0.0/24), each with a real sshd and its own mount and UTS
# namespaces (netns.bash), reached with ssh and a key made for the run.
# Root only; under CI=true a skip here is a failure.
load helpers
load netns

setup_file() {
	local why
	if why=$(hosts_can); then
		hosts_up
	else
		export HOSTS_SKIP="$why"
	fi
}

teardown_file() {
	hosts_down
}

setup() {
	if [ -n "${HOSTS_SKIP:-}" ]; then
		[ "${CI:-}" != true ] || fail "CI runs as root with the packages: $HOSTS_SKIP"
		skip "$HOSTS_SKIP"
	fi
	D=$BATS_TEST_TMPDIR
	# What the hosts' ranks write goes where they see it too (not /tmp).
	S=$HOSTS_DIR/test.$BATS_TEST_NUMBER
	mkdir -p "$S"
	H="$(host_addr 1),$(host_addr 2),$(host_addr 3)"
	export D H S
}

teardown() {
	show_failure
	# A job a failed test left (stopped, maybe) must not hold bats up.
	if [ -n "${wpid:-}" ] && alive "$wpid"; then
		kill -KILL "$wpid" 2>/dev/null || true
	fi
	for i in $(seq "$HOSTS_N"); do
		host_link "$i" up
	done
	wait_until 15 hosts_idle || true
}

@test "sshd hosts: every host runs its ranks, on its own name, with the registry over TCP" {
	run -0 --separate-stderr worldrun -H "$H" --rsh "$RSH" -l sh -c \
		'echo "$(hostname) $WORLD_NODE_RANK/$WORLD_NNODES $WORLD_REGISTRY $WORLD_ADVERTISE $WORLD_FABRIC"'
	assert_line --regexp '^0: h1 0/3 tcp:198\.18\.0\.1:[0-9]+ 198\.18\.0\.11 (net|tcp;ofi_rxm)$'
	assert_line --regexp '^1: h2 1/3 tcp:198\.18\.0\.1:[0-9]+ 198\.18\.0\.12 (net|tcp;ofi_rxm)$'
	assert_line --regexp '^2: h3 2/3 tcp:198\.18\.0\.1:[0-9]+ 198\.18\.0\.13 (net|tcp;ofi_rxm)$'
	wait_until 15 hosts_idle
}

@test "sshd hosts: --bind-to core binds each host's ranks, and each report line is what taskset -p sees there" {
	local line pid cpus host
	run -0 --separate-stderr worldrun -H "$(host_addr 1):2,$(host_addr 2)" --rsh "$RSH" \
		--bind-to core --report-bindings sh -c 'echo "$(hostname) $$ $(taskset -cp $$ | sed "s/.*: //")"'
	assert_equal "${#stderr_lines[@]}" 3
	for line in "${stderr_lines[@]}"; do
		pid=$(sed -n 's/.*(pid \([0-9]*\) on .*/\1/p' <<<"$line")
		cpus=$(sed -n 's/.* bound to core [0-9]* (cpu \([0-9]*\)).*/\1/p' <<<"$line")
		host=h$(sed -n 's/.* on 198\.18\.0\.1\([0-9]\)).*/\1/p' <<<"$line")
		assert_line "$host $pid $cpus"
	done
	assert_regex "$stderr" "rank 1 \\(pid [0-9]+ on $(host_addr 1)\\) bound to core 1 "
	wait_until 15 hosts_idle
}

@test "sshd hosts: the ranks of a job of one other host run in worldrun's directory, or in --wdir" {
	# sshd starts its sessions in the home directory.
	cd "$S"
	run -0 --separate-stderr worldrun -H "$(host_addr 2)" --rsh "$RSH" pwd
	assert_output "$S"
	mkdir "$S/sub"
	cd /
	run -0 --separate-stderr worldrun -H "$(host_addr 2)" --rsh "$RSH" --wdir "$S/sub" pwd
	assert_output "$S/sub"
}

@test "sshd hosts: a host sees nothing of the launcher's /tmp or /dev/shm" {
	run -0 --separate-stderr worldrun -H "$(host_addr 1)" --rsh "$RSH" sh -c \
		'ls /tmp | grep -c "^worldrun-" ; ls /dev/shm | wc -l'
	assert_line --index 0 1
	assert_line --index 1 0
}

@test "sshd hosts: libworld's RPC tests pass across the three hosts" {
	run -0 worldrun -H "$H" --rsh "$RSH" "$(dirname "$WORLDRUN")/../../tests/world/test-rpc"
	refute_line --partial 'not ok'
	assert_line --regexp '^ok '
}

@test "sshd hosts: the collective tests pass across the three hosts on a TCP provider" {
	run -0 worldrun -H "$H" --rsh "$RSH" "$(dirname "$WORLDRUN")/../../tests/world/test-coll"
	refute_line --partial 'not ok'
	assert_line --regexp '^ok '
}

@test "sshd hosts: the registry takes the secret in clear from no other host, only its proof" {
	worldrun -H "$(host_addr 1)" --rsh "$RSH" sh -c 'echo "$WORLD_REGISTRY $WORLD_SECRET" >/dev/stderr; exec sleep 30' 2>"$D/err" &
	wpid=$!
	wait_until 20 grep -q '^tcp:' "$D/err"
	read -r reg secret <"$D/err"
	# From host 2, with the secret itself: refused (one frame, by hand).
	run ip netns exec "$(host_ns 2)" /usr/bin/python3 -c '
import json, socket, struct, sys
host, port = sys.argv[1].split(":")[1:]
s = socket.create_connection((host, int(port)), timeout=10)
msg = json.dumps({"op": "hello", "id": 1, "rank": 0, "role": "tool",
                  "secret": sys.argv[2]}).encode()
s.sendall(struct.pack(">I", len(msg)) + msg)
n = struct.unpack(">I", s.recv(4, socket.MSG_WAITALL))[0]
print(s.recv(n, socket.MSG_WAITALL).decode())' "$reg" "$secret"
	assert_output --partial '"name":"WORLD_EAUTH","message":"the secret is taken in clear only from this machine'
	# worldctl proves it instead, from host 2 as well.
	run ip netns exec "$(host_ns 2)" env WORLD_REGISTRY="$reg" WORLD_SECRET="$secret" WORLD_RANK=0 \
		WORLD_SIZE=1 "$(dirname "$WORLDRUN")/../worldctl/worldctl" kv set k v
	assert_success
	# And the secret is on no command line.
	run grep -lasF "$secret" /proc/[0-9]*/cmdline
	assert_output ''
	kill -TERM "$wpid"
	finish_job 20
}

@test "sshd hosts: strangers from another host keep none of the job's own out: each one past 64 pushes the oldest stranger out at once" {
	# The job's rank on host 1 waits for go, then makes six worldctl
	# calls, each a new connection from another host (a stranger until
	# its hello) while host 2 holds 200 connections that say nothing.
	worldrun -H "$(host_addr 1)" --rsh "$RSH" sh -c '
		echo "$WORLD_REGISTRY" >"$S/reg"
		i=0; while [ ! -e "$S/go" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done
		t0=$(date +%s%N)
		for k in 1 2 3 4 5; do worldctl kv set k$k $k || exit 1; done
		worldctl kv get k5 >"$S/done"
		echo $((($(date +%s%N) - t0) / 1000000)) >"$S/took"
		i=0; while [ ! -e "$S/bye" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done' \
		>"$D/out" 2>"$D/err" &
	wpid=$!
	wait_until 20 test -s "$S/reg"
	run ip netns exec "$(host_ns 2)" wr-flood -t -e "$(cat "$S/reg")" 200 sh -c '
		touch "$S/go"
		i=0; while [ ! -s "$S/done" ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done'
	assert_success
	assert_line 'opened 200'
	# 136 pushed out by the flood itself, and one by the first call: each
	# call leaves the gate with its hello, and the next takes its place.
	assert_line 'closed 0-136'
	run cat "$S/done"
	assert_output 5
	# Nobody waited for a grace: the six calls took well under 3 s.
	assert [ "$(cat "$S/took")" -lt 3000 ]
	touch "$S/bye"
	finish_job 20
	assert_equal "$wstatus" 0
}

@test "sshd hosts: --timeout-stacks takes the stacks of other hosts' ranks through their agents" {
	# 8 s: under the sanitizers, ssh, an agent and its PMIx server take
	# more than 2 s to start a rank on each host.
	run -124 worldrun -H "$(host_addr 1),$(host_addr 2)" --rsh "$RSH" --timeout 8 \
		--timeout-stacks sleep 60
	assert_line --regexp '^worldrun:     stack of rank 0 \((eu-stack|gdb) on 198\.18\.0\.11\):$'
	assert_output --regexp 'nanosleep|clock_nanosleep'
	refute_output --partial 'no answer'
	wait_until 15 hosts_idle
}

@test "sshd hosts: killing the ssh client mid-job stops the job, and nothing is left on any host" {
	worldrun -H "$H" --rsh "$RSH" sh -c 'echo up >"$0/up.$WORLD_RANK"; exec sleep 60' "$S" 2>"$D/err" &
	wpid=$!
	wait_until 20 test -e "$S/up.2"
	wait_until 20 test -e "$S/up.1"
	pkill -9 -f "^ssh .* $(host_addr 2) "
	finish_job 20
	assert_equal "$wstatus" 125
	run -0 cat "$D/err"
	assert_line "worldrun: host $(host_addr 2): its remote shell was killed by signal 9"
	assert_line "worldrun: host $(host_addr 2): lost 1 running rank with it"
	wait_until 15 hosts_idle
}

@test "sshd hosts: killing the session's sshd child stops the job, and nothing is left" {
	worldrun -H "$H" --rsh "$RSH" sh -c 'echo up >"$0/up.$WORLD_RANK"; exec sleep 60' "$S" 2>"$D/err" &
	wpid=$!
	wait_until 20 test -e "$S/up.2"
	wait_until 20 test -e "$S/up.0"
	daemon=$(cat "$HOSTS_DIR/sshd.3.pid")
	for pid in $(ip netns pids "$(host_ns 3)"); do
		if [ "$(awk '{ print $4 }' "/proc/$pid/stat")" = "$daemon" ]; then
			kill -9 "$pid"
		fi
	done
	finish_job 20
	assert_equal "$wstatus" 125
	run -0 cat "$D/err"
	assert_line --regexp "^worldrun: host $(host_addr 3): (its remote shell exited with status 255|the connection to its agent was lost)"
	wait_until 15 hosts_idle
}

@test "sshd hosts: a host whose sshd port drops packets fails within --connect-timeout, and nothing runs" {
	ip netns exec "$(host_ns 3)" nft add table inet wrtest
	ip netns exec "$(host_ns 3)" nft add chain inet wrtest in '{ type filter hook input priority 0; }'
	ip netns exec "$(host_ns 3)" nft add rule inet wrtest in tcp dport 22 drop
	# 8 s: the other hosts' ssh and agents must answer within it on 2
	# busy cores, where 2 and 3 s were sometimes too short for them; and
	# below ssh's own ConnectTimeout, which would say first (30 s here).
	run -125 --separate-stderr worldrun -H "$H" --rsh "${RSH/ConnectTimeout=5/ConnectTimeout=30}" \
		--connect-timeout 8 touch "$S/ran"
	ip netns exec "$(host_ns 3)" nft delete table inet wrtest
	assert_equal "$stderr" "worldrun: host $(host_addr 3): no answer from its agent within 8 s (--connect-timeout)"
	assert [ ! -e "$S/ran" ]
}

@test "sshd hosts: no packet of a job with registry and RPC traffic carries the secret, but proofs do" {
	# Every interface, the bridge's ports included: host to host too.
	tcpdump -i any --immediate-mode -U -s 0 -Z root -w "$D/cap" net 198.18.0.0/24 2>"$D/tcpdump" &
	tpid=$!
	wait_until 10 grep -q 'listening on' "$D/tcpdump"
	run -0 --separate-stderr worldrun -H "$H" --rsh "$RSH" sh -c \
		'echo "$WORLD_SECRET" >"$0/secret"; exec "$1"' "$S" "$(dirname "$WORLDRUN")/../../tests/world/test-rpc"
	refute_line --partial 'not ok'
	kill -INT "$tpid"
	wait "$tpid" || true
	secret=$(cat "$S/secret")
	assert [ ${#secret} -ge 32 ]
	# The capture saw the registry's and the peers' frames in clear, from
	# host to host as well...
	run grep -caF '"op":"proof"' "$D/cap"
	assert [ "$output" -ge 6 ]
	run tcpdump -r "$D/cap" -nn src host "$(host_addr 1)" and dst host "$(host_addr 2)"
	assert [ "${#lines[@]}" -ge 1 ]
	# ...and the secret in none of them, nor in the ssh sessions.
	run grep -caF "$secret" "$D/cap"
	assert_output 0
}

# lose_link RSH...: start a job of a sleeping rank on each host, pull
# host 2's cable, and see worldrun lose that host within 3x its
# --host-timeout (3 s), the host stop its own rank while still cut off,
# and nothing of the job left there once the cable is back.
lose_link() {
	worldrun -H "$H" "$@" --host-timeout 3 sh -c \
		'echo up >"$0/up.$WORLD_RANK"; exec sleep 120' "$S" 2>"$D/err" &
	wpid=$!
	wait_until 20 test -e "$S/up.0"
	wait_until 20 test -e "$S/up.1"
	wait_until 20 test -e "$S/up.2"
	t0=$(date +%s%N)
	host_link 2 down
	finish_job 30
	elapsed=$((($(date +%s%N) - t0) / 1000000))
	assert_equal "$wstatus" 125
	run -0 cat "$D/err"
	assert_line "worldrun: host $(host_addr 2): no word from its agent for 3 s (--host-timeout)"
	assert_line "worldrun: host $(host_addr 2): lost 1 running rank with it"
	assert [ "$elapsed" -lt 9000 ]
	# Its agent heard nothing either: the rank goes, cable still out.
	wait_until 30 not_running 2 sleep
	host_link 2 up
	wait_until 30 hosts_idle
	run -0 $RSH "$(host_addr 2)" 'ls /tmp | grep -c "^worldrun-" || true'
	assert_output 0
}

# stopped_on I NAME: a process named NAME on host I is stopped.
stopped_on() {
	host_states "$1" | grep -q "^T $2\$"
}

# stopped PID: process PID (here) is stopped.
stopped() {
	[ "$(awk '{ print $3 }' "/proc/$1/stat")" = T ]
}

# not_running I NAME: no process named NAME on host I.
not_running() {
	! host_states "$1" | grep -q " $2\$"
}

@test "sshd hosts: a host whose cable is pulled is lost after --host-timeout under an --rsh without keepalives, and stops its own ranks" {
	lose_link --rsh "$RSH"
}

# default_ssh: an ssh first on PATH that is the real one with the test's
# key and known_hosts file ($D/known_hosts), so that worldrun's own ssh
# words (BatchMode, StrictHostKeyChecking=accept-new, ...) are what runs.
default_ssh() {
	mkdir -p "$D/bin"
	printf 'Host *\n\tUser root\n\tIdentityFile %s/key\n\tUserKnownHostsFile %s/known_hosts\n\tLogLevel ERROR\n' \
		"$HOSTS_DIR" "$D" >"$D/ssh_config"
	printf '#!/bin/sh\nexec /usr/bin/ssh -F %s/ssh_config "$@"\n' "$D" >"$D/bin/ssh"
	chmod +x "$D/bin/ssh"
	touch "$D/known_hosts"
}

@test "sshd hosts: worldrun's own ssh learns a new host's key and runs there" {
	default_ssh
	run -0 --separate-stderr env PATH="$D/bin:$PATH" worldrun -H "$(host_addr 1)" hostname
	assert_output h1
	run -0 grep -c "^$(host_addr 1) ssh-ed25519 " "$D/known_hosts"
	assert_output 1
}

@test "sshd hosts: a host whose cable is pulled is lost after --host-timeout under worldrun's own ssh, before ssh's keepalives" {
	default_ssh
	PATH="$D/bin:$PATH" lose_link
}

@test "sshd hosts: a job stopped with Ctrl-Z for longer than --host-timeout loses no host, its remote ranks stopped too" {
	worldrun -H "$H" --rsh "$RSH" --host-timeout 2 sh -c \
		'echo up >"$0/up.$WORLD_RANK"; i=0; while [ ! -e "$0/go" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done' \
		"$S" 2>"$D/err" &
	wpid=$!
	wait_until 20 test -e "$S/up.2"
	kill -TSTP "$wpid"
	# Host 3's rank is stopped while worldrun is: the command went before
	# worldrun stopped itself.
	wait_until 20 stopped_on 3 sh
	wait_until 20 stopped "$wpid"
	# Three times the host timeout, the job stopped: no host is silent.
	sleep 6
	touch "$S/go"
	kill -CONT "$wpid"
	finish_job 30
	assert_equal "$wstatus" 0
	run -0 cat "$D/err"
	refute_output --partial 'no word'
}

@test "sshd hosts: a host whose key changed is refused, in one line naming it, and nothing runs" {
	default_ssh
	ssh-keygen -q -t ed25519 -N '' -f "$D/other"
	echo "$(host_addr 2) $(cut -d' ' -f1-2 "$D/other.pub")" >"$D/known_hosts"
	run -125 --separate-stderr env PATH="$D/bin:$PATH" worldrun -H "$H" touch "$S/ran"
	assert_regex "$stderr" "worldrun: host $(host_addr 2): Host key verification failed\."
	assert_regex "$stderr" "worldrun: host $(host_addr 2): its remote shell exited with status 255"
	refute_regex "$stderr" "host $(host_addr 1)"
	assert [ ! -e "$S/ran" ]
}

@test "sshd hosts: worldrun missing on a host is one line naming the host and the path" {
	# A copy of worldrun under the launcher's /tmp, which no host sees.
	gone=$(mktemp -d /tmp/wr-gone.XXXXXX)
	cp "$WORLDRUN" "$gone/worldrun"
	run -125 --separate-stderr "$gone/worldrun" -H "$(host_addr 1),$(host_addr 2)" --rsh "$RSH" touch "$S/ran"
	rm -rf "$gone"
	assert_regex "$stderr" "worldrun: host $(host_addr 1): its remote shell exited with status 127: $gone/worldrun is not found there"
	assert_regex "$stderr" "worldrun: host $(host_addr 2): its remote shell exited with status 127"
	assert [ ! -e "$S/ran" ]
}

@test "sshd hosts: a gloo program runs across the three hosts, rank 0's host as MASTER_ADDR" {
	needs_torch
	# gloo finds its address by the host name unless told the interface:
	# here the one on the hosts' network.
	run -0 --separate-stderr worldrun -H "$H" --rsh "$RSH" sh -c \
		'GLOO_SOCKET_IFNAME=$(ip -o -4 addr show | awk "/198\\.18\\./ { print \$2; exit }") \
		 exec /usr/bin/python3 "$0"' "$SRCDIR/tests/cli/gloo.py"
	assert_line "0 6 0 $(host_addr 1)"
	assert_line "1 6 0 $(host_addr 1)"
	assert_line "2 6 0 $(host_addr 1)"
}

@test "sshd hosts: an MPICH program runs across the three hosts, each rank on its node" {
	[ -x "$HELPERS/wr-mpi" ] || fail "wr-mpi is not built (needs MPICH: libmpich-dev)"
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
	run -0 --separate-stderr worldrun -H "$(host_addr 1):2,$(host_addr 2):2,$(host_addr 3):2" \
		--rsh "$RSH" "$HELPERS/wr-mpi" ring
	assert_line 'rank 0 of 6: ring 15 sum 6 split 0 of 3 on 0'
	assert_line 'rank 3 of 6: ring 6 sum 6 split 1 of 3 on 2'
	assert_line 'rank 5 of 6: ring 15 sum 6 split 2 of 3 on 4'
	# 2, 4 and 8 ranks, spread by node over the hosts.
	for n in 2 4 8; do
		run -0 --separate-stderr worldrun -n "$n" -H "$H" --oversubscribe --map-by node \
			--rsh "$RSH" "$HELPERS/wr-mpi" ring
		assert_equal "$(grep -c "^rank [0-9]* of $n: ring [0-9]* sum $n " <<<"$output")" "$n"
		assert_line --regexp "^rank 0 of $n: ring $((n * (n - 1) / 2)) sum $n "
	done
}

@test "sshd hosts: an Open MPI program runs across the three hosts over PMIx, and aborts as it asks" {
	[ -x "$HELPERS/wr-ompi" ] || fail "wr-ompi is not built (needs Open MPI: libopenmpi-dev)"
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
	run -0 --separate-stderr worldrun -H "$(host_addr 1):2,$(host_addr 2):2,$(host_addr 3):2" \
		-x OMPI_ALLOW_RUN_AS_ROOT -x OMPI_ALLOW_RUN_AS_ROOT_CONFIRM --rsh "$RSH" "$HELPERS/wr-ompi" ring
	assert_line 'rank 0 of 6: ring 15 sum 6 split 0 of 3 on 0'
	assert_line 'rank 3 of 6: ring 6 sum 6 split 1 of 3 on 2'
	assert_line 'rank 5 of 6: ring 15 sum 6 split 2 of 3 on 4'
	run -17 --separate-stderr worldrun -H "$H" -x OMPI_ALLOW_RUN_AS_ROOT \
		-x OMPI_ALLOW_RUN_AS_ROOT_CONFIRM --rsh "$RSH" "$HELPERS/wr-ompi" abort 17
	assert_regex "$stderr" "worldrun: rank 1 \\(pid [0-9]+ on [^)]+\\) called abort with exit code 17"
}

@test "sshd hosts: a world without worldrun forms across the hosts with WORLD_SECRET, its collectives over TCP" {
	world_python
	cat >"$S/alone.py" <<'PY'
import socket, sys
import numpy as np
import world
rank = int(sys.argv[1])
w = world.World(str(rank), rank=rank, world_size=3, rpc_init_method=sys.argv[2])
g = w.create_rpc_group("g", ["0", "1", "2"])
if rank == 0:
    g.register("where", socket.gethostname)
g.barrier()
c = w.create_collective_group(ranks=[0, 1, 2])
a = np.full(4, rank + 1.0)
c.all_reduce(a)
print(f"rank {rank} on {socket.gethostname()}: {g.registered_sync('where')} {a.tolist()}", flush=True)
w.stop()
PY
	# The same secret in every process, as the man page says; no file.
	secret=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
	for i in 1 2 3; do
		$RSH "$(host_addr "$i")" env WORLD_SECRET="$secret" WORLD_WAIT_TIMEOUT=60 \
			LD_LIBRARY_PATH="$LD_LIBRARY_PATH" "${PY[@]}" "$S/alone.py" $((i - 1)) \
			"tcp://$(host_addr 1):29500" >"$S/out.$i" 2>&1 &
	done
	wait
	run cat "$S/out.1" "$S/out.2" "$S/out.3"
	assert_line 'rank 0 on h1: h1 [6.0, 6.0, 6.0, 6.0]'
	assert_line 'rank 1 on h2: h1 [6.0, 6.0, 6.0, 6.0]'
	assert_line 'rank 2 on h3: h1 [6.0, 6.0, 6.0, 6.0]'
}

@test "sshd hosts: --max-restarts starts every host's ranks again, nothing of the failed attempt left on any host" {
	run -0 --separate-stderr worldrun -H "$H" --rsh "$RSH" --max-restarts 1 --monitor-interval 0.1 \
		-l sh -c 'if [ "$WORLD_RESTART_COUNT" = 0 ]; then
			echo "$$ $WORLD_JOBDIR" >"$S/seen.$RANK"
			[ "$RANK" = 2 ] && exit 3
			exec sleep 60
		fi
		read -r pid dir <"$S/seen.$RANK"
		if kill -0 "$pid" 2>/dev/null || [ -e "$dir" ]; then echo "left $pid $dir"; else echo "$(hostname) clean"; fi'
	assert_line '0: h1 clean'
	assert_line '1: h2 clean'
	assert_line '2: h3 clean'
	assert_equal "$(grep '^worldrun: restart' <<<"$stderr")" 'worldrun: restart 1 of 1: rank 2 exited (status 3)'
	wait_until 15 hosts_idle
}

# counting_rsh: $RSH, each of its runs noted in $S/ssh.log.
counting_rsh() {
	printf '#!/bin/sh\necho "$*" >>%q\nexec %s "$@"\n' "$S/ssh.log" "$RSH" >"$S/rsh"
	chmod +x "$S/rsh"
}

@test "sshd hosts: a restart keeps every host's agent and its ssh: the next attempt's ranks have the same parent" {
	counting_rsh
	# Each rank notes its agent (its parent); rank 1 fails once every
	# rank of the attempt noted it, in attempts 0 and 1.
	run -0 --separate-stderr worldrun --timeout 60 -H "$H" --rsh "$S/rsh" --max-restarts 2 \
		--monitor-interval 0.1 -l sh -c 'a=$WORLD_RESTART_COUNT
		echo "agent $PPID" && : >"$S/up.$a.$RANK"
		[ "$a" = 2 ] && exit 0
		[ "$RANK" = 1 ] || exec sleep 60
		until [ -e "$S/up.$a.0" ] && [ -e "$S/up.$a.2" ]; do sleep 0.05; done
		exit 3'
	out=$output
	for r in 0 1 2; do
		assert_equal "$(grep -c "^$r: agent [0-9]*$" <<<"$out")" 3
		assert_equal "$(grep "^$r: agent " <<<"$out" | sort -u | wc -l)" 1
	done
	run -0 wc -l <"$S/ssh.log"
	assert_output 3
	wait_until 15 hosts_idle
}

@test "sshd hosts: an agent gone while worldrun waits to restart is started anew, over a new ssh" {
	# The wait before the restart is 10 s less attempt 0's time (its ssh
	# included): time enough to kill the agent before attempt 1 begins.
	counting_rsh
	worldrun --timeout 60 -H "$H" --rsh "$S/rsh" --max-restarts 1 --monitor-interval 10 \
		-l sh -c 'echo "agent $PPID" && : >"$S/up.$WORLD_RESTART_COUNT.$RANK"
		[ "$WORLD_RESTART_COUNT" = 1 ] && exit 0
		[ "$RANK" = 1 ] || exec sleep 60
		until [ -e "$S/up.0.0" ] && [ -e "$S/up.0.2" ]; do sleep 0.05; done
		exit 3' >"$D/out" 2>"$D/err" &
	wpid=$!
	wait_until 30 grep -q "^worldrun: restart 1 of 1" "$D/err"
	agent=$(sed -n 's/^2: agent //p' "$D/out")
	kill -KILL "$agent"
	wait "$wpid"
	run -0 grep "^2: agent " "$D/out"
	assert_equal "${#lines[@]}" 2
	[ "${lines[1]}" != "2: agent $agent" ]
	run -0 wc -l <"$S/ssh.log"
	assert_output 4
	wait_until 15 hosts_idle
}

@test "sshd hosts: the c10d backend's own tests pass with ranks on the three hosts, against gloo" {
	needs_torch
	world_python
	[ -n "${WORLD_C10D:-}" ] || fail "the c10d backend is not built (needs libtorch-dev and pybind11-dev)"
	# PY's settings go to the other hosts through -x; gloo, the
	# reference, is told the interface of the hosts' network.
	local xs=(-x PYTHONPATH -x PYTHONDONTWRITEBYTECODE)
	[ ${#PY_ASAN_ENV[@]} = 0 ] || xs+=(-x LD_PRELOAD -x ASAN_OPTIONS)
	run -0 --separate-stderr "${PY[@]:0:${#PY[@]}-1}" worldrun \
		-H "$(host_addr 1):2,$(host_addr 2),$(host_addr 3)" --rsh "$RSH" "${xs[@]}" \
		sh -c 'GLOO_SOCKET_IFNAME=$(ip -o -4 addr show | awk "/198\\.18\\./ { print \$2; exit }") \
		 exec "$0" -m pytest -x -p no:terminal -p no:cacheprovider "$1"' \
		"${PY[@]: -1}" "$SRCDIR/tests/python/test_c10d.py"
	refute_line --partial 'not ok'
	assert_line --regexp '^1\.\.[0-9]+$'
	assert_equal "1..$(grep -c '^ok ' <<<"$output")" "$(grep '^1\.\.' <<<"$output")"
}
