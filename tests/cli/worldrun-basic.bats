#!/usr/bin/env bats
load helpers

# usage_error ARGS...: worldrun ARGS... is a usage error: status 125,
# nothing on stdout, exactly one "worldrun: ..." line on stderr.
usage_error() {
	run --separate-stderr -125 worldrun "$@"
	assert_equal "$output" ""
	assert_equal "${#stderr_lines[@]}" 1
	assert_regex "${stderr_lines[0]}" '^worldrun: .+'
}

# probe_value KEY: the value of KEY=... in $output (wr-probe's lines).
probe_value() {
	echo "$output" | sed -n "s/^$1=//p"
}

@test "worldrun: starts N ranks, each with its own WORLD_RANK" {
	run -0 worldrun -n 4 wr-env WORLD_RANK
	assert_equal "$(echo "$output" | sort)" "$(printf 'WORLD_RANK=%s\n' 0 1 2 3)"
}

@test "worldrun: starts each of 8 ranks exactly once" {
	run -0 worldrun -n 8 wr-env WORLD_RANK WORLD_SIZE
	assert_equal "$(echo "$output" | grep WORLD_RANK | sort -t= -k2 -n)" \
		"$(printf 'WORLD_RANK=%s\n' 0 1 2 3 4 5 6 7)"
	assert_equal "$(echo "$output" | grep -c '^WORLD_SIZE=8$')" 8
}

@test "worldrun: starts one rank without -n" {
	run -0 worldrun wr-env WORLD_RANK WORLD_SIZE
	assert_equal "$output" "$(printf 'WORLD_RANK=0\nWORLD_SIZE=1')"
}

@test "worldrun: accepts mpirun's -np N spelling" {
	run -0 worldrun -np 4 wr-env WORLD_RANK
	assert_equal "$(echo "$output" | sort)" "$(printf 'WORLD_RANK=%s\n' 0 1 2 3)"
}

@test "worldrun: accepts --np=N" {
	run -0 worldrun --np=4 wr-env WORLD_RANK
	assert_equal "$(echo "$output" | sort)" "$(printf 'WORLD_RANK=%s\n' 0 1 2 3)"
}

@test "worldrun: accepts --np N" {
	run -0 worldrun --np 3 wr-env WORLD_RANK
	assert_equal "$(echo "$output" | sort)" "$(printf 'WORLD_RANK=%s\n' 0 1 2)"
}

@test "worldrun: -n 0 is a usage error (125, one line)" {
	usage_error -n 0 wr-exit 0
}

@test "worldrun: -n abc is a usage error (125, one line)" {
	usage_error -n abc wr-exit 0
}

@test "worldrun: -n -1 is a usage error (125, one line)" {
	usage_error -n -1 wr-exit 0
}

@test "worldrun: no program is a usage error (125, one line)" {
	usage_error -n 2
}

@test "worldrun: no arguments at all is a usage error (125, one line)" {
	usage_error
}

@test "worldrun: an unknown option is a usage error (125, one line)" {
	usage_error --no-such-option wr-exit 0
	assert_regex "$stderr" 'no-such-option'
}

@test "worldrun: an option missing its value is a usage error (125, one line)" {
	usage_error -n
	usage_error --timeout
	usage_error -x
}

@test "worldrun: --wdir of a missing directory is a usage error (125, one line)" {
	usage_error --wdir "$BATS_TEST_TMPDIR/missing" wr-exit 0
	assert_regex "$stderr" 'missing'
}

@test "worldrun: --wdir of a regular file is a usage error (125, one line)" {
	touch "$BATS_TEST_TMPDIR/file"
	usage_error --wdir "$BATS_TEST_TMPDIR/file" wr-exit 0
}

@test "worldrun: --stdin of a rank that does not exist is a usage error" {
	usage_error --stdin 5 -n 2 wr-exit 0
}

@test "worldrun: --timeout 0 is a usage error (125, one line)" {
	usage_error --timeout 0 wr-exit 0
}

@test "worldrun: --kill-grace abc is a usage error (125, one line)" {
	usage_error --kill-grace abc wr-exit 0
}

@test "worldrun: a usage error starts nothing" {
	usage_error -n 0 sh -c "touch '$BATS_TEST_TMPDIR/ran'"
	usage_error --timeout 0 sh -c "touch '$BATS_TEST_TMPDIR/ran'"
	[ ! -e "$BATS_TEST_TMPDIR/ran" ]
}

@test "worldrun: --help prints the usage on stdout and exits 0" {
	run --separate-stderr -0 worldrun --help
	assert_regex "${lines[0]}" '^usage: worldrun '
	assert_output --partial '--np'
	assert_output --partial '--timeout'
	assert_equal "$stderr" ""
	run -0 worldrun -h
	assert_regex "${lines[0]}" '^usage: worldrun '
}

@test "worldrun: --version prints the version and exits 0" {
	run --separate-stderr -0 worldrun --version
	assert_regex "$output" '^worldrun [0-9]+\.[0-9]+\.[0-9]+'
	assert_equal "${#lines[@]}" 1
	run -0 worldrun -V
	assert_regex "$output" '^worldrun [0-9]+\.[0-9]+\.[0-9]+'
}

@test "worldrun: --dry-run prints one line per rank and starts nothing" {
	local marker="$BATS_TEST_TMPDIR/ran"

	run --separate-stderr -0 worldrun --dry-run -n 3 --wdir "$BATS_TEST_TMPDIR" \
		sh -c "touch '$marker'"
	assert_regex "${lines[0]}" '^worldrun: dry run of job [0-9a-f]{12}: 3 ranks$'
	assert_equal "${#lines[@]}" 4
	for r in 0 1 2; do
		assert_regex "${lines[r + 1]}" \
			"^rank $r host [^ ]+ wdir $BATS_TEST_TMPDIR program /[^ ]*/sh -c 'touch "
	done
	[ ! -e "$marker" ]
}

@test "worldrun: --dry-run resolves the program to a full path" {
	run -0 worldrun --dry-run wr-exit 3
	assert_line "rank 0 host $(hostname) wdir . program $HELPERS/wr-exit 3"
}

@test "worldrun: -v narrates the launch and the shutdown on stderr" {
	run --separate-stderr -0 worldrun -v -n 2 wr-exit 0
	assert_equal "$output" ""
	assert_regex "$stderr" 'worldrun: .*starting'
	assert_regex "$stderr" 'worldrun: .*started'
	assert_regex "$stderr" 'worldrun: .*finished'
}

@test "worldrun -v: the job ends with one line for all its ranks, none for each" {
	run --separate-stderr -0 worldrun -v -n 3 wr-exit 0
	assert_regex "$stderr" $'\nworldrun: all 3 ranks finished after [0-9.]+ s on 1 host: 3 ok; slowest rank [0-2] \\([0-9.]+ s\\); largest peak memory rank [0-2] \\([0-9.]+ MiB\\)$'
	refute_regex "$stderr" 'exited with status 0'
}

@test "worldrun -v: the summary names the slowest rank" {
	run -0 worldrun -v -n 3 sh -c 'if [ "$WORLD_RANK" = 1 ]; then sleep 2; fi'
	assert_line --regexp '; slowest rank 1 \(([2-9]|[1-9][0-9]+)\.[0-9]+ s\);'
}

@test "worldrun -v: the summary names the rank with the largest peak memory" {
	run -0 worldrun -v -n 3 sh -c 'if [ "$WORLD_RANK" = 2 ]; then exec python3 -c "x = bytearray(96 << 20)"; fi'
	assert_line --regexp '; largest peak memory rank 2 \((9[6-9]|[1-9][0-9][0-9])\.[0-9] MiB\)$'
}

@test "worldrun -v: the summary counts the failed rank and the ranks worldrun stopped" {
	run -3 worldrun -v -n 3 sh -c 'if [ "$WORLD_RANK" = 1 ]; then exit 3; fi; exec sleep 30'
	assert_line --regexp '^worldrun: all 3 ranks finished after [0-9.]+ s on 1 host: 0 ok, 1 failed, 2 stopped; '
}

@test "worldrun -vv: each rank's end has its line as well" {
	run --separate-stderr -0 worldrun -vv -n 2 wr-exit 0
	assert_regex "$stderr" 'worldrun: rank 0 \(pid [0-9]+\) exited with status 0 after [0-9.]+ s'
	assert_regex "$stderr" 'worldrun: rank 1 \(pid [0-9]+\) exited with status 0 after [0-9.]+ s'
	assert_regex "$stderr" 'worldrun: all 2 ranks finished after '
}

@test "worldrun: without -v a successful job prints nothing of its own" {
	run --separate-stderr -0 worldrun -n 2 wr-exit 0
	assert_equal "$output" ""
	assert_equal "$stderr" ""
}

@test "worldrun: runs as root without complaint" {
	if [ "$(id -u)" != 0 ]; then
		skip "not running as root"
	fi
	run --separate-stderr -0 worldrun -n 2 wr-env WORLD_RANK
	assert_equal "$stderr" ""
	assert_equal "$(echo "$output" | sort)" "$(printf 'WORLD_RANK=%s\n' 0 1)"
}

# The many ranks of these are programs of the system, not helpers built
# here: under the sanitizers a helper's own start and leak check would
# cost the minutes, and test nothing of worldrun.
@test "worldrun: runs 1024 ranks" {
	run -0 timeout 600 worldrun -n 1024 true
	assert_equal "$output" ""
}

@test "worldrun: 1024 ranks each start once" {
	run -0 timeout 600 worldrun -n 1024 printenv WORLD_RANK
	assert_equal "$(echo "$output" | sort -u | wc -l)" 1024
	assert_equal "${#lines[@]}" 1024
}

@test "worldrun: 256 ranks that exit at once never hang" {
	for i in 1 2 3 4 5 6 7 8 9 10; do
		run -0 timeout 120 worldrun -n 256 true
	done
}

@test "worldrun: works with stdin, stdout and stderr closed" {
	run -3 bash -c 'worldrun -n 2 wr-exit 3 <&- >&- 2>&-'
	run -0 bash -c 'worldrun -n 2 wr-exit 0 <&- >&- 2>&-'
	run -139 bash -c 'worldrun wr-kill 11 <&- >&- 2>&-'
	# worldrun holds /dev/null there, so that nothing it opens later (its
	# job directory's files, sockets) becomes fd 0, 1 or 2 and gets what
	# is meant for them.
	run -0 bash -c 'worldrun sh -c "readlink /proc/\$PPID/fd/0 /proc/\$PPID/fd/1 \
		/proc/\$PPID/fd/2 >\"\$0\"" "$0" <&- >&- 2>&-' "$BATS_TEST_TMPDIR/fds"
	run -0 cat "$BATS_TEST_TMPDIR/fds"
	assert_output "$(printf '/dev/null\n/dev/null\n/dev/null')"
}

@test "worldrun: with its fds 0-2 closed, ranks still get fds 0-2, and PMI's 3" {
	local out="$BATS_TEST_TMPDIR/out"

	run -0 bash -c "worldrun --output-dir '$out' wr-probe <&- >&- 2>&-"
	grep -qx 'fds=0,1,2,3' "$out/0/stdout"
}

@test "worldrun: each rank is in its own session and process group" {
	run -0 worldrun -n 3 --output-dir "$BATS_TEST_TMPDIR/out" wr-probe
	local pids=""
	for r in 0 1 2; do
		output=$(cat "$BATS_TEST_TMPDIR/out/$r/stdout")
		local pid
		pid=$(probe_value pid)
		assert_equal "$(probe_value pgid)" "$pid"
		assert_equal "$(probe_value sid)" "$pid"
		pids="$pids $pid"
	done
	# three different sessions
	assert_equal "$(echo $pids | tr ' ' '\n' | sort -u | wc -l)" 3
}

@test "worldrun: ranks start with an empty signal mask and default dispositions" {
	run -0 worldrun -n 2 wr-probe
	assert_equal "$(echo "$output" | grep -c '^blocked=$')" 2
	assert_equal "$(echo "$output" | grep -c '^ignored=$')" 2
}

@test "worldrun: ranks get default dispositions even if worldrun's parent ignored signals" {
	# The probe itself sees them ignored under the same trap, so the test
	# can tell the difference.
	run -0 bash -c "trap '' USR1 HUP INT; wr-probe"
	assert_line --regexp '^ignored=.*10'
	run -0 bash -c "trap '' USR1 HUP INT; worldrun -n 2 wr-probe"
	assert_equal "$(echo "$output" | grep -c '^ignored=$')" 2
}

@test "worldrun: ranks get an empty signal mask even if worldrun's was not" {
	if ! command -v python3 >/dev/null; then
		skip "python3 is not installed"
	fi
	local block='
import os, signal, sys
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR2, signal.SIGHUP})
os.execvp(sys.argv[1], sys.argv[1:])'

	# The probe itself sees the mask, so the test can tell the difference.
	run -0 python3 -c "$block" wr-probe
	assert_line 'blocked=1,12'
	run -0 python3 -c "$block" worldrun -n 2 wr-probe
	assert_equal "$(echo "$output" | grep -c '^blocked=$')" 2
}

@test "worldrun: ranks only have fds 0, 1, 2 and PMI_FD open, even when worldrun has more" {
	exec 7</dev/null 8>"$BATS_TEST_TMPDIR/extra"
	run -0 worldrun -n 2 sh -c 'echo "PMI_FD=$PMI_FD"; exec wr-probe'
	exec 7<&- 8>&-
	assert_equal "$(echo "$output" | grep -c '^fds=0,1,2,3$')" 2
	assert_equal "$(echo "$output" | grep -c '^PMI_FD=3$')" 2
}

@test "worldrun: with --no-pmi, ranks have fds 0, 1 and 2 only, and no PMI_*" {
	run -0 env PMI_FD=9 PMI_PORT=x:1 worldrun --no-pmi -n 2 sh -c 'env | grep -c "^PMI_"; exec wr-probe'
	assert_equal "$(echo "$output" | grep -c '^fds=0,1,2$')" 2
	assert_equal "$(echo "$output" | grep -cx '0')" 2
}

# Past POOL_MIN_RANKS ranks start on several threads at once, each
# through a set of borrowed fd slots: no rank may get another's streams.
@test "worldrun: 64 ranks started in parallel each get their own streams and only fds 0-3" {
	run -0 worldrun -n 64 -l sh -c \
		'echo "out=$WORLD_RANK"; echo "err=$WORLD_RANK" >&2; exec wr-probe'
	assert_equal "$(echo "$output" | grep -c ': fds=0,1,2,3$')" 64
	# Every rank's two lines, each under its own label (one comparison:
	# 128 assert_line calls take seconds).
	assert_equal "$(grep -E '^[0-9]+: (out|err)=' <<<"$output" | sort)" \
		"$(for r in $(seq 0 63); do echo "$r: out=$r"; echo "$r: err=$r"; done | sort)"
}

@test "worldrun: a rank does not inherit bats' fd 3" {
	run -0 bash -c 'ls /proc/self/fd/3 >/dev/null && worldrun --no-pmi wr-probe' 3</dev/null
	assert_line 'fds=0,1,2'
}

@test "worldrun: a rank's open-file soft limit is worldrun's parent's" {
	run -0 worldrun wr-probe
	assert_line "nofile=$(ulimit -Sn)"
	run -0 bash -c 'ulimit -Sn 200 && worldrun -n 2 wr-probe'
	assert_equal "$(echo "$output" | grep -c '^nofile=200$')" 2
}

@test "worldrun: a rank keeps the parent's open-file soft limit when worldrun raises its own" {
	if [ "$(ulimit -Hn)" != unlimited ] && [ "$(ulimit -Hn)" -lt 2048 ]; then
		skip "hard open-file limit below 2048"
	fi
	# 300 ranks need more than 256 fds in worldrun, so it must raise its
	# soft limit; the ranks must still see 256.
	run -0 bash -c 'ulimit -Sn 256 && worldrun -n 300 wr-probe'
	assert_equal "$(echo "$output" | grep -c '^nofile=256$')" 300
}

@test "worldrun: --wdir sets the ranks' working directory" {
	mkdir "$BATS_TEST_TMPDIR/work"
	run -0 worldrun -n 2 --wdir "$BATS_TEST_TMPDIR/work" wr-probe
	assert_equal "$(echo "$output" | grep -c "^cwd=$BATS_TEST_TMPDIR/work\$")" 2
}

@test "worldrun: without --wdir ranks run in worldrun's directory" {
	cd "$BATS_TEST_TMPDIR"
	run -0 worldrun wr-probe
	assert_line "cwd=$BATS_TEST_TMPDIR"
}

@test "worldrun: a relative --wdir is relative to worldrun's directory" {
	mkdir -p "$BATS_TEST_TMPDIR/a/b"
	cd "$BATS_TEST_TMPDIR/a"
	run -0 worldrun --wdir b wr-probe
	assert_line "cwd=$BATS_TEST_TMPDIR/a/b"
}

@test "worldrun: the program is found through a relative PATH entry after --wdir" {
	mkdir -p "$BATS_TEST_TMPDIR/job/bin" "$BATS_TEST_TMPDIR/elsewhere"
	printf '#!/bin/sh\necho "job-tool in $PWD"\n' >"$BATS_TEST_TMPDIR/job/bin/job-tool"
	chmod +x "$BATS_TEST_TMPDIR/job/bin/job-tool"
	cd "$BATS_TEST_TMPDIR/elsewhere"
	run -0 env PATH="bin:$PATH" worldrun -n 2 --wdir "$BATS_TEST_TMPDIR/job" job-tool
	assert_equal "$output" "$(printf 'job-tool in %s\n' "$BATS_TEST_TMPDIR/job" "$BATS_TEST_TMPDIR/job")"
	# Without --wdir the same PATH does not find it from here.
	run -127 env PATH="bin:$PATH" worldrun job-tool
}

@test "worldrun: a relative program path is taken relative to --wdir" {
	mkdir -p "$BATS_TEST_TMPDIR/job" "$BATS_TEST_TMPDIR/elsewhere"
	printf '#!/bin/sh\necho "local-tool ran"\n' >"$BATS_TEST_TMPDIR/job/local-tool"
	chmod +x "$BATS_TEST_TMPDIR/job/local-tool"
	cd "$BATS_TEST_TMPDIR/elsewhere"
	run -0 worldrun --wdir ../job ./local-tool
	assert_output "local-tool ran"
}
