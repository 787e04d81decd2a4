#!/usr/bin/env bats
load helpers

# No process of the job survives worldrun, however worldrun ends: the
# ranks are wr-grandchild, which forks a grandchild that ignores SIGTERM,
# SIGINT and SIGHUP and appends the grandchild's pid and its own to
# $DIR/pids. Rank 0 also writes the job id to $DIR/jobid, so that any
# process still carrying WORLD_JOBID=<id> in its environment is found.

setup() {
	DIR=$BATS_TEST_TMPDIR
	export DIR
	wpid=
	bpid=
}

teardown() {
	local pid

	# A worldrun that hung must not outlive the test: its guardian then
	# kills the ranks.
	for pid in $wpid $bpid; do
		if alive "$pid"; then
			kill -KILL "$pid" 2>/dev/null || true
		fi
	done
}

# start_job ARGS...: worldrun ARGS in the background, pid in wpid (bats'
# fd 3 closed, so nothing left behind can hold bats up).
start_job() {
	worldrun "$@" >"$DIR/out" 2>"$DIR/err" 3>&- &
	wpid=$!
}

# rank_cmd MODE [RANK MODE2]: the sh -c script of a rank that records the
# job id (rank 0) and execs wr-grandchild $DIR/pids MODE (MODE2 on RANK).
rank_cmd() {
	cat <<-EOF
	[ "\$WORLD_RANK" = 0 ] && echo "\$WORLD_JOBID" >"\$DIR/jobid.tmp" &&
		mv "\$DIR/jobid.tmp" "\$DIR/jobid"
	mode=$1
	[ "\$WORLD_RANK" = "${2:--1}" ] && mode=${3:-$1}
	exec wr-grandchild "\$DIR/pids" "\$mode"
	EOF
}

# stopped PID: the process is stopped (state T).
stopped() {
	[ "$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null)" = T ]
}

# all_stopped FILE: every pid listed in FILE is stopped.
all_stopped() {
	local pid

	while read -r pid; do
		stopped "$pid" || return 1
	done <"$1"
}


# job_started N: N ranks wrote their two pids, and the job id is known.
job_started() {
	pids_in "$DIR/pids" "$((2 * $1))" && [ -s "$DIR/jobid" ]
}

# everything_gone: every pid in $DIR/pids is gone, and no process has the
# job's id in its environment.
everything_gone() {
	all_gone "$DIR/pids" && no_job_procs "$(cat "$DIR/jobid")"
}

# check_setup N: the job runs as meant: N ranks, each with a live
# grandchild, and all of them carry the job id.
check_setup() {
	local id n

	id=$(cat "$DIR/jobid")
	[[ "$id" =~ ^[0-9a-f]{12}$ ]]
	n=$(job_procs "$id" | wc -l)
	[ "$n" -ge "$1" ]
}

@test "guardian: after SIGKILL of worldrun no rank or grandchild is left" {
	local g

	start_job -n 2 sh -c "$(rank_cmd sleep)"
	wait_until 30 job_started 2
	check_setup 4
	g=$(guardians_of "$wpid")
	[ -n "$g" ]
	kill -KILL "$wpid"
	finish_job 10
	[ "$wstatus" -eq 137 ]
	wait_until 10 everything_gone
	for pid in $g; do
		wait_until 10 gone "$pid"
	done
}

@test "guardian: after a rank crash (status 139) no rank or grandchild is left" {
	# Rank 1 crashes only once ranks 0 and 2 wrote their pids.
	start_job -n 3 sh -c '
		if [ "$WORLD_RANK" = 1 ]; then
			i=0
			while [ "$i" -lt 600 ] && [ "$(grep -c . "$DIR/pids" 2>/dev/null)" != 4 ]; do
				sleep 0.05
				i=$((i + 1))
			done
		fi
		'"$(rank_cmd sleep 1 crash)"
	wait_until 30 job_started 3
	finish_job 30
	[ "$wstatus" -eq 139 ]
	wait_until 10 everything_gone
	run cat "$DIR/err"
	assert_line --regexp '^worldrun: rank 1 \(pid [0-9]+ on .+\) killed by signal 11 \(SIGSEGV\) after [0-9.]+ s$'
	assert_line "worldrun: stopped 2 other ranks"
}

@test "guardian: after --timeout (status 124) no rank or grandchild is left" {
	start_job -n 2 --timeout 1 sh -c "$(rank_cmd sleep)"
	wait_until 30 job_started 2
	finish_job 30
	[ "$wstatus" -eq 124 ]
	wait_until 10 everything_gone
	run cat "$DIR/err"
	assert_line --partial "worldrun: timed out after 1 s"
}

@test "guardian: after Ctrl-C (SIGINT, status 130) no rank or grandchild is left" {
	start_job -n 2 sh -c "$(rank_cmd sleep)"
	wait_until 30 job_started 2
	check_setup 4
	kill -INT "$wpid"
	finish_job 30
	[ "$wstatus" -eq 130 ]
	wait_until 10 everything_gone
	run cat "$DIR/err"
	assert_line "worldrun: received SIGINT: stopping 2 ranks"
}

@test "guardian: after SIGTERM with a long grace, no grandchild is left" {
	# The ranks die by SIGTERM at once; the grandchildren ignore it, and
	# worldrun ends with its ranks, long before the 120 s grace.
	start_job -n 2 --kill-grace 120 sh -c "$(rank_cmd sleep)"
	wait_until 30 job_started 2
	kill -TERM "$wpid"
	finish_job 30
	[ "$wstatus" -eq 143 ]
	wait_until 10 everything_gone
}

@test "guardian: a grandchild left by ranks that exit 0 is gone when worldrun returns" {
	run -0 timeout -s KILL 60 worldrun -n 2 sh -c "$(rank_cmd exit)" 3>&-
	pids_in "$DIR/pids" 4
	# worldrun waits for its guardian; the SIGKILL it sends may take a
	# moment to land.
	wait_until 10 everything_gone
}

@test "guardian: a grandchild holding the rank's stdout is killed after the grace, status 0" {
	run -0 timeout -s KILL 60 worldrun -n 2 --kill-grace 0.5 sh -c '
		[ "$WORLD_RANK" = 0 ] && echo "$WORLD_JOBID" >"$DIR/jobid"
		exec wr-grandchild -k "$DIR/pids" exit' 3>&-
	refute_output --partial "outside its process group"
	pids_in "$DIR/pids" 4
	wait_until 10 everything_gone
}

@test "guardian: stopped ranks and grandchildren are killed too" {
	start_job -n 2 sh -c "$(rank_cmd sleep)"
	wait_until 30 job_started 2
	kill -TSTP "$wpid"
	wait_until 20 stopped "$wpid"
	wait_until 20 all_stopped "$DIR/pids"
	kill -KILL "$wpid"
	finish_job 10
	[ "$wstatus" -eq 137 ]
	wait_until 10 everything_gone
}

@test "guardian: SIGKILL of one worldrun leaves another job alone" {
	local r pid

	start_job -n 2 sh -c "$(rank_cmd sleep)"
	wait_until 30 job_started 2
	# Job B: ranks record a child's pid and their own, then wait for
	# $DIR/go and exit 0.
	mkdir "$DIR/b"
	worldrun -n 2 sh -c '
		sleep 300 </dev/null >/dev/null 2>&1 &
		echo "$! $$" >"$DIR/b/pids.$WORLD_RANK"
		i=0
		while [ "$i" -lt 1200 ] && [ ! -e "$DIR/go" ]; do
			sleep 0.05
			i=$((i + 1))
		done
		[ -e "$DIR/go" ] && echo "rank $WORLD_RANK done"' \
		>"$DIR/b/out" 2>"$DIR/b/err" 3>&- &
	bpid=$!
	wait_until 30 test -s "$DIR/b/pids.0"
	wait_until 30 test -s "$DIR/b/pids.1"
	kill -KILL "$wpid"
	finish_job 10
	wait_until 10 everything_gone
	# Job A is gone; job B's worldrun, ranks and their children are not.
	alive "$bpid"
	for r in 0 1; do
		for pid in $(cat "$DIR/b/pids.$r"); do
			alive "$pid"
		done
	done
	touch "$DIR/go"
	wait_until 60 gone "$bpid"
	local bstatus=0
	wait "$bpid" || bstatus=$?
	bpid=
	[ "$bstatus" -eq 0 ]
	run sort "$DIR/b/out"
	assert_output "$(printf 'rank 0 done\nrank 1 done')"
	# And job B's leftovers go with job B.
	for r in 0 1; do
		for pid in $(cat "$DIR/b/pids.$r"); do
			wait_until 10 gone "$pid"
		done
	done
}

@test "guardian: the guardian itself is gone when worldrun returns" {
	local g

	# The ranks leave a grandchild, then wait for $DIR/go and exit 0.
	start_job -n 2 sh -c '
		[ "$WORLD_RANK" = 0 ] && echo "$WORLD_JOBID" >"$DIR/jobid"
		wr-grandchild "$DIR/pids" exit
		i=0
		while [ "$i" -lt 1200 ] && [ ! -e "$DIR/go" ]; do
			sleep 0.05
			i=$((i + 1))
		done'
	wait_until 30 job_started 2
	# One guardian: a child of worldrun running the same binary.
	g=$(guardians_of "$wpid")
	[ -n "$g" ]
	[ "$(echo "$g" | wc -w)" -eq 1 ]
	alive "$g"
	touch "$DIR/go"
	finish_job 60
	[ "$wstatus" -eq 0 ]
	# worldrun reaped it before returning: not even a zombie is left (or
	# the pid is already some other live process).
	if [ -e "/proc/$g" ]; then
		alive "$g"
		[ "$(readlink "/proc/$g/exe")" != "$(readlink -f "$WORLDRUN")" ]
	fi
	wait_until 10 everything_gone
}

@test "guardian: after SIGKILL of worldrun the guardian exits too" {
	local g

	start_job -n 1 sh -c "$(rank_cmd sleep)"
	wait_until 30 job_started 1
	g=$(guardians_of "$wpid")
	[ -n "$g" ]
	kill -KILL "$wpid"
	finish_job 10
	wait_until 10 gone "$g"
	wait_until 10 everything_gone
}

# marked_procs MARK: live processes with WR_TEST_MARK=MARK in their
# environment.
marked_procs() {
	local f pid

	for f in $(grep -lasF "WR_TEST_MARK=$1" /proc/[0-9]*/environ); do
		pid=${f#/proc/}
		pid=${pid%/environ}
		alive "$pid" && echo "$pid"
	done
}

# no_marked_procs MARK: none is left.
no_marked_procs() {
	[ -z "$(marked_procs "$1")" ]
}

@test "guardian: SIGKILL of worldrun while it is still starting ranks leaves nothing" {
	# Every rank carries a mark, so that even a grandchild whose pid was
	# not written yet is found.
	start_job -n 100 -x "WR_TEST_MARK=$DIR" wr-grandchild "$DIR/pids" sleep
	wait_until 30 pids_in "$DIR/pids" 2
	kill -KILL "$wpid"
	finish_job 10
	[ "$wstatus" -eq 137 ]
	wait_until 20 all_gone "$DIR/pids"
	wait_until 20 no_marked_procs "$DIR"
}

# The job directory: worldrun's TMPDIR is $DIR/tmp, so that whatever the
# job leaves there is seen. $DIR/outside holds what links planted in the
# job directory point to.
job_tmp() {
	mkdir "$DIR/tmp" "$DIR/outside"
	echo keep >"$DIR/outside/file"
}

# no_job_dir: nothing is left in the job's TMPDIR but the user's runtime
# directory (see worldrun(1), FILES), and no job's entry in that.
no_job_dir() {
	[ -z "$(ls -A "$DIR/tmp" | grep -vx "worldrun-$(id -u)")" ] &&
		[ -z "$(ls -A "$DIR/tmp/worldrun-$(id -u)" 2>/dev/null)" ]
}

# job_socket RANK: the job directory holds RANK's peer socket.
job_socket() {
	local s

	for s in "$DIR"/tmp/worldrun-*/rank."$1"; do
		[ -S "$s" ] && return 0
	done
	return 1
}

# plant_links: links to $DIR/outside (its file, itself) in the job
# directory, and in a subdirectory of it.
plant_links() {
	local d

	d=$(echo "$DIR"/tmp/worldrun-????????????-*)
	[ -d "$d" ]
	ln -s "$DIR/outside/file" "$d/to-file"
	ln -s "$DIR/outside" "$d/to-dir"
	mkdir "$d/sub"
	ln -s "$DIR/outside" "$d/sub/to-dir"
}

# outside_intact: what the links pointed to is as it was.
outside_intact() {
	[ "$(cat "$DIR/outside/file")" = keep ]
	[ "$(ls -A "$DIR/outside")" = file ]
}

# leave MODE STATUS: 2 ranks of prog-leave MODE end the job with STATUS
# and leave nothing in its TMPDIR.
leave() {
	world_prog leave
	job_tmp
	# The ranks leave their world on purpose: no leak for a sanitizer.
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" TMPDIR=$DIR/tmp \
		run -"$2" timeout -s KILL 60 worldrun -n 2 "$PROG" "$1" 3>&-
	no_job_dir
}

@test "guardian: a libworld rank that exits 0 without world_stop leaves no job directory" {
	leave exit 0
}

@test "guardian: a libworld rank killed by SIGSEGV leaves no job directory" {
	leave segv 139
}

@test "guardian: a libworld rank that aborts leaves no job directory" {
	leave abort 134
}

@test "guardian: a libworld rank stopped by worldrun leaves no job directory, links in it are not followed" {
	# Rank 0 waits in libworld until worldrun stops it: rank 1 fails once
	# the links are planted.
	world_prog wait
	job_tmp
	TMPDIR=$DIR/tmp start_job -n 2 sh -c '
		[ "$WORLD_RANK" = 0 ] && exec "$PROG"
		i=0
		while [ "$i" -lt 600 ] && [ ! -e "$DIR/planted" ]; do
			sleep 0.05
			i=$((i + 1))
		done
		exit 3'
	wait_until 30 job_socket 0
	plant_links
	touch "$DIR/planted"
	finish_job 30
	[ "$wstatus" -eq 3 ]
	no_job_dir
	outside_intact
}

@test "guardian: after SIGKILL of worldrun no job directory is left, links in it are not followed" {
	world_prog wait
	job_tmp
	TMPDIR=$DIR/tmp start_job -n 2 "$PROG"
	wait_until 30 job_socket 0
	wait_until 30 job_socket 1
	plant_links
	kill -KILL "$wpid"
	finish_job 10
	[ "$wstatus" -eq 137 ]
	wait_until 10 no_job_dir
	outside_intact
}

@test "guardian: under a relative TMPDIR, ranks in another --wdir reach the registry, and SIGKILL of worldrun leaves no job directory" {
	world_prog wait
	job_tmp
	mkdir "$DIR/w"
	cd "$DIR"
	TMPDIR=tmp start_job -n 2 --wdir w "$PROG"
	wait_until 30 job_socket 0
	wait_until 30 job_socket 1
	kill -KILL "$wpid"
	finish_job 10
	[ "$wstatus" -eq 137 ]
	wait_until 10 no_job_dir
}

# shm_entries JOBID: how many /dev/shm names the job's prefix starts.
shm_entries() {
	find /dev/shm -maxdepth 1 -name "wr-$1*" | wc -l
}

@test "guardian: after SIGKILL of worldrun no /dev/shm entry of the job is left" {
	local id

	[ -d /dev/shm ] || skip "no /dev/shm here"
	# What libfabric's shm segments and libworld's doorbells are named.
	start_job -n 2 sh -c 'touch "/dev/shm/wr-${WORLD_JOBID}_r$WORLD_RANK:0:0" &&
		echo "$WORLD_JOBID" >"$DIR/jobid.$WORLD_RANK" && exec sleep 60'
	wait_until 30 test -s "$DIR/jobid.1"
	id=$(cat "$DIR/jobid.1")
	wait_until 10 output_is 2 shm_entries "$id"
	touch "/dev/shm/wr-x${id}-not-ours"
	kill -KILL "$wpid"
	finish_job 10
	wait_until 10 output_is 0 shm_entries "$id"
	run -0 test -e "/dev/shm/wr-x${id}-not-ours"
	rm -f "/dev/shm/wr-x${id}-not-ours"
}

@test "guardian: a job that ends well leaves no /dev/shm entry of its own either" {
	local id

	[ -d /dev/shm ] || skip "no /dev/shm here"
	run -0 worldrun -n 1 sh -c 'touch "/dev/shm/wr-${WORLD_JOBID}_bell_0" && echo "$WORLD_JOBID"'
	id=$output
	assert_equal "$(shm_entries "$id")" 0
}
