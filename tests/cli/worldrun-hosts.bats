#!/usr/bin/env bats
# Host lists and placement: hostfiles in Open MPI's and MPICH's forms,
# -H, -n from the slots, --map-by, --ppn, --oversubscribe, errors that
# name the file and line, --dry-run and --display-map. Other hosts go
# through the remote shell: worldrun-remote.bats tests them.
load helpers

setup() {
	D=$BATS_TEST_TMPDIR
	export D
}

teardown() {
	show_failure
}

# hosts_of: the host column of --dry-run's rank lines, one word.
hosts_of() {
	awk '$1 == "rank" { printf "%s ", $4 }' <<<"$output"
}

@test "worldrun: a hostfile in both forms, with comments, gives -n from its slots" {
	printf '# the cluster\nnode-a slots=2 max_slots=4  # Open MPI\n\n   node-b:2\nnode-c\n' >"$D/hf"
	run -0 worldrun --hosts "$D/hf" --dry-run true
	assert_line --index 0 --regexp '^worldrun: dry run of job [0-9a-f]{12}: 5 ranks; agents by ssh$'
	assert_equal "$(hosts_of)" "node-a node-a node-b node-b node-c "
}

@test "worldrun: --map-by node puts one rank per host in turn" {
	run -0 worldrun -H a:2,b:2 --map-by node --dry-run true
	assert_equal "$(hosts_of)" "a b a b "
}

@test "worldrun: -n below the slots fills the first hosts" {
	run -0 worldrun -H a:2,b:2 -n 3 --dry-run true
	assert_equal "$(hosts_of)" "a a b "
}

@test "worldrun: --ppn 1 puts one rank on each host whatever its slots" {
	run -0 worldrun -H a:4,b:4 --ppn 1 -n 2 --dry-run true
	assert_equal "$(hosts_of)" "a b "
}

@test "worldrun: more ranks than slots is refused in one line unless --oversubscribe" {
	run -125 --separate-stderr worldrun -H a:1,b:1 -n 3 touch "$D/ran"
	assert_equal "$stderr" 'worldrun: 3 ranks do not fit in the 2 slots of 2 hosts (--oversubscribe allows more)'
	assert [ ! -e "$D/ran" ]
	run -0 worldrun -H a:1,b:1 -n 3 --oversubscribe --dry-run true
	assert_equal "$(hosts_of)" "a b a "
}

@test "worldrun: max_slots bounds a host even with --oversubscribe" {
	printf 'a slots=1 max_slots=1\nb\n' >"$D/hf"
	run -0 worldrun --hosts "$D/hf" -n 3 --oversubscribe --dry-run true
	assert_equal "$(hosts_of)" "a b b "
}

@test "worldrun: a bad hostfile line is one line naming the file, the line and the fault, exit 125" {
	printf 'a\nb slots=x\n' >"$D/hf"
	run -125 --separate-stderr worldrun --hosts "$D/hf" touch "$D/ran"
	assert_equal "$stderr" "worldrun: $D/hf:2: slots=x is not a count from 1 to 65536"
	assert [ ! -e "$D/ran" ]
	printf 'a cpus=2\n' >"$D/hf"
	run -125 --separate-stderr worldrun --hosts "$D/hf" true
	assert_equal "$stderr" "worldrun: $D/hf:1: unknown 'cpus=2' (slots=N or max_slots=N)"
	printf '# nothing\n' >"$D/hf"
	run -125 --separate-stderr worldrun --hosts "$D/hf" true
	assert_equal "$stderr" "worldrun: $D/hf: no host in it"
}

@test "worldrun: a hostfile that cannot be read is one line naming it, exit 125" {
	run -125 --separate-stderr worldrun --hosts "$D/none" true
	assert_equal "$stderr" "worldrun: $D/none: No such file or directory"
}

@test "worldrun: Open MPI's --map-by ppr:N:node is --ppn N, and :OVERSUBSCRIBE is --oversubscribe" {
	run -0 --separate-stderr worldrun -H a,b --map-by ppr:2:node --dry-run true
	assert_line 'rank 1 host a wdir . program true'
	assert_line 'rank 3 host b wdir . program true'
	run -0 --separate-stderr worldrun -H a:1 -n 2 --map-by slot:OVERSUBSCRIBE --dry-run true
	assert_line 'rank 1 host a wdir . program true'
}

@test "worldrun: Open MPI's --map-by core, hwthread and :PE=N bind as Open MPI's do" {
	run -0 --separate-stderr worldrun -n 1 --map-by core --report-bindings true
	assert_regex "$stderr" ' bound to core 0 \('
	run -0 --separate-stderr worldrun -n 1 --map-by hwthread --report-bindings true
	assert_regex "$stderr" ' bound to hwthread 0 \('
	run -0 --separate-stderr worldrun -n 1 --map-by core --bind-to none --report-bindings true
	assert_regex "$stderr" ' not bound \('
	if (($(nproc) >= 2)); then
		run -0 --separate-stderr worldrun -n 1 --map-by slot:PE=2 --report-bindings true
		assert_regex "$stderr" ' bound to cores [0-9]+-[0-9]+ \('
	fi
}

@test "worldrun: --map-by what worldrun does not map by is refused naming --ppn and --bind-to" {
	local m
	for m in socket numa l3cache ppr:2:socket ppr:x:node ppr:2 slot:SPAN; do
		run -125 --separate-stderr worldrun --map-by "$m" true
		assert_equal "$output" ''
		assert_regex "$stderr" "^worldrun: --map-by $m: "
	done
	run -125 --separate-stderr worldrun --map-by ppr:2:socket true
	assert_regex "$stderr" 'give them with --ppn N\) and binds them with --bind-to package'
	run -125 --separate-stderr worldrun --map-by slot:SPAN true
	assert_regex "$stderr" 'SPAN: expected PE=N or OVERSUBSCRIBE after the kind'
}

@test "worldrun: a bad -H list or --map-by is a usage error, exit 125" {
	run -125 --separate-stderr worldrun -H a,,b true
	assert_equal "$stderr" 'worldrun: -H a,,b: an empty entry'
	run -125 --separate-stderr worldrun -H a --map-by socket true
	assert_equal "$stderr" 'worldrun: --map-by socket: expected slot, node, core, hwthread or ppr:N:node; worldrun places ranks on hosts (give them with --ppn N) and binds them with --bind-to package|numa|l3cache (see worldrun --help)'
	run -125 --separate-stderr worldrun --ppn 0 -H a true
	assert_equal "$stderr" 'worldrun: --ppn 0: not a rank count per host (1 to 65536) (see worldrun --help)'
}

@test "worldrun: --hosts and -H together are refused" {
	printf 'a\n' >"$D/hf"
	run -125 --separate-stderr worldrun --hosts "$D/hf" -H b true
	assert_equal "$stderr" 'worldrun: -H: give the hosts either with --hosts FILE or with -H LIST (see worldrun --help)'
}

@test "worldrun: other launchers' spellings of the host options" {
	printf 'a:2\nb:2\n' >"$D/hf"
	run -0 worldrun -machinefile "$D/hf" -ppn 1 -n 2 --dry-run true
	assert_equal "$(hosts_of)" "a b "
	run -0 worldrun -f "$D/hf" -n 3 --dry-run true
	assert_equal "$(hosts_of)" "a a b "
	run -0 worldrun -hosts a,b -map-by node -n 2 --dry-run true
	assert_equal "$(hosts_of)" "a b "
	run -0 worldrun -host a:1 -oversubscribe -n 2 --dry-run true
	assert_equal "$(hosts_of)" "a a "
}

@test "worldrun: --stdin past the ranks the hosts give is refused" {
	run -125 --separate-stderr worldrun -H a:2 --stdin 2 true
	assert_equal "$stderr" 'worldrun: --stdin 2: there are only 2 ranks (see worldrun --help)'
}

@test "worldrun: ranks on localhost run here, with the contract's node and local ranks" {
	run -0 --separate-stderr worldrun -H localhost:3 sh -c \
		'echo "$WORLD_RANK $WORLD_SIZE $WORLD_NODE_RANK $WORLD_NNODES $WORLD_LOCAL_RANK $WORLD_LOCAL_SIZE"'
	assert_equal "$(sort <<<"$output" | tr '\n' ';')" '0 3 0 1 0 3;1 3 0 1 1 3;2 3 0 1 2 3;'
}

@test "worldrun: --display-map prints which ranks go where on stderr, then starts them" {
	run -0 --separate-stderr worldrun -H localhost:2 --display-map sh -c 'echo "ran $WORLD_RANK"'
	assert_equal "$stderr" 'worldrun: node 0 (localhost): ranks 0-1'
	assert_equal "$(sort <<<"$output" | tr '\n' ';')" 'ran 0;ran 1;'
	run -0 --separate-stderr worldrun -H a:2,b --map-by node --display-map --dry-run true
	assert_equal "${stderr_lines[0]}" 'worldrun: node 0 (a): ranks 0,2'
	assert_equal "${stderr_lines[1]}" 'worldrun: node 1 (b): rank 1'
}

@test "worldrun: a host other than this machine goes through the remote shell, and nothing runs before it answers" {
	run -125 env WR_RSH_REFUSE=node-b worldrun -H localhost:1,node-b:1 --rsh wr-rsh touch "$D/ran"
	assert_line --index 0 'worldrun: host node-b: ssh: connect to host node-b port 22: Connection refused'
	assert_line --index 1 'worldrun: host node-b: its remote shell exited with status 255'
	assert [ ! -e "$D/ran" ]
}

@test "worldrun: the example host list in share/examples runs its 4 ranks here" {
	run -0 --separate-stderr worldrun --hosts "$SRCDIR/share/examples/hosts" --display-map \
		sh -c 'echo "$WORLD_RANK $WORLD_NNODES"'
	assert_equal "$stderr" 'worldrun: node 0 (localhost): ranks 0-3'
	assert_equal "$(sort <<<"$output" | tr '\n' ';')" '0 1;1 1;2 1;3 1;'
}

@test "worldrun: two entries for this machine are two nodes, the second with an agent of its own" {
	run -0 worldrun -H localhost:1,127.0.0.1:1 --display-map --dry-run true
	assert_line --index 0 'worldrun: node 0 (localhost): rank 0'
	assert_line --index 1 'worldrun: node 1 (127.0.0.1): rank 1'
	run -0 --separate-stderr worldrun -H localhost:1,127.0.0.1:1 -l sh -c 'echo node $WORLD_NODE_RANK of $WORLD_NNODES under $(xargs -0 echo </proc/$PPID/cmdline)'
	assert_line --regexp '^0: node 0 of 2 under [^ ]*worldrun -H localhost:1,127.0.0.1:1 '
	assert_line --regexp '^1: node 1 of 2 under [^ ]*worldrun --agent$'
}

@test "worldrun: a failure line and --report name the rank's host as the list gives it" {
	run -1 --separate-stderr worldrun -H localhost:2 --report "$D/r.json" sh -c 'exit $WORLD_RANK'
	assert_regex "${stderr_lines[0]}" '^worldrun: rank 1 \(pid [0-9]+ on localhost\) exited with status 1 after '
	run -0 grep -c '"host": "localhost"' "$D/r.json"
	assert_output 2
}

@test "worldrun: --ppn without -n starts that many per host, and on this machine that many" {
	run -0 worldrun -H a:4,b:4 --ppn 1 --dry-run true
	assert_equal "$(hosts_of)" "a b "
	run -0 worldrun -H a,b --ppn 2 --dry-run true
	assert_equal "$(hosts_of)" "a a b b "
	run -0 --separate-stderr worldrun --ppn 3 sh -c 'echo $WORLD_SIZE'
	assert_equal "$output" "$(printf '3\n3\n3')"
	run -125 --separate-stderr worldrun --ppn 2 -n 3 true
	assert_equal "$stderr" 'worldrun: 3 ranks do not fit in --ppn 2 on this machine (--oversubscribe allows more)'
}

@test "worldrun: only localhost and 127.0.0.0/8 addresses are this machine, not a name that starts 127." {
	run -0 --separate-stderr worldrun -H 127.0.0.5:2 sh -c 'echo ran'
	assert_equal "$output" "$(printf 'ran\nran')"
	run -125 env WR_RSH_REFUSE=127.example.com worldrun -H 127.example.com:2 --rsh wr-rsh touch "$D/ran"
	assert_line --index 0 'worldrun: host 127.example.com: ssh: connect to host 127.example.com port 22: Connection refused'
	assert [ ! -e "$D/ran" ]
}

# in_alloc CMD...: CMD in the environment of a Slurm allocation of nodes
# n1, n2 (two slots each) and m07 (one), as salloc gives it; no Slurm runs.
in_alloc() {
	env SLURM_JOB_ID=7 SLURM_JOB_NODELIST='n[1-2],m07' SLURM_TASKS_PER_NODE='2(x2),1' \
		SLURM_JOB_CPUS_PER_NODE='4(x3)' "$@"
}

@test "worldrun: in a Slurm allocation, the hosts and slots are its nodes' and -n defaults to them" {
	run -0 --separate-stderr in_alloc worldrun --dry-run --display-map true
	assert_line --index 0 --regexp '^worldrun: dry run of job [0-9a-f]{12}: 5 ranks; agents by srun \(Slurm job 7\)$'
	assert_equal "$(hosts_of)" "n1 n1 n2 n2 m07 "
	assert_equal "${stderr_lines[2]}" 'worldrun: node 2 (m07): rank 4'
	run -0 in_alloc worldrun -n 3 --map-by node --dry-run true
	assert_equal "$(hosts_of)" "n1 n2 m07 "
	# The tasks the job asked for, where Slurm gives more slots than that.
	run -0 in_alloc env SLURM_NTASKS=3 worldrun --dry-run true
	assert_equal "$(hosts_of)" "n1 n1 n2 "
	run -125 --separate-stderr in_alloc env SLURM_NTASKS=x worldrun true
	assert_equal "$stderr" 'worldrun: SLURM_NTASKS=x: not a task count (1 to 1048576)'
}

@test "worldrun: inside a step, the slots are the job's CPUs: the step's own tasks are not the job's" {
	run -0 in_alloc env SLURM_STEP_ID=0 SLURM_TASKS_PER_NODE=1 SLURM_NTASKS=1 worldrun --dry-run true
	assert_line --index 0 --regexp ': 12 ranks; agents by srun \(Slurm job 7\)$'
	run -0 in_alloc env SLURM_TASKS_PER_NODE= worldrun --dry-run true
	assert_line --index 0 --regexp ': 12 ranks; agents by srun \(Slurm job 7\)$'
}

@test "worldrun: a job the allocation cannot hold is one line naming its slots, exit 125" {
	run -125 --separate-stderr in_alloc worldrun -n 6 touch "$D/ran"
	assert_equal "$stderr" 'worldrun: the Slurm allocation (SLURM_TASKS_PER_NODE=2(x2),1): 6 ranks do not fit in the 5 slots of 3 hosts (--oversubscribe allows more)'
	assert [ ! -e "$D/ran" ]
	run -0 in_alloc worldrun -n 6 --oversubscribe --dry-run true
	assert_equal "$(hosts_of)" "n1 n1 n2 n2 m07 n1 "
}

@test "worldrun: an allocation's variables that are not Slurm's forms are one line naming them" {
	run -125 --separate-stderr in_alloc env SLURM_JOB_NODELIST='n[3-1]' worldrun true
	assert_regex "$stderr" '^worldrun: SLURM_JOB_NODELIST=n\[3-1\]: '
	run -125 --separate-stderr in_alloc env SLURM_TASKS_PER_NODE='2(x9)' worldrun true
	assert_regex "$stderr" '^worldrun: SLURM_TASKS_PER_NODE=2\(x9\): '
	run -125 --separate-stderr env SLURM_JOB_ID=7 worldrun true
	assert_equal "$stderr" 'worldrun: inside a Slurm allocation (SLURM_JOB_ID=7), but SLURM_JOB_NODELIST is not set'
}

@test "worldrun: --launcher picks how agents start, and refuses a choice that cannot hold" {
	run -125 --separate-stderr worldrun --launcher slurm true
	assert_equal "$stderr" 'worldrun: --launcher slurm: not inside a Slurm allocation (SLURM_JOB_ID is not set): start worldrun under salloc or sbatch'
	run -125 --separate-stderr worldrun --launcher local -H a,b true
	assert_equal "$stderr" 'worldrun: --launcher local runs every rank on this machine: it takes no --hosts or -H'
	run -125 --separate-stderr worldrun --launcher ssh true
	assert_equal "$stderr" 'worldrun: --launcher ssh: no hosts: give --hosts FILE or -H LIST, or start worldrun inside a Slurm allocation'
	run -125 --separate-stderr worldrun --launcher pbs true
	assert_equal "$stderr" 'worldrun: --launcher pbs: expected ssh, slurm or local (see worldrun --help)'
	# In an allocation: local keeps the ranks here; a host list goes over ssh.
	run -0 --separate-stderr in_alloc worldrun --launcher local -n 2 sh -c 'echo $WORLD_NNODES'
	assert_equal "$output" "$(printf '1\n1')"
	run -0 --separate-stderr in_alloc worldrun -launcher fork -n 1 true
	run -0 --separate-stderr in_alloc worldrun -H localhost:2 sh -c 'echo $WORLD_SIZE'
	assert_equal "$output" "$(printf '2\n2')"
	run -0 in_alloc worldrun --launcher ssh --dry-run true
	assert_line --index 0 --regexp '; agents by ssh$'
	assert_equal "$(hosts_of)" "n1 n1 n2 n2 m07 "
}

@test "worldrun: in an allocation, an srun that refuses the step is said as srun says it, then each node lost" {
	mkdir "$D/bin"
	printf '#!/bin/sh\necho "srun: error: Unable to create step for job 7: fake refusal" >&2\nexit 1\n' \
		>"$D/bin/srun"
	chmod +x "$D/bin/srun"
	run -125 --separate-stderr in_alloc env PATH="$D/bin:$PATH" worldrun -n 5 touch "$D/ran"
	echo "$stderr" | grep -qx 'worldrun: srun: error: Unable to create step for job 7: fake refusal'
	echo "$stderr" | grep -qx 'worldrun: host n1: srun exited with status 1 before its agent connected'
	echo "$stderr" | grep -qx 'worldrun: host m07: srun exited with status 1 before its agent connected'
	assert [ ! -e "$D/ran" ]
}
