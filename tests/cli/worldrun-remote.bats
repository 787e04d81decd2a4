#!/usr/bin/env bats
# Ranks on other hosts, through agents that a remote shell starts: here
# the stand-in wr-rsh, which runs the agent on this machine (with
# WR_RSH_UNSHARE=1, in mount and UTS namespaces of its own, as on another
# host). Placement, the environment, output, exit statuses, failures of
# hosts (refused, unreachable, lost), signals and cleanup.
load helpers

setup() {
	D=$BATS_TEST_TMPDIR
	# Every process of the test carries the mark: worldrun, the agents,
	# their guardians and the ranks.
	WR_TEST_MARK=$D
	# With WR_RSH_UNSHARE, a host still sees worldrun where it is.
	WR_RSH_KEEP=$(trees_in_tmp | paste -sd:)
	export D WR_TEST_MARK WR_RSH_KEEP
}

teardown() {
	show_failure
	for pid in $(marked); do
		kill -9 "$pid" 2>/dev/null || true
	done
}

# marked: the live processes of this test, but the test's own shells.
marked() {
	procs_with "WR_TEST_MARK=$D"
}

none_left() {
	[ -z "$(marked)" ]
}

# needs_root: the namespaces of WR_RSH_UNSHARE.
needs_root() {
	if [ "$(id -u)" != 0 ]; then
		[ "${CI:-}" != true ] || fail "CI runs as root: this test must not skip"
		skip "needs root (mount and UTS namespaces)"
	fi
}

@test "worldrun: three hosts each get their ranks, with node and local ranks right" {
	run -0 --separate-stderr worldrun -H node-a:2,node-b:2,node-c --rsh wr-rsh -l \
		sh -c 'echo "$WORLD_NODE_RANK/$WORLD_NNODES $WORLD_LOCAL_RANK/$WORLD_LOCAL_SIZE $GROUP_RANK $LOCAL_RANK $RANK/$WORLD_SIZE"'
	assert_line '0: 0/3 0/2 0 0 0/5'
	assert_line '1: 0/3 1/2 0 1 1/5'
	assert_line '2: 1/3 0/2 1 0 2/5'
	assert_line '3: 1/3 1/2 1 1 3/5'
	assert_line '4: 2/3 0/1 2 0 4/5'
	assert_equal "${#lines[@]}" 5
	assert_equal "$stderr" ''
}

@test "worldrun: ranks here, in a job of several hosts, publish an address and name rank 0's host" {
	run -0 --separate-stderr worldrun -H node-a:1,localhost:1 --rsh wr-rsh -l \
		sh -c 'echo "${WORLD_ADVERTISE:-none} $MASTER_ADDR"'
	assert_line '0: 127.0.0.1 node-a'
	assert_line '1: 127.0.0.1 node-a'
	assert_equal "${#lines[@]}" 2
	assert_equal "$stderr" ''
}

@test "worldrun: --map-by node across hosts gives each node its ranks in turn" {
	run -0 --separate-stderr worldrun -H node-a:2,node-b:2 --map-by node --rsh wr-rsh -l \
		sh -c 'echo "$WORLD_NODE_RANK $WORLD_LOCAL_RANK"'
	assert_line '0: 0 0'
	assert_line '1: 1 0'
	assert_line '2: 0 1'
	assert_line '3: 1 1'
}

@test "worldrun: the remote shell gets the host, then this worldrun's path and --agent" {
	run -0 env WR_RSH_LOG="$D/log" worldrun -H node-a,node-b --rsh "wr-rsh" true
	run -0 cut -d' ' -f1 "$D/log"
	assert_equal "$(sort <<<"$output")" "$(printf 'node-a\nnode-b')"
	# A "remote shell" that writes something else than the protocol.
	printf '#!/bin/sh\necho "$*"\nexec sleep 30\n' >"$D/chatty"
	chmod +x "$D/chatty"
	run -125 --separate-stderr worldrun -H node-a --rsh "$D/chatty" true
	assert_equal "$stderr" "worldrun: host node-a: its agent sent a frame that is not in the protocol (another worldrun version?)"
}

@test "worldrun: the shell's words, the host and the agent are what --rsh runs" {
	printf '#!/bin/sh\necho "$*" >"%s/argv"\nshift 3\nexec "$@"\n' "$D" >"$D/rsh"
	chmod +x "$D/rsh"
	run -0 worldrun -H node-a --rsh "$D/rsh -p 2222" true
	run -0 cat "$D/argv"
	assert_equal "$output" "-p 2222 node-a $(readlink -f "$WORLDRUN") --agent"
}

@test "worldrun: output of remote ranks arrives in whole lines, stdout and stderr apart" {
	run -0 --separate-stderr worldrun -H node-a,node-b --rsh wr-rsh -l sh -c \
		'head -c 200000 /dev/zero | tr "\0" x; echo; echo "err $WORLD_RANK" >&2'
	assert_equal "${#lines[@]}" 2
	assert_equal "${#lines[0]}" 200003
	assert_equal "${#lines[1]}" 200003
	assert_equal "$(sort <<<"$stderr")" "$(printf '0: err 0\n1: err 1')"
}

@test "worldrun: a remote rank's failure decides the status, names its host, and stops the others" {
	run -3 --separate-stderr worldrun -H node-a,node-b,node-c --rsh wr-rsh \
		sh -c '[ "$WORLD_RANK" = 1 ] && exit 3; exec sleep 60'
	assert_regex "$stderr" '^worldrun: rank 1 \(pid [0-9]+ on node-b\) exited with status 3 after [0-9.]+ s'
	assert_equal "$(grep -c 'rank 1 (pid' <<<"$stderr")" 1
	assert_equal "$(tail -n 1 <<<"$stderr")" "worldrun: stopped 2 other ranks"
	wait_until 10 none_left
}

@test "worldrun: a remote rank killed by a signal is 128+S" {
	run -139 --separate-stderr worldrun -H node-a,node-b --rsh wr-rsh \
		sh -c '[ "$WORLD_RANK" = 1 ] && kill -SEGV $$; exit 0'
	assert_regex "$stderr" '^worldrun: rank 1 \(pid [0-9]+ on node-b\) killed by signal 11 \(SIGSEGV\)' 
}

@test "worldrun: --report names every rank's host and its pid there" {
	run -0 worldrun -H node-a,node-b --rsh wr-rsh --report "$D/r.json" sh -c 'echo $$ >"$D/pid.$WORLD_RANK"'
	run -0 jq -r '.ranks[] | "\(.rank) \(.host) \(.pid)"' "$D/r.json"
	assert_line "0 node-a $(cat "$D/pid.0")"
	assert_line "1 node-b $(cat "$D/pid.1")"
}

@test "worldrun: -v says where the ranks start: the one host, or how many hosts" {
	run -0 --separate-stderr worldrun -v -H node-a,node-b --rsh wr-rsh true
	assert_regex "$stderr" "worldrun: job [0-9a-f]{12}: starting 2 ranks of true on 2 hosts"
	run -0 --separate-stderr worldrun -v -H node-a --rsh wr-rsh true
	assert_regex "$stderr" "worldrun: job [0-9a-f]{12}: starting 1 rank of true on node-a"
}

@test "worldrun -v: the summary counts the hosts and the other hosts' ranks" {
	run -0 --separate-stderr worldrun -v -H node-a,node-b --rsh wr-rsh true
	assert_regex "$stderr" "worldrun: all 2 ranks finished after [0-9.]+ s on 2 hosts: 2 ok; slowest rank [01] \\([0-9.]+ s\\); largest peak memory rank [01] "
}

@test "worldrun --bind-to core: each host's agent binds its own ranks and says where" {
	run -0 --separate-stderr worldrun -H node-a:2,node-b --rsh wr-rsh --bind-to core --report-bindings \
		sh -c 'awk -v r="$WORLD_RANK" '\''/^Cpus_allowed_list:/ { print r, $2 }'\'' /proc/self/status'
	assert_regex "$stderr" 'worldrun: rank 0 \(pid [0-9]+ on node-a\) bound to core 0 '
	assert_regex "$stderr" 'worldrun: rank 1 \(pid [0-9]+ on node-a\) bound to core 1 '
	assert_regex "$stderr" 'worldrun: rank 2 \(pid [0-9]+ on node-b\) bound to core 0 '
	assert_line --regexp '^2 [0-9]+$'
}

# slow_rsh: $D/slow-rsh, wr-rsh after 2 s: a start that takes that long.
slow_rsh() {
	printf '#!/bin/sh\nsleep 2\nexec wr-rsh "$@"\n' >"$D/slow-rsh"
	chmod +x "$D/slow-rsh"
}

@test "worldrun: on a terminal a slow start shows one live line, erased before the first rank's output" {
	slow_rsh
	run -0 script -qec "worldrun -H node-a,node-b --rsh $D/slow-rsh sh -c 'echo hello from \$WORLD_RANK'" /dev/null
	assert_output --partial $'\rworldrun: connecting hosts 0/2, ranks started 0/2\e[K'
	assert_output --partial $'\r\e[Khello from '
	refute_regex "${output#*hello from }" 'connecting|ranks started'
	assert_output --partial 'hello from 1'
}

@test "worldrun: the live line is never written to a pipe, a file, or a dumb terminal" {
	slow_rsh
	run -0 worldrun -H node-a,node-b --rsh "$D/slow-rsh" sh -c 'echo hello'
	refute_output --partial 'connecting hosts'
	run -0 script -qec "worldrun -H node-a,node-b --rsh $D/slow-rsh true 2>$D/err" /dev/null
	run -0 cat "$D/err"
	assert_output ''
	run -0 env TERM=dumb script -qec "worldrun -H node-a,node-b --rsh $D/slow-rsh true" /dev/null
	refute_output --partial 'connecting hosts'
}

@test "worldrun: a start quicker than a second shows no live line on a terminal" {
	run -0 script -qec "worldrun -n 2 sh -c 'echo hi'" /dev/null
	refute_output --partial 'ranks started'
	refute_output --partial $'\e[K'
}

@test "worldrun: a program missing on every host is 127, each host named, nothing run" {
	run -127 --separate-stderr worldrun -H node-a,node-b --rsh wr-rsh ./no-such-program
	assert_equal "$(sort <<<"$stderr")" "$(printf '%s\n' \
		"worldrun: host node-a: ./no-such-program: program not found" \
		"worldrun: host node-b: ./no-such-program: program not found")"
}

@test "worldrun: a program missing on one host only starts no rank on any host" {
	needs_root
	# The test's directory is under /tmp, which node-b sees empty.
	printf '#!/bin/sh\ntouch "%s/ran.$WORLD_RANK"\n' /var/tmp/wr-remote-$$ >"$D/app"
	chmod +x "$D/app"
	run -127 --separate-stderr env WR_RSH_UNSHARE=1 worldrun -H localhost,node-b --rsh wr-rsh "$D/app"
	assert_equal "$stderr" "worldrun: host node-b: $D/app: program not found"
	run ls /var/tmp/wr-remote-$$
	assert_failure
}

@test "worldrun: a host without worldrun's working directory says where its ranks run instead, once" {
	needs_root
	cd "$D"
	run -0 --separate-stderr env WR_RSH_UNSHARE=1 worldrun -H localhost,node-b:2 --rsh wr-rsh \
		-l pwd
	assert_line "0: $D"
	assert_equal "$(grep -c "worldrun: host node-b: agent: worldrun's working directory $D is not on this host: the ranks run in /" <<<"$stderr")" 1
}

@test "worldrun: --wdir applies on every host, and without it they run where worldrun runs" {
	mkdir "$D/w"
	cd "$D"
	run -0 worldrun -H node-a,node-b --rsh wr-rsh --wdir w -l pwd
	assert_line "0: $D/w"
	assert_line "1: $D/w"
	run -0 worldrun -H node-a,node-b --rsh wr-rsh -l pwd
	assert_line "1: $D"
	run -125 --separate-stderr worldrun -H node-a,node-b --rsh wr-rsh --wdir "$D/none" true
	assert_regex "$stderr" "worldrun: host node-a: --wdir $D/none: No such file or directory"
}

@test "worldrun: a remote host's ranks get worldrun's environment but the host's own SSH_* and DISPLAY" {
	run -0 env DISPLAY=:9 SSH_CONNECTION=here WR_FOO=bar worldrun -H localhost,node-b --rsh wr-rsh -l \
		sh -c 'echo "$WR_FOO ${SSH_CONNECTION-} ${DISPLAY-none}"'
	assert_line "0: bar here :9"
	assert_line "1: bar wr-rsh node-b none"
	run -0 env WR_FOO=bar worldrun -H node-a,node-b --rsh wr-rsh --env-none -x WR_FOO -l \
		sh -c 'echo "${WR_FOO-} ${HOME-unset}"'
	assert_line "1: bar unset"
}

@test "worldrun: a host whose shell is refused fails the job in one line per fault, before any rank runs" {
	run -125 --separate-stderr env WR_RSH_REFUSE=node-b worldrun -H node-a,node-b,node-c --rsh wr-rsh touch "$D/ran"
	assert_equal "$stderr" "$(printf '%s\n' \
		"worldrun: host node-b: ssh: connect to host node-b port 22: Connection refused" \
		"worldrun: host node-b: its remote shell exited with status 255")"
	assert [ ! -e "$D/ran" ]
	wait_until 10 none_left
}

@test "worldrun: an unreachable host fails within --connect-timeout, and nothing runs" {
	run -125 --separate-stderr env WR_RSH_HANG=node-b worldrun -H localhost,node-b --connect-timeout 1 --rsh wr-rsh touch "$D/ran"
	assert_equal "$stderr" "worldrun: host node-b: no answer from its agent within 1 s (--connect-timeout)"
	assert [ ! -e "$D/ran" ]
	wait_until 10 none_left
}

@test "worldrun: a remote shell that cannot be started is one line naming the host" {
	run -125 --separate-stderr worldrun -H node-a --rsh "$D/no-such-rsh" true
	assert_equal "$stderr" "worldrun: host node-a: unable to start $D/no-such-rsh: No such file or directory"
}

@test "worldrun: a lost host stops the job with a line naming it and its lost ranks" {
	worldrun -H node-a,node-b,node-c --rsh wr-rsh sh -c 'echo $$ >"$D/pid.$WORLD_RANK"; exec sleep 60' 2>"$D/err" &
	wpid=$!
	wait_until 20 test -s "$D/pid.2"
	wait_until 20 test -s "$D/pid.1"
	# node-b's agent is the stand-in's own process: its remote shell.
	kill -9 "$(awk '{ print $4 }' "/proc/$(cat "$D/pid.1")/stat")"
	finish_job 20
	assert_equal "$wstatus" 125
	run -0 cat "$D/err"
	assert_line "worldrun: host node-b: its remote shell was killed by signal 9"
	assert_line "worldrun: host node-b: lost 1 running rank with it"
	assert_line "worldrun: stopped 2 ranks"
	wait_until 10 none_left
}

@test "worldrun: an agent silent for --host-timeout is lost, in one line naming its host, and the job stops" {
	worldrun -H node-a,node-b,node-c --rsh wr-rsh --host-timeout 2 sh -c \
		'echo $$ >"$D/pid.$WORLD_RANK"; exec sleep 60' 2>"$D/err" &
	wpid=$!
	wait_until 20 test -s "$D/pid.2"
	wait_until 20 test -s "$D/pid.1"
	# node-b's agent, the rank's parent, stops: its channel stays open.
	kill -STOP "$(awk '{ print $4 }' "/proc/$(cat "$D/pid.1")/stat")"
	finish_job 20
	assert_equal "$wstatus" 125
	run -0 cat "$D/err"
	assert_line "worldrun: host node-b: no word from its agent for 2 s (--host-timeout)"
	assert_line "worldrun: host node-b: lost 1 running rank with it"
	wait_until 10 none_left
}

@test "worldrun: an agent that hears nothing from worldrun for --host-timeout stops its ranks by itself" {
	worldrun -H node-a,node-b --rsh wr-rsh --host-timeout 2 --kill-grace 10 sh -c \
		'trap "echo TERM >\"$D/term.$WORLD_RANK\"; exit 0" TERM; echo up >"$D/up.$WORLD_RANK"; while :; do sleep 0.1; done' \
		2>"$D/err" &
	wpid=$!
	wait_until 20 test -s "$D/up.0"
	wait_until 20 test -s "$D/up.1"
	# worldrun held by SIGSTOP: to the agents, as silent as a lost cable.
	kill -STOP "$wpid"
	wait_until 20 test -s "$D/term.1"
	wait_until 20 test -s "$D/term.0"
	kill -CONT "$wpid"
	finish_job 20
	assert_equal "$wstatus" 125
	run -0 cat "$D/err"
	assert_line "worldrun: host node-b: agent: no word from the launcher for 2 s (--host-timeout): stopping this host's ranks"
	assert_line --regexp "^worldrun: host node-[ab]: its agent heard nothing from worldrun for 2 s \(--host-timeout\) and stopped its ranks$"
	wait_until 10 none_left
}

@test "worldrun: --host-timeout 0 keeps a silent agent's host, and takes no value under 1 s" {
	worldrun -H node-a,node-b --rsh wr-rsh --host-timeout 2 --host-timeout 0 sh -c \
		'echo $$ >"$D/pid.$WORLD_RANK"; [ "$WORLD_RANK" = 0 ] || exit 0; sleep 4' 2>"$D/err" &
	wpid=$!
	wait_until 20 test -s "$D/pid.0"
	kill -STOP "$(awk '{ print $4 }' "/proc/$(cat "$D/pid.0")/stat")"
	# Twice the first --host-timeout: the last one, 0, is never.
	sleep 5
	kill -CONT "$(awk '{ print $4 }' "/proc/$(cat "$D/pid.0")/stat")"
	finish_job 20
	assert_equal "$wstatus" 0
	run -125 --separate-stderr worldrun --host-timeout 0.5 true
	assert_equal "$stderr" "worldrun: --host-timeout 0.5: must be at least 1, or 0 for never (see worldrun --help)"
}

@test "worldrun: SIGTERM reaches the ranks of every host, and worldrun ends by it" {
	worldrun -H node-a,node-b --rsh wr-rsh sh -c 'trap "echo got TERM $WORLD_RANK; exit 0" TERM; echo ready >"$D/ready.$WORLD_RANK"; while :; do sleep 0.1; done' >"$D/out" 2>"$D/err" &
	wpid=$!
	wait_until 20 test -s "$D/ready.0"
	wait_until 20 test -s "$D/ready.1"
	kill -TERM "$wpid"
	finish_job 20
	assert_equal "$wstatus" 143
	run -0 sort "$D/out"
	assert_output "$(printf 'got TERM 0\ngot TERM 1')"
	wait_until 10 none_left
}

@test "worldrun: SIGKILL of worldrun leaves no agent and no rank on any host" {
	worldrun -H node-a,node-b,node-c --rsh wr-rsh sh -c 'echo $$ >"$D/pid.$WORLD_RANK"; exec sleep 60' 2>"$D/err" &
	wpid=$!
	for r in 0 1 2; do
		wait_until 20 test -s "$D/pid.$r"
	done
	kill -9 "$wpid"
	wait_until 15 none_left
}

@test "worldrun: --stdin all and --stdin N reach ranks of other hosts as data" {
	run -0 --separate-stderr worldrun -H localhost,node-b,node-c --rsh wr-rsh --stdin all -l cat <<<"$(printf 'one\ntwo')"
	assert_equal "$(sort <<<"$output")" "$(printf '%s\n' '0: one' '0: two' '1: one' '1: two' '2: one' '2: two')"
	run -0 --separate-stderr worldrun -H localhost,node-b --rsh wr-rsh --stdin 1 -l cat <<<"three"
	assert_equal "$output" "1: three"
}

@test "worldrun: ranks of three hosts share the registry: key/value and barriers across them" {
	run -0 --separate-stderr worldrun -H node-a,node-b,node-c --rsh wr-rsh -l sh -c \
		'worldctl kv set "k.$WORLD_RANK" "$(hostname)-$WORLD_NODE_RANK" && worldctl barrier all && worldctl kv get "k.$(( (WORLD_RANK + 1) % 3 ))"'
	assert_line --regexp '^0: .*-1$'
	assert_line --regexp '^1: .*-2$'
	assert_line --regexp '^2: .*-0$'
}

@test "worldrun: hosts in namespaces of their own: own host name, /tmp and /dev/shm, all output back" {
	needs_root
	run -0 --separate-stderr env WR_RSH_UNSHARE=1 worldrun -H node-a:2,node-b:2 --rsh wr-rsh -l \
		sh -c 'echo "$(hostname) $WORLD_NODE_RANK $(ls -d /tmp/worldrun-* | wc -l)"'
	assert_line '0: node-a 0 1'
	assert_line '3: node-b 1 1'
}

@test "worldrun: the job's secret is on no command line of any host" {
	worldrun -H localhost,node-b --rsh wr-rsh sh -c 'echo "$WORLD_SECRET" >"$D/secret.$WORLD_RANK"; exec sleep 60' 2>"$D/err" &
	wpid=$!
	wait_until 20 test -s "$D/secret.0"
	wait_until 20 test -s "$D/secret.1"
	run grep -lasF "$(cat "$D/secret.1")" /proc/[0-9]*/cmdline
	assert_failure
	assert_output ''
	kill -TERM "$wpid"
	finish_job 20
}

@test "worldrun: an agent that tells its ranks' lives out of order fails the job, which neither hangs nor ends early" {
	for script in "started 1;started 1" "finished 1" "started 1;finished 1" "done 3" "started 0"; do
		run -125 --separate-stderr env WR_FAKE="$script" worldrun -H localhost,node-b \
			--rsh wr-fakeagent sh -c 'sleep 0.5; echo local done'
		assert_regex "$stderr" "^worldrun: host node-b: its agent (told of its ranks out of order|spoke of a rank that is not its own)"
		assert_regex "$stderr" "worldrun: stopped 1 rank"
	done
}

@test "worldrun: an agent that answers a spawn it was not told of is cut off with 125" {
	run -125 --separate-stderr env WR_FAKE="started 1;joined 5" worldrun -H localhost,node-b \
		--rsh wr-fakeagent sleep 5
	assert_regex "$stderr" "^worldrun: host node-b: its agent answered a spawn it was not told of"
	assert_regex "$stderr" "worldrun: stopped 1 rank"
}

@test "worldrun: one host's failed start is not hidden by a later host that starts well" {
	# na starts nothing (out of memory) and says so first; nb's rank
	# starts and ends well after it.
	run -125 --separate-stderr env WR_FAKE_na="done 0 12" \
		WR_FAKE_nb="sleep 300;started 1;exited 1 0;finished 1;done 1" \
		worldrun -H na,nb --rsh wr-fakeagent --timeout 30 true
	assert_equal "$stderr" 'worldrun: unable to start the ranks: Cannot allocate memory'
}

@test "worldrun: a remote rank that could not enter its directory is one line, not a crash" {
	run -125 --separate-stderr env WR_FAKE="started 1;failed 1 2;exited 1 127;finished 1;done 1" \
		worldrun -H localhost,node-b --rsh wr-fakeagent true
	assert_regex "$stderr" "^worldrun: rank 1: unable to enter $PWD: No such file or directory"
}

@test "worldrun: a remote rank's failure line is said even when its host goes before it finished" {
	run -3 --separate-stderr env WR_FAKE="started 1;exited 1 3;quit" \
		worldrun -H localhost,node-b --rsh wr-fakeagent --report "$D/r.json" sleep 5
	assert_regex "$stderr" '^worldrun: rank 1 \(pid 4242 on node-b\) exited with status 3 after 1.00 s'
	run -0 jq -r '.ranks[1].exit_code' "$D/r.json"
	assert_output 3
}

@test "worldrun: the report gives no exit code to a rank lost with its host" {
	run -125 --separate-stderr env WR_FAKE="started 1;quit" \
		worldrun -H localhost,node-b --rsh wr-fakeagent --report "$D/r.json" sleep 5
	assert_regex "$stderr" 'worldrun: host node-b: lost 1 running rank with it'
	run -0 jq -r '.ranks[1].exit_code' "$D/r.json"
	assert_output null
}

@test "worldrun: SIGINT while a host is still connecting starts no rank anywhere" {
	WR_RSH_LOG="$D/log" WR_RSH_HANG=node-b worldrun -H localhost,node-b --rsh wr-rsh touch "$D/ran" 2>"$D/err" &
	wpid=$!
	wait_until 20 test -s "$D/log"
	kill -INT "$wpid"
	finish_job 20
	assert_equal "$wstatus" 130
	assert [ ! -e "$D/ran" ]
	wait_until 10 none_left
}

@test "worldrun: the hang report names a remote rank's host and reads no /proc for it" {
	run -124 --separate-stderr env WR_FAKE="started 1;out 1 up" worldrun -H localhost,node-b \
		--rsh wr-fakeagent --timeout 1 --kill-grace 0.2 sleep 30
	assert_regex "$stderr" 'rank 1 .*pid 4242 on node-b\)'
	# It never reports its rank's end: worldrun gives up on it.
	assert_regex "$stderr" 'worldrun: host node-b: its agent did not report its ranks. end within 2.2 s of their SIGKILL'
}

@test "worldrun: --stdin all hands megabytes to this host's rank and another's alike" {
	head -c 3000000 /dev/urandom | base64 >"$D/in"
	want=$(md5sum <"$D/in")
	run -0 --separate-stderr worldrun --stdin all -H localhost:1,node-b:1 --rsh wr-rsh -l md5sum <"$D/in"
	assert_line "0: $want"
	assert_line "1: $want"
}

@test "worldrun: at most 64 remote shells connect at once; the rest start as hosts answer" {
	printf '#!/bin/sh\necho "$1" >>"%s/log"\nexec sleep 60\n' "$D" >"$D/slow"
	chmod +x "$D/slow"
	worldrun -H "$(seq -f 'h%g' 1 70 | paste -sd,)" --rsh "$D/slow" --connect-timeout 10 true 2>"$D/err" &
	wpid=$!
	# (pids_in counts the lines of a file: here, hosts.)
	wait_until 20 pids_in "$D/log" 64
	# None of the 64 answers, none times out yet: nobody else starts.
	assert_equal "$(grep -c . "$D/log")" 64
	kill -TERM "$wpid"
	finish_job 20
	assert_equal "$wstatus" 143
	wait_until 10 none_left
}

@test "worldrun: a hundred hosts, each with its agent, all run their ranks" {
	run -0 --separate-stderr worldrun -H "$(seq -f 'h%g' 1 100 | paste -sd,)" --rsh wr-rsh \
		sh -c 'echo "$WORLD_NODE_RANK $WORLD_LOCAL_RANK"'
	assert_equal "$(sort -n <<<"$output" | uniq | wc -l)" 100
	assert_equal "$(awk '$2 != 0' <<<"$output")" ""
}

@test "worldrun: 64 hosts in namespaces of their own run 1024 ranks, each on its node, and leave nothing" {
	needs_root
	hosts=$(seq -f 'h%g:16' 1 64 | paste -sd,)
	run -0 --separate-stderr env WR_RSH_UNSHARE=1 worldrun -H "$hosts" --rsh wr-rsh \
		sh -c 'read h </proc/sys/kernel/hostname; echo "$WORLD_RANK $WORLD_NODE_RANK $WORLD_LOCAL_RANK $WORLD_LOCAL_SIZE $WORLD_NNODES $h"'
	assert_equal "$(wc -l <<<"$output")" 1024
	assert_equal "$(cut -d' ' -f1 <<<"$output" | sort -un | wc -l)" 1024
	# Rank r runs on host h(r/16 + 1), as its local rank r % 16.
	assert_equal "$(awk '$2 != int($1 / 16) || $3 != $1 % 16 || $4 != 16 || $5 != 64 || $6 != "h" (int($1 / 16) + 1)' <<<"$output")" ""
	assert_equal "$stderr" ""
	wait_until 10 none_left
}

# agent_writing: the fake agent is blocked writing to its channel.
agent_writing() {
	local pid
	for pid in $(marked); do
		if [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = wr-fakeagent ] &&
			grep -q '^1 ' "/proc/$pid/syscall" 2>/dev/null; then
			return 0
		fi
	done
	return 1
}

@test "worldrun: an agent that goes on sending after PAUSE fills its own buffers, not worldrun's memory" {
	# Under ASan, freed blocks count as RSS until the quarantine drops them.
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=1"
	mkfifo "$D/out" "$D/go"
	# A reader of worldrun's stdout that reads nothing, for now.
	exec 5<>"$D/out"
	# Not the PMIx server's fixed share either (40 MiB under ASan).
	WR_FAKE="started 1;flood 1 256;exited 1 0;finished 1;done 1" worldrun -H localhost,node-b \
		--pmi fd --rsh wr-fakeagent sh -c 'read -r x <"$0"' "$D/go" >"$D/out" 2>"$D/err" &
	wpid=$!
	wait_until 20 agent_writing
	cat <&5 >"$D/got" &
	cpid=$!
	exec 5<&-
	wait_until 60 pids_in "$D/got" 262144
	hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$wpid/status")
	echo go >"$D/go"
	finish_job 20
	kill "$cpid"
	assert_equal "$wstatus" 0
	assert_equal "$(grep -cvx "$(printf 'x%.0s' $(seq 1023))" "$D/got")" 0
	echo "worldrun's peak RSS: $hwm KiB" >&2
	[ "$hwm" -lt $((48 * 1024)) ]
}

@test "worldrun: a remote rank that goes on after PAUSE while a local line goes on breaks that line, not memory" {
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=1"
	# Rank 0 here writes 256 MiB without a newline; the agent's rank 1
	# sends 128 MiB of lines meanwhile, held until rank 0's line gives way.
	WR_FAKE="started 1;flood 1 128;exited 1 0;finished 1;done 1" peak_rss "$D/rss" "$D/out" \
		worldrun -H localhost,node-b --pmi fd --rsh wr-fakeagent wr-spew -n 268435456
	assert_equal "$(tr -cd x <"$D/out" | wc -c)" $((268435456 + 128 * 1024 * 1023))
	assert_equal "$(grep -cx "$(printf 'x%.0s' $(seq 1023))" "$D/out")" $((128 * 1024))
	rss=$(tail -n 1 "$D/rss")
	echo "worldrun's peak RSS: $rss KiB" >&2
	[ "$rss" -lt $((128 * 1024)) ]
}

@test "worldrun: a host reached over IPv6 is refused in one line, before any rank runs" {
	run -125 --separate-stderr env WR_RSH_CONNECTION='::1 40000 ::1 22' worldrun -H localhost,node-b \
		--rsh wr-rsh touch "$D/ran"
	assert_equal "$stderr" "worldrun: host node-b: its ssh connection is over IPv6 (SSH_CONNECTION=::1 40000 ::1 22), but worldrun reaches other hosts over IPv4 only: name the host by an IPv4 address or a name that resolves to one"
	assert [ ! -e "$D/ran" ]
}
