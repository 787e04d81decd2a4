#!/usr/bin/env bats
load helpers

# Output forwarding: which stream a line goes to, line atomicity across
# ranks, labels, partial lines, --output-dir, --pty, back-pressure and a
# closed stdout.

# check_spew FILE [-l] RANK:LEN:COUNT...: FILE holds only whole wr-spew
# lines ("r<RANK> xxx...", LEN bytes with the newline), exactly COUNT of
# each RANK:LEN given and nothing else, and ends with a newline. With -l
# every line starts with "<RANK>: " for the rank that wrote it.
check_spew() {
	local file=$1 labelled=0

	shift
	if [ "$1" = -l ]; then
		labelled=1
		shift
	fi
	if [ -s "$file" ] && [ "$(tail -c 1 "$file" | od -An -c | tr -d ' ')" != '\n' ]; then
		echo "$file does not end with a newline" >&2
		return 1
	fi
	awk -v specs="$*" -v labelled="$labelled" '
		function bad(why) {
			nbad++
			if (nbad <= 5) {
				printf "line %d (%d bytes, starts \"%s\"): %s\n", NR,
				    length($0), substr($0, 1, 24), why
			}
		}
		BEGIN {
			n = split(specs, list, " ")
			for (i = 1; i <= n; i++) {
				split(list[i], f, ":")
				want[f[1] ":" (f[2] - 1)] = f[3]
			}
		}
		{
			line = $0
			label = ""
			if (labelled) {
				if (line !~ /^[0-9]+: /) { bad("no label"); next }
				label = substr(line, 1, index(line, ":") - 1)
				line = substr(line, index(line, ":") + 2)
			}
			if (line !~ /^r[0-9]+ x+$/) { bad("not one whole line"); next }
			rank = substr(line, 2, index(line, " ") - 2)
			if (labelled && label != rank) { bad("label of another rank"); next }
			key = rank ":" length(line)
			if (!(key in want)) { bad("unexpected rank or length"); next }
			seen[key]++
		}
		END {
			for (key in want) {
				if (seen[key] + 0 != want[key]) {
					split(key, f, ":")
					printf "rank %s, %d-byte lines: %d, expected %d\n",
					    f[1], f[2] + 1, seen[key], want[key]
					nbad++
				}
			}
			exit nbad > 0
		}' "$file" >&2
}

# each_rank N LEN COUNT: the RANK:LEN:COUNT specs of ranks 0..N-1.
each_rank() {
	local r

	for ((r = 0; r < $1; r++)); do
		printf '%s:%s:%s ' "$r" "$2" "$3"
	done
}

teardown() {
	show_failure
}

# has_nonblock FDINFO: the fdinfo file's flags include O_NONBLOCK (04000).
has_nonblock() {
	local flags
	flags=$(awk '/^flags:/ { print $2 }' "$1")
	[ -n "$flags" ] || { echo "no flags in $1" >&2; return 2; }
	[ $((8#$flags & 8#4000)) -ne 0 ]
}

# cpu_ticks PID: user + system time of PID in clock ticks.
cpu_ticks() {
	sed 's/.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'
}

# A Python rank that prints "first" with plain print() (line-buffered
# on a tty, block-buffered on a pipe), creates ARGV[1].printed, waits
# (bounded) for ARGV[1] to exist, then prints "second".
PY_FIRST_SECOND='
import os, sys, time
print("first")
open(sys.argv[1] + ".printed", "w").close()
for _ in range(1200):
    if os.path.exists(sys.argv[1]):
        break
    time.sleep(0.05)
print("second")
'

@test "worldrun: keeps the ranks' stdout on stdout and their stderr on stderr" {
	T=$BATS_TEST_TMPDIR
	worldrun -n 3 sh -c 'echo "out $WORLD_RANK"; echo "err $WORLD_RANK" >&2' \
		>"$T/out" 2>"$T/err"
	assert_equal "$(sort "$T/out")" "$(printf 'out %s\n' 0 1 2)"
	assert_equal "$(sort "$T/err")" "$(printf 'err %s\n' 0 1 2)"
}

@test "worldrun: passes every 100-byte line of 8 ranks whole and loses none" {
	T=$BATS_TEST_TMPDIR
	worldrun -n 8 wr-spew 200000 >"$T/out" 2>"$T/err"
	check_spew "$T/out" $(each_rank 8 100 2000)
	assert_equal "$(cat "$T/err")" ""
	assert_equal "$(wc -c <"$T/out")" 1600000
}

@test "worldrun: never mixes 1 MiB lines written by 8 ranks at once" {
	T=$BATS_TEST_TMPDIR
	worldrun -n 8 wr-spew -l 1048576 4194304 >"$T/out" 2>"$T/err"
	check_spew "$T/out" $(each_rank 8 1048576 4)
	assert_equal "$(cat "$T/err")" ""
	assert_equal "$(wc -c <"$T/out")" $((8 * 4194304))
}

@test "worldrun: passes a line longer than 64 KiB whole while another rank writes short lines" {
	T=$BATS_TEST_TMPDIR
	worldrun -n 2 sh -c 'if [ "$WORLD_RANK" = 0 ]; then
			exec wr-spew -l 300000 3000000
		else
			exec wr-spew 5000000
		fi' >"$T/out" 2>"$T/err"
	check_spew "$T/out" 0:300000:10 1:100:50000
	assert_equal "$(cat "$T/err")" ""
}

@test "worldrun: -l prefixes every line of stdout and stderr with 'RANK: '" {
	T=$BATS_TEST_TMPDIR
	worldrun -n 3 -l sh -c 'printf "out %s\nout2\n" $WORLD_RANK; printf "err %s\nerr2\n" $WORLD_RANK >&2' \
		>"$T/out" 2>"$T/err"
	assert_equal "$(sort "$T/out")" "$(printf '%s: out %s\n%s: out2\n' 0 0 0 1 1 1 2 2 2 | sort)"
	assert_equal "$(sort "$T/err")" "$(printf '%s: err %s\n%s: err2\n' 0 0 0 1 1 1 2 2 2 | sort)"
}

@test "worldrun: --tag-output labels lines like --label" {
	run -0 worldrun -n 2 --tag-output sh -c 'echo "hello $WORLD_RANK"'
	assert_equal "$(echo "$output" | sort)" "$(printf '0: hello 0\n1: hello 1')"
}

@test "worldrun: -l never puts a label inside a line longer than 64 KiB" {
	T=$BATS_TEST_TMPDIR
	worldrun -n 4 -l sh -c 'wr-spew -l 200000 1000000 & wr-spew -e -l 150000 600000; wait' \
		>"$T/out" 2>"$T/err"
	check_spew "$T/out" -l $(each_rank 4 200000 5)
	check_spew "$T/err" -l $(each_rank 4 150000 4)
}

@test "worldrun: -l labels a partial last line once, without adding a newline" {
	T=$BATS_TEST_TMPDIR
	worldrun -n 1 -l sh -c 'printf "one\ntwo"' >"$T/out"
	printf '0: one\n0: two' >"$T/expected"
	cmp "$T/out" "$T/expected"
}

@test "worldrun: with 2>&1 into one file, lines of both streams of 4 ranks never mix" {
	T=$BATS_TEST_TMPDIR
	# stdout: 20 lines of 100000 bytes per rank; stderr at the same time:
	# 1000 lines of 700 bytes per rank, under the 1 MiB a rank's own
	# stderr may hold while its stdout line goes on (past it the line is
	# broken by design, and tested so further down).
	worldrun -n 4 sh -c 'wr-spew -l 100000 2000000 & wr-spew -e -l 700 700000; wait' \
		>"$T/out" 2>&1
	check_spew "$T/out" $(each_rank 4 100000 20) $(each_rank 4 700 1000)
}

@test "worldrun: with 2>&1 into one pipe, long lines of both streams never mix" {
	T=$BATS_TEST_TMPDIR
	worldrun -n 4 sh -c 'wr-spew -l 100000 1000000 & wr-spew -e -l 90000 900000; wait' \
		2>&1 | cat >"$T/out"
	check_spew "$T/out" $(each_rank 4 100000 10) $(each_rank 4 90000 10)
}

@test "worldrun: flushes a partial last line at EOF and adds no newline" {
	T=$BATS_TEST_TMPDIR
	worldrun -n 1 wr-spew -n 3 >"$T/out"
	printf 'xxx' >"$T/expected"
	cmp "$T/out" "$T/expected"
	worldrun -n 1 sh -c 'printf abc' >"$T/out"
	printf 'abc' >"$T/expected"
	cmp "$T/out" "$T/expected"
	worldrun -n 1 sh -c 'printf abc >&2' 2>"$T/err"
	cmp "$T/err" "$T/expected"
}

@test "worldrun: a rank's partial last line does not get another rank's line appended" {
	T=$BATS_TEST_TMPDIR
	# Rank 0 ends without a newline; rank 1 writes its line only once
	# rank 0 is gone.
	worldrun -n 2 sh -c 'if [ "$WORLD_RANK" = 0 ]; then
			printf abc; echo $$ >"$0/rank0"
		else
			i=0
			while [ ! -s "$0/rank0" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done
			while kill -0 "$(cat "$0/rank0")" 2>/dev/null && [ $i -lt 1200 ]; do sleep 0.05; i=$((i + 1)); done
			echo line
		fi' "$T" >"$T/out"
	# Either order is right; "abcline" or "abc" glued to anything is not.
	if [ "$(head -c 3 "$T/out")" = abc ]; then
		printf 'abc\nline\n' >"$T/expected"
	else
		printf 'line\nabc' >"$T/expected"
	fi
	cmp "$T/out" "$T/expected"
}

@test "worldrun: both ranks' partial last lines come out whole, each on its own line" {
	T=$BATS_TEST_TMPDIR
	worldrun -n 2 sh -c 'printf "rank$WORLD_RANK"' >"$T/out"
	# Exactly one newline, between the two partial lines.
	case "$(cat "$T/out"; echo .)" in
	$'rank0\nrank1.' | $'rank1\nrank0.') ;;
	*) od -c "$T/out" >&2; false ;;
	esac
}

@test "worldrun: passes 100 MiB without a newline whole and stays under 64 MiB RSS" {
	T=$BATS_TEST_TMPDIR
	# Under ASan, freed blocks sit in a quarantine of up to 256 MiB and
	# count as RSS; keep it small so that this measures worldrun.
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=1"
	# Nor the PMIx server (2.4 MiB, 40 under ASan: its threads' shadow),
	# which holds the same whatever the output.
	peak_rss "$T/rss" "$T/out" worldrun -n 1 --pmi fd wr-spew -n 104857600
	assert_equal "$(wc -c <"$T/out")" 104857600
	assert_equal "$(tr -d x <"$T/out" | wc -c)" 0
	rss=$(tail -n 1 "$T/rss")
	echo "max RSS ${rss} KiB" >&2
	[ "$rss" -gt 0 ]
	[ "$rss" -lt $((64 * 1024)) ]
}

@test "worldrun: --output-dir holds each rank's exact unlabelled bytes, and the terminal still gets them" {
	T=$BATS_TEST_TMPDIR
	worldrun -n 3 -l --output-dir "$T/od" sh -c \
		'printf "out %s\nlast %s" $WORLD_RANK $WORLD_RANK; printf "err %s\n" $WORLD_RANK >&2' \
		>"$T/out" 2>"$T/err"
	for r in 0 1 2; do
		printf 'out %s\nlast %s' $r $r >"$T/expected"
		cmp "$T/od/$r/stdout" "$T/expected"
		printf 'err %s\n' $r >"$T/expected"
		cmp "$T/od/$r/stderr" "$T/expected"
	done
	assert_equal "$(tr -d '\n' <"$T/out" | grep -o '[0-9]: out [0-9]' | sort)" \
		"$(printf '%s: out %s\n' 0 0 1 1 2 2)"
	for r in 0 1 2; do
		grep -q "$r: last $r" "$T/out"
	done
	assert_equal "$(sort "$T/err")" "$(printf '%s: err %s\n' 0 0 1 1 2 2)"
}

@test "worldrun: --output-dir keeps binary data and long lines exact" {
	T=$BATS_TEST_TMPDIR
	head -c 3000000 /dev/urandom >"$T/data"
	worldrun -n 2 --output-dir "$T/od" sh -c \
		'cat "$0"; wr-spew -e -l 200000 1000000' "$T/data" >/dev/null 2>"$T/err"
	for r in 0 1; do
		cmp "$T/od/$r/stdout" "$T/data"
		WORLD_RANK=$r wr-spew -l 200000 1000000 >"$T/expected"
		cmp "$T/od/$r/stderr" "$T/expected"
	done
}

@test "worldrun: --output-dir truncates the files of an earlier run" {
	T=$BATS_TEST_TMPDIR
	worldrun -n 2 --output-dir "$T/od" sh -c \
		'wr-spew 10000; wr-spew -e 10000' >/dev/null 2>&1
	assert_equal "$(wc -c <"$T/od/1/stdout")" 10000
	worldrun -n 2 --output-dir "$T/od" sh -c 'printf "a\nb"; printf e >&2' >/dev/null 2>&1
	for r in 0 1; do
		printf 'a\nb' >"$T/expected"
		cmp "$T/od/$r/stdout" "$T/expected"
		printf 'e' >"$T/expected"
		cmp "$T/od/$r/stderr" "$T/expected"
	done
}

@test "worldrun: --output-dir with a missing parent directory fails with 125" {
	run -125 worldrun --output-dir "$BATS_TEST_TMPDIR/missing/od" -n 1 wr-exit 0
	assert_output --regexp '^worldrun: .*missing/od.*'
	[ "${#lines[@]}" -eq 1 ]
}

@test "worldrun: --output-dir refuses a symbolic link where a rank's file should be, and leaves its target alone" {
	T=$BATS_TEST_TMPDIR
	echo precious >"$T/target"
	mkdir -p "$T/od/0"
	ln -s "$T/target" "$T/od/0/stdout"
	run -125 worldrun --output-dir "$T/od" -n 1 wr-exit 0
	assert_output "worldrun: --output-dir: unable to use $T/od/0/stdout: a symbolic link"
	run cat "$T/target"
	assert_output precious
}

@test "worldrun: --output-dir refuses a rank directory that is a symbolic link" {
	T=$BATS_TEST_TMPDIR
	mkdir -p "$T/elsewhere" "$T/od"
	ln -s "$T/elsewhere" "$T/od/0"
	run -125 worldrun --output-dir "$T/od" -n 1 wr-exit 0
	assert_output "worldrun: --output-dir: unable to use $T/od/0/stdout: not a directory"
	run ls -A "$T/elsewhere"
	assert_output ''
}

@test "worldrun: --output-dir refuses a FIFO or a hard link where a rank's file should be, at once" {
	# A FIFO nobody reads would block open(): no --timeout could help.
	T=$BATS_TEST_TMPDIR
	mkdir -p "$T/od/0"
	mkfifo "$T/od/0/stdout"
	run -125 timeout 60 "$WORLDRUN" --output-dir "$T/od" -n 1 wr-exit 0
	assert_output "worldrun: --output-dir: unable to use $T/od/0/stdout: not a regular file"
	rm "$T/od/0/stdout"
	echo precious >"$T/other"
	ln "$T/other" "$T/od/0/stdout"
	run -125 worldrun --output-dir "$T/od" -n 1 wr-exit 0
	assert_output "worldrun: --output-dir: unable to use $T/od/0/stdout: a file with other names (hard links)"
	run cat "$T/other"
	assert_output precious
}

@test "worldrun: --output-dir makes its directories 0755 and files 0644, whatever the umask" {
	T=$BATS_TEST_TMPDIR
	(umask 0 && worldrun --output-dir "$T/od" -n 1 wr-exit 0)
	run stat -c '%a' "$T/od" "$T/od/0" "$T/od/0/stdout" "$T/od/0/stderr"
	assert_output - <<-'END'
	755
	755
	644
	644
	END
}

@test "worldrun: --output-dir on a full disk: status 125, the job stops, and the report names the file" {
	[ "$(id -u)" = 0 ] || skip "needs root, to mount a small tmpfs"
	T=$BATS_TEST_TMPDIR
	mkdir "$T/full"
	run --separate-stderr unshare -m sh -c 'mount -t tmpfs -o size=256k none "$1" &&
		exec "$WORLDRUN" --report "$2" --output-dir "$1/od" -n 1 \
			sh -c "echo \$\$ >\"$3\"; exec wr-spew 100000000"' \
		sh "$T/full" "$T/report.json" "$T/pid"
	assert_equal "$status" 125
	assert_regex "$stderr" "worldrun: unable to write $T/full/od/0/stdout: No space left on device"
	run python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
f = r["output_file_error"]
print(r["status"], r["cause"], r["failed_rank"], f["rank"], f["stream"], f["error"])' "$T/report.json"
	assert_output '125 output-dir-failed None 0 stdout No space left on device'
	gone "$(cat "$T/pid")"
}

@test "worldrun: --output-dir that cannot be written fails with 125" {
	T=$BATS_TEST_TMPDIR
	# A regular file where the directory should be.
	touch "$T/file"
	run -125 worldrun --output-dir "$T/file" -n 1 wr-exit 0
	assert_output --regexp '^worldrun: .*file'
	# A directory where a rank's stdout file should be (fails even as root).
	mkdir -p "$T/od/0/stdout"
	run -125 worldrun --output-dir "$T/od" -n 1 wr-exit 0
	assert_output --regexp '^worldrun: .*od'
	# A directory it may not write in. Root writes anywhere with
	# CAP_DAC_OVERRIDE, so as root (CI) worldrun runs without it.
	mkdir "$T/ro"
	chmod 0555 "$T/ro"
	local unprivileged=()
	if [ "$(id -u)" = 0 ]; then
		unprivileged=(setpriv --bounding-set=-dac_override)
	fi
	run -125 "${unprivileged[@]}" worldrun --output-dir "$T/ro" -n 1 wr-exit 0
	assert_output --regexp '^worldrun: .*ro'
}

@test "worldrun: --pty makes the ranks' stdout a tty and leaves stderr a pipe" {
	run -0 worldrun --pty -n 2 -l wr-probe
	assert_line '0: tty1=1'
	assert_line '1: tty1=1'
	assert_line '0: tty2=0'
	assert_line '1: tty2=0'
	assert_line '0: tty0=0'
}

@test "worldrun: without --pty the ranks' stdout is not a tty" {
	run -0 worldrun -n 2 -l wr-probe
	assert_line '0: tty1=0'
	assert_line '1: tty1=0'
}

@test "worldrun: --pty adds no carriage returns and keeps exact bytes" {
	T=$BATS_TEST_TMPDIR
	worldrun --pty -n 2 sh -c 'printf "a\tb\n\nc\n"' >"$T/out"
	assert_equal "$(grep -c $'\r' "$T/out")" 0
	printf 'a\tb\n\nc\na\tb\n\nc\n' >"$T/expected"
	cmp "$T/out" "$T/expected"
}

@test "worldrun: --pty passes long lines of 4 ranks whole" {
	T=$BATS_TEST_TMPDIR
	worldrun --pty -n 4 wr-spew -l 200000 1000000 >"$T/out"
	check_spew "$T/out" $(each_rank 4 200000 5)
	worldrun --pty -n 4 wr-spew 400000 >"$T/out"
	check_spew "$T/out" $(each_rank 4 100 4000)
}

@test "worldrun: --pty flushes a partial last line at EOF" {
	T=$BATS_TEST_TMPDIR
	worldrun --pty -n 1 sh -c 'printf "one\ntwo"' >"$T/out"
	printf 'one\ntwo' >"$T/expected"
	cmp "$T/out" "$T/expected"
}

@test "worldrun: --pty with --output-dir writes the rank's stdout to the file" {
	T=$BATS_TEST_TMPDIR
	worldrun --pty -n 2 --output-dir "$T/od" sh -c 'printf "a\nb"' >/dev/null
	printf 'a\nb' >"$T/expected"
	cmp "$T/od/0/stdout" "$T/expected"
	cmp "$T/od/1/stdout" "$T/expected"
}

@test "worldrun: --pty lets line-buffered stdio output through while the rank still runs" {
	T=$BATS_TEST_TMPDIR
	unset PYTHONUNBUFFERED
	worldrun --pty -n 1 python3 -c "$PY_FIRST_SECOND" "$T/release" >"$T/out" 2>"$T/err" &
	pid=$!
	# The rank waits for the release file, so worldrun must still be
	# running when "first" arrives.
	wait_until 60 grep -qx first "$T/out"
	alive "$pid"
	run grep -c second "$T/out"
	assert_output 0
	touch "$T/release"
	wait_job 60 "$pid"
	printf 'first\nsecond\n' >"$T/expected"
	cmp "$T/out" "$T/expected"
}

@test "worldrun: without --pty, block-buffered stdio output waits for the rank to end" {
	T=$BATS_TEST_TMPDIR
	unset PYTHONUNBUFFERED
	worldrun -n 1 python3 -c "$PY_FIRST_SECOND" "$T/release" >"$T/out" 2>"$T/err" &
	pid=$!
	wait_until 60 test -e "$T/release.printed"
	# Give a line-buffered "first" ample time to show up; it must not.
	sleep 1
	alive "$pid"
	assert_equal "$(wc -c <"$T/out")" 0
	touch "$T/release"
	wait_job 60 "$pid"
	printf 'first\nsecond\n' >"$T/expected"
	cmp "$T/out" "$T/expected"
}

@test "worldrun: blocks the ranks behind a slow reader and drops nothing" {
	T=$BATS_TEST_TMPDIR
	worldrun -n 4 sh -c 'echo $$ >>"$0/pids"; exec wr-spew 52428800' "$T" \
		| { sleep 2; cat; } >"$T/out"
	assert_equal "$(wc -c <"$T/out")" $((4 * 52428800))
	check_spew "$T/out" $(each_rank 4 100 524288)
}

@test "worldrun: a reader that pauses loses nothing of ranks that have ended, and blames nobody" {
	# 100 ranks of 60 lines of 1000 bytes: worldrun pauses at 4 MiB, so
	# the rest of many ranks' output waits in their pipes after they
	# exit. The reader starts once every rank has ended, and then waits
	# more than twice --kill-grace (that pause is the scenario).
	T=$BATS_TEST_TMPDIR
	worldrun --kill-grace 0.2 -n 100 sh -c 'echo $$ >>"$0/pids"; exec wr-spew -l 1000 60000' \
		"$T" 2>"$T/err" | {
		wait_until 60 pids_in "$T/pids" 100
		wait_until 60 all_gone "$T/pids"
		sleep 1
		cat
	} >"$T/out"
	assert_equal "${PIPESTATUS[0]}" 0
	check_spew "$T/out" $(each_rank 100 1000 60)
	run cat "$T/err"
	assert_output ''
}

# MIX: a rank that writes N_ERR lines of 100 bytes to stderr in the middle
# of a stdout line of 100000 bytes, then ends that line.
MIX='import os, sys
os.write(1, b"o" * 100000)
for i in range(int(sys.argv[1])):
    os.write(2, b"e" * 99 + b"\n")
os.write(1, b"\n")'

@test "worldrun: with 2>&1 a rank's stderr lines in the middle of its long stdout line wait, and the line stays whole" {
	# 2000 lines are more than the stderr pipe holds: were that stream
	# paused, the rank would block on it and its line be broken.
	T=$BATS_TEST_TMPDIR
	run worldrun -n 1 python3 -c "$MIX" 2000 2>&1
	assert_success
	refute_output --partial '\'
	run awk '{ n[length($0)]++ } END { print n[100000], n[99] }' <<<"$output"
	assert_output '1 2000'
}

@test "worldrun: with 2>&1 more than 1 MiB of stderr in the middle of a stdout line breaks the line, marked, and loses nothing" {
	T=$BATS_TEST_TMPDIR
	worldrun -n 1 python3 -c "$MIX" 20000 >"$T/out" 2>&1
	run grep -c '\\$' "$T/out"
	assert_output 1
	run sh -c "tr -d '\\\\\n' <'$T/out' | tr -d e | wc -c"
	assert_output 100000
	run grep -c '^e\{99\}$' "$T/out"
	assert_output 20000
}

@test "worldrun: a slow reader of labelled output with 2>&1 loses nothing" {
	T=$BATS_TEST_TMPDIR
	worldrun -n 4 -l sh -c 'wr-spew 10000000 & wr-spew -e 10000000; wait' 2>&1 \
		| { sleep 2; cat; } >"$T/out"
	check_spew "$T/out" -l $(each_rank 4 100 200000)
}

@test "worldrun: a reader that stalls 3 s mid-line breaks no long line: the ranks' silence then is worldrun's" {
	# The sink fills to 4 MiB and every rank is paused, the owner of a
	# long line too; it must not be blamed for its idle second.
	T=$BATS_TEST_TMPDIR
	# As above, each rank's stderr under 1 MiB.
	worldrun -n 4 sh -c 'wr-spew -l 100000 2000000 & wr-spew -e -l 700 700000; wait' 2>&1 \
		| { sleep 3; cat; } >"$T/out"
	check_spew "$T/out" $(each_rank 4 100000 20) $(each_rank 4 700 1000)
}

@test "worldrun: exits 141 when its stdout is closed, and leaves no rank behind" {
	T=$BATS_TEST_TMPDIR
	worldrun -n 2 sh -c 'echo $$ >>"$0/pids"; exec wr-spew 100000000' "$T" 2>"$T/err" \
		| head -c 100 >/dev/null
	status=${PIPESTATUS[0]}
	cat "$T/err" >&2
	assert_equal "$status" 141
	pids_in "$T/pids" 1
	all_gone "$T/pids"
	run grep -Ei 'core dumped|SIGSEGV|Sanitizer|runtime error' "$T/err"
	assert_failure 1
}

@test "worldrun: stops ranks that write forever when its stdout closes" {
	T=$BATS_TEST_TMPDIR
	# If worldrun kept draining the ranks, this would never end: timeout
	# turns that into 124.
	timeout 60 worldrun -n 2 sh -c 'echo $$ >>"$0/pids"; exec yes' "$T" 2>"$T/err" \
		| head -c 100 >/dev/null
	status=${PIPESTATUS[0]}
	cat "$T/err" >&2
	assert_equal "$status" 141
	all_gone "$T/pids"
}

@test "worldrun: exits 141 when stdout closes while labelled ranks write to both streams" {
	T=$BATS_TEST_TMPDIR
	worldrun -n 3 -l sh -c 'echo $$ >>"$0/pids"; wr-spew -e 100000000 2>/dev/null & exec wr-spew 100000000' "$T" \
		2>"$T/err" | head -c 1000 >/dev/null
	status=${PIPESTATUS[0]}
	assert_equal "$status" 141
	all_gone "$T/pids"
	run grep -Ei 'core dumped|SIGSEGV|Sanitizer|runtime error' "$T/err"
	assert_failure 1
}

@test "worldrun: leaves O_NONBLOCK off its inherited stdin, stdout and stderr after it ends" {
	T=$BATS_TEST_TMPDIR
	for mode in 0 all; do
		printf 'data\n' | {
			worldrun --stdin "$mode" -n 2 sh -c 'wr-cat -c; wr-spew 1000000; wr-spew -e 100000'
			for fd in 0 1 2; do
				cp "/proc/$BASHPID/fdinfo/$fd" "$T/fdinfo.$mode.$fd"
			done
		} 2> >(cat >/dev/null) | cat >/dev/null
		for fd in 0 1 2; do
			run has_nonblock "$T/fdinfo.$mode.$fd"
			assert_failure 1
		done
	done
}

@test "worldrun: does not set O_NONBLOCK on its stdin, stdout or stderr while running" {
	T=$BATS_TEST_TMPDIR
	# stdin: a pipe kept open until the test creates $T/release.
	{
		sh -c 'printf "data\n"; i=0
			while [ ! -e "$0/release" ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i + 1)); done' "$T" \
			| worldrun --stdin all -n 2 sh -c 'echo "hi $WORLD_RANK"; echo "oops $WORLD_RANK" >&2
				echo $PPID >"$0/wrpid.$WORLD_RANK"; exec wr-cat -c' "$T" \
				2> >(cat >"$T/err") | cat >"$T/out"
	} &
	job=$!
	wait_until 60 test -s "$T/wrpid.0" -a -s "$T/wrpid.1"
	wait_until 60 output_is 2 grep -c '^hi' "$T/out"
	wait_until 60 output_is 2 grep -c '^oops' "$T/err"
	pid=$(cat "$T/wrpid.0")
	assert_equal "$(cat "/proc/$pid/comm")" worldrun
	for fd in 0 1 2; do
		cp "/proc/$pid/fdinfo/$fd" "$T/fdinfo.$fd"
	done
	touch "$T/release"
	wait_job 60 "$job"
	for fd in 0 1 2; do
		run has_nonblock "$T/fdinfo.$fd"
		assert_failure 1
	done
	assert_equal "$(grep -c '^bytes 5 eof' "$T/out")" 2
}
