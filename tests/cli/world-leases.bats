#!/usr/bin/env bats
load helpers

# Leases over a job's life: a libworld rank (prog-wait, tests/world)
# that only waits keeps its lease by renewing it, and a worldctl wait,
# a tool's, holds none; both outlive many short lease timeouts. The job
# runs until the registry has had that many renewals from the rank, a
# count, not a time: no test here asserts how long anything took.

setup() {
	world_prog wait
}

teardown() {
	show_failure
}

# REQUESTS_SH: sh code for a rank's script, which defines requests R:
# how many requests the registry has had on rank R's own connection (its
# stats), and renewed R N: wait (bounded, 60 s) until it has had N more.
REQUESTS_SH='requests() {
	wr-regpoke hello send "{\"op\":\"stats\",\"id\":1}" read |
		sed -n "s/.*\"rank\":$1,\"role\":\"rank\",\"requests\":\([0-9]*\).*/\1/p"
}
renewed() {
	i=0 from=$(requests "$1")
	until n=$(requests "$1") && [ "${n:-0}" -ge $((${from:-0} + $2)) ]; do
		i=$((i + 1))
		[ "$i" -lt 1200 ] || return 1
		sleep 0.05
	done
}'

@test "world: a waiting libworld rank renews its lease, and a worldctl wait needs none, over many lease timeouts" {
	# 20 renewals at 0.2 s are 4 s: four lease timeouts of 1 s. Without
	# renewals the rank would be lost after one.
	WORLD_LEASE_INTERVAL=0.2 WORLD_LEASE_TIMEOUT=1 \
		run --separate-stderr -0 worldrun --timeout 120 -n 2 sh -c "$REQUESTS_SH"'
		[ "$WORLD_RANK" = 0 ] && exec "$PROG"
		worldctl kv wait go --timeout 60 & tool=$!
		renewed 0 20 || exit 9
		worldctl kv set go 1
		wait "$tool" || exit
		echo "rank 1: worldctl waited"
		worldctl kv set done 1'
	assert_line "rank 0: done: OK"
	assert_line "rank 1: worldctl waited"
	assert_equal "${#lines[@]}" 2
	assert_equal "$stderr" ""
}
