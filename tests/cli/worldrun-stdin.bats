#!/usr/bin/env bats
load helpers

# Which ranks read worldrun's stdin (--stdin N|all|none), that the others
# get /dev/null, that `all` gives everyone the same bytes and EOF while
# reading only as fast as the ranks take it, and that input nobody asked
# for stays unread.

teardown() {
	show_failure
}

# cpu_ticks PID: user + system time of PID in clock ticks.
cpu_ticks() {
	sed 's/.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'
}

# sorted_output: the output of the last `run`, lines sorted.
sorted_output() {
	printf '%s\n' "$output" | sort
}

@test "worldrun: gives stdin to rank 0 by default and EOF to the others" {
	run -0 worldrun -n 3 -l wr-cat -c <<<hello
	assert_equal "$(sorted_output)" "$(printf '0: bytes 6 eof\n1: bytes 0 eof\n2: bytes 0 eof')"
}

@test "worldrun: ranks without stdin get /dev/null, the stdin rank gets worldrun's stdin" {
	run -0 worldrun -n 3 -l wr-probe <<<hello
	assert_line '1: stdin=/dev/null'
	assert_line '2: stdin=/dev/null'
	assert_line --regexp '^0: stdin='
	refute_line '0: stdin=/dev/null'
}

@test "worldrun: a rank without stdin reading to EOF never hangs, even when stdin stays open" {
	T=$BATS_TEST_TMPDIR
	mkfifo "$T/fifo"
	# Opened read-write, the fifo never reaches EOF.
	exec {fd}<>"$T/fifo"
	run -0 timeout 60 worldrun -n 2 -l sh -c \
		'if [ "$WORLD_RANK" = 1 ]; then cat; echo "cat ended"; fi' <&$fd
	exec {fd}<&-
	assert_output '1: cat ended'
}

@test "worldrun: --stdin 2 gives the input to rank 2 only" {
	run -0 worldrun -n 3 -l --stdin 2 wr-cat -c <<<hello
	assert_equal "$(sorted_output)" "$(printf '0: bytes 0 eof\n1: bytes 0 eof\n2: bytes 6 eof')"
	run -0 worldrun -n 3 -l --stdin 2 wr-probe <<<hello
	assert_line '0: stdin=/dev/null'
	assert_line '1: stdin=/dev/null'
	refute_line '2: stdin=/dev/null'
}

@test "worldrun: --stdin none gives every rank /dev/null" {
	run -0 worldrun -n 3 -l --stdin none wr-cat -c <<<hello
	assert_equal "$(sorted_output)" "$(printf '0: bytes 0 eof\n1: bytes 0 eof\n2: bytes 0 eof')"
	run -0 worldrun -n 2 -l --stdin none wr-probe <<<hello
	assert_line '0: stdin=/dev/null'
	assert_line '1: stdin=/dev/null'
}

@test "worldrun: --stdin beyond the last rank or not a rank is a usage error (125)" {
	run -125 worldrun -n 3 --stdin 3 wr-exit 0
	assert_output --regexp '^worldrun: .*--stdin'
	run -125 worldrun -n 3 --stdin abc wr-exit 0
	assert_output --regexp '^worldrun: .*--stdin'
	run -125 worldrun -n 3 --stdin -1 wr-exit 0
	assert_output --regexp '^worldrun: .*--stdin'
}

@test "worldrun: --stdin all gives every rank the same 5 MiB from a pipe, then EOF" {
	T=$BATS_TEST_TMPDIR
	head -c 5242880 /dev/urandom >"$T/data"
	run -0 timeout 120 sh -c 'cat "$1" | worldrun -n 4 -l --stdin all wr-cat -c' sh "$T/data"
	assert_equal "$(sorted_output)" "$(printf '%s: bytes 5242880 eof\n' 0 1 2 3)"
	# cat on purpose: stdin must be a pipe here, not the file.
	cat "$T/data" | timeout 120 worldrun -n 4 --stdin all sh -c 'exec wr-cat >"$0/copy.$WORLD_RANK"' "$T"
	for r in 0 1 2 3; do
		cmp "$T/copy.$r" "$T/data"
	done
}

@test "worldrun: --stdin all gives every rank the same bytes from a regular file" {
	T=$BATS_TEST_TMPDIR
	head -c 3000000 /dev/urandom >"$T/data"
	timeout 120 worldrun -n 3 --stdin all sh -c 'exec wr-cat >"$0/copy.$WORLD_RANK"' "$T" \
		<"$T/data" 2>"$T/err"
	for r in 0 1 2; do
		cmp "$T/copy.$r" "$T/data"
	done
	assert_equal "$(cat "$T/err")" ""
}

@test "worldrun: --stdin all keeps feeding the others when a rank exits early" {
	T=$BATS_TEST_TMPDIR
	head -c 5242880 /dev/urandom >"$T/data"
	# Rank 1 exits before reading anything, rank 2 after 100000 bytes.
	run -0 timeout 120 sh -c 'cat "$1" | worldrun -n 4 -l --stdin all sh -c "
		if [ \$WORLD_RANK = 1 ]; then exit 0; fi
		if [ \$WORLD_RANK = 2 ]; then exec head -c 100000 >/dev/null; fi
		exec wr-cat -c"' sh "$T/data"
	assert_equal "$(sorted_output)" "$(printf '%s: bytes 5242880 eof\n' 0 3)"
}

@test "worldrun: --stdin all ends when the ranks stop reading an endless input" {
	run -0 timeout 120 sh -c 'yes | worldrun --stdin all -n 2 -l sh -c "head -c 1000000 | wc -c"'
	assert_equal "$(sorted_output)" "$(printf '0: 1000000\n1: 1000000')"
}

@test "worldrun: --stdin all reads stdin only as fast as the ranks take it, without spinning" {
	T=$BATS_TEST_TMPDIR
	# 1 GiB of zeros that costs no disk.
	truncate -s 1G "$T/big"
	worldrun --stdin all -n 2 sh -c 'head -c 1000000 >/dev/null; touch "$0/read.$WORLD_RANK"
		i=0
		while [ ! -e "$0/release" ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i + 1)); done' "$T" \
		<"$T/big" >"$T/out" 2>"$T/err" &
	pid=$!
	wait_until 60 test -e "$T/read.0" -a -e "$T/read.1"
	# Both ranks now hold their stdin open without reading. Give a greedy
	# worldrun a second to read ahead, and measure its CPU meanwhile.
	before=$(cpu_ticks "$pid")
	sleep 1
	after=$(cpu_ticks "$pid")
	pos=$(awk '/^pos:/ { print $2 }' "/proc/$pid/fdinfo/0")
	touch "$T/release"
	wait_job 60 "$pid"
	echo "worldrun read $pos bytes, used $((after - before)) ticks idle" >&2
	[ "$pos" -ge 1000000 ]
	[ "$pos" -lt $((16 * 1048576)) ]
	[ $((after - before)) -lt $(($(getconf CLK_TCK) / 2)) ]
}

# from_sources MODE: run worldrun -n 2 -l --stdin MODE wr-cat -c with stdin
# from a 10-byte file, /dev/null and closed, and check each rank's count
# (rank 0 and the others get FILE0 and FILE1 bytes from the file) and
# that worldrun says nothing on stderr.
from_sources() {
	local mode=$1 bytes0=$2 bytes1=$3 T=$BATS_TEST_TMPDIR

	printf 'some\ndata\n' >"$T/data"
	# <&- inside bash -c: closing fd 0 around `run` itself would hand
	# run's own capture pipe to fd 0.
	run -0 --separate-stderr timeout 60 bash -c \
		'worldrun -n 2 -l --stdin "$1" wr-cat -c <"$2"' sh "$mode" "$T/data"
	assert_equal "$(sorted_output)" "$(printf '0: bytes %s eof\n1: bytes %s eof' "$bytes0" "$bytes1")"
	assert_equal "$stderr" ""
	run -0 --separate-stderr timeout 60 bash -c \
		'worldrun -n 2 -l --stdin "$1" wr-cat -c </dev/null' sh "$mode"
	assert_equal "$(sorted_output)" "$(printf '0: bytes 0 eof\n1: bytes 0 eof')"
	assert_equal "$stderr" ""
	run -0 --separate-stderr timeout 60 bash -c \
		'worldrun -n 2 -l --stdin "$1" wr-cat -c <&-' sh "$mode"
	assert_equal "$(sorted_output)" "$(printf '0: bytes 0 eof\n1: bytes 0 eof')"
	assert_equal "$stderr" ""
}

@test "worldrun: default stdin works from a regular file, /dev/null and a closed fd" {
	from_sources 0 10 0
}

@test "worldrun: --stdin 1 works from a regular file, /dev/null and a closed fd" {
	from_sources 1 0 10
}

@test "worldrun: --stdin all works from a regular file, /dev/null and a closed fd" {
	from_sources all 10 10
}

@test "worldrun: --stdin none leaves typed-ahead input unread" {
	run -0 bash -c '(worldrun --stdin none -n 2 wr-exit 0; cat) <<<left'
	assert_output left
	run -0 bash -c 'printf "left\n" | (worldrun --stdin none -n 2 wr-exit 0; cat)'
	assert_output left
}

@test "worldrun: a stdin rank that does not read leaves the input to whoever comes next" {
	run -0 bash -c 'printf "left\n" | (worldrun -n 2 wr-exit 0; cat)'
	assert_output left
	run -0 bash -c 'printf "left\n" | (worldrun --stdin 1 -n 2 wr-exit 0; cat)'
	assert_output left
}
