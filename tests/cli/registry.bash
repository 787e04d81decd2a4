# Shared by the bats files that poke the registry with raw frames
# (worldrun-registry, worldrun-limits): the answers they expect, and the
# two-rank job that runs a bad input and checks that the job lived.

# The hello answer every bad-input poke of rank 0 starts with, once the
# job id in it is replaced by JOBID.
HELLO0='{"id":0,"result":{"rank":0,"size":2,"jobid":"JOBID"}}'

# A sed script that hides the job id.
MASK='s/"jobid":"[0-9a-f]*"/"jobid":"JOBID"/'

# lib.sh, for the ranks' scripts to source:
#   poke ARGS...: wr-regpoke ARGS, with the job id hidden and its status;
#   wait_pending N: wait (bounded) until the registry holds N waits.
# rank.sh, the ranks of a bad-input test (worldrun -n 2 sh rank.sh):
# rank 1 keeps its own "rank" connection waiting for the key "after";
# rank 0 waits until that wait is in the registry, sources bad.sh (the
# bad input, written by the test) into bad.out, then sets "after" and
# reads it back over a new connection (r0.out). So the test sees that the
# registry still serves new clients and that an older connection of
# another rank lived through it (r1.out).
write_rank_script() {
	cat >"$DIR/lib.sh" <<-'EOF'
	poke() {
		wr-regpoke "$@" >"$DIR/poke.tmp" 2>&1
		st=$?
		sed "s/$WORLD_JOBID/JOBID/g" "$DIR/poke.tmp"
		echo "status=$st"
	}
	EOF
	printf '%s\n' "$PENDING_SH" >>"$DIR/lib.sh"
	cat >"$DIR/rank.sh" <<-'EOF'
	. "$DIR/lib.sh"
	if [ "$WORLD_RANK" = 1 ]; then
		exec wr-regpoke -w 60 hello rank \
			send '{"op":"kv.get","id":1,"key":"after","timeout_ms":60000}' \
			read send '{"op":"goodbye","id":2}' read >"$DIR/r1.out" 2>&1
	fi
	wait_pending 1 || exit 99
	. "$DIR/bad.sh" >"$DIR/bad.out" 2>&1
	wr-regpoke hello blob '{"op":"kv.set","id":1,"key":"after"}' 6f6b read \
		send '{"op":"kv.get","id":2,"key":"after"}' read \
		>"$DIR/r0.out" 2>&1
	EOF
}

# run_bad: run a 2-rank job whose rank 0 sources bad.sh from stdin (see
# rank.sh); check that the job, the other rank's connection and a new
# connection went on as if nothing happened; leave bad.out in $output.
run_bad() {
	cat >"$DIR/bad.sh"
	run worldrun -n 2 sh "$DIR/rank.sh"
	assert_success
	assert_output ''
	run sed "$MASK" "$DIR/r0.out"
	assert_output - <<-END
	$HELLO0
	{"id":1,"result":{}}
	{"id":2,"result":{},"blob":2} blob=6f6b
	END
	run sed "$MASK" "$DIR/r1.out"
	assert_output - <<-'END'
	{"id":0,"result":{"rank":1,"size":2,"jobid":"JOBID"}}
	{"id":1,"result":{},"blob":2} blob=6f6b
	{"id":2,"result":{}}
	END
	run cat "$DIR/bad.out"
}

# The answer to a frame that cannot be read: the stream is lost, so the
# id is unknown.
EFRAME='{"id":-1,"error":{"code":-4096,"name":"WORLD_EFRAME","message":"Malformed or oversized frame"}}'
EPROTO_FRAME='{"id":-1,"error":{"code":-4097,"name":"WORLD_EPROTO","message":"Protocol error"}}'
# The same before the hello, which says what a stranger may send.
HELLO_WHY='before its hello a connection may send one frame of at most 1024 bytes, without a blob'
EFRAME_STRANGER='{"id":-1,"error":{"code":-4096,"name":"WORLD_EFRAME","message":"'$HELLO_WHY'"}}'
EPROTO_STRANGER='{"id":-1,"error":{"code":-4097,"name":"WORLD_EPROTO","message":"'$HELLO_WHY'"}}'
