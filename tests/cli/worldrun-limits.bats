#!/usr/bin/env bats
load helpers
load registry

# What anyone who reaches a job's listeners can make worldrun or a rank
# hold, each limit at the limit and one past it (the table is in
# worldrun(1), LIMITS). Strangers, connections that have not proven they
# hold the job secret, come first: any user of the host can open one.
# wr-flood opens many connections and tells which ones the server closed;
# wr-regpoke sends raw frames.

setup() {
	DIR=$BATS_TEST_TMPDIR
	export DIR
	VICTIM="$(dirname "$WORLDRUN")/../../tests/world/prog-victim"
	[ -x "$VICTIM" ] || fail "not built: $VICTIM"
	write_rank_script
}

teardown() {
	show_failure
}

# nones FILE: how many strangers a stats answer in FILE lists.
nones() {
	grep -o '"role":"none"' "$1" | wc -l
}

@test "registry: a stranger that announces a blob is refused before a byte of it is read" {
	# Without the bound the registry would wait for 1 GiB (TIMEOUT) and
	# hold it; now the answer comes at once, on both transports.
	run_bad <<-'EOF'
	poke send '{"op":"hello","id":0,"blob":1073741824}' read expect-eof
	poke -t send '{"op":"kv.set","id":1,"key":"k","blob":1}' read expect-eof
	EOF
	assert_output - <<-END
	$EPROTO_STRANGER
	EOF
	status=0
	$EPROTO_STRANGER
	EOF
	status=0
	END
}

@test "registry: a stranger may send a hello of 1024 bytes; a length of 1025 is refused at once" {
	# The hello is padded with a field of its own to 1024 bytes.
	run_bad <<-'EOF'
	pad() { head -c "$1" /dev/zero | tr '\0' x; }
	fixed=$(printf '{"op":"hello","id":0,"secret":"%s","rank":0,"role":"tool","pad":""}' \
		"$WORLD_SECRET" | wc -c)
	poke send "{\"op\":\"hello\",\"id\":0,\"secret\":\"$WORLD_SECRET\",\"rank\":0,\"role\":\"tool\",\"pad\":\"$(pad $((1024 - fixed)))\"}" read
	poke raw 00000401 read expect-eof
	EOF
	assert_output - <<-END
	$HELLO0
	status=0
	$EFRAME_STRANGER
	EOF
	status=0
	END
}

# strangers N: a job whose rank holds N strangers while a new connection
# asks for the registry's stats.
strangers() {
	run worldrun -n 1 wr-flood -t "$1" \
		wr-regpoke hello send '{"op":"stats","id":1}' read
	echo "$output" >"$DIR/stats"
}

@test "registry: 63 silent connections of the job's user and one that says hello, 64 in all, are let be" {
	strangers 63
	assert_success
	assert_line 'closed -'
	[ "$(nones "$DIR/stats")" -eq 63 ]
}

@test "registry: 64 silent connections of the job's user at most: the next TCP connection waits until the oldest is pushed out" {
	# The gate is full: accepting on TCP pauses, and after its grace the
	# oldest stranger makes room for the new connection, which says hello.
	run worldrun -n 1 wr-flood -t 64 \
		wr-regpoke -t hello send '{"op":"stats","id":1}' read
	echo "$output" >"$DIR/stats"
	assert_success
	assert_line 'closed 0'
	[ "$(nones "$DIR/stats")" -eq 63 ]
}

@test "registry: with 64 silent connections of the job's user on TCP, a connection on the job's Unix socket is served at once, nobody pushed out" {
	strangers 64
	assert_success
	assert_line 'closed -'
	[ "$(nones "$DIR/stats")" -eq 64 ]
}

@test "registry: WORLD_CONN_MAX tool connections are served, one more is refused" {
	WORLD_CONN_MAX=3 run worldrun -n 1 wr-flood -r tool 4
	assert_success
	assert_line 'answered 3'
	assert_line 'refused 1'
	WORLD_CONN_MAX=4 run worldrun -n 1 wr-flood -r tool 4
	assert_line 'answered 4'
	assert_line 'refused 0'
}

@test "worldrun: WORLD_CONN_MAX that is not a count is one line and 125" {
	WORLD_CONN_MAX=0 run -125 worldrun -n 1 true
	assert_output 'worldrun: WORLD_CONN_MAX=0: not a count from 1 to 1048576'
	WORLD_CONN_MAX=lots run -125 worldrun -n 1 true
	assert_output 'worldrun: WORLD_CONN_MAX=lots: not a count from 1 to 1048576'
}

@test "registry: out of fds, worldrun says so once, serves the open connections and accepts again later" {
	# worldrun (the rank's parent) gets a limit of 128 fds, and 200 tool
	# connections come: accept() fails with EMFILE long before the last;
	# the first connection is still answered, and once the flood is gone
	# a new worldctl gets in.
	cat >"$DIR/rank.sh" <<-'EOF'
	prlimit --pid "$PPID" --nofile=128:128 || exit 99
	wr-flood -r tool -q '{"op":"kv.count","id":1}' 200
	worldctl kv set after 1
	worldctl kv get after
	EOF
	run --separate-stderr worldrun -n 1 sh "$DIR/rank.sh"
	assert_success
	assert_line 'opened 200'
	assert_line '{"id":1,"result":{"count":0}}'
	assert_line '1'
	assert_equal "$stderr" 'worldrun: registry: unable to accept a connection: Too many open files; new connections wait while those open are served'
}

# victim ROOM SCRIPT: rank 0 is prog-victim ROOM; rank 1 runs SCRIPT
# (sh) once rank 0 is ready, with $EP its peer endpoints and $GO the
# command that lets rank 0 go on and waits until it is done.
victim() {
	cat >"$DIR/attack.sh" <<-EOF
	worldctl kv get victim.ready --timeout 60 >/dev/null || exit 99
	EP=\$(worldctl kv get world.peer.0)
	GO='worldctl kv set victim.go 1 && worldctl kv get victim.done --timeout 60'
	$2
	EOF
	cat >"$DIR/rank.sh" <<-EOF
	if [ "\$WORLD_RANK" = 0 ]; then exec "$VICTIM" $1; fi
	exec sh "$DIR/attack.sh"
	EOF
	run --separate-stderr worldrun -l -n 2 sh "$DIR/rank.sh"
}

@test "libworld: 100 silent connections of the job's user at a rank's peer listener hold 16 of its fds at most" {
	victim 32 'wr-flood -t -e "$EP" 100 sh -c "$GO"'
	assert_success
	assert_line '1: opened 100'
	assert_line --regexp '^0: fds \+([0-9]|1[0-6])$'
	assert_line '0: opened 8'
	assert_equal "$stderr" ''
}

@test "libworld: a rank's peer listener lets 16 silent connections of the job's user be; a 17th pushes out the oldest" {
	# 15 strangers and a peer's hello are 16; 16 and a hello are one too many.
	victim 64 'HI="WORLD_REGISTRY=$EP wr-regpoke -t hello peer"
		wr-flood -t -e "$EP" 15 sh -c "$HI"
		wr-flood -t -e "$EP" 16 sh -c "$HI"
		sh -c "$GO"'
	assert_success
	assert_line --index 0 '1: opened 15'
	assert_line --index 1 '1: {"id":0,"result":{"value":null}}'
	assert_line --index 2 '1: closed -'
	assert_line --index 3 '1: opened 16'
	assert_line --index 4 '1: {"id":0,"result":{"value":null}}'
	assert_line --index 5 '1: closed 0'
}

@test "libworld: a rank serves its job's size plus 64 peer connections; one more hello is refused" {
	# A job of 2: 66 greeted peers at most.
	victim 200 'wr-flood -t -e "$EP" -r peer 67 sh -c "$GO"'
	assert_success
	assert_line '1: answered 66'
	assert_line '1: refused 1'
}

@test "libworld: a stranger at a rank's peer listener that announces a blob is refused at once" {
	victim 32 'WORLD_REGISTRY=$EP wr-regpoke -t send "{\"op\":\"hello\",\"id\":0,\"blob\":1073741824}" read expect-eof; sh -c "$GO"'
	assert_success
	assert_line "1: $EPROTO_STRANGER"
	assert_line '1: EOF'
	assert_line '0: opened 8'
}

@test "libworld: a rank out of fds under a flood writes nothing to stderr and goes on" {
	# Room for 4 more fds: the flood takes them, accept() fails with
	# EMFILE, and the listener pauses without a word.
	victim 4 'wr-flood -t -e "$EP" 100 sh -c "$GO"'
	assert_success
	assert_line '1: opened 100'
	assert_line --regexp '^0: opened [0-8]$'
	assert_equal "$stderr" ''
}

@test "registry: kv.append up to WORLD_BLOB_MAX is stored; one byte past is EMSGSIZE, and the value stays" {
	export WORLD_BLOB_MAX=10
	run_bad <<-'EOF'
	poke hello blob '{"op":"kv.set","id":1,"key":"v"}' 3132333435 read \
		blob '{"op":"kv.append","id":2,"key":"v"}' 3637383930 read \
		blob '{"op":"kv.append","id":3,"key":"v"}' 31 read \
		send '{"op":"kv.get","id":4,"key":"v"}' read
	EOF
	assert_output - <<-END
	$HELLO0
	{"id":1,"result":{}}
	{"id":2,"result":{}}
	{"id":3,"error":{"code":-90,"name":"EMSGSIZE","message":"the value would be longer than WORLD_BLOB_MAX"}}
	{"id":4,"result":{},"blob":10} blob=31323334353637383930
	status=0
	END
}

@test "registry: the key/value space holds WORLD_KV_MAX; past it a store is ENOSPC, and deleting makes room" {
	# 1 MiB in all: one value of 600000 bytes fits, a second does not.
	cat >"$DIR/rank.sh" <<-'EOF'
	head -c 600000 /dev/zero | worldctl kv set a - && echo a stored
	head -c 600000 /dev/zero | worldctl kv set b - || echo b refused $?
	worldctl kv del a
	head -c 600000 /dev/zero | worldctl kv set b - && echo b stored
	EOF
	WORLD_KV_MAX=1M run --separate-stderr worldrun -n 1 sh "$DIR/rank.sh"
	assert_success
	assert_output - <<-'END'
	a stored
	b refused 125
	b stored
	END
	assert_equal "$stderr" 'worldctl: kv set b: the key/value space is full (WORLD_KV_MAX)'
}

@test "worldrun: WORLD_KV_MAX that is not a size is one line and 125" {
	WORLD_KV_MAX=12 run -125 worldrun -n 1 true
	assert_output 'worldrun: WORLD_KV_MAX=12: not a size in bytes from 1M to 1024T'
}

@test "registry: 2000 gets of a 1 MiB value that are never read hold the value once, not 2000 times" {
	# The client stops being read once its answers pass 16 MiB; the
	# value's bytes are not copied per answer. worldrun's peak memory
	# stays far below the 2 GB that copies would take.
	cat >"$DIR/rank.sh" <<-'EOF'
	head -c 1048576 /dev/zero | worldctl kv set big - || exit 99
	set -- -w 2 hello
	i=0
	while [ "$i" -lt 2000 ]; do
		set -- "$@" send '{"op":"kv.get","id":1,"key":"big"}'
		i=$((i + 1))
	done
	wr-regpoke "$@" >/dev/null 2>&1
	awk '/^VmHWM/ { print ($2 < 200 * 1024) ? "small" : "large " $2 " kB" }' \
		"/proc/$PPID/status"
	EOF
	run worldrun -n 1 sh "$DIR/rank.sh"
	assert_success
	assert_output 'small'
}

@test "registry: mget of values larger together than WORLD_BLOB_MAX answers a page, and next says where the rest begins" {
	export WORLD_BLOB_MAX=8
	run_bad <<-'EOF'
	poke hello blob '{"op":"kv.mset","id":1,"keys":["a","b"],"lens":[4,4]}' 3132333435363738 read \
		send '{"op":"kv.mget","id":2,"keys":["a","b"]}' read \
		blob '{"op":"kv.set","id":3,"key":"b"}' 3536373839 read \
		send '{"op":"kv.mget","id":4,"keys":["a","b"]}' read \
		send '{"op":"kv.mget","id":5,"keys":["b"]}' read
	EOF
	assert_output - <<-END
	$HELLO0
	{"id":1,"result":{}}
	{"id":2,"result":{"lens":[4,4]},"blob":8} blob=3132333435363738
	{"id":3,"result":{}}
	{"id":4,"result":{"lens":[4],"next":1},"blob":4} blob=31323334
	{"id":5,"result":{"lens":[5]},"blob":5} blob=3536373839
	status=0
	END
}

@test "registry: ranks comes in pages under WORLD_MSG_MAX; worldctl ranks lists all 300" {
	cat >"$DIR/rank.sh" <<-'EOF'
	if [ "$WORLD_RANK" = 0 ]; then
		# Its answer waits while 299 worldctl start beside it: seconds
		# under AddressSanitizer on 2 cores, past the default 5.
		wr-regpoke -w 60 hello send '{"op":"ranks","id":1}' read | tail -n 1 |
			grep -o '"next":[0-9]*'
		worldctl ranks >"$DIR/ranks"
	fi
	worldctl barrier
	EOF
	WORLD_MSG_MAX=4K run worldrun -n 300 sh "$DIR/rank.sh"
	assert_success
	assert_output --regexp '^"next":[0-9]+$'
	run awk '$1 == NR - 1 && $2 == "up" { n++ } END { print n }' "$DIR/ranks"
	assert_output 300
}

@test "registry: a connection holds 1024 waits at most; the next is ENOBUFS and the others go on" {
	cat >"$DIR/rank.sh" <<-'EOF'
	set -- -w 30 hello
	i=0
	while [ "$i" -le 1024 ]; do
		set -- "$@" send "{\"op\":\"kv.wait\",\"id\":$i,\"keys\":[\"never\"],\"timeout_ms\":60000}"
		i=$((i + 1))
	done
	set -- "$@" read send '{"op":"kv.set","id":2000,"key":"never"}'
	i=0
	while [ "$i" -le 1024 ]; do
		set -- "$@" read
		i=$((i + 1))
	done
	wr-regpoke "$@" >"$DIR/answers"
	EOF
	run worldrun -n 1 sh "$DIR/rank.sh"
	assert_success
	run sed -n 2p "$DIR/answers"
	assert_output '{"id":1024,"error":{"code":-105,"name":"ENOBUFS","message":"this connection holds as many waits as it may"}}'
	run grep -c '^{"id":[0-9]*,"result":{}}$' "$DIR/answers"
	assert_output 1025
}

# freeze WHO: a 2-rank job with 1 s leases whose rank 0 is a libworld
# rank (prog-victim); once it is ready, rank 1 stops WHO (worldrun, the
# victim, or both: the whole job but rank 1, as a cgroup freezer or
# Slurm's suspend would) for 3 s, three lease timeouts, then lets the
# victim finish. The sleep is the scenario, not a wait for a state.
freeze() {
	cat >"$DIR/rank.sh" <<-EOF
	if [ "\$WORLD_RANK" = 0 ]; then exec "$VICTIM" 32; fi
	worldctl kv get victim.ready --timeout 60 >/dev/null || exit 99
	v=\$(pgrep -P "\$PPID" -f prog-victim) || exit 98
	case $1 in
	worldrun) who=\$PPID ;;
	rank) who=\$v ;;
	job) who="\$PPID \$v" ;;
	esac
	kill -STOP \$who
	sleep 3
	kill -CONT \$who
	worldctl kv set victim.go 1
	worldctl kv get victim.done --timeout 60 >/dev/null
	EOF
	WORLD_LEASE_INTERVAL=0.2 WORLD_LEASE_TIMEOUT=1 \
		run --separate-stderr worldrun -l -n 2 sh "$DIR/rank.sh"
}

@test "registry: a job frozen for three lease timeouts goes on: no lease lapses" {
	freeze job
	assert_success
	assert_line '0: opened 8'
	assert_equal "$stderr" ''
}

@test "registry: a worldrun stopped for three lease timeouts goes on: no lease lapses" {
	freeze worldrun
	assert_success
	assert_line '0: opened 8'
	assert_equal "$stderr" ''
}

@test "registry: a rank frozen alone for three lease timeouts is lost: its lease lapsed" {
	freeze rank
	assert_failure 137
	refute_output --partial 'opened'
	assert_regex "$stderr" 'rank 0 \(pid [0-9]+ on [^)]+\) was lost: its lease lapsed; killed after'
}

@test "worldrun: under ulimit -n 64 a job of 8 ranks runs (80 with PMIx); too low a limit is one line with its grammar right" {
	run sh -c 'ulimit -n 64 && exec "$WORLDRUN" --pmi fd -n 8 sh -c "worldctl barrier"'
	assert_success
	run sh -c 'ulimit -n 80 && exec "$WORLDRUN" -n 8 sh -c "worldctl barrier"'
	assert_success
	run -125 sh -c 'ulimit -n 64 && exec "$WORLDRUN" -n 8 true'
	assert_output 'worldrun: 8 ranks need about 76 open files, but the limit is 64 (ulimit -n)'
	run -125 sh -c 'ulimit -n 20 && exec "$WORLDRUN" -n 1 --pmi fd true'
	assert_output 'worldrun: 1 rank needs about 35 open files, but the limit is 20 (ulimit -n)'
	run -125 sh -c 'ulimit -n 20 && exec "$WORLDRUN" -n 2 true'
	assert_output 'worldrun: 2 ranks need about 52 open files, but the limit is 20 (ulimit -n)'
}

@test "worldrun: a program name with a newline is quoted in its error line and in --dry-run" {
	nl='
'
	run -127 worldrun -n 1 "no${nl}such"
	assert_output "worldrun: \$'no\\nsuch': program not found in the ranks' PATH"
	run worldrun --dry-run -n 1 /bin/echo "a b" "x${nl}y"
	assert_success
	assert_line --index 1 "rank 0 host $(hostname) wdir . program /bin/echo 'a b' \$'x\\ny'"
	[ "${#lines[@]}" -eq 2 ]
}

@test "registry: waits that held 16 MiB of keys are given back when their connection closes" {
	# 300 waits of 4096 keys, 1 MiB each: the connection may hold a few;
	# the rest are ENOBUFS. worldrun's memory after the close is back
	# within 4 MiB of before.
	cat >"$DIR/waits.py" <<-'EOF'
	import json, os, socket, struct
	def rss():
	    for line in open("/proc/%d/status" % os.getppid()):
	        if line.startswith("VmRSS"):
	            return int(line.split()[1])
	def send(s, o):
	    b = json.dumps(o).encode()
	    s.sendall(struct.pack(">I", len(b)) + b)
	def stats(s):
	    send(s, {"op": "stats", "id": 999})
	    buf = b""
	    while b'"id":999' not in buf:
	        buf += s.recv(1 << 20)
	    return buf
	def connect():
	    s = socket.socket(socket.AF_UNIX)
	    s.connect(os.environ["WORLD_REGISTRY"].split(",")[0][5:])
	    send(s, {"op": "hello", "id": 0, "secret": os.environ["WORLD_SECRET"],
	             "rank": 0, "role": "tool"})
	    return s
	before = rss()
	keys = ["k%05d-%s" % (i, "x" * 240) for i in range(4096)]
	s = connect()
	for i in range(1, 301):
	    send(s, {"op": "kv.wait", "id": i, "keys": keys, "timeout_ms": 60000})
	print("refused", stats(s).count(b"ENOBUFS") > 250)
	s.close()
	t = connect()
	for i in range(1000):
	    if b'"pending":0,' in stats(t):
	        break
	print("given back", rss() - before < 4096)
	EOF
	run worldrun -n 1 python3 "$DIR/waits.py"
	assert_success
	assert_line 'refused True'
	# AddressSanitizer's allocator keeps freed memory in quarantine on
	# purpose: there only the refusal tells.
	if ! ldd "$WORLDRUN" | grep -q libasan; then
		assert_line 'given back True'
	fi
}

@test "registry: mget of more keys than one answer's lengths fit in WORLD_MSG_MAX answers a page with next" {
	cat >"$DIR/rank.sh" <<-'EOF'
	keys=$(seq -f '"k%g"' 1 300 | paste -sd, -)
	lens=$(seq 300 | sed 's/.*/0/' | paste -sd, -)
	wr-regpoke hello send "{\"op\":\"kv.mset\",\"id\":1,\"keys\":[$keys],\"lens\":[$lens]}" read \
		send "{\"op\":\"kv.mget\",\"id\":2,\"keys\":[$keys]}" read | tail -n 1 |
		python3 -c 'import json, sys; r = json.loads(sys.stdin.read())["result"]; print(len(r["lens"]), r["next"])'
	EOF
	WORLD_MSG_MAX=4K run worldrun -n 1 sh "$DIR/rank.sh"
	assert_success
	assert_output '182 182'
}
