#!/usr/bin/env bats
load helpers

# The hang report: which ranks wait for what, and who is missing, on
# SIGQUIT (the job goes on) and on --timeout (before the TERM/KILL
# ladder). Ranks are tests/world's prog-hang MODE: every rank but 1
# blocks in one kind of wait, rank 1 sleeps (or serves a call it holds).
# A report is asked for again until it shows the state a test needs, so
# nothing depends on how fast the ranks get there.

setup() {
	DIR=$BATS_TEST_TMPDIR
	wpid=
	world_prog hang
}

teardown() {
	if [ -n "$wpid" ] && alive "$wpid"; then
		kill -KILL "$wpid" 2>/dev/null || true
	fi
	show_failure
}

start_job() {
	env --default-signal=QUIT worldrun "$@" >"$DIR/out" 2>"$DIR/err" 3>&- &
	wpid=$!
}

# reports: how many hang reports worldrun has printed so far.
reports() {
	local n
	n=$(grep -c "^worldrun: job [0-9a-f]* after " "$DIR/err" 2>/dev/null)
	echo "${n:-0}"
}

# last_report: the newest report's lines (to the end of stderr).
last_report() {
	awk '/^worldrun: job [0-9a-f]* after /{buf=""} {buf=buf $0 "\n"} END{printf "%s", buf}' \
		"$DIR/err"
}

more_reports() {
	[ "$(reports)" -gt "$1" ]
}

# report_shows PATTERN: ask for a report by SIGQUIT (bounded: 40 times)
# until one holds PATTERN (a grep -E expression). Every rank says "rank
# R: ready" once it runs, so worldrun catches SIGQUIT by then.
report_shows() {
	local i n
	wait_until 30 grep -q "^rank [0-9]*: ready" "$DIR/err"
	for ((i = 0; i < 40; i++)); do
		n=$(reports)
		kill -QUIT "$wpid"
		wait_until 20 more_reports "$n"
		if last_report | grep -qE -- "$1"; then
			return 0
		fi
		sleep 0.1
	done
	echo "no report showed: $1" >&2
	return 1
}

stop_job() {
	kill -TERM "$wpid"
	finish_job 30
}

@test "hang: ranks in a barrier, and the one that never came" {
	start_job -n 4 "$PROG" barrier
	report_shows 'ranks 0,2-3 in barrier "step"'
	run last_report
	assert_line --regexp '^worldrun: job [0-9a-f]{12} after [0-9.]+ s: 3 ranks waiting, 1 running$'
	assert_line --regexp '^worldrun:   ranks 0,2-3 in barrier "step" \(since [0-9.]+ s\), waiting for rank 1$'
	assert_line --regexp '^worldrun:   rank 1 not in any libworld wait \(pid [0-9]+, sleeping \(S\), [0-9.]+ s CPU\)$'
	alive "$wpid"
	stop_job
}

@test "hang: a name with control characters is one line, its bytes escaped, in worldrun's report and worldctl's" {
	local name
	name=$(printf 'b\033[31m\nx')
	env --default-signal=QUIT worldrun -n 2 sh -c '
		echo "rank $WORLD_RANK: ready" >&2
		[ "$WORLD_RANK" = 1 ] && exec sleep 60
		exec worldctl barrier "$0"' "$name" >"$DIR/out" 2>"$DIR/err" 3>&- &
	wpid=$!
	report_shows 'rank 0 in barrier'
	run last_report
	assert_line --regexp '^worldrun:   rank 0 in barrier "b\\x1b\[31m\\nx" via worldctl \(since [0-9.]+ s\), waiting for rank 1$'
	run grep -c $'\033' "$DIR/err"
	assert_output 0
	run -0 worldctl --job "$(sed -n 's/^worldrun: job \([0-9a-f]*\) after .*/\1/p' "$DIR/err" | head -1)" status
	assert_line --partial 'rank 0 in barrier "b\x1b[31m\nx" via worldctl'
	refute_output --partial $'\033'
	stop_job
}

@test "hang: ranks waiting for a key nobody sets" {
	start_job -n 3 "$PROG" kv
	report_shows 'ranks 0,2 in kv wait "never"'
	run last_report
	assert_line --regexp '^worldrun:   ranks 0,2 in kv wait "never" \(since [0-9.]+ s\)$'
	stop_job
}

@test "hang: ranks creating a group that one member never joins" {
	start_job -n 3 "$PROG" group
	report_shows 'ranks 0,2 in group create'
	run last_report
	assert_line --regexp '^worldrun:   ranks 0,2 in group create "g" \(since [0-9.]+ s\), waiting for rank 1$'
	stop_job
}

@test "hang: ranks calling a rank stuck in its handler" {
	start_job -n 3 "$PROG" call
	report_shows 'rank 1 running handler "slow" for ranks 0,2'
	run last_report
	assert_line --regexp '^worldrun: job [0-9a-f]{12} after [0-9.]+ s: 2 ranks waiting, 1 in a handler$'
	assert_line --regexp '^worldrun:   ranks 0,2 in call to rank 1: direct "slow" of group "g" \(since [0-9.]+ s\), waiting for rank 1$'
	assert_line --regexp '^worldrun:   rank 1 running handler "slow" for ranks 0,2 \(since [0-9.]+ s\)$'
	stop_job
}

@test "hang: ranks waiting for a future" {
	start_job -n 2 "$PROG" future
	report_shows 'rank 0 in future'
	run last_report
	assert_line --regexp '^worldrun:   rank 0 in future of a call to rank 1: direct "slow" \(since [0-9.]+ s\), waiting for rank 1$'
	stop_job
}

@test "hang: ranks in world_stop, waiting for one that does not stop" {
	start_job -n 3 "$PROG" stop
	report_shows 'ranks 0,2 in world_stop'
	run last_report
	assert_line --regexp '^worldrun:   ranks 0,2 in world_stop \(since [0-9.]+ s\), waiting for rank 1$'
	stop_job
}

@test "hang: a rank stopped with SIGSTOP does not answer, and says so" {
	start_job -n 3 "$PROG" barrier
	report_shows 'ranks 0,2 in barrier'
	wait_until 20 grep -q "^rank 1: ready" "$DIR/err"
	pid=$(sed -n 's/^rank 1: ready, pid //p' "$DIR/err")
	[ -n "$pid" ]
	kill -STOP "$pid"
	report_shows 'rank 1 did not answer'
	run last_report
	assert_line --regexp "^worldrun:   rank 1 did not answer \\(pid $pid, stopped \\(T\\), [0-9.]+ s CPU\\)$"
	kill -CONT "$pid"
	stop_job
}

@test "hang: ranks that never call libworld: worldctl waits and process states" {
	start_job -n 3 sh -c 'echo "rank $WORLD_RANK: ready" >&2
		if [ "$WORLD_RANK" = 1 ]; then exec sleep 60; fi
		exec worldctl barrier step --timeout 60'
	report_shows 'ranks 0,2 in barrier "step" via worldctl'
	run last_report
	assert_line --regexp '^worldrun:   ranks 0,2 in barrier "step" via worldctl \(since [0-9.]+ s\), waiting for rank 1$'
	assert_line --regexp '^worldrun:   rank 1 not in any libworld wait \(pid [0-9]+, sleeping \(S\), [0-9.]+ s CPU\)$'
	stop_job
}

@test "hang: ranks that ended are listed by how they ended" {
	start_job -n 3 --keep-going sh -c 'echo "rank $WORLD_RANK: ready" >&2
		case "$WORLD_RANK" in 1) exit 3;; 2) exit 0;; esac; exec sleep 60'
	report_shows 'rank 1 exited with status 3'
	report_shows 'rank 2 exited with status 0'
	run last_report
	assert_line --regexp '^worldrun: job [0-9a-f]{12} after [0-9.]+ s: 1 rank running, 2 ended$'
	assert_line 'worldrun:   rank 1 exited with status 3'
	assert_line 'worldrun:   rank 2 exited with status 0'
	stop_job
}

@test "hang: --timeout prints the report before it stops the job" {
	run -124 worldrun -n 3 --timeout 10 sh -c 'if [ "$WORLD_RANK" = 1 ]; then exec sleep 60; fi
		exec worldctl barrier step --timeout 60'
	assert_line --index 0 'worldrun: timed out after 10 s'
	assert_line --index 1 --regexp '^worldrun: job [0-9a-f]{12} after 10\.[0-9] s: 2 ranks waiting, 1 running$'
	assert_line --index 2 --regexp '^worldrun:   ranks 0,2 in barrier "step" via worldctl \(since [0-9.]+ s\), waiting for rank 1$'
	assert_line --index 3 --regexp '^worldrun:   rank 1 not in any libworld wait '
	assert_line --index 4 'worldrun: stopped 3 ranks'
}

@test "hang: --report holds the last report as JSON" {
	start_job -n 3 --report "$DIR/r.json" "$PROG" barrier
	report_shows 'ranks 0,2 in barrier'
	stop_job
	run /usr/bin/python3 -c '
import json, sys
h = json.load(open(sys.argv[1]))["hang"]
r = {x["rank"]: x for x in h["ranks"]}
print(r[0]["state"], r[0]["waits"][0]["kind"], r[0]["waits"][0]["name"])
print(r[0]["registry"][0]["missing"])
print(r[1]["state"], r[1]["proc"]["state"])
print(len(h["jobid"]))' "$DIR/r.json"
	assert_line --index 0 "waiting barrier step"
	assert_line --index 1 "[1]"
	assert_line --index 2 "running S"
	assert_line --index 3 "12"
}

@test "hang: --timeout-stacks adds a stack of one rank per group" {
	command -v eu-stack >/dev/null || command -v gdb >/dev/null ||
		skip "neither eu-stack nor gdb is installed"
	run -124 worldrun -n 3 --timeout 10 --timeout-stacks "$PROG" barrier
	assert_line --regexp '^worldrun:     stack of rank 0 \((eu-stack|gdb)\):$'
	assert_line --regexp '^worldrun:     stack of rank 1 \((eu-stack|gdb)\):$'
	assert_output --regexp 'nanosleep|clock_nanosleep'
	assert_output --regexp 'futex|poll|wait'
}

@test "hang: --timeout-stacks says so when neither eu-stack nor gdb is there" {
	mkdir "$DIR/bin"
	ln -s "$(command -v sleep)" "$DIR/bin/sleep"
	run -124 env PATH="$DIR/bin" "$WORLDRUN" -n 2 --timeout 1 --timeout-stacks sleep 60
	assert_line 'worldrun:   no stacks: neither eu-stack nor gdb is installed (install elfutils)'
	refute_output --partial "stack of rank"
}

@test "hang: a barrier's failure names a rank that exited before entering it" {
	# Rank 1 says goodbye, then exits: a rank may hear of either first.
	run -1 worldrun -n 3 --keep-going "$PROG" early
	assert_line --regexp '^rank 0: WORLD_EPEERDEAD: rank 1 (exited \(status 0\)|left the job) before entering barrier "step"$'
	assert_line --regexp '^rank 2: WORLD_EPEERDEAD: rank 1 (exited \(status 0\)|left the job) before entering barrier "step"$'
}

@test "hang: a barrier that times out names the ranks that did not arrive" {
	run -1 worldrun -n 4 --keep-going "$PROG" late
	assert_line 'rank 0: ETIMEDOUT: rank 1 did not arrive at barrier "step"'
	assert_line 'rank 3: ETIMEDOUT: rank 1 did not arrive at barrier "step"'
}

@test "hang: worldctl names a rank that exited before the barrier, and who did not arrive" {
	run -3 worldrun -n 2 sh -c '[ "$WORLD_RANK" = 1 ] && exit 0; worldctl barrier b --timeout 30'
	assert_line 'worldctl: barrier b: rank 1 exited (status 0) before entering barrier "b"'
	run -124 worldrun -n 3 sh -c '[ "$WORLD_RANK" = 1 ] && exec sleep 30; worldctl barrier b --timeout 0.5'
	assert_line 'worldctl: barrier b: timed out after 0.5 s: rank 1 did not arrive at barrier "b"'
	# Rank 1 dies once rank 0 waits (a death before the wait fails nothing).
	run -137 worldrun -n 2 --keep-going sh -c "$PENDING_SH"'
		[ "$WORLD_RANK" = 1 ] && wait_pending 1 && kill -9 $$
		worldctl kv wait k --timeout 30'
	assert_line 'worldctl: kv wait k: rank 1 was killed by signal 9 (SIGKILL) while waiting in kv.wait "k"'
}

@test "hang: a flood of status requests is refused past 8 at once, and the registry goes on" {
	# Rank 1 is a raw rank connection that never answers the survey's
	# question, so each survey lasts its full second; rank 0 sends 12
	# status requests before it reads any answer: 8 surveys run, 4 are
	# refused with EBUSY, and then the registry still answers.
	steps=(hello)
	for i in $(seq 1 12); do
		steps+=(send "{\"op\":\"status\",\"id\":$i}")
	done
	for i in $(seq 1 12); do
		steps+=(read)
	done
	steps+=(send '{"op":"kv.count","id":99}' read)
	run -0 worldrun -n 2 sh -c '
		if [ "$WORLD_RANK" = 1 ]; then
			# Connected until rank 0 is done, however long that takes.
			wr-regpoke hello rank sleep 60 & poke=$!
			worldctl kv wait done --timeout 60
			kill "$poke"
			exit 0
		fi
		i=0
		until wr-regpoke hello send "{\"op\":\"stats\",\"id\":1}" read |
			grep -q "\"rank\":1,\"role\":\"rank\""; do
			i=$((i + 1)); [ "$i" -lt 200 ] || exit 9; sleep 0.05
		done
		wr-regpoke -w 10 "$@"
		worldctl kv set done 1' _ "${steps[@]}"
	[ "$(grep -c '"lines":\["job ' <<<"$output")" -eq 8 ]
	[ "$(grep -c '"name":"EBUSY"' <<<"$output")" -eq 4 ]
	assert_line '{"id":99,"result":{"count":0}}'
}

@test "hang: ranks in a collective, and the peer each waits for" {
	# On shm every rank waits in the group's shared area for rank 1,
	# which never comes; under recursive doubling (other providers) rank
	# 0 waits for its partner 1, rank 2 for 0 and rank 3 for 1.
	start_job -n 4 "$PROG" coll
	report_shows 'ranks? 0(,[0-9-]+)? in all_reduce #1 of coll [0-9]+ .*, waiting for rank 1'
	run last_report
	assert_line --regexp '^worldrun:   ranks? 0(,[0-9-]+)? in all_reduce #1 of coll [0-9]+ \(since [0-9.]+ s\), waiting for rank 1$'
	assert_line --regexp '^worldrun:   rank 1 not in any libworld wait'
	stop_job
}
