#!/usr/bin/env bats
load helpers

# env_of RANK NAME: the value rank RANK printed for NAME, from the labelled
# output of "worldrun -l ... wr-env NAME..." in $output; "unset" if the
# rank printed "NAME unset"; nothing if it printed neither.
env_of() {
	echo "$output" | sed -n -e "s/^$1: $2=//p" -e "s/^$1: $2 unset\$/unset/p"
}

# distinct NAME: how many different values of NAME the ranks printed.
distinct() {
	echo "$output" | sed -n "s/^[0-9]*: $1=//p" | sort -u | wc -l
}

@test "worldrun: every rank gets its rank, size and node variables" {
	run -0 worldrun -l -n 4 wr-env WORLD_RANK WORLD_SIZE WORLD_LOCAL_RANK \
		WORLD_LOCAL_SIZE WORLD_NODE_RANK WORLD_NNODES
	for r in 0 1 2 3; do
		assert_equal "$(env_of $r WORLD_RANK)" "$r"
		assert_equal "$(env_of $r WORLD_SIZE)" 4
		assert_equal "$(env_of $r WORLD_LOCAL_RANK)" "$r"
		assert_equal "$(env_of $r WORLD_LOCAL_SIZE)" 4
		assert_equal "$(env_of $r WORLD_NODE_RANK)" 0
		assert_equal "$(env_of $r WORLD_NNODES)" 1
	done
}

@test "worldrun: every rank gets torchrun's variables" {
	run -0 worldrun -l -n 3 wr-env RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE \
		GROUP_RANK MASTER_ADDR MASTER_PORT
	for r in 0 1 2; do
		assert_equal "$(env_of $r RANK)" "$r"
		assert_equal "$(env_of $r WORLD_SIZE)" 3
		assert_equal "$(env_of $r LOCAL_RANK)" "$r"
		assert_equal "$(env_of $r LOCAL_WORLD_SIZE)" 3
		assert_equal "$(env_of $r GROUP_RANK)" 0
		assert_equal "$(env_of $r MASTER_ADDR)" 127.0.0.1
	done
}

@test "worldrun: MASTER_PORT is a port number, the same in every rank" {
	run -0 worldrun -l -n 4 wr-env MASTER_PORT
	local port
	port=$(env_of 0 MASTER_PORT)
	assert_regex "$port" '^[0-9]+$'
	assert [ "$port" -ge 1 ]
	assert [ "$port" -le 65535 ]
	assert_equal "$(distinct MASTER_PORT)" 1
	assert_equal "$(echo "$output" | grep -c "^[0-3]: MASTER_PORT=$port\$")" 4
}

@test "worldrun: MASTER_PORT is free to listen on" {
	if ! command -v python3 >/dev/null; then
		skip "python3 is not installed"
	fi
	run -0 worldrun python3 -c '
import os, socket
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])))
s.listen()
print("listening")'
	assert_output listening
}

@test "worldrun: WORLD_JOBID is 12 hex characters, the same in every rank" {
	run -0 worldrun -l -n 4 wr-env WORLD_JOBID
	assert_regex "$(env_of 0 WORLD_JOBID)" '^[0-9a-f]{12}$'
	assert_equal "$(distinct WORLD_JOBID)" 1
	assert_equal "$(echo "$output" | grep -c "^[0-3]: WORLD_JOBID=$(env_of 0 WORLD_JOBID)\$")" 4
}

@test "worldrun: two runs get different WORLD_JOBIDs" {
	run -0 worldrun wr-env WORLD_JOBID
	local first=$output
	run -0 worldrun wr-env WORLD_JOBID
	assert_regex "$first" '^WORLD_JOBID=[0-9a-f]{12}$'
	assert_regex "$output" '^WORLD_JOBID=[0-9a-f]{12}$'
	[ "$first" != "$output" ]
}

@test "worldrun: inherited WORLD_* variables are not passed to the ranks" {
	run -0 env WORLD_FOO=1 WORLD_DEBUG=1 worldrun -l -n 2 wr-env WORLD_FOO WORLD_DEBUG
	for r in 0 1; do
		assert_equal "$(env_of $r WORLD_FOO)" unset
		assert_equal "$(env_of $r WORLD_DEBUG)" unset
	done
}

@test "worldrun: an inherited WORLD_RANK is replaced by the rank's own" {
	run -0 env WORLD_RANK=99 WORLD_SIZE=99 WORLD_JOBID=000000000000 \
		worldrun -l -n 2 wr-env WORLD_RANK WORLD_SIZE WORLD_JOBID
	for r in 0 1; do
		assert_equal "$(env_of $r WORLD_RANK)" "$r"
		assert_equal "$(env_of $r WORLD_SIZE)" 2
		[ "$(env_of $r WORLD_JOBID)" != 000000000000 ]
	done
}

@test "worldrun: the ranks inherit the rest of the environment" {
	run -0 env WR_TEST_PLAIN='plain value' worldrun -l -n 2 wr-env WR_TEST_PLAIN HOME PATH
	for r in 0 1; do
		assert_equal "$(env_of $r WR_TEST_PLAIN)" 'plain value'
		assert_equal "$(env_of $r HOME)" "$HOME"
		assert_equal "$(env_of $r PATH)" "$PATH"
	done
}

@test "worldrun: -x NAME=VALUE sets NAME in every rank" {
	run -0 worldrun -l -n 2 -x WR_TEST_SET=hello wr-env WR_TEST_SET
	assert_equal "$(env_of 0 WR_TEST_SET)" hello
	assert_equal "$(env_of 1 WR_TEST_SET)" hello
}

@test "worldrun: -x NAME=VALUE overrides an inherited NAME" {
	run -0 env WR_TEST_SET=old worldrun -l -n 2 --env WR_TEST_SET=new wr-env WR_TEST_SET
	assert_equal "$(env_of 0 WR_TEST_SET)" new
	assert_equal "$(env_of 1 WR_TEST_SET)" new
}

@test "worldrun: -x NAME forwards worldrun's NAME" {
	run -0 env WR_TEST_FWD=forwarded worldrun -l -n 2 -x WR_TEST_FWD wr-env WR_TEST_FWD
	assert_equal "$(env_of 0 WR_TEST_FWD)" forwarded
	assert_equal "$(env_of 1 WR_TEST_FWD)" forwarded
}

@test "worldrun: -x NAME with NAME unset says so once and runs the job without it, as mpirun" {
	run --separate-stderr -0 env -u WR_TEST_UNSET_VAR worldrun -n 2 -x WR_TEST_UNSET_VAR \
		sh -c 'echo "${WR_TEST_UNSET_VAR-unset}"'
	assert_equal "$output" $'unset\nunset'
	assert_equal "${#stderr_lines[@]}" 1
	assert_equal "${stderr_lines[0]}" "worldrun: -x WR_TEST_UNSET_VAR: not set in worldrun's environment: the ranks get none (-x WR_TEST_UNSET_VAR=VALUE sets one)"
}

@test "worldrun: -x WORLD_RANK=5 is refused (125)" {
	run --separate-stderr -125 worldrun -x WORLD_RANK=5 wr-env WORLD_RANK
	assert_equal "$output" ""
	assert_equal "${#stderr_lines[@]}" 1
	assert_regex "${stderr_lines[0]}" '^worldrun: .*WORLD_RANK'
}

@test "worldrun: -x of any contract variable is refused (125)" {
	local name
	for name in WORLD_RANK WORLD_SIZE WORLD_LOCAL_RANK WORLD_LOCAL_SIZE \
		WORLD_NODE_RANK WORLD_NNODES WORLD_JOBID RANK LOCAL_RANK \
		LOCAL_WORLD_SIZE GROUP_RANK MASTER_ADDR MASTER_PORT; do
		run --separate-stderr -125 worldrun -x "$name=1" wr-exit 0
		assert_equal "${#stderr_lines[@]}" 1
		assert_regex "${stderr_lines[0]}" "^worldrun: .*$name"
	done
}

@test "worldrun: -x RANK=1 is refused (125)" {
	run --separate-stderr -125 worldrun -x RANK=1 wr-env RANK
	assert_equal "$output" ""
	assert_regex "$stderr" '^worldrun: .*RANK'
}

@test "worldrun: -x RANK (forwarding a contract variable) is refused (125)" {
	run --separate-stderr -125 env RANK=1 worldrun -x RANK wr-env RANK
	assert_equal "$output" ""
	assert_regex "$stderr" '^worldrun: .*RANK'
}

@test "worldrun: -x WORLD_DEBUG=1 is allowed and reaches the ranks" {
	run -0 worldrun -l -n 2 -x WORLD_DEBUG=1 wr-env WORLD_DEBUG
	assert_equal "$(env_of 0 WORLD_DEBUG)" 1
	assert_equal "$(env_of 1 WORLD_DEBUG)" 1
}

@test "worldrun: -x forwarding an inherited WORLD_DEBUG passes it on" {
	run -0 env WORLD_DEBUG=2 worldrun -x WORLD_DEBUG wr-env WORLD_DEBUG
	assert_output WORLD_DEBUG=2
}

@test "worldrun: -x repeated for one name: the last one wins" {
	run -0 worldrun -l -n 2 -x WR_TEST_REP=1 -x WR_TEST_REP=2 -x WR_TEST_REP=3 wr-env WR_TEST_REP
	assert_equal "$(env_of 0 WR_TEST_REP)" 3
	assert_equal "$(env_of 1 WR_TEST_REP)" 3
}

@test "worldrun: -x keeps '=' and spaces in the value" {
	run -0 worldrun -l -n 2 -x 'WR_TEST_ODD=a=b c  d=' wr-env WR_TEST_ODD
	assert_equal "$(env_of 0 WR_TEST_ODD)" 'a=b c  d='
	assert_equal "$(env_of 1 WR_TEST_ODD)" 'a=b c  d='
}

@test "worldrun: -x NAME= sets an empty value" {
	run -0 worldrun -x WR_TEST_EMPTY= wr-env WR_TEST_EMPTY
	assert_output WR_TEST_EMPTY=
}

@test "worldrun: several -x options all apply" {
	run -0 env WR_TEST_B=bee worldrun -l -n 2 -x WR_TEST_A=ay -x WR_TEST_B --env WR_TEST_C=see \
		wr-env WR_TEST_A WR_TEST_B WR_TEST_C
	for r in 0 1; do
		assert_equal "$(env_of $r WR_TEST_A)" ay
		assert_equal "$(env_of $r WR_TEST_B)" bee
		assert_equal "$(env_of $r WR_TEST_C)" see
	done
}

@test "worldrun: worldrun inside a rank starts a new job" {
	run -0 worldrun -n 1 sh -c \
		'echo "outer $WORLD_JOBID $WORLD_SIZE $WORLD_RANK"; worldrun -l -n 2 wr-env WORLD_JOBID WORLD_SIZE WORLD_RANK'
	local outer_id outer_size
	outer_id=$(echo "$output" | sed -n 's/^outer \([^ ]*\) .*/\1/p')
	outer_size=$(echo "$output" | sed -n 's/^outer [^ ]* \([^ ]*\) .*/\1/p')
	assert_regex "$outer_id" '^[0-9a-f]{12}$'
	assert_equal "$outer_size" 1
	for r in 0 1; do
		assert_regex "$(env_of $r WORLD_JOBID)" '^[0-9a-f]{12}$'
		[ "$(env_of $r WORLD_JOBID)" != "$outer_id" ]
		assert_equal "$(env_of $r WORLD_SIZE)" 2
		assert_equal "$(env_of $r WORLD_RANK)" "$r"
	done
	assert_equal "$(distinct WORLD_JOBID)" 1
}

@test "env: WORLD_FABRIC is shm for a job on one node" {
	run -0 env -u WORLD_FABRIC worldrun -n 2 sh -c 'echo "$WORLD_FABRIC"'
	assert_output $'shm\nshm'
}

@test "env: WORLD_FABRIC in worldrun's environment picks the provider of every rank" {
	WORLD_FABRIC='tcp;ofi_rxm' run -0 worldrun -n 2 sh -c 'echo "$WORLD_FABRIC"'
	assert_output $'tcp;ofi_rxm\ntcp;ofi_rxm'
}

@test "env: a WORLD_FABRIC that names no provider is one line and 125, before any rank" {
	local v

	for v in bogus "" "tcp;bogus" "shm;ofi_rxm;x"; do
		WORLD_FABRIC=$v run -125 --separate-stderr worldrun -n 2 sh -c 'echo ran'
		assert_equal "$output" ""
		assert_equal "${#stderr_lines[@]}" 1
		assert_regex "$stderr" "^worldrun: WORLD_FABRIC=.*: "
	done
}

@test "env: -x cannot set WORLD_FABRIC: worldrun sets it, from its own environment" {
	run -125 --separate-stderr worldrun -x WORLD_FABRIC=net -n 1 true
	assert_equal "$stderr" "worldrun: -x WORLD_FABRIC: worldrun sets this variable in every rank from its own environment: WORLD_FABRIC=net worldrun ... sets it"
}

@test "worldrun: --env-none passes only what -x names, and worldrun's own variables" {
	run -0 --separate-stderr env WR_KEEP=1 WR_DROP=2 worldrun --env-none -x WR_KEEP -x WR_SET=3 \
		sh -c 'env | sort'
	assert_line WR_KEEP=1
	assert_line WR_SET=3
	refute_line --partial WR_DROP
	refute_line --partial HOME=
	assert_line WORLD_RANK=0
	assert_line RANK=0
	assert_line --regexp '^PATH=/usr/bin:/bin:/.*worldctl$'
}

@test "worldrun: MPICH's -genvnone is --env-none, and -genvlist says what to use" {
	run -0 --separate-stderr env WR_DROP=2 worldrun -genvnone sh -c 'echo "[${WR_DROP-unset}]"'
	assert_output '[unset]'
	run -125 --separate-stderr worldrun -genvlist A,B true
	assert_equal "$stderr" 'worldrun: -genvlist: use --env-none and -x NAME for each name to forward'
}
