#!/usr/bin/env bats
load helpers

# The exit status contract of DESIGN.md, one row at a time, and the
# failure lines that go with it. Ranks that must fail in a given order
# wait for each other through files and pids, never for a fixed time.

setup() {
	D=$BATS_TEST_TMPDIR
	# Scripts the ranks run: "$D/wait-file FILE" and "$D/wait-reaped
	# PIDFILE" poll for at most 60 s.
	cat >"$D/wait-file" <<-'EOF'
		#!/bin/sh
		i=0
		while [ ! -s "$1" ]; do
			i=$((i + 1))
			[ "$i" -gt 1200 ] && exit 99
			sleep 0.05
		done
	EOF
	cat >"$D/wait-reaped" <<-'EOF'
		#!/bin/sh
		# Wait until the pid in PIDFILE is reaped (gone, not a zombie).
		"$(dirname "$0")/wait-file" "$1" || exit 99
		pid=$(cat "$1")
		i=0
		while kill -0 "$pid" 2>/dev/null; do
			i=$((i + 1))
			[ "$i" -gt 1200 ] && exit 99
			sleep 0.05
		done
	EOF
	chmod +x "$D/wait-file" "$D/wait-reaped"
}

teardown() {
	# A worldrun left stopped or hung must not outlive the test; its
	# guardian then kills the ranks.
	if [ -n "${wpid:-}" ] && alive "$wpid"; then
		kill -KILL "$wpid" 2>/dev/null || true
	fi
}

# write_pid FILE: shell code that writes the shell's pid to FILE atomically.
write_pid() {
	echo "echo \$\$ >\"$1.tmp\" && mv \"$1.tmp\" \"$1\""
}

# failure_line RANK WHAT: the regex of a failure line of rank RANK, WHAT
# being e.g. "exited with status 3".
failure_line() {
	echo "^worldrun: rank $1 \\(pid [0-9]+ on $(hostname)\\) $2 after [0-9]+\\.[0-9]{2} s\$"
}

@test "worldrun: exits 0 when every rank exits 0" {
	run --separate-stderr -0 worldrun -n 4 wr-exit 0
	assert_equal "$stderr" ""
}

@test "worldrun: passes a rank's exit status 3 through" {
	run --separate-stderr -3 worldrun wr-exit 3
	assert_regex "$stderr" "$(failure_line 0 'exited with status 3')"
}

@test "worldrun: passes a rank's exit status 1 through" {
	run --separate-stderr -1 worldrun -n 2 sh -c '[ "$WORLD_RANK" = 1 ] && exit 1; exec wr-sleep 30'
	assert_regex "${stderr_lines[0]}" "$(failure_line 1 'exited with status 1')"
}

@test "worldrun: passes a rank's exit status 255 through" {
	run --separate-stderr -255 worldrun -n 3 sh -c '[ "$WORLD_RANK" = 2 ] && exit 255; exec wr-sleep 30'
	assert_regex "${stderr_lines[0]}" "$(failure_line 2 'exited with status 255')"
}

@test "worldrun: exits 139 when the rank dies by SIGSEGV" {
	run --separate-stderr -139 worldrun wr-kill 11
	assert_regex "$stderr" "$(failure_line 0 'killed by signal 11 \(SIGSEGV\)')"
}

@test "worldrun: exits 137 when the rank dies by SIGKILL" {
	run --separate-stderr -137 worldrun -n 2 sh -c '[ "$WORLD_RANK" = 1 ] && exec wr-kill 9; exec wr-sleep 30'
	assert_regex "${stderr_lines[0]}" "$(failure_line 1 'killed by signal 9 \(SIGKILL\)')"
}

@test "worldrun: exits 134 when the rank dies by SIGABRT" {
	run --separate-stderr -134 worldrun wr-kill 6
	assert_regex "$stderr" "$(failure_line 0 'killed by signal 6 \(SIGABRT\)')"
}

@test "worldrun: the failure line gives the rank's real pid and this host" {
	run --separate-stderr -3 worldrun -n 2 sh -c \
		'[ "$WORLD_RANK" = 1 ] && { echo "pid $$"; exit 3; }; exec wr-sleep 30'
	local pid=${output#pid }
	assert_regex "$pid" '^[0-9]+$'
	assert_regex "${stderr_lines[0]}" \
		"^worldrun: rank 1 \\(pid $pid on $(hostname)\\) exited with status 3 after [0-9]+\\.[0-9]{2} s\$"
}

@test "worldrun: the failure line comes after the failed rank's output" {
	run -4 worldrun sh -c 'echo "last words"; exit 4'
	assert_equal "${lines[0]}" "last words"
	assert_regex "${lines[1]}" "$(failure_line 0 'exited with status 4')"
}

@test "worldrun: the first rank to fail decides, not the lowest rank and not an OR" {
	# Rank 1 fails with 5 once rank 0 is ready; rank 0 exits 7 when it is
	# told to stop, so a launcher that took the lowest rank or ORed the
	# statuses would exit 7.
	run --separate-stderr -5 worldrun -n 3 sh -c "
		case \$WORLD_RANK in
		0) trap 'exit 7' TERM; $(write_pid "$D/ready0"); wr-sleep 60 & wait;;
		1) '$D/wait-file' '$D/ready0' && exit 5; exit 99;;
		*) exec wr-sleep 60;;
		esac"
	assert_regex "${stderr_lines[0]}" "$(failure_line 1 'exited with status 5')"
	assert_equal "${stderr_lines[1]}" "worldrun: stopped 2 other ranks"
	assert_equal "${#stderr_lines[@]}" 2
}

@test "worldrun: counts the ranks it stopped" {
	run --separate-stderr -2 worldrun -n 5 sh -c '[ "$WORLD_RANK" = 3 ] && exit 2; exec wr-sleep 60'
	assert_regex "${stderr_lines[0]}" "$(failure_line 3 'exited with status 2')"
	assert_equal "${stderr_lines[1]}" "worldrun: stopped 4 other ranks"
	assert_equal "${#stderr_lines[@]}" 2
}

@test "worldrun: says 'stopped 1 other rank' for one" {
	run --separate-stderr -2 worldrun -n 2 sh -c '[ "$WORLD_RANK" = 0 ] && exit 2; exec wr-sleep 60'
	assert_regex "${stderr_lines[0]}" "$(failure_line 0 'exited with status 2')"
	assert_equal "${stderr_lines[1]}" "worldrun: stopped 1 other rank"
	assert_equal "${#stderr_lines[@]}" 2
}

@test "worldrun: no 'stopped' line when no other rank was running" {
	run --separate-stderr -2 worldrun -n 2 sh -c \
		"[ \"\$WORLD_RANK\" = 0 ] && { $(write_pid "$D/pid0"); exit 0; }; '$D/wait-reaped' '$D/pid0' && exit 2; exit 99"
	assert_regex "${stderr_lines[0]}" "$(failure_line 1 'exited with status 2')"
	assert_equal "${#stderr_lines[@]}" 1
}

@test "worldrun: ranks that worldrun stops get no failure line" {
	run --separate-stderr -6 worldrun -n 4 sh -c '[ "$WORLD_RANK" = 2 ] && exit 6; exec wr-sleep 60'
	assert_equal "$(echo "$stderr" | grep -c 'worldrun: rank')" 1
	assert_regex "${stderr_lines[0]}" "$(failure_line 2 'exited with status 6')"
	refute_regex "$stderr" 'killed by signal 15'
}

@test "worldrun: ranks still starting when another rank fails get SIGTERM too" {
	# Rank 0 fails at once, often before the last ranks have called
	# setsid(); a SIGTERM sent to their group then must not be lost (they
	# would die only by the SIGKILL after --kill-grace).
	local i
	for i in $(seq 20); do
		run -3 timeout 60 worldrun --kill-grace 2 --report "$D/r.json" -n 16 sh -c \
			'[ "$WORLD_RANK" = 0 ] && exit 3; exec sleep 60'
		run python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
for x in r["ranks"][1:]:
    assert x["signal"] == 15 and x["killed_by_worldrun"], x' "$D/r.json"
		assert_success
	done
}

@test "worldrun: --keep-going waits for every rank and keeps the first failure's status" {
	# Rank 1 exits 5 first; rank 0 exits 7 only after rank 1 is reaped;
	# rank 2 prints only after rank 0 is reaped.
	run --separate-stderr -5 worldrun --keep-going -n 3 sh -c "
		case \$WORLD_RANK in
		0) '$D/wait-reaped' '$D/pid1' || exit 99; $(write_pid "$D/pid0"); exit 7;;
		1) $(write_pid "$D/pid1"); exit 5;;
		*) '$D/wait-reaped' '$D/pid0' || exit 99; echo 'slow rank done';;
		esac"
	assert_output "slow rank done"
	assert_regex "${stderr_lines[0]}" "$(failure_line 1 'exited with status 5')"
	assert_regex "${stderr_lines[1]}" "$(failure_line 0 'exited with status 7')"
	assert_equal "${#stderr_lines[@]}" 2
	refute_regex "$stderr" 'stopped'
}

@test "worldrun: --keep-going prints a failure line for every failed rank" {
	run --separate-stderr worldrun --keep-going -n 4 sh -c '[ "$WORLD_RANK" != 2 ] && exit $((WORLD_RANK + 10)); exit 0'
	assert_regex "$status" '^(10|11|13)$'
	assert_equal "${#stderr_lines[@]}" 3
	for r in 0 1 3; do
		assert_regex "$stderr" "worldrun: rank $r \\(pid [0-9]+ on [^)]+\\) exited with status $((r + 10)) after"
	done
}

@test "worldrun: of two ranks that fail in one reaping pass, the lower rank decides" {
	# worldrun is stopped while rank 2 and then rank 1 are killed, each by
	# a signal of its own; once both are zombies it goes on, and finds
	# them both in the one pass that its SIGCHLD starts.
	local p1 p2
	worldrun -n 3 sh -c "$(write_pid "$D/pid\$WORLD_RANK"); exec wr-sleep 120" \
		>"$D/out" 2>"$D/err" 3>&- &
	wpid=$!
	wait_until 30 pids_in "$D/pid0" 1
	wait_until 30 pids_in "$D/pid1" 1
	wait_until 30 pids_in "$D/pid2" 1
	p1=$(cat "$D/pid1")
	p2=$(cat "$D/pid2")
	kill -STOP "$wpid"
	wait_until 30 all_in_state T "$wpid"
	kill -USR2 "$p2"
	kill -USR1 "$p1"
	wait_until 30 all_in_state Z "$p2" "$p1"
	kill -CONT "$wpid"
	finish_job 30
	assert_equal "$wstatus" 138
	run cat "$D/err"
	assert_regex "${lines[0]}" "$(failure_line 1 'killed by signal 10 \(SIGUSR1\)')"
	assert_regex "${lines[1]}" "$(failure_line 2 'killed by signal 12 \(SIGUSR2\)')"
	assert_equal "${lines[2]}" "worldrun: stopped 1 other rank"
	assert_equal "${#lines[@]}" 3
}

@test "worldrun: a rank exiting 0 early does not stop the others" {
	run --separate-stderr -0 worldrun -n 3 sh -c "
		[ \"\$WORLD_RANK\" = 0 ] && { $(write_pid "$D/pid0"); exit 0; }
		'$D/wait-reaped' '$D/pid0' || exit 99
		wr-sleep 0.3
		echo \"rank \$WORLD_RANK still running\""
	assert_equal "$(echo "$output" | sort)" "$(printf 'rank %s still running\n' 1 2)"
	assert_equal "$stderr" ""
}

@test "worldrun: exits 124 when --timeout expires" {
	run --separate-stderr -124 worldrun --timeout 0.5 -n 2 wr-sleep 60
	assert_equal "${stderr_lines[0]}" "worldrun: timed out after 0.5 s"
	# Then the hang report (worldrun-hang.bats), then the stop.
	[[ "${stderr_lines[1]}" =~ ^worldrun:\ job\ [0-9a-f]{12}\ after\ 0\.[5-9]\ s:\ 2\ ranks\ running$ ]]
	assert_equal "${stderr_lines[4]}" "worldrun: stopped 2 ranks"
	assert_equal "${#stderr_lines[@]}" 5
}

@test "worldrun: --timeout takes whole seconds too" {
	run --separate-stderr -124 worldrun --timeout 1 wr-sleep 60
	assert_equal "${stderr_lines[0]}" "worldrun: timed out after 1 s"
	assert_equal "${stderr_lines[3]}" "worldrun: stopped 1 rank"
}

@test "worldrun: a rank failing before the timeout decides the status" {
	run --separate-stderr -4 worldrun --timeout 30 -n 2 sh -c '[ "$WORLD_RANK" = 1 ] && exit 4; exec wr-sleep 60'
	assert_regex "${stderr_lines[0]}" "$(failure_line 1 'exited with status 4')"
	refute_regex "$stderr" 'timed out'
}

@test "worldrun: a job that ends before the timeout exits 0" {
	run --separate-stderr -0 worldrun --timeout 60 -n 2 wr-exit 0
	assert_equal "$stderr" ""
}

@test "worldrun: exits 126 when the program is not executable, before anything runs" {
	printf '#!/bin/sh\necho ran\n' >"$D/not-exec"
	chmod 644 "$D/not-exec"
	run --separate-stderr -126 worldrun -n 2 "$D/not-exec"
	assert_equal "$output" ""
	assert_equal "$stderr" "worldrun: $D/not-exec: cannot be executed: Permission denied"
}

@test "worldrun: exits 126 when the program is a directory" {
	run --separate-stderr -126 worldrun "$D"
	assert_equal "$output" ""
	assert_regex "$stderr" "^worldrun: $D: cannot be executed: "
}

@test "worldrun: exits 127 when the program does not exist" {
	run --separate-stderr -127 worldrun -n 2 wr-no-such-program
	assert_equal "$output" ""
	assert_equal "$stderr" "worldrun: wr-no-such-program: program not found in the ranks' PATH"
}

@test "worldrun: exits 127 when the program given with a path does not exist" {
	run --separate-stderr -127 worldrun -n 2 "$D/missing/prog"
	assert_equal "$output" ""
	assert_equal "${#stderr_lines[@]}" 1
	assert_regex "$stderr" "^worldrun: $D/missing/prog: program not found"
	run --separate-stderr -127 worldrun ./no-such-prog
	assert_regex "$stderr" "^worldrun: ./no-such-prog: program not found"
}

@test "worldrun: a script without #! runs through /bin/sh" {
	printf 'echo "no shebang rank $WORLD_RANK"\nexit 0\n' >"$D/plain-script"
	chmod +x "$D/plain-script"
	run -0 worldrun -n 2 "$D/plain-script"
	assert_equal "$(echo "$output" | sort)" "$(printf 'no shebang rank %s\n' 0 1)"
}

@test "worldrun: a script without #! found through PATH runs through /bin/sh" {
	mkdir "$D/bin"
	printf 'exit 9\n' >"$D/bin/plain-nine"
	chmod +x "$D/bin/plain-nine"
	run -9 env PATH="$D/bin:$PATH" worldrun plain-nine
}

@test "worldrun: a rank exiting 124 to 127 passes that status through" {
	local code
	for code in 124 125 126 127; do
		run --separate-stderr -"$code" worldrun --report "$D/r$code.json" -n 2 sh -c \
			"[ \"\$WORLD_RANK\" = 1 ] && exit $code; exec wr-sleep 60"
		assert_regex "${stderr_lines[0]}" "$(failure_line 1 "exited with status $code")"
		run python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
assert r["status"] == int(sys.argv[2]), r
assert r["cause"] == "rank-exited", r
assert r["failed_rank"] == 1, r' "$D/r$code.json" "$code"
		assert_success
	done
}

@test "worldrun: a rank ignoring SIGTERM is SIGKILLed after --kill-grace" {
	# Rank 1 catches SIGTERM; rank 0 fails once rank 1 is ready.
	run --separate-stderr -3 worldrun --kill-grace 0.5 --report "$D/r.json" -n 2 sh -c "
		[ \"\$WORLD_RANK\" = 1 ] && exec wr-trap '$D/trap.log' 120
		'$D/wait-file' '$D/trap.log' && exit 3
		exit 99"
	assert_regex "${stderr_lines[0]}" "$(failure_line 0 'exited with status 3')"
	assert_equal "${stderr_lines[1]}" "worldrun: stopped 1 other rank"
	assert_equal "${#stderr_lines[@]}" 2
	# It got SIGTERM, survived it, and then died by SIGKILL.
	grep -qx SIGTERM "$D/trap.log"
	run python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
one = r["ranks"][1]
assert one["signal"] == 9 and one["exit_code"] is None, one
assert one["killed_by_worldrun"] is True, one
assert r["status"] == 3 and r["failed_rank"] == 0, r' "$D/r.json"
	assert_success
	pid=$(sed -n 's/^ready //p' "$D/trap.log")
	refute alive "$pid"
}

@test "worldrun: exits 125 on bad usage" {
	run -125 worldrun --np zero wr-exit 0
}

@test "worldrun: exits 130 when it gets SIGINT, even if the ranks exit 0" {
	worldrun -n 2 sh -c "$(write_pid "$D/pid\$WORLD_RANK"); exec wr-sleep 60" 3>&- &
	wpid=$!
	wait_until 30 pids_in "$D/pid1" 1
	wait_until 30 pids_in "$D/pid0" 1
	kill -INT "$wpid"
	local rc=0
	wait_job 60 "$wpid" || rc=$?
	assert_equal "$rc" 130
}

@test "worldrun: exits 143 when it gets SIGTERM, even if the ranks exit 0" {
	# The ranks exit 0 when told to stop: worldrun still dies by SIGTERM.
	worldrun -n 2 sh -c "trap 'exit 0' TERM; $(write_pid "$D/pid\$WORLD_RANK"); wr-sleep 60 & wait" 3>&- &
	wpid=$!
	wait_until 30 pids_in "$D/pid1" 1
	wait_until 30 pids_in "$D/pid0" 1
	kill -TERM "$wpid"
	local rc=0
	wait_job 60 "$wpid" || rc=$?
	assert_equal "$rc" 143
}

@test "worldrun: exits 141 when its stdout is closed while ranks write" {
	# The reader reads one line and goes; the ranks would write for a
	# minute. worldrun must stop them and die by SIGPIPE.
	run -0 bash -c '
		timeout 20 worldrun -n 2 sh -c "wr-spew 100000; exec wr-sleep 60" 2>/dev/null | head -n 1 >/dev/null
		echo "${PIPESTATUS[0]}"'
	assert_output 141
}
