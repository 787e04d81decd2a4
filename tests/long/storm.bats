#!/usr/bin/env bats
load ../cli/helpers

# The fault storm (suite long): $WORLD_STORM_REPEATS times each (200 by
# default), SIGKILL of worldrun, SIGKILL of a rank (each rank in turn) and
# --timeout end a job of 8 prog-storm ranks once they hold registry waits
# and RPC calls (prog-storm writes DIR/ready when the registry and its
# handlers say so). After each job, within bounded waits: no process of
# it is left (its ranks, their children, its guardian, anything carrying
# its WORLD_JOBID), its TMPDIR is empty, and /dev/shm has no entry named
# after it.

setup() {
	REPEATS=${WORLD_STORM_REPEATS:-200}
	[[ "$REPEATS" =~ ^[1-9][0-9]*$ ]] || fail "WORLD_STORM_REPEATS=$REPEATS"
	# A --timeout long enough for the ranks to be in place; doubled for
	# a job that timed out before they were.
	TIMEOUT=${WORLD_STORM_TIMEOUT:-2}
	RETRIES=0
	world_prog storm
	wpid=
	SECONDS=0
}

teardown() {
	if [ -n "$wpid" ] && alive "$wpid"; then
		kill -KILL "$wpid"
	fi
}

# ready_or_gone DIR: the job's ranks are in place, or worldrun ended.
ready_or_gone() {
	[ -s "$1/ready" ] || gone "$wpid"
}

# live_pids FILE: those of FILE's pids still alive, on one line.
live_pids() {
	local pid

	while read -r pid; do
		if alive "$pid"; then
			printf '%s(%s) ' "$pid" "$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)"
		fi
	done <"$1"
}

# empty_dir DIR: DIR holds nothing.
# empty_dir DIR: nothing in DIR but, where XDG_RUNTIME_DIR is unset, the
# per-user directory that lists running jobs (worldrun-UID), empty.
empty_dir() {
	local own="worldrun-$(id -u)"

	[ -z "$(ls -A "$1" | grep -vxF "$own")" ] &&
		{ [ ! -d "$1/$own" ] || [ -z "$(ls -A "$1/$own")" ]; }
}

# start_storm DIR [ARGS...]: worldrun ARGS -n 8 prog-storm DIR with its
# TMPDIR in DIR/tmp, in the background (pid in wpid), and wait for its
# ranks to be in place, or for it to end.
start_storm() {
	local dir=$1

	shift
	mkdir -p "$dir/tmp"
	TMPDIR=$dir/tmp worldrun "$@" -n 8 "$PROG" "$dir" \
		>"$dir/out" 2>"$dir/err" 3>&- &
	wpid=$!
	wait_until 60 ready_or_gone "$dir"
}

# all_gone_after DIR WHAT [ID]: nothing of the job in DIR is left (its
# ranks and their children, and with ID whatever carries its WORLD_JOBID
# or is named after it in /dev/shm); fail saying what is, after WHAT.
all_gone_after() {
	local dir=$1 what=$2 id=${3:-} shm

	wait_until 20 all_gone "$dir/pids" ||
		fail "$what: processes left: $(live_pids "$dir/pids")"
	wait_until 10 empty_dir "$dir/tmp" ||
		fail "$what: left in its TMPDIR: $(ls -lAR "$dir/tmp")"
	[ -n "$id" ] || return 0
	wait_until 10 no_job_procs "$id" ||
		fail "$what: processes with WORLD_JOBID=$id left: $(job_procs "$id")"
	shm=$(ls -A /dev/shm | grep -F -- "$id" || true)
	[ -z "$shm" ] || fail "$what: left in /dev/shm: $shm"
}

# end_storm DIR WHAT STATUS GUARDIAN: wait for worldrun to end with
# STATUS, then for everything of the job and its guardian to be gone.
end_storm() {
	local dir=$1 what=$2 want=$3 g=$4 st=0

	wait_job 60 "$wpid" || st=$?
	wpid=
	[ "$st" -eq "$want" ] ||
		fail "$what: worldrun exited $st, not $want: $(head -c 600 "$dir/err")"
	wait_until 10 gone "$g" || fail "$what: its guardian $g is left"
	all_gone_after "$dir" "$what" "$(cat "$dir/ready")"
}

# guardian_of_job WHAT: the guardian of the running job ("" if worldrun
# has already ended); fails if there is none.
guardian_of_job() {
	local g

	g=$(guardians_of "$wpid")
	[ -n "$g" ] || gone "$wpid" || fail "$1: no guardian found"
	echo "$g"
}

# in_place DIR WHAT: the ranks were in place before the job ended.
in_place() {
	[ -s "$1/ready" ] ||
		fail "$2: ended before its ranks were in place: $(head -c 600 "$1/err")"
}

# summary KIND: a TAP comment with the count and the time taken.
summary() {
	echo "# $1: $REPEATS repeats in $SECONDS s${2:+, $2}" >&3
}

@test "storm: SIGKILL of worldrun while 8 ranks hold waits and calls leaves nothing" {
	local i dir what g

	for ((i = 1; i <= REPEATS; i++)); do
		dir=$BATS_TEST_TMPDIR/$i
		what="repeat $i (SIGKILL of worldrun)"
		start_storm "$dir"
		in_place "$dir" "$what"
		g=$(guardian_of_job "$what")
		kill -KILL "$wpid"
		end_storm "$dir" "$what" 137 "$g"
		rm -rf "$dir"
	done
	summary "SIGKILL of worldrun"
}

@test "storm: SIGKILL of a rank while 8 ranks hold waits and calls leaves nothing" {
	local i dir what g rank pid

	for ((i = 1; i <= REPEATS; i++)); do
		dir=$BATS_TEST_TMPDIR/$i
		rank=$((i % 8))
		what="repeat $i (SIGKILL of rank $rank)"
		start_storm "$dir"
		in_place "$dir" "$what"
		g=$(guardian_of_job "$what")
		pid=$(cat "$dir/pid.$rank")
		kill -KILL "$pid"
		end_storm "$dir" "$what" 137 "$g"
		grep -q "^worldrun: rank $rank (pid $pid on .*) killed by signal 9 (SIGKILL)" \
			"$dir/err" || fail "$what: $(head -c 600 "$dir/err")"
		rm -rf "$dir"
	done
	summary "SIGKILL of a rank"
}

@test "storm: --timeout while 8 ranks hold waits and calls leaves nothing" {
	local i dir what g tries

	for ((i = 1; i <= REPEATS; i++)); do
		dir=$BATS_TEST_TMPDIR/$i
		what="repeat $i (--timeout)"
		for ((tries = 1; ; tries++)); do
			start_storm "$dir" --timeout "$TIMEOUT"
			[ -s "$dir/ready" ] && break
			# It timed out before the ranks were in place: not the case
			# this test is for. Again with twice the time, 3 times at most.
			wait_job 60 "$wpid" || true
			wpid=
			all_gone_after "$dir" "$what, timed out early"
			[ "$tries" -lt 3 ] || fail "$what: ranks never in place within --timeout"
			rm -rf "$dir"
			TIMEOUT=$((TIMEOUT * 2))
			RETRIES=$((RETRIES + 1))
		done
		g=$(guardian_of_job "$what")
		end_storm "$dir" "$what" 124 "$g"
		rm -rf "$dir"
	done
	summary "--timeout" "$RETRIES retried with a longer --timeout (now $TIMEOUT s)"
}
