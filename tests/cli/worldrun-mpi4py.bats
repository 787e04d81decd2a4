#!/usr/bin/env bats
# mpi4py programs (Debian's python3-mpi4py, built on Open MPI) run under
# worldrun as under mpirun: mpi4py_checks.py beside this file checks
# communicators, point to point, collectives, one-sided, names and
# connect/accept; each rank prints "rank R: ok NAME" for each. Under
# CI=true a missing mpi4py fails.
load helpers

setup() {
	if ! /usr/bin/python3 -c 'import mpi4py.MPI' 2>/dev/null; then
		[ "${CI:-}" != true ] || fail "CI installs python3-mpi4py: this test must not skip"
		skip "needs mpi4py under /usr/bin/python3 (python3-mpi4py)"
	fi
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
	CHECKS=$SRCDIR/tests/cli/mpi4py_checks.py
}

# checks_ok N NAMES...: each of N ranks passed each named check.
checks_ok() {
	local n=$1 name
	shift
	for name in "$@"; do
		assert_equal "$(grep -c "^rank [0-9]*: ok $name\$" <<<"$output")" "$n"
	done
	refute_output --partial FAIL
}

@test "mpi4py: one rank: its world, communicators, collectives and names" {
	run -0 --separate-stderr worldrun --timeout 120 -n 1 /usr/bin/python3 "$CHECKS"
	checks_ok 1 world split dup shared allreduce bcast gather alltoall Allreduce lookup unpublish
}

@test "mpi4py: two ranks: point to point, one-sided, connect and accept through a published name" {
	run -0 --separate-stderr worldrun --timeout 120 -n 2 /usr/bin/python3 "$CHECKS"
	checks_ok 2 world split dup shared sendrecv buffers allreduce bcast gather alltoall Allreduce \
		rma lookup connect unpublish
}

@test "mpi4py: three ranks on two CPUs, and across two hosts" {
	run -0 --separate-stderr worldrun --timeout 120 -n 3 /usr/bin/python3 "$CHECKS"
	checks_ok 3 world split sendrecv buffers allreduce alltoall rma lookup unpublish
	assert_equal "$(grep -c '^rank [01]: ok connect$' <<<"$output")" 2
	run -0 --separate-stderr worldrun --timeout 120 -H localhost:2,node-b:1 --rsh wr-rsh \
		/usr/bin/python3 "$CHECKS"
	checks_ok 3 world split shared sendrecv buffers allreduce alltoall lookup unpublish
}

@test "mpi4py: Spawn starts children that exchange data with their parents over the intercommunicator, on one host or two" {
	local script=$BATS_TEST_TMPDIR/spawn.py
	cat >"$script" <<-'PY'
	import sys
	from mpi4py import MPI
	parent = MPI.Comm.Get_parent()
	me = MPI.COMM_WORLD.Get_rank()
	if parent == MPI.COMM_NULL:
	    kids = MPI.COMM_WORLD.Spawn(sys.executable, [sys.argv[0]], 3)
	    total = kids.allreduce(me + 1, op=MPI.SUM)
	    print("parent", me, "of", kids.Get_size(), "children", kids.Get_remote_size(), "sum", total)
	    kids.Disconnect()
	else:
	    total = parent.allreduce(me + 100, op=MPI.SUM)
	    print("child", me, "of", MPI.COMM_WORLD.Get_size(), "parents", parent.Get_remote_size(),
	          "sum", total)
	    parent.Disconnect()
	PY
	run -0 --separate-stderr worldrun --timeout 120 -l -n 2 /usr/bin/python3 "$script"
	assert_line "0: parent 0 of 2 children 3 sum 303"
	assert_line "1: parent 1 of 2 children 3 sum 303"
	assert_line "2: child 0 of 3 parents 2 sum 3"
	assert_line "3: child 1 of 3 parents 2 sum 3"
	assert_line "4: child 2 of 3 parents 2 sum 3"
	run -0 --separate-stderr worldrun --timeout 120 -l -H localhost:1,node-b:1 --rsh wr-rsh \
		/usr/bin/python3 "$script"
	assert_line "1: parent 1 of 2 children 3 sum 303"
	assert_line "4: child 2 of 3 parents 2 sum 3"
}
