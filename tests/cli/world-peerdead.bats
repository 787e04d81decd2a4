#!/usr/bin/env bats
load helpers

# A rank killed with SIGKILL while the others wait on it, in a barrier, a
# get of a key nobody sets and a call of its service, each waiting up to
# 60 s: they get peer-dead naming the rank, not a timeout. prog-peerdead
# (tests/world) makes rank 2 die once ranks 0 and 1 wait. No test here
# asserts how long anything took; --timeout only keeps a hang bounded.
# prog-deathwatch: ranks that sleep on a futex, not in any registry wait,
# learn of the death through libworld's standing deaths watch.
# prog-reregister: a service whose owner died, registered again by
# another rank, is called there, though the caller had cached the dead
# owner.

setup() {
	world_prog peerdead
}

# failure_line RANK WHAT: the regex of worldrun's failure line for RANK.
failure_line() {
	echo "^worldrun: rank $1 \\(pid [0-9]+ on $(hostname)\\) $2 after [0-9]+\\.[0-9]{2} s\$"
}

# peer_dies MODE: run the job and check what every rank saw.
peer_dies() {
	run --separate-stderr -137 worldrun --timeout 300 --keep-going -n 3 "$PROG" "$1"
	assert_line "rank 0: $1: WORLD_EPEERDEAD rank 2"
	assert_line "rank 1: $1: WORLD_EPEERDEAD rank 2"
	assert_line "rank 0: stop: WORLD_EPEERDEAD"
	assert_line "rank 1: stop: WORLD_EPEERDEAD"
	assert_regex "$stderr" "$(failure_line 2 'killed by signal 9 \(SIGKILL\)')"
	refute_regex "$stderr" 'rank [01] \(pid'
}

@test "world: a rank killed while the others wait in a barrier: WORLD_EPEERDEAD naming it" {
	peer_dies barrier
}

@test "world: a rank killed while the others wait for a key: WORLD_EPEERDEAD naming it" {
	peer_dies waitkey
}

@test "world: a rank killed while the others call its service: WORLD_EPEERDEAD naming it" {
	peer_dies call
}

@test "world: a rank killed while others sleep on libworld's deaths futex wakes them" {
	world_prog deathwatch
	run --separate-stderr -137 worldrun --timeout 300 --keep-going -n 3 "$PROG"
	assert_line "rank 0: woken: 1 death(s) known, rank 2 dead"
	assert_line "rank 1: woken: 1 death(s) known, rank 2 dead"
	assert_regex "$stderr" "$(failure_line 2 'killed by signal 9 \(SIGKILL\)')"
}

@test "world: a service registered again after its owner died is called at its new owner" {
	# prog-reregister: rank 0's lookup of "who" was cached at rank 2,
	# which dies; rank 1 registers "who" once the death is known.
	world_prog reregister
	run --separate-stderr -137 worldrun --timeout 300 --keep-going -n 3 "$PROG"
	assert_line "rank 0: before: OK 2"
	assert_line "rank 0: death: WORLD_EPEERDEAD -1"
	assert_line "rank 1: death: WORLD_EPEERDEAD -1"
	assert_line "rank 1: register again: OK -1"
	assert_line "rank 0: after: OK 1"
	assert_line "rank 0: and again: OK 1"
	assert_equal "${#lines[@]}" 6
	assert_regex "$stderr" "$(failure_line 2 'killed by signal 9 \(SIGKILL\)')"
}
