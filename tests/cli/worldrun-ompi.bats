#!/usr/bin/env bats
# Open MPI programs run unchanged under worldrun: each host's agent
# serves them PMIx (OpenPMIx's server library), beside PMI-1 for MPICH's.
# wr-ompi is wr-mpi (tests/helpers) built with Open MPI; under CI=true
# its absence fails. wr-pmix is a PMIx client of our own, for what MPI
# programs do not ask (fences of some ranks, the name service's refusals).
load helpers

setup() {
	if [ ! -x "$HELPERS/wr-ompi" ]; then
		[ "${CI:-}" != true ] || fail "CI installs libopenmpi-dev: wr-ompi must be built"
		skip "wr-ompi is not built (needs Open MPI: libopenmpi-dev)"
	fi
	# Open MPI keeps what it allocates until exit; that is not worldrun's leak.
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
	# Open MPI refuses to run as root unless told; CI runs as root.
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
}

# A failed test shows what its last run printed: Open MPI's failures seen
# once in a loaded CI run were bare statuses.
teardown() {
	if [ -z "${BATS_TEST_COMPLETED:-}" ]; then
		printf -- '-- status %s, output:\n%s\n-- stderr:\n%s\n' "${status:-}" "${output:-}" \
			"${stderr:-}" | head -c 6000 >&2
	fi
}

# ring_ok N: $output is N ranks' ring lines, token and sum right.
ring_ok() {
	local n=$1
	assert_equal "$(grep -c "^rank [0-9]* of $n: ring [0-9]* sum $n " <<<"$output")" "$n"
	assert_line --regexp "^rank 0 of $n: ring $((n * (n - 1) / 2)) sum $n split 0 of $(((n + 1) / 2)) on 0$"
}

@test "ompi: an Open MPI ring, all_reduce, barrier and split run on 1, 2, 4 and 8 ranks" {
	for n in 1 2 4 8; do
		run -0 --separate-stderr worldrun --timeout 120 -n "$n" wr-ompi ring
		ring_ok "$n"
	done
}

@test "ompi: Open MPI learns from PMIx which ranks share a node, and fences across hosts" {
	run -0 --separate-stderr worldrun --timeout 120 -H localhost:2,node-b:2,node-c:2 --rsh wr-rsh \
		wr-ompi ring
	ring_ok 6
	assert_line --regexp '^rank 3 of 6: .* on 2$'
	assert_line --regexp '^rank 5 of 6: .* on 4$'
	run -0 --separate-stderr worldrun --timeout 120 -H localhost:2,node-b:2,node-c:2 --map-by node \
		--rsh wr-rsh wr-ompi ring
	ring_ok 6
	assert_line --regexp '^rank 3 of 6: .* on 0$'
	assert_line --regexp '^rank 5 of 6: .* on 2$'
}

@test "ompi: MPI_Abort with 17 ends the job with 17 and a line naming the rank, on one host or several" {
	run -17 --separate-stderr worldrun --timeout 60 -n 4 wr-ompi abort 17
	assert_regex "$stderr" "worldrun: rank 1 \\(pid [0-9]+ on [^)]+\\) called abort with exit code 17"
	assert_regex "$stderr" "worldrun: stopped 3 other ranks"
	run -17 --separate-stderr worldrun --timeout 60 -H localhost:2,node-b:2 --rsh wr-rsh \
		wr-ompi abort 17
	assert_regex "$stderr" "worldrun: rank 1 \\(pid [0-9]+ on localhost\\) called abort with exit code 17"
}

@test "ompi: MPI_Abort with 0 or 256 is no success: status 1, and the line says so" {
	abort_codes_ok wr-ompi
}

@test "ompi: a rank killed mid-job stops the others, and Open MPI's shared memory goes with the job" {
	ls /dev/shm >"$BATS_TEST_TMPDIR/before"
	run -137 --separate-stderr worldrun --timeout 60 -n 4 wr-ompi die
	assert_regex "$stderr" "worldrun: rank 1 \\(pid [0-9]+ on [^)]+\\) killed by signal 9 \\(SIGKILL\\)"
	assert_regex "$stderr" "worldrun: stopped 3 other ranks"
	ls /dev/shm >"$BATS_TEST_TMPDIR/after"
	run -0 comm -13 "$BATS_TEST_TMPDIR/before" "$BATS_TEST_TMPDIR/after"
	refute_output --partial vader
}

@test "ompi: a rank that exits 0 without MPI_Finalize fails the job" {
	run -1 --separate-stderr worldrun --timeout 60 -n 3 wr-ompi exit
	assert_regex "$stderr" "worldrun: rank 1 \\(pid [0-9]+ on [^)]+\\) left PMI without finalize, then exited with status 0"
}

@test "ompi: two Open MPI jobs at once on one host keep apart" {
	worldrun --timeout 120 -n 4 wr-ompi ring >"$BATS_TEST_TMPDIR/a" 2>&1 &
	a=$!
	worldrun --timeout 120 -n 3 wr-ompi ring >"$BATS_TEST_TMPDIR/b" 2>&1 &
	b=$!
	wait "$a"
	wait "$b"
	run -0 cat "$BATS_TEST_TMPDIR/a"
	ring_ok 4
	run -0 cat "$BATS_TEST_TMPDIR/b"
	ring_ok 3
}

@test "ompi: another user who connects to the PMIx server's port and says nothing stops no rank" {
	[ "$(id -u)" = 0 ] || skip "needs root, to act as user nobody"
	d=$BATS_TEST_TMPDIR
	mkfifo "$d/go.0" "$d/go.1"
	# Each rank says where its PMIx server listens, then waits for the
	# stranger to be connected before MPI_Init.
	worldrun --timeout 60 -n 2 sh -c 'printenv PMIX_SERVER_URI41 >"$0/uri.$WORLD_RANK"
		read -r go <"$0/go.$WORLD_RANK"; exec wr-ompi ring' "$d" >"$d/out" 2>&1 &
	job=$!
	wait_until 30 test -s "$d/uri.0"
	port=$(sed 's/.*://' "$d/uri.0")
	setpriv --reuid=nobody --regid=nogroup --clear-groups bash -c \
		'exec 3<>"/dev/tcp/127.0.0.1/$0" && echo connected && read -r -t 60 -u 3 x; echo "closed $?"' \
		"$port" >"$d/stranger" 2>&1 &
	stranger=$!
	wait_until 30 grep -q connected "$d/stranger"
	timeout 30 sh -c 'echo go >"$0/go.0"; echo go >"$0/go.1"' "$d"
	wait "$job"
	wait "$stranger"
	run -0 cat "$d/out"
	ring_ok 2
	run -0 cat "$d/stranger"
	assert_line "closed 1"
}

@test "ompi: a process of the job that holds the PMIx server keeps worldrun from exiting for 5 s at most" {
	# It connects, says so and nothing else, and lives until worldrun's end.
	run -0 --separate-stderr timeout 60 worldrun -n 1 sh -c 'port=${PMIX_SERVER_URI41##*:}
		{ bash -c "exec 3<>/dev/tcp/127.0.0.1/$port && echo connected &&
			exec sleep 50 >/dev/null" 2>/dev/null & } | { read -r said; echo "$said"; }'
	assert_output connected
	assert_equal "$stderr" "worldrun: the PMIx server did not stop within 5 s; left to the end of this process"
}

# rank_pid JOB R: the pid of JOB's child whose WORLD_RANK is R.
rank_pid() {
	local p
	for p in $(pgrep -P "$1"); do
		if tr '\0' '\n' <"/proc/$p/environ" | grep -qx "WORLD_RANK=$2"; then
			echo "$p"
		fi
	done
}

# connect_left DIR [catch]: wr-pmix connect on 3 ranks, PMIx's verbose
# lines in DIR/err; once ranks 0 and 1 are in the connect, rank 2 leaves
# with 3, and so does the job (asserted).
connect_left() {
	local d=$1 job
	PMIX_MCA_ptl_base_verbose=2 PMIX_MCA_pmix_server_connect_verbose=2 \
		worldrun --timeout 60 -n 3 wr-pmix connect "${@:2}" >"$d/out" 2>"$d/err" &
	job=$!
	wait_until 30 eval '[ "$(grep -c "recvd CONNECT" "$d/err")" = 2 ]'
	# Rank 2 exec'd (before, its process has no WORLD_RANK yet).
	wait_until 30 eval '[ -n "$(rank_pid "$job" 2)" ]'
	kill -USR1 "$(rank_pid "$job" 2)"
	wait "$job" || echo "status $?" >"$d/status"
	run -0 cat "$d/status"
	assert_output "status 3"
}

@test "ompi: a stop's kills are no lost connections to PMIx: the ranks are deregistered first" {
	# OpenPMIx 4.2.2 completes a connect of one host's ranks once more
	# for each participant whose lost connection it finds after the one
	# that completed it, and reads the connect it freed: worldrun crashed
	# (139) when a stop's kills reached PMIx at once. Ranks 0 and 1
	# connect, rank 2 leaves (status 3), the stop ends 0 and 1: PMIx
	# (ptl verbose) sees rank 2's connection closed, and no other.
	d=$(mktemp -d)
	connect_left "$d"
	run -0 grep "closed connection" "$d/err"
	assert_output --regexp "^.* peer \[worldrun\.[0-9a-f.]+,2\] closed connection$"
	rm -rf "$d"
}

@test "ompi: ranks that catch the stop's SIGTERM keep their PMIx server, and finalize" {
	# As above, but ranks 0 and 1 catch SIGTERM, then call PMIx_Finalize:
	# PMIx sees their connections closed by them after rank 2's.
	d=$(mktemp -d)
	connect_left "$d" catch
	run -0 grep "closed connection" "$d/err"
	assert_line --index 0 --regexp "^.* peer \[worldrun\.[0-9a-f.]+,2\] closed connection$"
	assert_line --regexp "^.* peer \[worldrun\.[0-9a-f.]+,0\] closed connection$"
	assert_line --regexp "^.* peer \[worldrun\.[0-9a-f.]+,1\] closed connection$"
	rm -rf "$d"
}

zombie() {
	[ "$(cut -d' ' -f3 "/proc/$1/stat")" = Z ]
}

@test "ompi: ranks that die at once in a PMIx connect end the job with their signal, not a crash in PMIx" {
	# With worldrun stopped, rank 2 is killed, then 0 and 1 (both in the
	# connect): PMIx, woken, finds the three lost at once and completes
	# the connect three times. Stopping PMIx after that crashed worldrun
	# in 4 runs of 10; worldrun now leaves it to the process's end. The
	# connect PMIx freed is still read by its own thread: with
	# MALLOC_PERTURB_ (meson sets it) that crashes whatever its host does.
	d=$(mktemp -d)
	for i in 1 2 3 4; do
		rm -f "$d/status"
		MALLOC_PERTURB_=0 PMIX_MCA_pmix_server_connect_verbose=2 \
			worldrun --timeout 60 -n 3 wr-pmix connect >"$d/out" 2>"$d/err" &
		job=$!
		wait_until 30 eval '[ "$(grep -c "recvd CONNECT" "$d/err")" = 2 ]'
		# Every rank exec'd (a child between fork and exec has no
		# WORLD_RANK yet: rank_pid found no rank 2 once in CI).
		wait_until 30 eval '[ -n "$(rank_pid "$job" 0)" ] && [ -n "$(rank_pid "$job" 1)" ] &&
			[ -n "$(rank_pid "$job" 2)" ]'
		kill -STOP "$job"
		r0=$(rank_pid "$job" 0) r1=$(rank_pid "$job" 1) r2=$(rank_pid "$job" 2)
		kill -KILL "$r2"
		wait_until 30 zombie "$r2"
		kill -KILL "$r0" "$r1"
		wait_until 30 zombie "$r0"
		wait_until 30 zombie "$r1"
		kill -CONT "$job"
		wait "$job" || echo "status $?" >"$d/status"
		run -0 cat "$d/status"
		assert_output "status 137"
		run -0 grep -c "killed by signal 9 (SIGKILL)" "$d/err"
		assert_output 3
	done
	rm -rf "$d"
}

@test "ompi: the hang report names the ranks in a PMIx fence and the one they wait for" {
	run -124 --separate-stderr worldrun --timeout 8 --kill-grace 0.3 -H localhost:2,node-b:1 \
		--rsh wr-rsh wr-ompi late
	assert_regex "$stderr" "worldrun:   ranks 0-1 in PMIx fence \\(MPI_Init or MPI_Finalize\\) \\(since [0-9.]+ s\\), waiting for rank 2"
}

@test "ompi: the PMIx namespace is the job's secret, and another job's differs" {
	run -0 --separate-stderr worldrun -n 2 sh -c 'echo "$WORLD_JOBID $PMIX_NAMESPACE $PMIX_RANK"'
	assert_line --regexp '^([0-9a-f]{12}) worldrun\.\1\.[0-9a-f]{16} 0$'
	assert_line --regexp '^([0-9a-f]{12}) worldrun\.\1\.[0-9a-f]{16} 1$'
	first=$(sed -n 1p <<<"$output" | cut -d' ' -f2)
	run -0 --separate-stderr worldrun -n 1 sh -c 'echo "$PMIX_NAMESPACE"'
	refute_output "$first"
}

@test "ompi: Open MPI is told to take its place from PMIx, unless the user chose otherwise" {
	run -0 --separate-stderr worldrun -n 1 sh -c 'echo "$OMPI_MCA_ess $OMPI_MCA_schizo"'
	assert_output "pmi ompi"
	run -0 --separate-stderr env OMPI_MCA_ess=singleton worldrun -n 1 sh -c \
		'echo "$OMPI_MCA_ess ${OMPI_MCA_schizo-unset}"'
	assert_output "singleton unset"
}

@test "ompi: with --pmi none no rank gets PMIx, nor an inherited PMIx server's variables" {
	run -0 --separate-stderr env PMIX_NAMESPACE=outer PMIX_SERVER_URI4=x worldrun -n 1 --pmi none \
		sh -c 'env | grep -c "^PMIX_" || true'
	assert_output "0"
}

@test "ompi: MPI_Publish_name and MPI_Lookup_name work, on one host and across hosts" {
	run -0 --separate-stderr worldrun --timeout 60 -n 2 wr-ompi publish
	assert_line "rank 0: published"
	assert_line "rank 1: looked up the port rank 0 published"
	assert_line "rank 0: unpublished"
	assert_line "rank 1: no port any more"
	run -0 --separate-stderr worldrun --timeout 60 -H localhost:1,node-b:1 --rsh wr-rsh \
		wr-ompi publish
	assert_line "rank 1: looked up the port rank 0 published"
	assert_line "rank 1: no port any more"
}

@test "ompi: --pmi chooses the servers: fd or port for PMI-1, pmix for PMIx, both by default" {
	probe='echo "${PMI_FD-no}/${PMI_PORT-no} ${PMIX_RANK-no} ${OMPI_MCA_ess-no}"'
	run -0 --separate-stderr worldrun -n 1 sh -c "$probe"
	assert_output "3/no 0 pmi"
	run -0 --separate-stderr worldrun -n 1 --pmi fd sh -c "$probe"
	assert_output "3/no no no"
	run -0 --separate-stderr worldrun -n 1 --pmi pmix sh -c "$probe"
	assert_output "no/no 0 pmi"
	run -0 --separate-stderr worldrun -n 1 --pmi port,pmix sh -c "$probe"
	assert_output --regexp '^no/127\.0\.0\.1:[0-9]+ 0 pmi$'
	run -125 --separate-stderr worldrun -n 1 --pmi fd,port true
	assert_equal "$stderr" "worldrun: --pmi fd,port: expected fd or port, pmix, both (fd,pmix), or none (see worldrun --help)"
	# Without PMIx, Open MPI starts each rank alone, as it would with no
	# launcher, and worldrun says so once.
	run -0 --separate-stderr worldrun -n 2 --pmi fd wr-ompi ring
	assert_equal "$(grep -c '^rank 0 of 1: ' <<<"$output")" 2
	assert_regex "$stderr" "^worldrun: rank [01] linked libmpi\.so\.[0-9]+ but spoke to no PMI server: it most likely ran as a job of one rank \(see --pmi\)$"
	run -0 --separate-stderr worldrun -n 2 --pmi pmix wr-ompi ring
	ring_ok 2
}

@test "ompi: where ranks outnumber the CPUs, Open MPI is told it is oversubscribed, as mpirun tells it" {
	cpus=$(nproc)
	run -0 --separate-stderr worldrun -n "$((cpus + 1))" sh -c 'echo "${OMPI_MCA_mpi_oversubscribe-no}"'
	assert_equal "$(grep -c '^1$' <<<"$output")" "$((cpus + 1))"
	run -0 --separate-stderr worldrun -n "$cpus" sh -c 'echo "${OMPI_MCA_mpi_oversubscribe-no}"'
	assert_equal "$(grep -c '^no$' <<<"$output")" "$cpus"
}

@test "pmix: a fence of some ranks gathers their data across hosts, and the others go on" {
	run -0 --separate-stderr worldrun --timeout 60 -H localhost:2,node-b:2,node-c:1 --rsh wr-rsh \
		wr-pmix some
	assert_line "rank 0: got 2 from 2"
	assert_line "rank 2: got 4 from 4"
	assert_line "rank 4: got 0 from 0"
	assert_equal "$(grep -c ': fenced with all: SUCCESS$' <<<"$output")" 5
}

@test "pmix: a rank's data reaches other hosts by direct modex when no fence collected it" {
	run -0 --separate-stderr worldrun --timeout 60 -H localhost:1,node-b:2 --rsh wr-rsh \
		wr-pmix direct
	assert_line "rank 0: got 11 from 1"
	assert_line "rank 2: got 1 from 0"
	assert_line "rank 1: got 11 from 1"
	assert_equal "$(grep -c '^rank [0-2]: got [0-9]* from [01]$' <<<"$output")" 6
	# Rank 2 committed nothing: rank 0, on another host, hears so at once.
	assert_line "rank 0: no value from 2: NOT-FOUND"
	assert_equal "$(grep -c ': fenced with all: SUCCESS$' <<<"$output")" 3
}

@test "ompi: without a fence that collects, Open MPI gets remote ranks' data on demand" {
	run -0 --separate-stderr worldrun --timeout 120 -H localhost:2,node-b:2 --rsh wr-rsh \
		-x OMPI_MCA_pmix_base_collect_data=0 wr-ompi ring
	ring_ok 4
	# With the async modex, one rank per host: two ranks of one host
	# failed MPI_Init ("PML add procs failed: Not found") about once in 12
	# sanitized runs, never with one per host in 20, where every peer's
	# data comes by worldrun's direct modex. The race is between ranks of
	# one host, whose data PMIx's server keeps by itself.
	run -0 --separate-stderr worldrun --timeout 120 -H localhost:1,node-b:1,node-c:1 --rsh wr-rsh \
		-x OMPI_MCA_pmix_base_collect_data=0 -x OMPI_MCA_pmix_base_async_modex=1 wr-ompi ring
	ring_ok 3
}

@test "pmix: each rank's host has the host list's name, and this machine's own for localhost" {
	run -0 --separate-stderr worldrun --timeout 60 -H localhost:1,node-b:1,node-c:1 --rsh wr-rsh \
		wr-pmix hosts
	assert_line "rank 0: rank 1 is on node-b"
	assert_line "rank 2: rank 1 is on node-b"
	assert_line "rank 1: rank 2 is on node-c"
	assert_line "rank 1: rank 0 is on $(hostname)"
	assert_line "rank 0: rank 0 is on $(hostname)"
	# Two names of this machine: the second keeps its own (PMIx would
	# take two nodes of one name for one).
	run -0 --separate-stderr worldrun --timeout 60 -H localhost:1,127.0.0.2:1 --rsh wr-rsh \
		wr-pmix hosts
	assert_line "rank 0: rank 0 is on $(hostname)"
	assert_line "rank 0: rank 1 is on 127.0.0.2"
}

@test "pmix: every host serves a spawn's namespace: its size and node, and its ranks where they run" {
	run -0 --separate-stderr worldrun --timeout 60 -l -H node-b:1,localhost:1,node-c:1 \
		--rsh wr-rsh wr-pmix spawn
	assert_line "0: rank 0: spawn: SUCCESS"
	assert_line "0: rank 0: kids: size 2, nodes 1, here 2, on node-b"
	assert_line "3: kid 0: size 2, nodes 1, here 2, on node-b"
	assert_line "4: kid 1: size 2, nodes 1, here 2, on node-b"
	# The other hosts have none of them here.
	assert_line --regexp "^1: rank 1: kids: size 2, nodes 1, here none, on "
	assert_line --regexp "^2: rank 2: kids: size 2, nodes 1, here none, on "
}

@test "pmix: a spawn's namespace spans the nodes its ranks were placed on, on every host" {
	# node-c has one free slot and takes kid 0; kid 1 goes beside its asker.
	run -0 --separate-stderr worldrun --timeout 60 -l -H node-b:2,localhost:1,node-c:2 -n 4 \
		--rsh wr-rsh wr-pmix spawn
	assert_line "0: rank 0: kids: size 2, nodes 2, here 1, on node-c"
	assert_line "4: kid 0: size 2, nodes 2, here 1, on node-c"
	assert_line "5: kid 1: size 2, nodes 2, here 1, on node-c"
	assert_line --regexp "^1: rank 1: kids: size 2, nodes 2, here 1, on "
	assert_line --regexp "^2: rank 2: kids: size 2, nodes 2, here none, on "
	assert_line --regexp "^3: rank 3: kids: size 2, nodes 2, here 1, on "
}

@test "pmix: host names that begin with 60 letters, too long for PMIx's own map of names, go as a plain list" {
	local a b
	a=$(printf 'a%.0s' {1..60}).one
	b=$(printf 'b%.0s' {1..60}).two
	run -0 --separate-stderr worldrun --timeout 60 -H "localhost:1,$a:1,$b:1" --rsh wr-rsh \
		wr-pmix hosts
	assert_line "rank 0: rank 1 is on $a"
	assert_line "rank 1: rank 2 is on $b"
	assert_line "rank 2: rank 0 is on $(hostname)"
}

@test "pmix: the name service publishes a name once, keeps strings and bytes only, and unpublishes once" {
	run -0 --separate-stderr worldrun --timeout 60 -n 2 wr-pmix names
	assert_line "publish: SUCCESS"
	assert_line "publish again: DUPLICATE KEY"
	assert_line "publish an int: NOT-SUPPORTED"
	assert_line "lookup: port-a"
	assert_line "lookup of none: NOT-FOUND"
	assert_line "unpublish: SUCCESS"
	assert_line "unpublish again: NOT-FOUND"
}

@test "ompi: the line for a rank that ran alone comes from another host too" {
	run -0 --separate-stderr worldrun -H node-b:2 --rsh wr-rsh --pmi fd wr-ompi init
	assert_regex "$stderr" "^worldrun: rank [01] linked libmpi\\.so\\.[0-9]+ but spoke to no PMI server"
}

@test "ompi: MPI_Comm_spawn starts ranks beside their parents, numbered after the job's, and the job ends well" {
	local r=$BATS_TEST_TMPDIR/report.json
	run -0 --separate-stderr worldrun --timeout 120 -l --report "$r" -n 2 wr-ompi spawn 2
	assert_line "0: rank 0: spawned 2"
	assert_line "1: rank 1: spawned 2"
	assert_line "2: child 0 of 2, parent of 2"
	assert_line "3: child 1 of 2, parent of 2"
	run -0 python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
print(r["cause"], [(x["rank"], x["exit_code"]) for x in r["ranks"]])' "$r"
	assert_output "success [(0, 0), (1, 0), (2, 0), (3, 0)]"
}

@test "ompi: a spawned rank's output goes to --output-dir, and its failure is the job's" {
	local d=$BATS_TEST_TMPDIR/out
	run -3 --separate-stderr worldrun --timeout 120 --output-dir "$d" -n 1 wr-ompi spawn 2 3
	assert_regex "$stderr" "worldrun: rank [12] \\(pid [0-9]+ on [^)]+\\) exited with status 3 after"
	assert_equal "$(cat "$d/1/stdout")" "$(printf 'child 0 heard 1 parents\nchild 0 of 2, parent of 1')"
	assert_equal "$(cat "$d/2/stdout")" "$(printf 'child 1 heard 1 parents\nchild 1 of 2, parent of 1')"
}

@test "ompi: a spawn of a program that is not there ends the job with 127 and names the program" {
	run -127 --separate-stderr worldrun --timeout 60 -n 2 wr-ompi spawn-missing
	assert_regex "$stderr" "worldrun: rank 2: unable to execute wr-no-such-program: No such file or directory"
}

@test "ompi: a job of several hosts grows beside the asker, and every parent and child hear each other" {
	run -0 --separate-stderr worldrun --timeout 120 -l -H localhost:2,node-b:2,node-c:1 \
		--rsh wr-rsh wr-ompi spawn 3
	for r in 0 1 2 3 4; do
		assert_line "$r: rank $r: heard 3 children"
		assert_line "$r: rank $r: spawned 3"
	done
	for c in 0 1 2; do
		assert_line "$((c + 5)): child $c heard 5 parents"
	done
	assert_line "7: child 2 of 3, parent of 5"
	# No host failed to serve the children to its ranks.
	assert_equal "$stderr" ""
}

@test "ompi: a spawn fills the job's free slots from the asker's host on, and parents and children hear each other" {
	local r=$BATS_TEST_TMPDIR/report.json
	# One rank a host, room for two more on each: one each, by node.
	run -0 --separate-stderr worldrun --timeout 120 -l --report "$r" --map-by node \
		-H localhost:3,node-b:3,node-c:3 -n 3 --rsh wr-rsh wr-ompi spawn 3
	for r in 0 1 2; do
		assert_line "$r: rank $r: heard 3 children"
	done
	for c in 0 1 2; do
		assert_line "$((c + 3)): child $c heard 3 parents"
	done
	assert_equal "$stderr" ""
	run -0 python3 -c 'import json, sys
print([(x["rank"], x["host"]) for x in json.load(open(sys.argv[1]))["ranks"]][3:])' \
		"$BATS_TEST_TMPDIR/report.json"
	assert_output "[(3, 'localhost'), (4, 'node-b'), (5, 'node-c')]"
}

@test "ompi: a spawned rank placed on another host that fails, or whose program is not there, names that host" {
	run -7 --separate-stderr worldrun --timeout 120 -l --map-by node -H localhost:1,node-b:2 -n 2 \
		--rsh wr-rsh wr-ompi spawn 1 7
	assert_line "2: child 0 heard 2 parents"
	assert_regex "$stderr" "worldrun: rank 2 \\(pid [0-9]+ on node-b\\) exited with status 7 after"
	# Two missing: each host says so of the one placed there only.
	run -127 --separate-stderr worldrun --timeout 120 --map-by node -H localhost:2,node-b:2 -n 2 \
		--rsh wr-rsh wr-ompi spawn-missing 2
	assert_regex "$stderr" "worldrun: rank [23]: unable to execute wr-no-such-program: No such file or directory"
}

@test "ompi: ranks a remote host's rank spawned run on that host, and their failure names it" {
	run -0 --separate-stderr worldrun --timeout 120 -l -H node-b:2 --rsh wr-rsh wr-ompi spawn 2
	assert_line "2: child 0 of 2, parent of 2"
	assert_line "3: child 1 heard 2 parents"
	run -7 --separate-stderr worldrun --timeout 120 -l -H node-b:1,localhost:1 --rsh wr-rsh \
		wr-ompi spawn 1 7
	assert_line "0: rank 0: heard 1 children"
	assert_line "1: rank 1: heard 1 children"
	assert_regex "$stderr" "worldrun: rank 2 \\(pid [0-9]+ on node-b\\) exited with status 7 after"
}

@test "ompi: when worldrun is killed, the guardian kills spawned ranks and their children" {
	export WR_MPI_PIDS=$BATS_TEST_TMPDIR/pids
	worldrun -n 1 wr-ompi spawn 1 grandchild >"$BATS_TEST_TMPDIR/out" 2>&1 3>&- &
	local wpid=$!
	wait_until 60 pids_in "$WR_MPI_PIDS" 2
	kill -KILL "$wpid"
	wait_until 10 all_gone "$WR_MPI_PIDS"
}

@test "ompi: --timeout stops spawned ranks and their children with the rest" {
	export WR_MPI_PIDS=$BATS_TEST_TMPDIR/pids
	# worldrun must end by itself: SIGKILL from timeout(1) would be 137.
	run -124 --separate-stderr timeout -s KILL 60 worldrun --timeout 5 --kill-grace 0.5 -n 1 \
		wr-ompi spawn 1 grandchild
	assert_regex "$stderr" "worldrun: stopped 2 ranks"
	wait_until 10 all_gone "$WR_MPI_PIDS"
}

@test "ompi: spawned ranks run in the directory the spawn names and read no stdin, --stdin all or not" {
	local d=$BATS_TEST_TMPDIR/from
	mkdir "$d"
	ln -s "$HELPERS/wr-ompi" "$d/wr-spawned"
	run -0 --separate-stderr worldrun --timeout 60 -l -n 1 wr-ompi spawn-in "$d"
	assert_line "1: child 0 in $d"
	run -0 --separate-stderr worldrun --timeout 30 -l --stdin all -n 1 wr-ompi spawn 1 stdin <<<"hello"
	assert_line "1: child 0 read 0 bytes"
}

@test "ompi: a spawned rank's MPI_Abort ends the job with its code, and the line names that rank" {
	run -7 --separate-stderr worldrun --timeout 60 -n 2 wr-ompi spawn 1 abort
	assert_regex "$stderr" "worldrun: rank 2 \\(pid [0-9]+ on [^)]+\\) called abort with exit code 7"
}

@test "ompi: a slow reader pauses spawned ranks too: 96 MiB of their output stays under 64 MiB RSS" {
	local t=$BATS_TEST_TMPDIR
	[ -x /usr/bin/time ] || skip "needs GNU time (the time package)"
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=1"
	# The reader starts 3 s late: unpaused, the spawned rank's 96 MiB
	# would wait in worldrun's memory by then.
	/usr/bin/time -f %M -o "$t/rss" worldrun --timeout 120 -n 1 wr-ompi spawn 1 spew |
		{ sleep 3; wc -c >"$t/bytes"; }
	# And the lines of the greeting, the child's and the spawn's.
	assert_equal "$(cat "$t/bytes")" $((96 * 1024 * 1024 + 24 + 25 + 44))
	rss=$(tail -n 1 "$t/rss")
	echo "max RSS ${rss} KiB" >&2
	[ "$rss" -lt $((64 * 1024)) ]
}
