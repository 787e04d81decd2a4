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

@test "worldrun -vv: a rank worldrun killed is 'killed by signal 15 (SIGTERM)', as in the report" {
	run -124 worldrun -vv -n 2 --timeout 0.3 --kill-grace 5 wr-sleep 60
	assert_line --regexp '^worldrun: rank 0 \(pid [0-9]+\) killed by signal 15 \(SIGTERM\) after [0-9.]+ s$'
	assert_line --regexp '^worldrun: rank 1 \(pid [0-9]+\) killed by signal 15 \(SIGTERM\) after [0-9.]+ s$'
	refute_output --partial 'status 143'
}

@test "worldrun -vv: a rank that ended well 'exited with status 0'" {
	run -0 worldrun -vv -n 1 wr-exit 0
	assert_line --regexp '^worldrun: rank 0 \(pid [0-9]+\) exited with status 0 after [0-9.]+ s$'
}

@test "worldrun: -n past the limit names the limit" {
	run -125 worldrun -n 99999999 wr-exit 0
	assert_output 'worldrun: -n 99999999: not a rank count (1 to 1048576) (see worldrun --help)'
	run -125 worldrun -n 0 wr-exit 0
	assert_output 'worldrun: -n 0: not a rank count (1 to 1048576) (see worldrun --help)'
}

@test "worldrun: a directory as the program is 'Is a directory' (126)" {
	mkdir "$D/prog"
	run -126 worldrun -n 2 "$D/prog"
	assert_output "worldrun: $D/prog: cannot be executed: Is a directory"
}

@test "worldrun: a script whose #! interpreter is missing is 127 before any rank starts" {
	printf '#!%s/no-such-python -u\nprint(1)\n' "$D" >"$D/s.py"
	chmod +x "$D/s.py"
	run -127 worldrun -n 3 --report "$D/r.json" "$D/s.py"
	assert_output "worldrun: $D/s.py: its interpreter $D/no-such-python was not found"
	run -0 grep -c '"pid": null' "$D/r.json"
	assert_output 3
	run -0 python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["cause"])' "$D/r.json"
	assert_output not-found
}

@test "worldrun: a script whose #! names a directory is 126" {
	printf '#! %s\necho\n' "$D" >"$D/s"
	chmod +x "$D/s"
	run -126 worldrun -n 2 "$D/s"
	assert_output "worldrun: $D/s: its interpreter $D cannot be executed: Is a directory"
}

@test "worldrun: a script with a good #! and one without run as before" {
	printf '#! /bin/sh -e\necho "with $WORLD_RANK"\n' >"$D/a"
	printf 'echo "without $WORLD_RANK"\n' >"$D/b"
	chmod +x "$D/a" "$D/b"
	run -0 worldrun -n 1 "$D/a"
	assert_output 'with 0'
	run -0 worldrun -n 1 "$D/b"
	assert_output 'without 0'
}

@test "worldrun: --report where it cannot be written is 125 before any rank starts" {
	touch "$D/file"
	run -125 worldrun --report "$D/no-such-dir/r.json" -n 2 touch "$D/ran"
	assert_output "worldrun: --report $D/no-such-dir/r.json: No such file or directory"
	run -125 worldrun --report "$D/file/r.json" -n 2 touch "$D/ran"
	assert_output "worldrun: --report $D/file/r.json: Not a directory"
	run -125 worldrun --report "$D" -n 2 touch "$D/ran"
	assert_output "worldrun: --report $D: Is a directory"
	run -125 worldrun --dry-run --report "$D/no-such-dir/r.json" -n 2 true
	assert_output "worldrun: --report $D/no-such-dir/r.json: No such file or directory"
	assert [ ! -e "$D/ran" ]
}

@test "worldrun: --report in a directory that refuses new files is 125" {
	if [ "$(stat -f -c %T /sys 2>/dev/null)" != sysfs ]; then
		skip "/sys is not a sysfs here"
	fi
	run -125 worldrun --report /sys/wr-report.json -n 1 touch "$D/ran"
	assert_output 'worldrun: --report /sys/wr-report.json: Permission denied'
	assert [ ! -e "$D/ran" ]
}

@test "worldrun: the --report check leaves no file behind and keeps the atomic write" {
	mkdir "$D/rep"
	echo old >"$D/rep/r.json"
	run -0 worldrun --report "$D/rep/r.json" -n 1 sh -c 'ls "$D/rep"'
	assert_output 'r.json'
	run -0 ls "$D/rep"
	assert_output 'r.json'
	run -0 python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["cause"])' "$D/rep/r.json"
	assert_output success
}

# spellings: every name in the spelling table of spell.c.
spellings() {
	sed -n 's/^	{ "\(-[^"]*\)", .*/\1/p' "$SRCDIR/cmd/worldrun/spell.c"
}

# taken_with_value SPELLING: spell.c takes it as worldrun's --wdir,
# --hosts or --host, whose errors name the value, not the spelling.
taken_with_value() {
	grep -qE "^	\{ \"$1\", 1, \"(wdir|hosts|host)\"" "$SRCDIR/cmd/worldrun/spell.c"
}

@test "worldrun: -hostfile is read as --hosts, not as -h" {
	printf 'node-a slots=2\n' >"$D/hf"
	run -0 --separate-stderr worldrun -hostfile "$D/hf" --dry-run touch "$D/ran"
	assert_line --index 0 --regexp '^worldrun: dry run of job [0-9a-f]{12}: 2 ranks; agents by ssh$'
	assert_line --index 1 --regexp '^rank 0 host node-a '
	assert [ ! -e "$D/ran" ]
}

@test "worldrun: -rf (a rankfile) is refused in one line naming it" {
	run -125 --separate-stderr worldrun -rf rf -np 4 touch "$D/ran"
	assert_equal "$output" ""
	assert_equal "${#stderr_lines[@]}" 1
	assert_equal "$stderr" 'worldrun: -rf: not supported: give the hosts with --hosts FILE and place the ranks with --map-by slot|node or --ppn N'
	assert [ ! -e "$D/ran" ]
}

@test "worldrun: -h alone is still the help" {
	run -0 worldrun -h
	assert_line --index 0 --regexp '^usage: worldrun '
}

@test "worldrun: every other launcher's spelling is refused or taken, never misread" {
	local sp n=0

	for sp in $(spellings); do
		n=$((n + 1))
		# -host 2 and -hosts 2 reach for a host named 2: not for 10 s.
		run worldrun "$sp" 2 --connect-timeout 1 -n 1 sh -c 'echo ran'
		# Taken ones run (or complain about their value), refused ones
		# name themselves in one line; none prints the help.
		refute_output --partial 'usage: worldrun'
		if [ "$status" = 125 ]; then
			assert_equal "${#lines[@]}" 1
			assert_regex "${lines[0]}" '^worldrun: '
		fi
		# -wd 2 is --wdir 2, and says so; -hostfile 2 reads the file 2,
		# -host 2 places ranks on host 2, and their lines name those.
		if [ "$status" = 125 ] && ! taken_with_value "$sp"; then
			assert_regex "${lines[0]}" "^worldrun: (option )?$sp[ :]"
		fi
	done
	assert [ "$n" -ge 60 ]
}

@test "worldrun: mpirun's -np, -wdir, -wd and -tag-output mean what they mean there" {
	run -0 worldrun -np 2 -wdir "$D" -tag-output sh -c 'echo "$(pwd)"'
	assert_line "0: $D"
	assert_line "1: $D"
	run -0 worldrun -wd "$D" pwd
	assert_output "$D"
}

@test "worldrun: MPICH's -genv NAME VALUE and -env NAME VALUE set NAME in every rank" {
	run -0 worldrun -n 2 -genv WR_A 'a b' -env WR_B 2 -genvall sh -c 'echo "$WR_A/$WR_B"'
	assert_equal "${lines[0]}" 'a b/2'
	assert_equal "${lines[1]}" 'a b/2'
	run -125 worldrun -genv WR_A
	assert_output 'worldrun: option -genv needs a name and a value (see worldrun --help)'
}

@test "worldrun: torchrun's --nproc-per-node N (either spelling) is -n N" {
	run -0 --separate-stderr worldrun --nproc-per-node 3 --nnodes 1 --standalone wr-env WORLD_SIZE
	assert_equal "${#lines[@]}" 3
	assert_line 'WORLD_SIZE=3'
	run -0 --separate-stderr worldrun --nproc_per_node=2 --nnodes=1:1 --node_rank 0 wr-env WORLD_SIZE
	assert_equal "${#lines[@]}" 2
	run -125 worldrun --nproc-per-node gpu wr-env WORLD_SIZE
	assert_output 'worldrun: --nproc-per-node gpu: worldrun does not count devices: give the number of ranks per node (see worldrun --help)'
	run -125 worldrun --nproc-per-node 0 wr-env WORLD_SIZE
	assert_output 'worldrun: --nproc-per-node 0: not a rank count (1 to 1048576), auto or cpu (see worldrun --help)'
}

@test "worldrun: torchrun's --nproc-per-node cpu (and auto) is one rank per CPU" {
	run -0 --separate-stderr worldrun --nproc-per-node cpu wr-env WORLD_SIZE
	assert_line "WORLD_SIZE=$(getconf _NPROCESSORS_ONLN)"
	run -0 --separate-stderr worldrun --nproc-per-node auto wr-env WORLD_SIZE
	assert_line "WORLD_SIZE=$(getconf _NPROCESSORS_ONLN)"
}

@test "worldrun: torchrun's --nnodes above 1 without hosts is refused in one line" {
	run -125 worldrun --nnodes 2 --nproc-per-node 2 touch "$D/ran"
	assert_output "worldrun: --nnodes 2: worldrun starts every node's ranks from this one command: give the hosts with --hosts FILE, -H LIST or a Slurm allocation"
	assert [ ! -e "$D/ran" ]
	run -125 worldrun --nnodes 1:2 --nproc-per-node 2 touch "$D/ran"
	assert_output "worldrun: --nnodes 1:2: worldrun's jobs are not elastic: give one number of nodes (see worldrun --help)"
	run -125 worldrun --node-rank 1 --nproc-per-node 2 touch "$D/ran"
	assert_output "worldrun: --node-rank 1: only 0 is supported: worldrun starts every node's ranks from this one command (give the hosts with --hosts FILE, -H LIST or a Slurm allocation)"
	assert [ ! -e "$D/ran" ]
}

@test "worldrun: torchrun's --nproc-per-node N with hosts is N on each, --nnodes M the first M" {
	run -0 --separate-stderr worldrun --dry-run -H node-a:4,node-b:4,node-c:4 --nproc-per-node 3 wr-exit 0
	assert_line --index 0 --partial ': 9 ranks; agents by ssh'
	assert_line 'rank 2 host node-a wdir . program wr-exit 0'
	assert_line 'rank 3 host node-b wdir . program wr-exit 0'
	assert_line 'rank 8 host node-c wdir . program wr-exit 0'
	run -0 --separate-stderr worldrun --dry-run -H node-a:4,node-b:4,node-c:4 --nnodes 2 --nproc_per_node 4 wr-exit 0
	assert_line --index 0 --partial ': 8 ranks; agents by ssh'
	assert_line 'rank 3 host node-a wdir . program wr-exit 0'
	assert_line 'rank 7 host node-b wdir . program wr-exit 0'
	refute_line --partial 'host node-c'
	run -125 worldrun -H node-a,node-b --nnodes 3 --nproc-per-node 1 wr-exit 0
	assert_output 'worldrun: --nnodes 3: only 2 hosts are given'
}

@test "worldrun: -bind-to none and -oversubscribe are accepted, -cpu-list is refused naming --bind-to" {
	run -0 worldrun -bind-to none -oversubscribe --allow-run-as-root -n 2 wr-exit 0
	run -125 worldrun --cpu-list 0,1 wr-exit 0
	assert_output 'worldrun: --cpu-list: not supported: worldrun places ranks on hosts (--map-by slot|node, --ppn N) and binds them to CPUs with --bind-to LEVEL and --cpus-per-rank N'
}

@test "worldrun: a mistyped long option gets a suggestion" {
	run -125 worldrun --lable wr-exit 0
	assert_output 'worldrun: unknown option --lable; did you mean --label?'
	run -125 worldrun --tmeout=3 wr-exit 0
	assert_output 'worldrun: unknown option --tmeout; did you mean --timeout?'
	run -125 worldrun -lable wr-exit 0
	assert_output 'worldrun: unknown option -lable; did you mean --label?'
	run -125 worldrun --frobnicate wr-exit 0
	assert_output 'worldrun: unknown option --frobnicate (see worldrun --help)'
}

@test "worldrun(1): OTHER LAUNCHERS' OPTIONS names every spelling worldrun knows" {
	local sp section missing=

	section=$(awk '/^# OTHER LAUNCHERS/ { on = 1; next } on && /^# / { exit } on' \
		"$SRCDIR/man/worldrun.1.scd" | tr -d '\\')
	for sp in $(spellings); do
		grep -qF -- "*$sp" <<<"$section" || missing+=" $sp"
	done
	assert_equal "${missing:-none}" none
}

@test "worldrun: ranks find worldrun's own worldctl when their PATH has none, at the end of PATH" {
	local ctl

	ctl=$(cd "$(dirname "$WORLDCTL")" && pwd -P)/worldctl
	run -0 env -i PATH=/usr/bin:/bin "${SAN[@]}" "$WORLDRUN" sh -c 'command -v worldctl; echo "$PATH"'
	assert_line --index 0 "$ctl"
	assert_line --index 1 "/usr/bin:/bin:$(dirname "$ctl")"
	mkdir "$D/bin"
	printf '#!/bin/sh\n' >"$D/bin/worldctl"
	chmod +x "$D/bin/worldctl"
	run -0 env -i PATH="$D/bin:/usr/bin:/bin" "${SAN[@]}" "$WORLDRUN" sh -c 'echo "$PATH"'
	assert_output "$D/bin:/usr/bin:/bin"
}

@test "worldrun: srun's --ntasks N and --ntasks-per-node N are -n N and --ppn N; -K and -u are accepted" {
	run -0 worldrun --ntasks 3 -l sh -c 'echo "$WORLD_SIZE"'
	assert_equal "${#lines[@]}" 3
	assert_line '2: 3'
	run -0 worldrun --ntasks-per-node=2 -l sh -c 'echo "$WORLD_SIZE"'
	assert_line '1: 2'
	run -0 worldrun -K --kill-on-bad-exit -u --unbuffered -n 1 sh -c 'echo ran'
	assert_output 'ran'
}

@test "worldrun: srun's --nodes, -t, -o, -W and MPICH's -iface are refused in one line naming worldrun's way" {
	local sp want
	for sp in "--nodes=2:--hosts FILE" \
		"-t 5:--timeout S" "--time=5:--timeout S" "-o out.%t:--output-dir" "--output=x:--output-dir" \
		"-W 5:--keep-going" "--wait=5:--keep-going" "-iface lo:address itself"; do
		want=${sp#*:}
		# shellcheck disable=SC2086 # the option and its value, two words
		run -125 --separate-stderr worldrun ${sp%%:*} -n 1 sh -c 'echo ran'
		assert_equal "$output" ''
		assert_equal "${#stderr_lines[@]}" 1
		assert_regex "${stderr_lines[0]}" "^worldrun: ${sp%%[ =]*}: "
		assert_regex "${stderr_lines[0]}" "$want"
	done
}

@test "worldrun: -N inside a Slurm allocation says it is ranks per host, not srun's nodes" {
	# A dry run: the allocation is made up, no srun is asked.
	run -0 --separate-stderr env SLURM_JOB_ID=1 SLURM_JOB_NODELIST=localhost SLURM_NNODES=1 \
		SLURM_JOB_CPUS_PER_NODE=2 worldrun --dry-run -N 2 true
	assert_line --partial ': 2 ranks; agents by srun (Slurm job 1)'
	assert_equal "${stderr_lines[0]}" "worldrun: -N 2: ranks per host, as Open MPI's mpirun reads it (srun's -N counts nodes: worldrun runs on the allocation's); --ppn 2 says it plainly"
	run -0 --separate-stderr env -u SLURM_JOB_ID worldrun -N 1 sh -c 'echo ran'
	assert_equal "$stderr" ''
}

@test "worldrun: -x of a variable worldrun takes from its own environment says how to give it" {
	run -125 --separate-stderr worldrun -x WORLD_WAIT_TIMEOUT=5 true
	assert_equal "$stderr" "worldrun: -x WORLD_WAIT_TIMEOUT: worldrun sets this variable in every rank from its own environment: WORLD_WAIT_TIMEOUT=5 worldrun ... sets it"
	run -0 env WORLD_WAIT_TIMEOUT=5 worldrun sh -c 'echo "$WORLD_WAIT_TIMEOUT"'
	assert_output '5'
	run -125 --separate-stderr worldrun -x WORLD_RANK=5 true
	assert_equal "$stderr" "worldrun: -x WORLD_RANK: worldrun sets this variable in every rank"
}
