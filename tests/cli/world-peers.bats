#!/usr/bin/env bats
load helpers

# A libworld rank's listener for its peers (prog-wait, tests/world, which
# only waits), poked by wr-regpoke from another rank: a bad frame or a
# bad hello is answered and closes its connection, and the rank goes on
# serving others.

setup() {
	world_prog wait
}

teardown() {
	show_failure
}

# poke_peer: a 2-rank job: rank 0 is prog-wait; rank 1 sources the pokes
# on stdin (sh; $peer is where rank 0 listens), then calls rank 0 on a new
# connection and lets it go. The answers rank 1 got end up in $output.
poke_peer() {
	cat >"$BATS_TEST_TMPDIR/pokes.sh"
	run --separate-stderr -0 worldrun --timeout 120 -n 2 sh -c '
		[ "$WORLD_RANK" = 0 ] && exec "$PROG"
		peer=$(worldctl kv get world.peer.0 --timeout 60) || exit 9
		. "$0"
		WORLD_REGISTRY=$peer wr-regpoke hello peer 1 \
			send "{\"op\":\"call\",\"id\":1,\"kind\":\"value\",\"group\":\"g\",\"key\":\"k\"}" read
		worldctl kv set done 1' "$BATS_TEST_TMPDIR/pokes.sh"
	assert_equal "$stderr" ""
	assert_line "rank 0: done: OK"
	run grep -v '^rank 0: ' <<<"$output"
}

# The answers of a good hello and of the call that poke_peer makes last.
HELLO='{"id":0,"result":{"value":null}}'
ENOENT='{"id":1,"error":{"code":-2,"name":"ENOENT","message":"No such file or directory"}}'

@test "world: a peer's blob that a rank cannot allocate gets ENOMEM, and the rank goes on serving" {
	too_big_to_allocate
	# The 1 TiB blob is announced, never sent.
	WORLD_BLOB_MAX=1024G poke_peer <<-'EOF'
	WORLD_REGISTRY=$peer wr-regpoke -w 10 hello peer 1 \
		send '{"op":"call","id":1,"kind":"value","blob":1099511627776}' read expect-eof
	EOF
	assert_output - <<-END
	$HELLO
	{"id":-1,"error":{"code":-12,"name":"ENOMEM","message":"Cannot allocate memory"}}
	EOF
	$HELLO
	$ENOENT
	END
}

@test "world: a peer's hello with a wrong secret gets WORLD_EAUTH, and the rank goes on serving" {
	poke_peer <<-'EOF'
	WORLD_REGISTRY=$peer wr-regpoke -w 10 hello peer 1 00000000000000000000000000000000 \
		expect-eof
	EOF
	assert_output - <<-END
	{"id":0,"error":{"code":-4102,"name":"WORLD_EAUTH","message":"wrong job secret"}}
	EOF
	$HELLO
	$ENOENT
	END
}
