#!/usr/bin/env bats
# Programs written for torchrun run unchanged under worldrun: a gloo
# program (env:// rendezvous, all_reduce, barrier) with Debian's torch,
# alone and two jobs at once. Across hosts: worldrun-sshd.bats.
load helpers

setup() {
	needs_torch
	GLOO=$SRCDIR/tests/cli/gloo.py
}

@test "torch: a gloo program's env:// rendezvous, all_reduce and barrier work on 4 ranks" {
	run -0 --separate-stderr worldrun -n 4 /usr/bin/python3 "$GLOO"
	assert_line '0 10 0 127.0.0.1'
	assert_line '1 10 1 127.0.0.1'
	assert_line '2 10 2 127.0.0.1'
	assert_line '3 10 3 127.0.0.1'
	assert_equal "${#lines[@]}" 4
}

@test "torch: two gloo jobs at once on one host each get a MASTER_PORT of their own" {
	worldrun -n 3 /usr/bin/python3 "$GLOO" >"$BATS_TEST_TMPDIR/a" 2>&1 &
	a=$!
	worldrun -n 3 /usr/bin/python3 "$GLOO" >"$BATS_TEST_TMPDIR/b" 2>&1 &
	b=$!
	wait "$a"
	wait "$b"
	run -0 sort "$BATS_TEST_TMPDIR/a"
	assert_output $'0 6 0 127.0.0.1\n1 6 1 127.0.0.1\n2 6 2 127.0.0.1'
	run -0 sort "$BATS_TEST_TMPDIR/b"
	assert_output $'0 6 0 127.0.0.1\n1 6 1 127.0.0.1\n2 6 2 127.0.0.1'
}
