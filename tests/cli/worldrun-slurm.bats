#!/usr/bin/env bats
# worldrun inside a real Slurm: a private controller, munge and three
# emulated nodes on this host (slurm.bash), brought up once for the file
# and taken down with every process it started. Root only; under CI=true
# a skip here is a failure.
load helpers
load slurm

setup_file() {
	local why
	if why=$(slurm_can); then
		slurm_up || export SLURM_SKIP="the private Slurm did not come up (see its logs)"
	else
		export SLURM_SKIP="$why"
	fi
}

teardown_file() {
	slurm_down
}

setup() {
	if [ -n "${SLURM_SKIP:-}" ]; then
		[ "${CI:-}" != true ] || fail "CI runs as root with Slurm installed: $SLURM_SKIP"
		skip "$SLURM_SKIP"
	fi
	D=$BATS_TEST_TMPDIR
	export D
}

teardown() {
	show_failure
	wait_until 15 output_is "" slurm_steps || true
}

# Every srun and salloc bounded: a request Slurm cannot meet queues
# silently.
srun_() {
	timeout -k 5 60 srun "$@"
}

@test "slurm: the private cluster runs a step on each of its three nodes" {
	run -0 srun_ -N3 -n3 -l sh -c 'echo "$SLURMD_NODENAME $SLURM_NODEID"'
	assert_line '0: n1 0'
	assert_line '1: n2 1'
	assert_line '2: n3 2'
}

@test "slurm: inside an srun task, ranks get the allocation's variables but not the task's" {
	run -0 --separate-stderr srun_ -N1 -n1 "$WORLDRUN" -n 2 -l sh -c \
		'env | grep -E "^SLURM_(JOB_ID|PROCID|LOCALID|NODEID|NTASKS|STEP_ID|STEP_NODELIST|NODELIST)=" | sort'
	assert_line --regexp '^0: SLURM_JOB_ID=[0-9]+$'
	assert_line --regexp '^1: SLURM_JOB_ID=[0-9]+$'
	assert_line --regexp '^0: SLURM_NODELIST=n1$'
	refute_line --regexp 'SLURM_(PROCID|LOCALID|NODEID|NTASKS|STEP_ID|STEP_NODELIST)='
}

@test "slurm: srun's PMI-2 and PMIx variables do not reach worldrun's ranks" {
	run -0 --separate-stderr srun_ --mpi=pmi2 -N1 -n1 sh -c \
		'test -n "$PMI_FD" && echo "task has PMI_FD" &&
		 exec "$WORLDRUN" -n 1 --pmi none sh -c "env | grep -c ^PMI || true"'
	assert_line 'task has PMI_FD'
	assert_line 0
	run -0 --separate-stderr srun_ --mpi=pmix -N1 -n1 sh -c \
		'test -n "$PMIX_RANK" && echo "task has PMIX_RANK" &&
		 exec "$WORLDRUN" -n 1 --pmi none sh -c "env | grep -c ^PMI || true"'
	assert_line 'task has PMIX_RANK'
	assert_line 0
}

@test "slurm: the cluster leaves no step behind a test" {
	run -0 srun_ -N2 -n2 true
	wait_until 15 output_is "" slurm_steps
}
