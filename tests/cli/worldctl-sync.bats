#!/usr/bin/env bats
# worldctl between ranks: the example pipeline, barriers back to back,
# several worldctl at once in one rank, and a rank that dies while the
# others wait for it. No test asserts a duration: a dead peer shows as
# status 3 instead of 124, whatever the time it took.
load helpers

: "${SRCDIR:?run these tests through meson test}"
PIPELINE="$SRCDIR/share/examples/pipeline.sh"

teardown() {
	show_failure
}

# job N SCRIPT: run SCRIPT with sh as each rank of an N-rank job.
job() {
	worldrun --timeout 120 -n "$1" sh -c "$2"
}

# check_pipeline FILE: $output is the example's output for FILE.
check_pipeline() {
	local total share sum=0

	total=$(wc -w <"$1")
	assert_line "total: $total words in $1"
	for r in 0 1 2 3; do
		share=$(printf '%s\n' "$output" | sed -n "s/^rank $r: \([0-9]*\) of $total words\$/\1/p")
		assert [ -n "$share" ]
		sum=$((sum + share))
	done
	assert_equal "$sum" "$total"
	assert_equal "${#lines[@]}" 5
}

@test "worldctl: the example pipeline counts a file's words on 4 ranks" {
	local f=$BATS_TEST_TMPDIR/words

	# 97 lines of 0 to 8 words: some ranks get more than others.
	for i in $(seq 1 97); do
		seq "$((i % 9))" | tr '\n' ' '
		echo
	done >"$f"
	run -0 worldrun --timeout 120 -n 4 "$PIPELINE" "$f"
	check_pipeline "$f"
}

@test "worldctl: the example pipeline runs from any directory, on itself" {
	mkdir "$BATS_TEST_TMPDIR/elsewhere"
	cd "$BATS_TEST_TMPDIR/elsewhere"
	run -0 worldrun --timeout 120 -n 4 "$PIPELINE"
	check_pipeline "$PIPELINE"
}

@test "worldctl: 20 back-to-back barriers on 4 ranks keep every rank in step" {
	# After barrier i every rank has added i+1 times, and none can have
	# added more than once more: a rank runs at most one barrier ahead.
	run -0 job 4 '
		i=0
		while [ "$i" -lt 20 ]; do
			worldctl kv add count 1 >/dev/null || exit
			worldctl barrier --timeout 60 || exit
			n=$(worldctl kv get count) || exit
			if [ "$n" -lt $((4 * (i + 1))) ] || [ "$n" -ge $((4 * (i + 2))) ]; then
				echo "rank $WORLD_RANK: $n after barrier $i"
				exit 1
			fi
			i=$((i + 1))
		done
		echo "rank $WORLD_RANK passed $i"'
	assert_equal "$(echo "$output" | sort)" "$(printf 'rank %s passed 20\n' 0 1 2 3)"
}

@test "worldctl: barriers with different names do not mix" {
	run -0 job 3 '
		worldctl barrier one --timeout 60 && worldctl barrier two --timeout 60 &&
		worldctl barrier one --timeout 60 && echo "rank $WORLD_RANK ok"'
	assert_equal "$(echo "$output" | sort)" "$(printf 'rank %s ok\n' 0 1 2)"
}

@test "worldctl: barrier --timeout exits 124 when a rank stays away" {
	run -0 --separate-stderr job 2 '
		if [ "$WORLD_RANK" = 0 ]; then
			worldctl barrier away --timeout 0.5
			echo "status $?"
			worldctl kv set release 1
		else
			worldctl kv wait release --timeout 60
		fi'
	assert_output "status 124"
	assert_equal "$stderr" "worldctl: barrier away: timed out after 0.5 s: rank 1 did not arrive at barrier \"away\""
}

@test "worldctl: three worldctl at once in one rank, each on its own connection" {
	OUT=$BATS_TEST_TMPDIR/out run -0 job 1 '
		worldctl kv get a --timeout 60 >"$OUT" & a=$!
		worldctl kv wait b --timeout 60 & b=$!
		worldctl kv set a "for the first" && worldctl kv set b 1
		wait "$a"; sa=$?
		wait "$b"; sb=$?
		echo "$sa $sb $(cat "$OUT")"'
	assert_output "0 0 for the first"
}

@test "worldctl: a rank killed during a barrier makes the others' barrier exit 3" {
	# Rank 3 dies once the registry holds the other three in the barrier
	# (worldctl keeps no other wait there).
	run -137 --separate-stderr worldrun --timeout 120 --keep-going -n 4 sh -c "$PENDING_SH"'
		if [ "$WORLD_RANK" = 3 ]; then
			worldctl kv wait in.0 in.1 in.2 --timeout 60 || exit
			wait_pending 3 || exit
			kill -KILL $$
		fi
		worldctl kv set "in.$WORLD_RANK" 1
		worldctl barrier --timeout 60
		echo "rank $WORLD_RANK: status $?"'
	assert_equal "$(echo "$output" | sort)" "$(printf 'rank %s: status 3\n' 0 1 2)"
	assert_equal "$(echo "$stderr" | grep -c '^worldctl: barrier worldctl: rank 3 was killed by signal 9 (SIGKILL) before entering barrier "worldctl"$')" 3
}

@test "worldctl: kv get waiting for a key exits 3 when a rank dies" {
	# The registry fails the waits that a death finds waiting, not later
	# ones: rank 1 dies once the registry holds rank 0's get.
	run -137 --separate-stderr worldrun --timeout 120 --keep-going -n 2 sh -c "$PENDING_SH"'
		if [ "$WORLD_RANK" = 1 ]; then
			worldctl kv wait waiting --timeout 60 || exit
			wait_pending 1 || exit
			kill -KILL $$
		fi
		worldctl kv get never --timeout 60 & get=$!
		worldctl kv set waiting 1
		wait "$get"
		echo "status $?"'
	assert_output "status 3"
	assert_equal "$(echo "$stderr" | grep -c '^worldctl: kv get never: rank 1 was killed by signal 9 (SIGKILL) while waiting in kv.get "never"$')" 1
}

@test "worldctl: a barrier after a rank ended exits 3 at once" {
	run -0 --separate-stderr job 2 '
		[ "$WORLD_RANK" = 1 ] && exit 0
		i=0
		until worldctl ranks | grep -qx "1 done"; do
			i=$((i + 1))
			[ "$i" -lt 1200 ] || exit 9
			sleep 0.05
		done
		worldctl barrier late --timeout 60
		echo "status $?"'
	assert_output "status 3"
	assert_equal "$stderr" "worldctl: barrier late: rank 1 exited (status 0) before entering barrier \"late\""
}
