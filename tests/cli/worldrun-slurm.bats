#!/usr/bin/env bats
# worldrun inside a real Slurm: a private controller, munge and three
# emulated nodes on this host (slurm.bash), brought up once for the file
# and taken down with every process it started. Root only; under CI=true
# a skip here is a failure.
load helpers
load slurm

setup_file() {
	local why
	# n3's steps may use CPU 1 only (binding's test), where there is one.
	if (($(nproc) >= 2)); then
		export WRS_LAST_CPUS=1
	fi
	if why=$(slurm_can); then
		slurm_up || export SLURM_SKIP="the private Slurm did not come up (see its logs)"
	else
		export SLURM_SKIP="$why"
	fi
}

teardown_file() {
	slurm_down
}

setup() {
	if [ -n "${SLURM_SKIP:-}" ]; then
		[ "${CI:-}" != true ] || fail "CI runs as root with Slurm installed: $SLURM_SKIP"
		skip "$SLURM_SKIP"
	fi
	D=$BATS_TEST_TMPDIR
	export D
}

teardown() {
	local pid
	show_failure
	# What a failed test left running in the background (a job that
	# sleeps) would hold the nodes the next tests ask for.
	for pid in $(procs_with "SLURM_CONF=$SLURM_CONF"); do
		case $(cat "/proc/$pid/comm" 2>/dev/null) in
		worldrun | salloc | srun | sbatch) kill -KILL "$pid" 2>/dev/null ;;
		esac
	done
	wait_until 15 output_is "" slurm_steps || true
}

# Every srun and salloc bounded: a request Slurm cannot meet queues
# silently.
srun_() {
	timeout -k 5 60 srun "$@"
}

# The steps of worldrun's agents the controller knows of, counted.
worldrun_steps() {
	slurm_steps | grep -c worldrun
}

salloc_() {
	timeout -k 5 60 salloc -Q "$@"
}

# A rank's line: its rank, node and local ranks, and the Slurm node its
# agent runs on (the agent is its parent; the ranks themselves do not
# get SLURMD_NODENAME).
PLACE='echo "$WORLD_RANK $WORLD_NODE_RANK $WORLD_LOCAL_RANK $WORLD_NNODES" \
	"$(tr "\0" "\n" </proc/$PPID/environ | sed -n "s/^SLURMD_NODENAME=//p")"'

@test "slurm: the private cluster runs a step on each of its three nodes" {
	run -0 srun_ -N3 -n3 -l sh -c 'echo "$SLURMD_NODENAME $SLURM_NODEID"'
	assert_line '0: n1 0'
	assert_line '1: n2 1'
	assert_line '2: n3 2'
}

@test "slurm: inside an srun task, ranks get the allocation's variables but not the task's" {
	run -0 --separate-stderr srun_ -N1 -n1 -c 2 "$WORLDRUN" -n 2 -l sh -c \
		'env | grep -E "^SLURM_(JOB_ID|PROCID|LOCALID|NODEID|NTASKS|STEP_ID|STEP_NODELIST|NODELIST)=" | sort'
	assert_line --regexp '^0: SLURM_JOB_ID=[0-9]+$'
	assert_line --regexp '^1: SLURM_JOB_ID=[0-9]+$'
	assert_line --regexp '^0: SLURM_NODELIST=n1$'
	refute_line --regexp 'SLURM_(PROCID|LOCALID|NODEID|NTASKS|STEP_ID|STEP_NODELIST)='
}

@test "slurm: srun's PMI-2 and PMIx variables do not reach worldrun's ranks" {
	run -0 --separate-stderr srun_ --mpi=pmi2 -N1 -n1 sh -c \
		'test -n "$PMI_FD" && echo "task has PMI_FD" &&
		 exec "$WORLDRUN" -n 1 --pmi none sh -c "env | grep -c ^PMI || true"'
	assert_line 'task has PMI_FD'
	assert_line 0
	run -0 --separate-stderr srun_ --mpi=pmix -N1 -n1 sh -c \
		'test -n "$PMIX_RANK" && echo "task has PMIX_RANK" &&
		 exec "$WORLDRUN" -n 1 --pmi none sh -c "env | grep -c ^PMI || true"'
	assert_line 'task has PMIX_RANK'
	assert_line 0
}

@test "slurm: under salloc, the ranks go to the allocation's nodes, each started by srun" {
	run -0 --separate-stderr salloc_ -N3 -n6 "$WORLDRUN" -l sh -c "$PLACE"
	assert_line '0: 0 0 0 3 n1'
	assert_line '3: 3 0 3 3 n1'
	assert_line '4: 4 1 0 3 n2'
	assert_line '5: 5 2 0 3 n3'
	[ "${#lines[@]}" -eq 6 ]
}

@test "slurm: each agent has every CPU the job has on its node, and MASTER_ADDR is rank 0's agent's address" {
	# --whole: the agent's step holds the job's 4, 1 and 1 CPUs, not one
	# task's share, which its ranks would inherit under task/affinity.
	run -0 --separate-stderr salloc_ -N3 -n6 "$WORLDRUN" -l sh -c \
		'echo "$MASTER_ADDR $(tr "\0" "\n" </proc/$PPID/environ | sed -n "s/^SLURM_CPUS_ON_NODE=//p")"'
	assert_line '0: 127.0.0.1 4'
	assert_line '4: 127.0.0.1 1'
	assert_line '5: 127.0.0.1 1'
	# The step itself holds the job's 6 CPUs, not one per agent.
	run -0 --separate-stderr salloc_ -N3 -n6 "$WORLDRUN" -n 1 sh -c \
		'step=$(tr "\0" "\n" </proc/$PPID/environ | sed -n "s/^SLURM_STEP_ID=//p")
		 timeout 10 scontrol show step "$SLURM_JOB_ID.$step" | grep -o " CPUs=[0-9]*"'
	assert_output ' CPUs=4'
	run -0 --separate-stderr salloc_ -N3 -n6 "$WORLDRUN" -n 3 --map-by node sh -c \
		'[ "$WORLD_RANK" != 0 ] && exit 0
		 step=$(tr "\0" "\n" </proc/$PPID/environ | sed -n "s/^SLURM_STEP_ID=//p")
		 timeout 10 scontrol show step "$SLURM_JOB_ID.$step" | grep -o " CPUs=[0-9]*"'
	assert_output ' CPUs=6'
}

@test "slurm: --bind-to core binds each node's ranks, its agent reporting for them" {
	run -0 --separate-stderr salloc_ -N2 -n2 "$WORLDRUN" --bind-to core --report-bindings \
		sh -c 'awk -v r="$WORLD_RANK" '\''/^Cpus_allowed_list:/ { print r, $2 }'\'' /proc/self/status'
	assert_regex "$stderr" 'worldrun: rank 0 \(pid [0-9]+ on n1\) bound to core 0 '
	assert_regex "$stderr" 'worldrun: rank 1 \(pid [0-9]+ on n2\) bound to core 0 '
	assert_line --regexp '^1 [0-9]+$'
}

@test "slurm: a node's ranks are bound within the CPUs its step may use" {
	[ -n "${WRS_LAST_CPUS:-}" ] || skip "needs 2 CPUs"
	run -0 --separate-stderr salloc_ -N3 -n3 "$WORLDRUN" --map-by node --bind-to core \
		--report-bindings sh -c 'echo "$WORLD_RANK $(taskset -cp $$ | sed "s/.*: //")"'
	assert_regex "$stderr" 'worldrun: rank 2 \(pid [0-9]+ on n3\) bound to core 0 \(cpu 1\)'
	assert_line '2 1'
	run -0 --separate-stderr salloc_ -N3 -n3 "$WORLDRUN" --map-by node --report-bindings true
	assert_regex "$stderr" 'worldrun: rank 2 \(pid [0-9]+ on n3\) not bound \(cpu 1\)'
}

@test "slurm: the job's secret never crosses TCP on the agents' channels" {
	command -v tcpdump >/dev/null || fail "tcpdump is not installed (setup.sh installs it)"
	tcpdump -i lo --immediate-mode -U -w "$D/cap" tcp 2>"$D/tcpdump.err" &
	local dump=$!
	wait_until 10 grep -q 'listening on lo' "$D/tcpdump.err"
	run -0 --separate-stderr salloc_ -N3 -n6 "$WORLDRUN" -n 3 --map-by node sh -c \
		'echo "$WORLD_SECRET" >"$D/secret.$WORLD_RANK"
		 sh "$SRCDIR/tests/cli/agents-port.sh" >"$D/port"'
	kill -INT "$dump"
	wait "$dump" || true
	local port secret
	port=$(cat "$D/port")
	secret=$(cat "$D/secret.1")
	[ -n "$port" ]
	[ "${#secret}" -eq 32 ]
	# The capture holds the channels' traffic (their SETUPs)...
	tcpdump -r "$D/cap" -A "tcp port $port" 2>/dev/null >"$D/chan.txt"
	grep -q '"setup"' "$D/chan.txt"
	# ...and nowhere the secret, in clear or as the hex it is.
	run -1 grep -c -F "$secret" "$D/chan.txt"
}

@test "slurm: an srun that fails before its agents connect loses their nodes, and says why" {
	# n3 is no node of a 2-node allocation: srun refuses the step.
	run -125 --separate-stderr salloc_ -N2 -n2 "$WORLDRUN" --launcher slurm -H n1,n3 \
		touch "$D/ran"
	echo "$stderr" | grep -q '^worldrun: srun: error: '
	echo "$stderr" | grep -Eqx 'worldrun: host n3: srun exited with status [0-9]+ before its agent connected'
	[ ! -e "$D/ran" ]
}

@test "slurm: --display-map and --dry-run show the allocation's nodes and slots" {
	run -0 --separate-stderr salloc_ -N3 -n6 "$WORLDRUN" --display-map --dry-run true
	assert_line --regexp '^rank 3 host n1 wdir '
	assert_line --regexp '^rank 4 host n2 wdir '
	assert_line --regexp '^rank 5 host n3 wdir '
	[ "$stderr" = "worldrun: node 0 (n1): ranks 0-3
worldrun: node 1 (n2): rank 4
worldrun: node 2 (n3): rank 5" ]
}

@test "slurm: -n below the slots fills the first nodes; --map-by node goes round them" {
	run -0 --separate-stderr salloc_ -N3 -n6 "$WORLDRUN" -n 2 -l sh -c "$PLACE"
	assert_line '0: 0 0 0 1 n1'
	assert_line '1: 1 0 1 1 n1'
	run -0 --separate-stderr salloc_ -N3 -n6 "$WORLDRUN" -n 3 --map-by node -l sh -c "$PLACE"
	assert_line '0: 0 0 0 3 n1'
	assert_line '1: 1 1 0 3 n2'
	assert_line '2: 2 2 0 3 n3'
}

@test "slurm: a request the allocation cannot hold fails at once in one line, and starts nothing" {
	run -125 --separate-stderr salloc_ -N3 -n6 "$WORLDRUN" -n 8 sh -c 'touch "$D/ran"'
	[ "$stderr" = "worldrun: the Slurm allocation (SLURM_TASKS_PER_NODE=4,1(x2)): 8 ranks do not fit in the 6 slots of 3 hosts (--oversubscribe allows more)" ]
	[ ! -e "$D/ran" ]
	run -0 --separate-stderr salloc_ -N3 -n6 "$WORLDRUN" -n 8 --oversubscribe -l sh -c "$PLACE"
	assert_line '6: 6 0 4 3 n1'
	assert_line '7: 7 1 1 3 n2'
}

@test "slurm: an Open MPI program runs across the allocation's nodes over PMIx, and MPI_Abort decides" {
	[ -x "$HELPERS/wr-ompi" ] || fail "wr-ompi is not built (needs Open MPI: libopenmpi-dev)"
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
	run -0 --separate-stderr salloc_ -N3 -n6 "$WORLDRUN" "$HELPERS/wr-ompi" ring
	assert_line 'rank 0 of 6: ring 15 sum 6 split 0 of 3 on 0'
	assert_line 'rank 3 of 6: ring 6 sum 6 split 1 of 3 on 0'
	assert_line 'rank 4 of 6: ring 10 sum 6 split 2 of 3 on 4'
	assert_line 'rank 5 of 6: ring 15 sum 6 split 2 of 3 on 5'
	run -17 --separate-stderr salloc_ -N3 -n6 "$WORLDRUN" "$HELPERS/wr-ompi" abort 17
	echo "$stderr" | grep -Eq 'worldrun: rank 1 \(pid [0-9]+ on n1\) called abort with exit code 17'
}

@test "slurm: a failing rank on another node decides the status, names its node and stops the rest" {
	run -3 --separate-stderr salloc_ -N3 -n6 "$WORLDRUN" sh -c \
		'if [ "$WORLD_RANK" = 5 ]; then exit 3; fi; exec sleep 60'
	echo "$stderr" | grep -Eqx 'worldrun: rank 5 \(pid [0-9]+ on n3\) exited with status 3 after [0-9.]+ s'
	echo "$stderr" | grep -qx 'worldrun: stopped 5 other ranks'
	run -137 --separate-stderr salloc_ -N3 -n6 "$WORLDRUN" sh -c \
		'if [ "$WORLD_RANK" = 4 ]; then kill -9 $$; fi; exec sleep 60'
	echo "$stderr" | grep -Eq 'rank 4 \(pid [0-9]+ on n2\) killed by signal 9'
}

@test "slurm: output of every node arrives in whole lines, and stdin reaches rank 0 on its node" {
	run -0 --separate-stderr salloc_ -N3 -n6 "$WORLDRUN" -n 6 --map-by node -l \
		wr-spew -l 1000 200000
	[ "${#lines[@]}" -eq 1200 ]
	# Every line whole: its label is its rank's, and it is 1000 bytes long.
	[ -z "$(printf '%s\n' "${lines[@]}" | grep -Ev '^([0-5]): r\1 x{996}$' | head -3)" ]
	run -0 --separate-stderr sh -c 'echo from-stdin | timeout -k 5 60 salloc -Q -N3 -n6 "$WORLDRUN" -n 3 --map-by node --stdin 2 -l sh -c "read -r l && echo \$WORLD_RANK \$l || true"'
	assert_line '2: 2 from-stdin'
}

@test "slurm: inside an srun task, a step of its own with --overlap, its own node in-process" {
	# Without --overlap the agents' step would wait for the CPUs of the
	# task worldrun runs in: timeout would kill it.
	run -0 --separate-stderr salloc_ -N3 -n6 srun -N1 -n1 "$WORLDRUN" -l sh -c \
		'echo "$WORLD_RANK $WORLD_NODE_RANK $(tr "\0" "\n" </proc/$PPID/cmdline | sed -n 2p)"'
	assert_line '0: 0 0 -l'
	assert_line '3: 3 0 -l'
	assert_line '4: 4 1 --agent'
	assert_line '5: 5 2 --agent'
}

@test "slurm: two jobs at once in one allocation both run: neither step waits for the other's CPUs" {
	run -0 --separate-stderr salloc_ -N3 -n6 sh -c '
		"$WORLDRUN" sh -c "echo \$WORLD_RANK >>\"\$D/first\"; sleep 60" &
		i=0
		while [ "$(cat "$D/first" 2>/dev/null | wc -l)" -lt 6 ] && [ $i -lt 600 ]; do
			sleep 0.05; i=$((i + 1))
		done
		"$WORLDRUN" --connect-timeout 20 -l sh -c "echo second \$WORLD_RANK"
		st=$?
		kill -TERM $!
		wait
		exit $st'
	assert_line '0: second 0'
	assert_line '5: second 5'
}

@test "slurm: inside sbatch, the batch script's node runs in-process and the others by srun" {
	run -0 timeout -k 5 90 sbatch -Q --wait -N3 -n6 -o "$D/out" --wrap \
		"'$WORLDRUN' -l sh -c '$(printf %s "$PLACE" | sed "s/'/'\\\\''/g")'; echo status \$?"
	run cat "$D/out"
	assert_line 'status 0'
	assert_line '0: 0 0 0 3 n1'
	assert_line '4: 4 1 0 3 n2'
	assert_line '5: 5 2 0 3 n3'
	# n1's ranks are worldrun's own children, the others an agent's.
	run -0 timeout -k 5 90 sbatch -Q --wait -N3 -n6 -o "$D/out2" --wrap \
		"'$WORLDRUN' -l sh -c 'tr \"\\\\0\" \"\\\\n\" </proc/\$PPID/cmdline | sed -n 2p'"
	run cat "$D/out2"
	assert_line '0: -l'
	assert_line '4: --agent'
}

@test "slurm: inside sbatch, a failing rank, a job too big, whole lines, the RPC and collective tests" {
	local rpc
	rpc="$(dirname "$WORLDRUN")/../../tests/world/test-rpc"
	cat >"$D/job.sh" <<-EOF
	#!/bin/sh
	"$WORLDRUN" sh -c 'if [ "\$WORLD_RANK" = 5 ]; then exit 3; fi; exec sleep 60' 2>"$D/fail.err"
	echo "fail \$?"
	"$WORLDRUN" -n 7 true 2>"$D/big.err"
	echo "big \$?"
	"$WORLDRUN" -n 6 --map-by node -l wr-spew -l 1000 100000 >"$D/spew"
	echo "spew \$? \$(grep -Ec '^([0-5]): r\\1 x{996}\$' "$D/spew")"
	"$WORLDRUN" -n 3 --map-by node "$rpc" >"$D/rpc"
	echo "rpc \$? \$(grep -c '^not ok' "$D/rpc")"
	"$WORLDRUN" -n 3 --map-by node "${rpc%-rpc}-coll" >"$D/coll"
	echo "coll \$? \$(grep -c '^not ok' "$D/coll")"
	EOF
	run -0 timeout -k 5 120 sbatch -Q --wait -N3 -n6 -o "$D/out" "$D/job.sh"
	run cat "$D/out"
	assert_line 'fail 3'
	assert_line 'big 125'
	assert_line 'spew 0 600'
	assert_line 'rpc 0 0'
	assert_line 'coll 0 0'
	grep -Eqx 'worldrun: rank 5 \(pid [0-9]+ on n3\) exited with status 3 after [0-9.]+ s' "$D/fail.err"
	grep -qx 'worldrun: the Slurm allocation (SLURM_TASKS_PER_NODE=4,1(x2)): 7 ranks do not fit in the 6 slots of 3 hosts (--oversubscribe allows more)' "$D/big.err"
}

@test "slurm: --timeout's hang report and --report name the nodes as Slurm does" {
	run -124 --separate-stderr salloc_ -N3 -n6 "$WORLDRUN" --timeout 3 --report "$D/rep.json" \
		sh -c 'if [ "$WORLD_RANK" = 4 ]; then exec sleep 60; fi; worldctl barrier b'
	echo "$stderr" | grep -Eq 'ranks 0-3,5 in barrier "b" via worldctl \(since [0-9.]+ s\), waiting for rank 4$'
	echo "$stderr" | grep -Eq 'rank 4 not in any libworld wait \(pid [0-9]+ on n2\)'
	run -0 jq -r '.ranks[] | "\(.rank) \(.host)"' "$D/rep.json"
	assert_line '0 n1'
	assert_line '4 n2'
	assert_line '5 n3'
}

@test "slurm: SIGTERM to worldrun stops the ranks of every node, and it exits 143" {
	# worldrun dies of the signal it was stopped by, which salloc turns
	# into 1: the status is the shell's.
	salloc_ -N3 -n6 sh -c '"$WORLDRUN" sh -c "echo \$\$ >>$D/pids; exec sleep 60"
		echo "status $?" >"$D/status"' 2>"$BATS_TEST_TMPDIR/err" &
	wpid=$!
	wait_until 30 pids_in "$D/pids" 6
	pkill -TERM -f "^$WORLDRUN sh -c echo"
	wait_until 15 all_gone "$D/pids"
	finish_job 15
	run cat "$D/status"
	assert_output 'status 143'
}

@test "slurm: the RPC, Machin and collective tests pass across the three nodes" {
	local t
	for t in rpc machin coll; do
		run -0 --separate-stderr salloc_ -N3 -n6 "$WORLDRUN" -n 3 --map-by node \
			"$(dirname "$WORLDRUN")/../../tests/world/test-$t"
		refute_line --partial 'not ok'
		assert_line --regexp '^1\.\.[0-9]+$'
	done
}

@test "slurm: SIGKILL of worldrun leaves no rank and, soon, no step" {
	salloc_ -N3 -n6 "$WORLDRUN" sh -c 'echo $$ >>"$D/pids"; exec sleep 60' \
		2>"$BATS_TEST_TMPDIR/err" &
	wait_until 30 pids_in "$D/pids" 6
	wait_until 10 output_is 1 worldrun_steps
	pkill -KILL -f "^$WORLDRUN sh -c echo"
	wait_until 15 all_gone "$D/pids"
	wait_until 20 output_is "" slurm_steps
	wait
}

@test "slurm: SIGKILL of worldrun inside sbatch leaves no rank and, soon, no step but the batch's" {
	local job
	cat >"$D/job.sh" <<-EOF
	#!/bin/sh
	"$WORLDRUN" sh -c 'echo \$\$ >>"$D/pids"; exec sleep 60' 2>"$D/err" &
	echo \$! >"$D/wpid"
	wait
	EOF
	job=$(timeout 10 sbatch --parsable -N3 -n6 -o "$D/out" "$D/job.sh")
	[ -n "$job" ]
	wait_until 30 pids_in "$D/pids" 6
	wait_until 10 output_is 1 sh -c "squeue -h -s -j $job -o %j | grep -c worldrun"
	kill -KILL "$(cat "$D/wpid")"
	wait_until 15 all_gone "$D/pids"
	wait_until 20 output_is 0 sh -c "squeue -h -s -j $job -o %j | grep -c worldrun"
	wait_until 20 output_is "" slurm_steps
}

# sleepers_up: a job of 2 sleeping ranks under salloc, in the background,
# once both run; sleepers_down: they still run (nothing above stopped
# them), then stop. agents_port: the port its agents dialed.
sleepers_up() {
	salloc_ -N3 -n6 "$WORLDRUN" -n 2 sh -c 'echo $$ >>"$D/pids"; exec sleep 60' \
		2>"$BATS_TEST_TMPDIR/err" &
	wait_until 30 pids_in "$D/pids" 2
}

sleepers_down() {
	run -1 all_gone "$D/pids"
	pkill -TERM -f "^$WORLDRUN -n 2 sh -c echo"
	wait_until 15 all_gone "$D/pids"
	wait
}

agents_port() {
	sh "$SRCDIR/tests/cli/agents-port.sh"
}

@test "slurm: an agent with the wrong secret is refused by the launcher, and the job goes on" {
	local port
	sleepers_up
	port=$(agents_port)
	[ -n "$port" ]
	run -125 env SLURM_LAUNCH_NODE_IPADDR=127.0.0.1 SLURM_NODEID=0 SLURMD_NODENAME=n1 \
		sh -c "echo 0123456789abcdef0123456789abcdef $port | exec '$WORLDRUN' --agent --dial"
	assert_output --partial "agent: unable to start: unable to reach the launcher at 127.0.0.1:$port: wrong job secret, or not the job's launcher"
	run -125 env SLURM_LAUNCH_NODE_IPADDR=127.0.0.1 SLURM_NODEID=0 \
		sh -c "echo not-hex $port | exec '$WORLDRUN' --agent --dial"
	assert_output "agent: unable to start: stdin is not a job secret (hexadecimal digits)"
	run -125 env SLURM_LAUNCH_NODE_IPADDR=127.0.0.1 SLURM_NODEID=0 \
		sh -c "echo 0123456789abcdef | exec '$WORLDRUN' --agent --dial"
	assert_output "agent: unable to start: stdin has no port after the job secret"
	# One that skips the launcher's proof and sends a wrong one of its own.
	run -0 python3 "$SRCDIR/tests/cli/agentpoke.py" "$port" agent
	assert_line 'challenge'
	assert_line 'wrong proof of the job secret'
	# A registry client (a rank would say so) is no agent.
	run -0 python3 "$SRCDIR/tests/cli/agentpoke.py" "$port" rank
	assert_output --partial 'this port takes agents only'
	# Nor is one that asks the registry without a hello.
	run -0 python3 "$SRCDIR/tests/cli/agentpoke.py" "$port" -
	assert_output --partial 'this port takes agents only'
	# A stranger that says nothing of the protocol; the job's ranks still run.
	run -0 sh -c "head -c 5000 /dev/urandom >/dev/tcp/127.0.0.1/$port 2>/dev/null; true"
	sleepers_down
}

@test "slurm: 65 strangers on the agents' port: 64 are held, the oldest makes room, and the job goes on" {
	local port
	sleepers_up
	port=$(agents_port)
	[ -n "$port" ]
	# The 65th waits in the backlog until the gate pushes the oldest out;
	# then it is answered as any connection of the wrong kind.
	run -0 wr-flood -t -e "tcp:127.0.0.1:$port" 64 \
		python3 "$SRCDIR/tests/cli/agentpoke.py" "$port" rank
	assert_line 'opened 64'
	assert_line --partial 'this port takes agents only'
	assert_line --regexp '^closed 0(-|,|$)'
	sleepers_down
}

@test "slurm: the agents' port is on no command line, and another user's connections to it are closed at accept" {
	local port
	if [ "$(id -u)" != 0 ]; then
		[ "${CI:-}" != true ] || fail "CI runs as root: this test must not skip"
		skip "needs root, to act as user nobody"
	fi
	sleepers_up
	port=$(agents_port)
	[ -n "$port" ]
	# Every command line, read whole; processes that end meanwhile are
	# skipped (a glob of /proc outlives some of them).
	local seen
	for f in /proc/[0-9]*/cmdline; do
		{ tr '\0' ' ' <"$f"; } 2>/dev/null || true
		echo
	done >"$D/cmdlines"
	seen=$(grep -cw -- "$port" "$D/cmdlines" || true)
	run -0 setpriv --reuid=nobody --regid=nogroup --clear-groups /usr/bin/python3 -c '
import socket, sys
held = [socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=3) for _ in range(100)]
closed = sum(1 for s in held if s.recv(1) == b"")
print(f"closed {closed} of {len(held)}")' "$port"
	local closed=$output
	sleepers_down
	assert_equal "$closed" 'closed 100 of 100'
	assert_equal "$seen" 0
}

@test "slurm: srun killed mid-job: the job goes on over the agents' own channels, and no agent leaves its job directory" {
	mkdir "$D/tmp"
	TMPDIR=$D/tmp salloc_ -N3 -n6 "$WORLDRUN" -n 3 --map-by node sh -c \
		'echo $$ >>"$D/pids"
		 i=0; while [ ! -e "$D/go" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done
		 echo "done $WORLD_RANK"' >"$D/out" 2>"$D/err" &
	local job=$!
	wait_until 30 pids_in "$D/pids" 3
	# srun forks a shepherd that cancels the step when srun dies alone
	# (then the agents go, and the job with them: the SIGTERM test below).
	# Both killed, the shepherd first, as by a kill of the whole group.
	local pid shepherd=""
	for pid in $(pgrep -f "^srun --overlap .* --agent --dial$"); do
		shepherd=$shepherd$(pgrep -x -P "$pid" srun || true)
	done
	assert [ -n "$shepherd" ]
	kill -KILL "$shepherd"
	wait_until 10 gone "$shepherd"
	pkill -KILL -f "^srun --overlap .* --agent --dial$"
	touch "$D/go"
	wait_until 60 gone "$job"
	run -0 sort "$D/out"
	assert_output "$(printf 'done 0\ndone 1\ndone 2')"
	# The job directories of the agents, and of worldrun: none left.
	wait_until 30 output_is 0 sh -c "ls '$D/tmp' | grep -c '^worldrun-[0-9a-f]\{12\}-'"
}

@test "slurm: srun stopped mid-job (SIGTERM: the step cancelled) loses its nodes, and no agent leaves its job directory" {
	mkdir "$D/tmp"
	TMPDIR=$D/tmp salloc_ -N3 -n6 "$WORLDRUN" -n 3 --map-by node sh -c \
		'echo $$ >>"$D/pids"; exec sleep 60' >"$D/out" 2>"$D/err" &
	local job=$!
	wait_until 30 pids_in "$D/pids" 3
	pkill -TERM -f "^srun --overlap .* --agent --dial$"
	wait_until 60 gone "$job"
	wait_until 20 all_gone "$D/pids"
	run -0 cat "$D/err"
	# Slurm kills the agents and their ranks at once: an agent that
	# reports its rank's SIGKILL before its own end decides the job
	# with that line instead, as true an account.
	assert_line --regexp '^worldrun: (host n[1-3]: lost 1 running rank with it|rank [0-2] \(pid [0-9]+ on n[1-3]\) killed by signal 9 \(SIGKILL\) after [0-9.]+ s)$'
	# Slurm killed each agent with its guardian at once: their directories
	# stay until the next job there sweeps them (they are a few seconds
	# old by then, and nobody holds their lock).
	local i
	for i in $(seq 30); do
		swept_by_next_job && break
	done
	assert_equal "$(ls "$D/tmp" | grep -c '^worldrun-[0-9a-f]\{12\}-')" 0
}

# swept_by_next_job: after one more job on every node, no job directory
# is left in $D/tmp.
swept_by_next_job() {
	TMPDIR=$D/tmp salloc_ -N3 -n3 "$WORLDRUN" -n 3 --map-by node true 2>/dev/null &&
		[ "$(ls "$D/tmp" | grep -c '^worldrun-[0-9a-f]\{12\}-')" = 0 ]
}

@test "slurm: without srun on PATH, every node is lost in one line each, exit 125" {
	mkdir "$D/bin"
	for t in sh true env; do ln -s "$(command -v $t)" "$D/bin/$t"; done
	run -125 --separate-stderr salloc_ -N2 -n2 env PATH="$D/bin" "$WORLDRUN" true
	assert_equal "$(echo "$stderr" | grep -c 'unable to start srun: No such file or directory')" 2
	echo "$stderr" | grep -qx 'worldrun: host n1: unable to start srun: No such file or directory'
}

@test "slurm: --launcher local keeps every rank here, outside any step" {
	run -0 --separate-stderr salloc_ -N3 -n6 "$WORLDRUN" --launcher local -n 3 -l sh -c \
		'echo "$WORLD_NNODES $(ps -o comm= $PPID)"'
	assert_line '0: 1 worldrun'
	assert_line '2: 1 worldrun'
}

@test "slurm: the cluster leaves no step behind a test" {
	run -0 srun_ -N2 -n2 true
	wait_until 15 output_is "" slurm_steps
}

# Attempt 0 notes each rank's pid and job directory, and rank 5 (on n3)
# fails; attempt 1 looks for them on the same node.
RESTART='if [ "$WORLD_RESTART_COUNT" = 0 ]; then
		echo "$$ $WORLD_JOBDIR" >"$D/seen.$WORLD_RANK"
		[ "$WORLD_RANK" = 5 ] && exit 3
		exec sleep 60
	fi
	read -r pid dir <"$D/seen.$WORLD_RANK"
	if kill -0 "$pid" 2>/dev/null || [ -e "$dir" ]; then echo "left $pid $dir"; else echo clean; fi'

@test "slurm: --max-restarts starts the job again in the allocation, nothing of the last attempt left" {
	run -0 --separate-stderr salloc_ -N3 -n6 "$WORLDRUN" --max-restarts 1 --monitor-interval 0.1 \
		-l sh -c "$RESTART"
	assert_equal "$(grep -c ': clean$' <<<"$output")" 6
	echo "$stderr" | grep -qx 'worldrun: restart 1 of 1: rank 5 exited (status 3)'
	wait_until 15 output_is 0 worldrun_steps
}

@test "slurm: a restart keeps the step: the next attempt's ranks have the same agents" {
	# Each rank notes its agent (its parent); rank 5 fails once
	# every rank of the attempt noted them, in attempts 0 and 1.
	run -0 --separate-stderr salloc_ -N3 -n6 "$WORLDRUN" --timeout 50 --max-restarts 2 \
		--monitor-interval 0.1 -l sh -c 'a=$WORLD_RESTART_COUNT
		echo "agent $PPID" && : >"$D/up.$a.$WORLD_RANK"
		[ "$a" = 2 ] && exit 0
		[ "$WORLD_RANK" = 5 ] || exec sleep 60
		for r in 0 1 2 3 4; do
			until [ -e "$D/up.$a.$r" ]; do sleep 0.05; done
		done
		exit 3'
	out=$output
	for r in 0 1 2 3 4 5; do
		assert_equal "$(grep -c "^$r: agent [0-9]*$" <<<"$out")" 3
		assert_equal "$(grep "^$r: agent " <<<"$out" | sort -u | wc -l)" 1
	done
	wait_until 15 output_is 0 worldrun_steps
}
