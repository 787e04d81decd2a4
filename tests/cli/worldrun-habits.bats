#!/usr/bin/env bats
# What users of mpirun, mpiexec and torchrun type out of habit, and the
# rough edges a newcomer meets first: each answered in one honest line
# before anything runs, or done the way those launchers do it.
load helpers

setup() {
	D=$BATS_TEST_TMPDIR
	export D
}

teardown() {
	show_failure
}

@test "worldrun: a TERM-trapping child dying of the stop's SIGKILL is no process outside its group" {
	# sh waits for wr-trap, its child, in the rank's process group; at
	# --kill-grace 0 the rank is reaped while that child is still dying
	# of SIGKILL and holding the rank's output open. 20 times over.
	local i

	for i in $(seq 20); do
		run -124 worldrun -n 4 --timeout 0.5 --kill-grace 0 \
			sh -c 'wr-trap "$D/log.$WORLD_RANK" 60'
		refute_output --partial 'outside its process group'
	done
}
