#!/usr/bin/env bats
load helpers

# Collective groups when a member goes: ranks 0-2 wait in a collective
# that needs rank 3 (prog-colldeath, tests/world), up to 60 s each. Rank 3
# dies (SIGKILL), or leaves the job (world_stop), or blocks while the test
# kills worldrun. The others get WORLD_EPEERDEAD naming rank 3, never a
# timeout, and the group stays failed; nothing of the job is left in
# /dev/shm. No test here asserts how long anything took; --timeout only
# keeps a hang bounded.

setup() {
	world_prog colldeath
	wpid=
}

teardown() {
	if [ -n "$wpid" ] && alive "$wpid"; then
		kill -KILL "$wpid" 2>/dev/null || true
	fi
}

# lost MODE: what ranks 0-2 must have printed.
lost() {
	local r

	for r in 0 1 2; do
		assert_line "rank $r: $1: WORLD_EPEERDEAD rank 3"
		assert_line "rank $r: then: WORLD_EPEERDEAD rank 3"
	done
}

@test "coll: a rank killed during an all_reduce: the others get WORLD_EPEERDEAD naming it" {
	run --separate-stderr -137 worldrun --timeout 300 --keep-going -n 4 "$PROG" kill
	lost kill
	assert_regex "$stderr" "worldrun: rank 3 \\(pid [0-9]+ on .*\\) killed by signal 9"
}

@test "coll: a rank that stops while the others wait for its broadcast: WORLD_EPEERDEAD naming it" {
	run --separate-stderr -0 worldrun --timeout 300 -n 4 "$PROG" stop
	lost stop
	assert_line --regexp "^rank 3: stop: "
}

@test "coll: on tcp;ofi_rxm too, a killed rank ends the all_reduce of the others" {
	WORLD_FABRIC='tcp;ofi_rxm' run --separate-stderr -137 worldrun --timeout 300 --keep-going \
		-n 4 "$PROG" kill
	lost kill
}

# shm_entries JOBID: how many /dev/shm names the job's prefix starts.
shm_entries() {
	find /dev/shm -maxdepth 1 -name "wr-$1*" 2>/dev/null | wc -l
}

@test "coll: after SIGKILL of worldrun mid-collective, /dev/shm holds nothing of the job" {
	local id

	[ -d /dev/shm ] || skip "no /dev/shm here"
	worldrun -n 4 sh -c 'echo "$WORLD_JOBID" >"$0/jobid.$WORLD_RANK"; exec "$1" block' \
		"$BATS_TEST_TMPDIR" "$PROG" >"$BATS_TEST_TMPDIR/out" 2>&1 3>&- &
	wpid=$!
	wait_until 60 grep -q "rank 3: the others wait" "$BATS_TEST_TMPDIR/out"
	id=$(cat "$BATS_TEST_TMPDIR/jobid.0")
	# The endpoints and doorbells exist while the job runs.
	[ "$(shm_entries "$id")" -ge 4 ]
	kill -KILL "$wpid"
	wait "$wpid" || true
	wait_until 10 output_is 0 shm_entries "$id"
}

@test "coll: another user who makes the job's /dev/shm names first, from its id, blocks no collective group" {
	local id r

	if [ "$(id -u)" != 0 ]; then
		[ "${CI:-}" != true ] || fail "CI runs as root: this test must not skip"
		skip "needs root, to act as user nobody"
	fi
	worldrun -n 3 sh -c 'echo "$WORLD_JOBID" >"$0/jobid.$WORLD_RANK"
		i=0; while [ ! -e "$0/go" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done
		exec "$1"' "$BATS_TEST_TMPDIR" "$(dirname "$PROG")/test-coll" >"$BATS_TEST_TMPDIR/out" 2>&1 &
	wpid=$!
	wait_until 30 test -s "$BATS_TEST_TMPDIR/jobid.0"
	id=$(cat "$BATS_TEST_TMPDIR/jobid.0")
	# The job id is public (its directory in TMPDIR): every name that
	# could be made of it alone, taken first by someone else.
	for r in 0 1 2 3 4 5 6 7; do
		setpriv --reuid=nobody --regid=nogroup --clear-groups \
			touch "/dev/shm/wr-${id}_bell_$r" "/dev/shm/wr-${id}_r$r:0:0" \
			"/dev/shm/wr-${id}_coll_$r"
	done
	touch "$BATS_TEST_TMPDIR/go"
	finish_job 120
	rm -f /dev/shm/wr-"$id"_*
	run cat "$BATS_TEST_TMPDIR/out"
	assert_equal "$wstatus" 0
	refute_line --partial 'not ok'
	assert_line --regexp '^ok [0-9]+ - world_stop'
}

@test "coll: a /dev/shm without room makes group creation fail with ENOSPC, saying so, not a fabric error" {
	if [ "$(id -u)" != 0 ]; then
		[ "${CI:-}" != true ] || fail "CI runs as root: this test must not skip"
		skip "needs root, for a /dev/shm of its own"
	fi
	run unshare --mount --propagation private sh -c \
		'mount -t tmpfs -o size=16m tmpfs /dev/shm && exec worldrun -n 3 "$0"' \
		"$(dirname "$PROG")/test-coll"
	assert_line 'not ok 1 - create the group of 0, 1, 2 (No space left on device)'
	refute_output --partial 'Fabric error'
}
