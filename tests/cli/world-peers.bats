#!/usr/bin/env bats
load helpers

# A libworld rank's listener for its peers (prog-wait, tests/world, which
# only waits), poked by wr-regpoke from another rank: a bad frame is
# answered and closes its connection, and the rank goes on serving
# others.

setup() {
	world_prog wait
}

teardown() {
	show_failure
}

@test "world: a peer's blob that a rank cannot allocate gets ENOMEM, and the rank goes on serving" {
	too_big_to_allocate
	# Rank 1 reaches rank 0 where it listens (world.peer.0); the 1 TiB
	# blob is announced, never sent. Then a call from a new connection.
	WORLD_BLOB_MAX=1024G run --separate-stderr -0 worldrun --timeout 120 -n 2 sh -c '
		[ "$WORLD_RANK" = 0 ] && exec "$PROG"
		peer=$(worldctl kv get world.peer.0 --timeout 60) || exit 9
		WORLD_REGISTRY=$peer wr-regpoke -w 10 hello peer 1 \
			send "{\"op\":\"call\",\"id\":1,\"kind\":\"value\",\"blob\":1099511627776}" \
			read expect-eof
		WORLD_REGISTRY=$peer wr-regpoke hello peer 1 \
			send "{\"op\":\"call\",\"id\":1,\"kind\":\"value\",\"group\":\"g\",\"key\":\"k\"}" read
		worldctl kv set done 1'
	assert_equal "$stderr" ""
	assert_line "rank 0: done: OK"
	run grep -v '^rank 0: ' <<<"$output"
	assert_output - <<-'END'
	{"id":0,"result":{"value":null}}
	{"id":-1,"error":{"code":-12,"name":"ENOMEM","message":"Cannot allocate memory"}}
	EOF
	{"id":0,"result":{"value":null}}
	{"id":1,"error":{"code":-2,"name":"ENOENT","message":"No such file or directory"}}
	END
}
