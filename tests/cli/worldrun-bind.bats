#!/usr/bin/env bats
# Binding ranks to CPUs: --bind-to, --cpus-per-rank, --report-bindings
# and other launchers' spellings of them. hwloc reads the topology; most
# tests give it a made-up one (HWLOC_SYNTHETIC) of 2 CPUs, so that what
# each rank gets does not depend on this machine's shape, and check what
# the kernel says the rank may run on.
load helpers

setup() {
	if (($(nproc) < 2)); then
		skip "needs 2 CPUs"
	fi
	# Each rank's line: its rank and the CPUs it may run on.
	CPUS='awk -v r="$WORLD_RANK" '\''/^Cpus_allowed_list:/ { print r, $2 }'\'' /proc/self/status'
}

@test "worldrun --bind-to core: each rank runs on a core of its own" {
	run -0 env HWLOC_SYNTHETIC="pack:1 core:2 pu:1" worldrun -n 2 --bind-to core sh -c "$CPUS"
	assert_line '0 0'
	assert_line '1 1'
}

@test "worldrun --report-bindings: a line per rank says where it runs" {
	run -0 --separate-stderr env HWLOC_SYNTHETIC="pack:1 core:2 pu:1" \
		worldrun -n 2 --bind-to core --report-bindings true
	assert_equal "${#stderr_lines[@]}" 2
	assert_regex "$stderr" "worldrun: rank 0 \\(pid [0-9]+ on $(hostname)\\) bound to core 0 \\(cpu 0\\)"
	assert_regex "$stderr" "worldrun: rank 1 \\(pid [0-9]+ on $(hostname)\\) bound to core 1 \\(cpu 1\\)"
}

@test "worldrun: without --bind-to a rank runs on every CPU, and the report says it is not bound" {
	run -0 env HWLOC_SYNTHETIC="pack:1 core:2 pu:1" worldrun -n 1 --report-bindings sh -c "$CPUS"
	assert_line '0 0-1'
	assert_line --regexp '^worldrun: rank 0 \(pid [0-9]+ on .*\) not bound \(cpus 0-1\)$'
}

@test "worldrun --cpus-per-rank 2: a rank gets two cores, bound without --bind-to" {
	run -0 env HWLOC_SYNTHETIC="pack:1 core:2 pu:1" worldrun -n 1 --cpus-per-rank 2 \
		--report-bindings sh -c "$CPUS"
	assert_line '0 0-1'
	assert_line --regexp ' bound to cores 0-1 \(cpus 0-1\)$'
}

@test "worldrun --bind-to core: more ranks than cores wrap around and share, and the report says so" {
	run -0 env HWLOC_SYNTHETIC="pack:1 core:2 pu:1" worldrun -n 3 --bind-to core \
		--report-bindings sh -c "$CPUS"
	assert_line '2 0'
	assert_line --regexp '^worldrun: rank 2 \(pid [0-9]+ on .*\) bound to core 0 \(cpu 0\), shared: more ranks than cores$'
}

@test "worldrun --bind-to hwthread: each rank gets a hardware thread of a core" {
	run -0 env HWLOC_SYNTHETIC="pack:1 core:1 pu:2" worldrun -n 2 --bind-to hwthread sh -c "$CPUS"
	assert_line '0 0'
	assert_line '1 1'
}

@test "worldrun --bind-to package: each rank gets the whole package that holds its core" {
	run -0 env HWLOC_SYNTHETIC="pack:2 core:1 pu:1" worldrun -n 2 --bind-to package sh -c "$CPUS"
	assert_line '0 0'
	assert_line '1 1'
	run -0 env HWLOC_SYNTHETIC="pack:1 core:2 pu:1" worldrun -n 2 -bind-to socket sh -c "$CPUS"
	assert_line '0 0-1'
	assert_line '1 0-1'
}

@test "worldrun --bind-to l3cache and numa: a rank gets its cache's or its NUMA node's CPUs" {
	run -0 --separate-stderr env HWLOC_SYNTHETIC="pack:1 l3:2 core:1 pu:1" \
		worldrun -n 2 --bind-to l3cache --report-bindings sh -c "$CPUS"
	assert_line '0 0'
	assert_line '1 1'
	assert_regex "$stderr" 'rank 1 \(pid [0-9]+ on .*\) bound to l3cache 1 \(cpu 1\)'
	run -0 --separate-stderr env HWLOC_SYNTHETIC="pack:1 numa:1 core:2 pu:1" \
		worldrun -n 2 --bind-to numa --report-bindings sh -c "$CPUS"
	assert_line '1 0-1'
	assert_regex "$stderr" 'rank 1 \(pid [0-9]+ on .*\) bound to numa node 0 \(cpus 0-1\)'
}

@test "worldrun --bind-to: a level the host does not have is 125, the host named, nothing run" {
	run -125 --separate-stderr env HWLOC_SYNTHETIC="pack:1 core:2 pu:1" \
		worldrun -n 2 --bind-to l3cache sh -c 'echo ran'
	assert_equal "$output" ''
	assert_equal "$stderr" "worldrun: host $(hostname): --bind-to l3cache: this host's topology has no l3cache"
}

@test "worldrun --bind-to core: ranks stay within the CPUs worldrun may use (taskset)" {
	run -0 taskset -c 1 worldrun -n 2 --bind-to core sh -c "$CPUS"
	assert_line '0 1'
	assert_line '1 1'
}

@test "worldrun: srun's -c and --cpus-per-task, Open MPI's -bind-to and -report-bindings work" {
	run -0 --separate-stderr env HWLOC_SYNTHETIC="pack:1 core:2 pu:1" worldrun -n 1 -c 2 sh -c "$CPUS"
	assert_line '0 0-1'
	run -0 --separate-stderr env HWLOC_SYNTHETIC="pack:1 core:2 pu:1" \
		worldrun -n 1 --cpus-per-task=2 sh -c "$CPUS"
	assert_line '0 0-1'
	run -0 --separate-stderr env HWLOC_SYNTHETIC="pack:1 core:2 pu:1" \
		worldrun -n 2 -bind-to core -report-bindings sh -c "$CPUS"
	assert_line '1 1'
	assert_regex "$stderr" 'rank 1 \(pid [0-9]+ on .*\) bound to core 1 \(cpu 1\)'
}

@test "worldrun --report-bindings: each line says what taskset -p sees of that rank" {
	local pid cpus
	run -0 --separate-stderr worldrun -n 2 --bind-to core --report-bindings \
		sh -c 'echo "$$ $(taskset -cp $$ | sed "s/.*: //")"'
	assert_equal "${#stderr_lines[@]}" 2
	for line in "${stderr_lines[@]}"; do
		pid=$(sed -n 's/.*(pid \([0-9]*\) on .*/\1/p' <<<"$line")
		cpus=$(sed -n 's/.*(cpus* \([0-9,-]*\)).*/\1/p' <<<"$line")
		assert_line "$pid $cpus"
	done
}

@test "worldrun: a bad --bind-to or --cpus-per-rank is a usage error, 125" {
	run -125 --separate-stderr worldrun --bind-to cache true
	assert_equal "$stderr" 'worldrun: --bind-to cache: expected none, hwthread, core, l3cache, numa or package (see worldrun --help)'
	run -125 --separate-stderr worldrun --cpus-per-rank 0 true
	assert_regex "$stderr" '^worldrun: --cpus-per-rank 0: '
	run -125 --separate-stderr worldrun --cpus-per-rank 4097 true
	assert_regex "$stderr" '^worldrun: --cpus-per-rank 4097: not a CPU count \(1 to 4096\)'
}
