#!/usr/bin/env bats
load helpers

# Signals sent to worldrun: INT, TERM and HUP stop the job (the same
# signal to every rank's group, SIGKILL after --kill-grace, then worldrun
# dies by it), USR1, USR2 and CONT are only forwarded, QUIT prints the
# hang report (forwarded with --forward-quit: worldrun-hang.bats has the
# report itself), TSTP stops
# the ranks and worldrun. Ranks are mostly wr-trap, which logs "ready PID"
# and then every signal it catches into $DIR/log.RANK.
#
# worldrun is started in the background. A script's background jobs start
# with SIGINT and SIGQUIT ignored (job control is off in bats); worldrun
# catches them anyway, since libevent installs its own handlers (the test
# "started with SIGINT ignored, ..." checks exactly that), so no wrapper
# that restores the default dispositions is needed here, but for SIGHUP:
# see start_job.

setup() {
	DIR=$BATS_TEST_TMPDIR
	export DIR
	wpid=
}

teardown() {
	# A hung worldrun must not outlive the test; its guardian then
	# kills the ranks.
	if [ -n "$wpid" ] && alive "$wpid"; then
		kill -KILL "$wpid" 2>/dev/null || true
	fi
}

# start_job ARGS...: start worldrun ARGS in the background (stdout in
# $DIR/out, stderr in $DIR/err); its pid in wpid. Bats' fd 3 is closed
# so that nothing left behind can hold up bats. SIGHUP starts with its
# default action: a suite run under nohup (or by a CI runner that ignores
# SIGHUP) would hand worldrun an ignored SIGHUP, which worldrun then keeps
# ignoring, as it must under nohup; bash cannot undo that, env can.
start_job() {
	env --default-signal=HUP worldrun "$@" >"$DIR/out" 2>"$DIR/err" 3>&- &
	wpid=$!
}

# trap_cmd N [SECONDS] [-x]: the sh -c script of a wr-trap rank logging
# into $DIR/log.RANK (sh execs, so the rank is wr-trap itself).
trap_cmd() {
	echo "exec wr-trap $3 \"\$DIR/log.\$WORLD_RANK\" ${2:-120}"
}

# ranks_logged N LINE: every rank 0..N-1 has LINE in its log.
ranks_logged() {
	local n=$1 line=$2 r

	for ((r = 0; r < n; r++)); do
		grep -qx -- "$line" "$DIR/log.$r" 2>/dev/null || return 1
	done
}

# ranks_ready N: every rank 0..N-1 logged "ready PID".
ranks_ready() {
	local n=$1 r

	for ((r = 0; r < n; r++)); do
		grep -q '^ready [0-9]' "$DIR/log.$r" 2>/dev/null || return 1
	done
}

# rank_pid R: the pid rank R logged.
rank_pid() {
	awk '$1 == "ready" { print $2; exit }' "$DIR/log.$1"
}

# count_in FILE LINE: how many lines of FILE are LINE.
count_in() {
	grep -cx -- "$2" "$1" 2>/dev/null || true
}

# ranks_gone N: no rank 0..N-1 is alive.
ranks_gone() {
	local n=$1 r

	for ((r = 0; r < n; r++)); do
		alive "$(rank_pid "$r")" && return 1
	done
	return 0
}

# none_in_state STATE PID...: no PID is in STATE (and each exists).
none_in_state() {
	local not=$1 pid s

	shift
	for pid in "$@"; do
		s=$(state "$pid")
		[ -n "$s" ] && [ "$s" != "$not" ] || return 1
	done
}


# stops_job SIG STATUS: SIG to worldrun reaches every rank, the ranks
# (which ignore it) get SIGKILL after the grace, worldrun dies by SIG.
stops_job() {
	local sig=$1 want=$2

	start_job -n 2 --kill-grace 0.5 sh -c "$(trap_cmd 2 120)"
	wait_until 30 ranks_ready 2
	kill "-$sig" "$wpid"
	wait_until 20 ranks_logged 2 "SIG$sig"
	# wr-trap runs 120 s: an end well before that is the SIGKILL.
	finish_job 20
	[ "$wstatus" -eq "$want" ]
	wait_until 10 ranks_gone 2
	run cat "$DIR/err"
	assert_line "worldrun: received SIG$sig: stopping 2 ranks"
	assert_line "worldrun: stopped 2 ranks"
	refute_output --partial "killed by signal"
	refute_output --partial "exited with status"
}

@test "worldrun: SIGINT reaches every rank, SIGKILL after the grace, status 130" {
	stops_job INT 130
}

@test "worldrun: SIGTERM reaches every rank, SIGKILL after the grace, status 143" {
	stops_job TERM 143
}

@test "worldrun: SIGHUP reaches every rank, SIGKILL after the grace, status 129" {
	stops_job HUP 129
}

# ends_by SIG STATUS: ranks that exit 0 on SIG (or die by it) still leave
# worldrun with 128+SIG, and no rank counts as a failure.
ends_by() {
	local sig=$1 want=$2

	start_job -n 2 --kill-grace 30 --report "$DIR/report.json" sh -c '
		trap "exit 0" INT TERM HUP
		echo "ready $$" >"$DIR/log.$WORLD_RANK"
		sleep 120 >/dev/null 2>&1 &
		wait'
	wait_until 30 ranks_ready 2
	kill "-$sig" "$wpid"
	finish_job 20
	[ "$wstatus" -eq "$want" ]
	run cat "$DIR/err"
	assert_line "worldrun: received SIG$sig: stopping 2 ranks"
	refute_output --partial "exited with status"
	# The ranks did exit 0 (their trap ran), yet the status is 128+S.
	run python3 -c '
import json, sys
print(" ".join(str(r["exit_code"]) for r in json.load(open(sys.argv[1]))["ranks"]))' \
		"$DIR/report.json"
	assert_output "0 0"

	# Ranks that simply die by the signal: the same.
	rm -f "$DIR"/log.*
	start_job -n 2 --kill-grace 30 sh -c \
		'echo "ready $$" >"$DIR/log.$WORLD_RANK"; exec wr-sleep 120'
	wait_until 30 ranks_ready 2
	kill "-$sig" "$wpid"
	finish_job 20
	[ "$wstatus" -eq "$want" ]
	run cat "$DIR/err"
	assert_line "worldrun: received SIG$sig: stopping 2 ranks"
	refute_output --partial "killed by signal"
}

@test "worldrun: status 130 after SIGINT even when the ranks exit 0 or die by it" {
	ends_by INT 130
}

@test "worldrun: status 143 after SIGTERM even when the ranks exit 0 or die by it" {
	ends_by TERM 143
}

@test "worldrun: status 129 after SIGHUP even when the ranks exit 0 or die by it" {
	ends_by HUP 129
}

@test "worldrun: dies by the signal itself, not by exit(128+S)" {
	# Only a parent that reads the wait status can tell: python's
	# returncode is -S for a death by signal S and 128+S for an exit.
	local sig ppid pstatus

	for sig in INT TERM HUP; do
		rm -f "$DIR"/log.* "$DIR/pid" "$DIR/rc"
		timeout -s KILL 60 python3 -c '
import subprocess, sys
p = subprocess.Popen(sys.argv[2:], stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL)
with open(sys.argv[1], "w") as f:
    f.write("%d\n" % p.pid)
print(p.wait())
' "$DIR/pid" env --default-signal=HUP worldrun -n 2 --kill-grace 0.5 \
			sh -c "$(trap_cmd 2 120)" \
			>"$DIR/rc" 3>&- &
		ppid=$!
		wait_until 30 ranks_ready 2
		wait_until 10 test -s "$DIR/pid"
		wpid=$(cat "$DIR/pid")
		kill "-$sig" "$wpid"
		wait_until 30 gone "$ppid"
		wpid=
		pstatus=0
		wait "$ppid" || pstatus=$?
		[ "$pstatus" -eq 0 ]
		run cat "$DIR/rc"
		assert_output "-$(kill -l "$sig")"
	done
}

@test "worldrun: started with SIGINT ignored, it still stops on SIGINT and the ranks do not inherit that" {
	# sh's trap "" leaves SIGINT ignored across exec, as in a script's
	# background job.
	run -0 sh -c 'trap "" INT QUIT; exec grep "^SigIgn:" /proc/self/status'
	(( 0x${output##*[[:space:]]} & 2 ))
	sh -c 'trap "" INT QUIT; exec worldrun "$@"' _ -n 2 --kill-grace 60 sh -c \
		'echo "ready $$" >"$DIR/log.$WORLD_RANK"; exec wr-sleep 120' \
		>"$DIR/out" 2>"$DIR/err" 3>&- &
	wpid=$!
	wait_until 30 ranks_ready 2
	kill -INT "$wpid"
	# wr-sleep dies by SIGINT unless it inherited the ignored SIGINT:
	# then only the 60 s grace would end it.
	finish_job 20
	[ "$wstatus" -eq 130 ]
	run cat "$DIR/err"
	assert_line "worldrun: received SIGINT: stopping 2 ranks"
}

# held SIG CMD...: run CMD with SIG blocked and already sent, so that it
# is pending when CMD starts, as a signal that comes while worldrun is
# still starting.
held() {
	python3 -c 'import os, signal, sys
sig = getattr(signal, sys.argv[1])
signal.pthread_sigmask(signal.SIG_BLOCK, {sig})
os.kill(os.getpid(), sig)
os.execvp(sys.argv[2], sys.argv[2:])' "$@"
}

@test "worldrun: a SIGQUIT that comes while it starts prints the hang report once it can, and the job goes on" {
	run -0 --separate-stderr held SIGQUIT worldrun -n 2 sh -c 'sleep 1; echo "done $WORLD_RANK"'
	assert_line 'done 0'
	assert_line 'done 1'
	assert_regex "$stderr" "worldrun: job [0-9a-f]{12} after [0-9.]+ s: 2 ranks? running"
}

@test "worldrun: a SIGINT that comes while it starts, or held by whoever started it, stops the job: 130" {
	run -130 --separate-stderr held SIGINT worldrun -n 2 wr-sleep 120
	assert_regex "$stderr" "^worldrun: received SIGINT: stopping [0-9]+ ranks?"
}

@test "worldrun: under nohup (SIGHUP ignored at start) a SIGHUP neither stops nor reaches the job" {
	sh -c 'trap "" HUP; exec worldrun "$@"' _ -n 2 sh -c "$(trap_cmd 2 3)" \
		>"$DIR/out" 2>"$DIR/err" 3>&- &
	wpid=$!
	wait_until 30 ranks_ready 2
	kill -HUP "$wpid"
	finish_job 30
	[ "$wstatus" -eq 0 ]
	[ "$(count_in "$DIR/log.0" SIGHUP)" -eq 0 ]
	[ "$(count_in "$DIR/log.1" SIGHUP)" -eq 0 ]
	run cat "$DIR/err"
	refute_output --partial "received SIGHUP"
}

@test "worldrun: a second SIGINT sends SIGKILL at once" {
	start_job -n 2 --kill-grace 120 sh -c "$(trap_cmd 2 120)"
	wait_until 30 ranks_ready 2
	kill -INT "$wpid"
	wait_until 20 ranks_logged 2 SIGINT
	# The ranks ignore SIGINT and the grace is 120 s: still running.
	alive "$wpid"
	alive "$(rank_pid 0)"
	alive "$(rank_pid 1)"
	kill -INT "$wpid"
	finish_job 20
	[ "$wstatus" -eq 130 ]
	wait_until 10 ranks_gone 2
	run cat "$DIR/err"
	assert_line "worldrun: received SIGINT: stopping 2 ranks"
	refute_output --partial "killed by signal"
}

# forwards_only SIG: SIG reaches every rank and the job goes on.
forwards_only() {
	local sig

	for sig in "$@"; do
		kill "-$sig" "$wpid"
		wait_until 20 ranks_logged 2 "SIG$sig"
		alive "$wpid"
		alive "$(rank_pid 0)"
		alive "$(rank_pid 1)"
	done
}

# end_ranks N: two SIGTERMs straight to each wr-trap -x rank, which then
# exits 0 (the second one sent only once the first is logged).
end_ranks() {
	local n=$1 r pid

	for ((r = 0; r < n; r++)); do
		pid=$(rank_pid "$r")
		kill -TERM "$pid"
		wait_until 20 grep -qx SIGTERM "$DIR/log.$r"
		kill -TERM "$pid"
	done
}

@test "worldrun --forward-quit: SIGQUIT, SIGUSR1, SIGUSR2 and SIGCONT are forwarded and the job goes on" {
	start_job -n 2 --forward-quit sh -c "$(trap_cmd 2 120 -x)"
	wait_until 30 ranks_ready 2
	forwards_only QUIT USR1 USR2 CONT
	end_ranks 2
	finish_job 30
	[ "$wstatus" -eq 0 ]
	run cat "$DIR/err"
	refute_output --partial "received"
	refute_output --partial "stopped"
	refute_output --partial "after"
}

@test "worldrun: SIGQUIT is not forwarded: it prints the hang report and the job goes on" {
	start_job -n 2 sh -c "$(trap_cmd 2 120 -x)"
	wait_until 30 ranks_ready 2
	kill -QUIT "$wpid"
	wait_until 20 grep -q "not in any libworld wait" "$DIR/err"
	kill -USR1 "$wpid"
	wait_until 20 ranks_logged 2 SIGUSR1
	alive "$wpid"
	end_ranks 2
	finish_job 30
	[ "$wstatus" -eq 0 ]
	run grep -c SIGQUIT "$DIR/log.0" "$DIR/log.1"
	assert_output "$DIR/log.0:0
$DIR/log.1:0"
}

@test "worldrun: SIGUSR1 alone is forwarded and the job ends with status 0" {
	start_job -n 2 sh -c "$(trap_cmd 2 120 -x)"
	wait_until 30 ranks_ready 2
	forwards_only USR1
	end_ranks 2
	finish_job 30
	[ "$wstatus" -eq 0 ]
	[ "$(count_in "$DIR/log.0" SIGUSR1)" -eq 1 ]
	[ "$(count_in "$DIR/log.1" SIGUSR1)" -eq 1 ]
}

@test "worldrun: a forwarded signal reaches the rank's whole process group" {
	# Each rank (wr-trap, by exec) has a child wr-trap in its group that
	# logs into $DIR/kid.RANK.
	start_job -n 2 --kill-grace 0.5 sh -c '
		wr-trap "$DIR/kid.$WORLD_RANK" 120 </dev/null >/dev/null 2>&1 &
		exec wr-trap "$DIR/log.$WORLD_RANK" 120'
	wait_until 30 ranks_ready 2
	wait_until 30 grep -q '^ready' "$DIR/kid.0"
	wait_until 30 grep -q '^ready' "$DIR/kid.1"
	kill -USR1 "$wpid"
	wait_until 20 ranks_logged 2 SIGUSR1
	wait_until 20 grep -qx SIGUSR1 "$DIR/kid.0"
	wait_until 20 grep -qx SIGUSR1 "$DIR/kid.1"
	kill -TERM "$wpid"
	wait_until 20 grep -qx SIGTERM "$DIR/kid.0"
	wait_until 20 grep -qx SIGTERM "$DIR/kid.1"
	finish_job 20
	[ "$wstatus" -eq 143 ]
	kid0=$(awk '$1 == "ready" { print $2 }' "$DIR/kid.0")
	kid1=$(awk '$1 == "ready" { print $2 }' "$DIR/kid.1")
	wait_until 10 gone "$kid0"
	wait_until 10 gone "$kid1"
}

@test "worldrun: SIGTSTP stops the ranks and worldrun, SIGCONT resumes them" {
	local r0 r1

	start_job -n 2 sh -c "$(trap_cmd 2 120 -x)"
	wait_until 30 ranks_ready 2
	r0=$(rank_pid 0)
	r1=$(rank_pid 1)
	kill -TSTP "$wpid"
	wait_until 20 all_in_state T "$wpid" "$r0" "$r1"
	kill -CONT "$wpid"
	wait_until 20 none_in_state T "$wpid" "$r0" "$r1"
	wait_until 20 ranks_logged 2 SIGCONT
	# Nothing stops twice: a second round works the same way.
	kill -TSTP "$wpid"
	wait_until 20 all_in_state T "$wpid" "$r0" "$r1"
	kill -CONT "$wpid"
	wait_until 20 none_in_state T "$wpid" "$r0" "$r1"
	end_ranks 2
	finish_job 30
	[ "$wstatus" -eq 0 ]
	run cat "$DIR/err"
	refute_output --partial "stopped"
	refute_output --partial "received"
}

# fail_first: the command for rank 0 that exits 3 once every other rank
# (of N) is ready, the others being wr-trap -x.
fail_first_cmd() {
	cat <<-'EOF'
	if [ "$WORLD_RANK" = 0 ]; then
		i=0
		while [ "$i" -lt 600 ] && ! grep -q "^ready" "$DIR/log.1" 2>/dev/null; do
			sleep 0.05
			i=$((i + 1))
		done
		exit 3
	fi
	exec wr-trap -x "$DIR/log.$WORLD_RANK" 120
	EOF
}

@test "worldrun: --kill-grace 0.5: a rank that ignores SIGTERM after a failure is SIGKILLed" {
	start_job -n 2 --kill-grace 0.5 --report "$DIR/report.json" sh -c "$(fail_first_cmd)"
	wait_until 30 grep -q '^ready' "$DIR/log.1"
	wait_until 20 grep -qx SIGTERM "$DIR/log.1"
	# wr-trap would run 120 s: an end long before that is the SIGKILL.
	finish_job 20
	[ "$wstatus" -eq 3 ]
	wait_until 10 gone "$(rank_pid 1)"
	run cat "$DIR/err"
	assert_line --regexp '^worldrun: rank 0 \(pid [0-9]+ on .+\) exited with status 3 after [0-9.]+ s$'
	assert_line "worldrun: stopped 1 other rank"
	run python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))["ranks"][1]
print(r["signal"], r["killed_by_worldrun"])' "$DIR/report.json"
	assert_output "9 True"
}

@test "worldrun: --kill-grace: no SIGKILL before the grace is over" {
	# A 120 s grace: after its SIGTERM the rank is still there, and a
	# second SIGTERM (wr-trap -x exits 0 on it) ends the job at once.
	start_job -n 2 --kill-grace 120 --report "$DIR/report.json" sh -c "$(fail_first_cmd)"
	wait_until 30 grep -q '^ready' "$DIR/log.1"
	wait_until 20 grep -qx SIGTERM "$DIR/log.1"
	alive "$(rank_pid 1)"
	alive "$wpid"
	kill -TERM "$(rank_pid 1)"
	finish_job 20
	[ "$wstatus" -eq 3 ]
	run python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))["ranks"][1]
print(r["exit_code"], r["signal"], r["killed_by_worldrun"])' "$DIR/report.json"
	assert_output "0 None True"
}

@test "worldrun: --kill-grace takes decimal seconds and rejects nonsense" {
	run -0 worldrun --kill-grace 0.25 -n 1 wr-exit 0
	run -0 worldrun --kill-grace 1.5 -n 1 wr-exit 0
	run -125 worldrun --kill-grace abc -n 1 wr-exit 0
	assert_output --regexp '^worldrun: '
	run -125 worldrun --kill-grace -1 -n 1 wr-exit 0
	assert_output --regexp '^worldrun: '
}

@test "worldrun: a rank killed by a forwarded signal is a failure (SIGUSR1: 138)" {
	start_job -n 2 --kill-grace 0.5 sh -c \
		'echo "ready $$" >"$DIR/log.$WORLD_RANK"; exec wr-sleep 120'
	wait_until 30 ranks_ready 2
	kill -USR1 "$wpid"
	finish_job 20
	[ "$wstatus" -eq 138 ]
	run cat "$DIR/err"
	assert_line --regexp '^worldrun: rank [01] \(pid [0-9]+ on .+\) killed by signal 10 \(SIGUSR1\) after [0-9.]+ s$'
	refute_output --partial "received"
}

@test "worldrun: --timeout sends SIGTERM, then SIGKILL after the grace: status 124" {
	run -124 timeout -s KILL 60 worldrun -n 2 --timeout 1 --kill-grace 0.5 \
		sh -c "$(trap_cmd 2 120)" 3>&-
	assert_line "worldrun: timed out after 1 s"
	assert_line "worldrun: stopped 2 ranks"
	ranks_logged 2 SIGTERM
	wait_until 10 ranks_gone 2
}

@test "worldrun: --timeout: ranks that exit on SIGTERM end the job with 124" {
	run -124 timeout -s KILL 60 worldrun -n 2 --timeout 0.5 --kill-grace 120 \
		sh -c 'echo "ready $$" >"$DIR/log.$WORLD_RANK"; exec wr-sleep 120' 3>&-
	assert_line "worldrun: timed out after 0.5 s"
	assert_line "worldrun: stopped 2 ranks"
	refute_output --partial "killed by signal"
}

# stalled_job ARGS...: worldrun ARGS in the background (pid in wpid) with
# its stdout into a FIFO whose reader never reads; stderr in $DIR/err.
# Returns once the ranks have filled what worldrun may queue (they block).
stalled_job() {
	mkfifo "$DIR/fifo"
	sleep 300 <"$DIR/fifo" 3>&- &
	reader=$!
	env --default-signal=HUP worldrun "$@" >"$DIR/fifo" 2>"$DIR/err" 3>&- &
	wpid=$!
}

@test "worldrun: SIGTERM ends worldrun behind a reader that reads nothing: 143 after twice the grace" {
	stalled_job --kill-grace 0.3 -n 2 sh -c 'echo $$ >>"$DIR/pids"; exec wr-spew 100000000'
	wait_until 60 pids_in "$DIR/pids" 2
	kill -TERM "$wpid"
	finish_job 60
	assert_equal "$wstatus" 143
	kill "$reader"
	# "stopped 2 ranks" may follow, when the stop ends before the grace.
	run cat "$DIR/err"
	assert_line --index 0 'worldrun: received SIGTERM: stopping 2 ranks'
	refute_output --regexp 'Sanitizer|runtime error'
	all_gone "$DIR/pids"
}

@test "worldrun: a second SIGINT ends worldrun behind a reader that reads nothing at once: 130" {
	# A grace of 300 s: only the second signal can end it within the wait.
	stalled_job --kill-grace 300 -n 2 sh -c 'echo $$ >>"$DIR/pids"; exec wr-spew 100000000'
	wait_until 60 pids_in "$DIR/pids" 2
	kill -INT "$wpid"
	wait_until 60 grep -q 'received SIGINT' "$DIR/err"
	kill -INT "$wpid"
	finish_job 60
	assert_equal "$wstatus" 130
	kill "$reader"
	wait_until 60 all_gone "$DIR/pids"
}
