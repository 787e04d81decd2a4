#!/usr/bin/env bats
# worldctl's commands one at a time: what each prints, every exit status,
# and the messages. Jobs run under worldrun --timeout, so nothing hangs;
# the scripts print their statuses, so worldrun's own status stays apart.
load helpers

teardown() {
	show_failure
}

# job N SCRIPT: run SCRIPT with sh as each rank of an N-rank job.
job() {
	worldrun --timeout 120 -n "$1" sh -c "$2"
}

# usage_error ARGS...: worldctl ARGS... exits 2 with one line on stderr
# and nothing on stdout, inside a job or not.
usage_error() {
	run -2 --separate-stderr env -u WORLD_REGISTRY worldctl "$@"
	assert_equal "$output" ""
	assert_equal "${#stderr_lines[@]}" 1
	assert_regex "${stderr_lines[0]}" '^worldctl: .+ \(see worldctl --help\)$'
}

@test "worldctl: rank and size print WORLD_RANK and WORLD_SIZE" {
	run -0 job 3 'echo "$(worldctl rank) of $(worldctl size)"'
	assert_equal "$(echo "$output" | sort)" "$(printf '%s of 3\n' 0 1 2)"
}

@test "worldctl: exits 125 outside a job, saying WORLD_REGISTRY is not set" {
	local cmd

	for cmd in rank size ranks 'kv get k' 'kv set k v' barrier; do
		# shellcheck disable=SC2086
		run -125 --separate-stderr env -u WORLD_REGISTRY worldctl $cmd
		assert_equal "$output" ""
		assert_equal "$stderr" "worldctl: not inside a job: WORLD_REGISTRY is not set (run worldctl in a rank of worldrun, or name a job with --job JOBID)"
	done
}

@test "worldctl: exits 125 when the registry cannot be reached" {
	run -125 --separate-stderr env WORLD_REGISTRY="unix:$BATS_TEST_TMPDIR/none" \
		WORLD_SECRET=0123 WORLD_RANK=0 WORLD_SIZE=1 worldctl kv get k
	assert_equal "$stderr" "worldctl: connecting to the registry: Registry is gone"
}

@test "worldctl: exits 125 when the registry refuses a wrong secret" {
	run -0 --separate-stderr job 1 \
		'WORLD_SECRET=0000 worldctl kv set k v; echo "status $?"'
	assert_output "status 125"
	assert_equal "$stderr" "worldctl: connecting to the registry: wrong job secret, or not the job's registry: its proof does not match the secret"
}

@test "worldctl: exits 125 on a WORLD_RANK that is not a rank of the job" {
	run -0 --separate-stderr job 2 'WORLD_RANK=2 worldctl rank; echo "status $?"'
	assert_equal "$output" "$(printf 'status 125\nstatus 125')"
	assert_equal "${stderr_lines[0]}" "worldctl: WORLD_RANK=2 WORLD_SIZE=2: not a rank of the job"
}

@test "worldctl: usage errors exit 2 with one line, before looking for a job" {
	usage_error
	usage_error frobnicate
	usage_error --frobnicate rank
	usage_error kv
	usage_error kv frob k
	usage_error rank extra
	usage_error kv get
	usage_error kv get a b
	usage_error kv set k
	usage_error kv set k v w
	usage_error kv add k
	usage_error kv add k 1.5
	usage_error kv add k 99999999999999999999
	usage_error kv wait
	usage_error kv del
	usage_error barrier a b
	usage_error kv set k v --timeout 1
	usage_error kv get k --timeout
	usage_error kv get k --timeout -1
	usage_error kv get k --timeout 1e3
	usage_error kv get k --timeout=abc
	usage_error kv get k --wait 1
	usage_error kv get "$(printf 'bad\377key')"
}

@test "worldctl: --help and -h print the commands and exit 0, even outside a job" {
	run -0 env -u WORLD_REGISTRY worldctl --help
	assert_line --index 0 'usage: worldctl [--job JOBID] COMMAND [ARGS...]'
	assert_line --regexp '^  kv get KEY \[--timeout S\] +'
	assert_line --regexp '^  barrier \[NAME\] \[--timeout S\] +'
	assert_output --partial '124 timed out'
	run -0 worldctl -h
	assert_line --index 0 'usage: worldctl [--job JOBID] COMMAND [ARGS...]'
}

@test "worldctl: --version prints the version" {
	run -0 worldctl --version
	assert_output --regexp '^worldctl [0-9]+\.[0-9]+\.[0-9]+$'
	run -0 worldctl -V
	assert_output --regexp '^worldctl [0-9]+'
}

@test "worldctl: kv get prints what kv set stored, and a newline" {
	run -0 job 1 'worldctl kv set greeting hello && worldctl kv get greeting'
	assert_output hello
}

@test "worldctl: kv get of a missing key exits 1 without a word" {
	run -0 --separate-stderr job 1 'worldctl kv get missing; echo "status $?"'
	assert_output "status 1"
	assert_equal "$stderr" ""
}

@test "worldctl: kv get --timeout 0.5 on a missing key exits 124" {
	run -0 --separate-stderr job 1 \
		'worldctl kv get missing --timeout 0.5; echo "status $?"'
	assert_output "status 124"
	assert_equal "$stderr" "worldctl: kv get missing: timed out after 0.5 s: key \"missing\" was not set"
}

@test "worldctl: kv get --timeout 1.5 on a missing key exits 124" {
	run -0 --separate-stderr job 1 \
		'worldctl kv get missing --timeout 1.5; echo "status $?"'
	assert_output "status 124"
	assert_equal "$stderr" "worldctl: kv get missing: timed out after 1.5 s: key \"missing\" was not set"
}

@test "worldctl: kv get --timeout 0 tries once: a missing key exits 1" {
	run -0 job 1 'worldctl kv get missing --timeout=0; echo "status $?"'
	assert_output "status 1"
}

# Longer than a second: worldctl's reads wake once a second to check the
# deadline, and must go back to waiting. Rank 0 sees rank 1 in its wait
# (the status report) before it lets that second and a half pass.
@test "worldctl: kv get waits for a key another rank sets later" {
	run -0 job 2 '
		if [ "$WORLD_RANK" = 0 ]; then
			worldctl kv wait waiting --timeout 60 || exit
			i=0
			until worldctl status | grep -q "rank 1 in kv wait \"late\""; do
				i=$((i + 1))
				[ "$i" -lt 600 ] || exit 9
				sleep 0.05
			done
			sleep 1.5
			worldctl kv set late "set by rank 0"
		else
			worldctl kv set waiting 1
			worldctl kv get late --timeout 60
		fi'
	assert_output "set by rank 0"
}

@test "worldctl: values with spaces, blank lines and a trailing newline round-trip" {
	local value=$'  two  spaces\n\n\ttab and  newlines\n'

	printf '%s\n' "$value" >"$BATS_TEST_TMPDIR/expected"
	V=$value job 1 'worldctl kv set "key with spaces" "$V" &&
		worldctl kv get "key with spaces"' >"$BATS_TEST_TMPDIR/got"
	cmp "$BATS_TEST_TMPDIR/expected" "$BATS_TEST_TMPDIR/got"
}

@test "worldctl: kv set - stores binary standard input exactly" {
	local f=$BATS_TEST_TMPDIR/data

	head -c 3000000 /dev/urandom >"$f"
	printf '\0\n\0\r\n' >>"$f"
	worldrun --timeout 120 --stdin 0 sh -c \
		'worldctl kv set blob - && worldctl kv get blob' <"$f" >"$f.got"
	head -c -1 "$f.got" | cmp - "$f"
	assert_equal "$(tail -c 1 "$f.got" | od -An -c | tr -d ' ')" '\n'
}

@test "worldctl: kv set - with empty standard input stores an empty value" {
	run -0 job 1 'worldctl kv set empty - </dev/null &&
		worldctl kv get empty | od -An -c'
	assert_output --regexp '^ +\\n$'
}

@test "worldctl: kv set - refuses more than 64 MiB of standard input (2)" {
	run -0 --separate-stderr job 1 \
		'head -c 67108865 /dev/zero | worldctl kv set big -; echo "status $?"
		worldctl kv get big; echo "get $?"'
	assert_line --index 0 "status 2"
	assert_line --index 1 "get 1"
	assert_equal "$stderr" "worldctl: kv set big: standard input holds more than 64 MiB (see worldctl --help)"
}

@test "worldctl: keys and values that start with - are arguments" {
	run -0 job 1 'worldctl kv set -k -v && worldctl kv get -k &&
		worldctl kv set -- --k --v && worldctl kv get -- --k &&
		worldctl kv add n -5'
	assert_equal "$output" "$(printf -- '-v\n--v\n-5')"
}

@test "worldctl: kv add starts from 0, adds signed numbers, prints the sum" {
	run -0 job 1 'worldctl kv add n 5 && worldctl kv add n -7 &&
		worldctl kv add n +2 && worldctl kv get n'
	assert_equal "$output" "$(printf '5\n-2\n0\n0')"
}

@test "worldctl: kv add from 4 ranks at once loses no increment" {
	run -0 job 4 '
		for i in 1 2 3 4 5 6 7 8 9 10; do
			worldctl kv add counter 1 >/dev/null || exit
		done
		worldctl barrier added --timeout 60 || exit
		[ "$WORLD_RANK" != 0 ] || worldctl kv get counter'
	assert_output 40
}

@test "worldctl: kv add on a value that is not an integer exits 125" {
	run -0 --separate-stderr job 1 \
		'worldctl kv set word abc && worldctl kv add word 1; echo "status $?"'
	assert_output "status 125"
	assert_equal "$stderr" "worldctl: kv add word: the value is not an integer"
}

@test "worldctl: kv wait returns once every key is set" {
	run -0 job 3 '
		worldctl kv set "part.$WORLD_RANK" x
		worldctl kv wait part.0 part.1 part.2 --timeout 60
		echo "status $?"'
	assert_equal "$output" "$(printf 'status 0\nstatus 0\nstatus 0')"
}

@test "worldctl: kv wait exits 124 on timeout and 1 with --timeout 0" {
	run -0 --separate-stderr job 1 '
		worldctl kv set one 1
		worldctl kv wait one two --timeout 0.3; echo "status $?"
		worldctl kv wait one two --timeout 0; echo "status $?"
		worldctl kv wait one --timeout 0; echo "status $?"'
	assert_equal "$output" "$(printf 'status 124\nstatus 1\nstatus 0')"
	assert_equal "$stderr" "worldctl: kv wait one ...: timed out after 0.3 s: key \"two\" was not set"
}

@test "worldctl: kv mget prints every key's value in the order given, a line each" {
	run -0 job 1 '
		worldctl kv set a "one two" && worldctl kv set b "" && worldctl kv set c 3 &&
		worldctl kv mget c a b c'
	assert_equal "$output" "$(printf '3\none two\n\n3')"
}

@test "worldctl: kv mget of a missing key prints nothing and exits 1 without a word" {
	run -0 --separate-stderr job 1 'worldctl kv set a 1; worldctl kv mget a missing; echo "status $?"'
	assert_output "status 1"
	assert_equal "$stderr" ""
}

@test "worldctl: kv mget --timeout waits for every key, and exits 124 when one stays unset" {
	run -0 --separate-stderr job 3 '
		worldctl kv set "part.$WORLD_RANK" "from $WORLD_RANK"
		if [ "$WORLD_RANK" = 0 ]; then
			worldctl kv mget part.2 part.1 part.0 --timeout 60
			worldctl kv mget part.0 never --timeout 0.3; echo "status $?"
		fi'
	assert_equal "$output" "$(printf 'from 2\nfrom 1\nfrom 0\nstatus 124')"
	assert_equal "$stderr" "worldctl: kv mget part.0 ...: timed out after 0.3 s: key \"never\" was not set"
}

@test "worldctl: kv mget asks again for what one answer had no room for (WORLD_BLOB_MAX)" {
	WORLD_BLOB_MAX=8 run -0 job 1 '
		worldctl kv set a 1234 && worldctl kv set b 5678 && worldctl kv set c 90 &&
		worldctl kv mget a b c a'
	assert_equal "$output" "$(printf '1234\n5678\n90\n1234')"
}

@test "worldctl: kv wait without --timeout waits for WORLD_WAIT_TIMEOUT" {
	WORLD_WAIT_TIMEOUT=0.5 run -0 --separate-stderr job 1 \
		'worldctl kv wait never; echo "status $?"'
	assert_output "status 124"
	assert_equal "$stderr" "worldctl: kv wait never: timed out after 0.5 s: key \"never\" was not set"
}

@test "worldctl: kv del deletes a key, and exits 1 when there was none" {
	run -0 --separate-stderr job 1 '
		worldctl kv set k v
		worldctl kv del k; echo "del $?"
		worldctl kv get k; echo "get $?"
		worldctl kv del k; echo "del $?"'
	assert_equal "$output" "$(printf 'del 0\nget 1\ndel 1')"
	assert_equal "$stderr" ""
}

@test "worldctl: ranks shows every rank's state: up, done and dead" {
	run -3 --separate-stderr worldrun --timeout 120 --keep-going -n 3 sh -c '
		case $WORLD_RANK in
		1) exit 0 ;;
		2) exit 3 ;;
		esac
		i=0
		until worldctl ranks | tr "\n" " " | grep -qx "0 up 1 done 2 dead "; do
			i=$((i + 1))
			[ "$i" -lt 1200 ] || exit 9
			sleep 0.05
		done
		worldctl ranks'
	assert_equal "$output" "$(printf '0 up\n1 done\n2 dead')"
}
