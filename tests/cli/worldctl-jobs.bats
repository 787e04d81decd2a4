#!/usr/bin/env bats
# Jobs seen from any shell of the same user: worldrun lists each running
# job in the user's runtime directory, worldctl jobs shows them, and
# worldctl --job JOBID (or status JOBID) reaches one as an observer that
# may only read. Every test has a runtime directory of its own: TMPDIR
# is the test's, XDG_RUNTIME_DIR unset unless the test sets it.
load helpers

setup() {
	DIR=$BATS_TEST_TMPDIR
	export TMPDIR=$DIR/tmp
	mkdir -p "$TMPDIR"
	unset XDG_RUNTIME_DIR
	RUNDIR=$TMPDIR/worldrun-$(id -u)
	wpid=
	shared=
}

teardown() {
	if [ -n "$wpid" ] && alive "$wpid"; then
		kill -KILL "$wpid" 2>/dev/null || true
	fi
	if [ -n "$shared" ]; then
		wait_until 10 no_entries "$shared/worldrun-$(id -u)" || true
		rm -rf "$shared"
	fi
	show_failure
}

# start_job ARGS...: worldrun ARGS in the background, pid in wpid.
start_job() {
	worldrun "$@" >"$DIR/out" 2>"$DIR/err" 3>&- &
	wpid=$!
}

# listed: worldctl jobs lists one job; its id goes to $DIR/id.
listed() {
	worldctl jobs >"$DIR/jobs" 2>/dev/null &&
		awk 'NR == 2 { print $1 }' "$DIR/jobs" >"$DIR/id" && [ -s "$DIR/id" ]
}

# start_listed ARGS...: start_job ARGS, wait until it is listed; its id in $id.
start_listed() {
	start_job "$@"
	wait_until 20 listed
	id=$(cat "$DIR/id")
}

# no_entries RUNDIR: RUNDIR holds no job's entry.
no_entries() {
	[ -z "$(ls -A "$1" 2>/dev/null)" ]
}

# as_nobody COMMAND...: COMMAND as user nobody, without root's groups.
as_nobody() {
	setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"
}

@test "worldctl jobs: lists a job running in the background with its id, ranks, state and command" {
	start_listed -n 2 wr-sleep 60
	[[ "$id" =~ ^[0-9a-f]{12}$ ]]
	run -0 worldctl jobs
	assert_equal "${#lines[@]}" 2
	assert_line --index 0 --regexp '^JOBID +RANKS +AGE +STATE +COMMAND$'
	assert_line --index 1 --regexp "^$id +2 +[0-9]+s +running +wr-sleep 60$"
}

@test "worldctl jobs --json: an array of objects that python's json reads" {
	start_listed -n 3 wr-sleep 60
	run -0 sh -c 'worldctl jobs --json | python3 -c "
import json, sys
jobs = json.load(sys.stdin)
assert len(jobs) == 1, jobs
j = jobs[0]
print(j[\"jobid\"], j[\"ranks\"], j[\"state\"], j[\"argv\"], j[\"command\"])
assert \"secret\" not in j and \"registry\" not in j
"'
	assert_output "$id 3 running ['wr-sleep', '60'] wr-sleep 60"
}

@test "worldctl jobs: prints nothing and exits 0 when no job runs, [] with --json" {
	run --separate-stderr -0 worldctl jobs
	assert_output ''
	assert_equal "$stderr" ''
	run -0 worldctl jobs --json
	assert_output '[]'
}

@test "worldrun: the job's entry is a 0600 file in a 0700 directory of ours, with what reaches the job" {
	start_listed -n 2 wr-sleep 60
	run -0 stat -c '%a %U' "$RUNDIR"
	assert_output "700 $(id -un)"
	run -0 stat -c '%a %U %F' "$RUNDIR/$id"
	assert_output "600 $(id -un) regular file"
	run -0 python3 -c 'import json, sys; e = json.load(open(sys.argv[1]))
print(e["jobid"], e["ranks"], e["pid"], e["registry"].startswith("unix:"), len(e["secret"]))' \
		"$RUNDIR/$id"
	assert_output "$id 2 $wpid True 32"
	run -0 ls -A "$RUNDIR"
	assert_output "$id"
}

@test "worldrun: the entry is gone once the job ends normally" {
	start_listed -n 2 sh -c 'while [ ! -e "$0/go" ]; do sleep 0.05; done' "$DIR"
	touch "$DIR/go"
	finish_job 30
	assert_equal "$wstatus" 0
	run -0 ls -A "$RUNDIR"
	assert_output ''
	run -0 worldctl jobs
	assert_output ''
}

@test "worldrun: the guardian removes the entry after a kill -9 of worldrun" {
	start_listed -n 2 wr-sleep 60
	kill -KILL "$wpid"
	finish_job 10
	wait_until 20 no_entries "$RUNDIR"
	run -0 worldctl jobs
	assert_output ''
}

@test "worldrun: the entry is gone after --timeout" {
	start_listed -n 2 --timeout 5 wr-sleep 60
	finish_job 30
	assert_equal "$wstatus" 124
	run -0 ls -A "$RUNDIR"
	assert_output ''
}

@test "worldrun: lists the job in \$XDG_RUNTIME_DIR/worldrun when XDG_RUNTIME_DIR is ours" {
	export XDG_RUNTIME_DIR=$DIR/xdg
	mkdir -m 0700 "$XDG_RUNTIME_DIR"
	start_listed -n 2 wr-sleep 60
	run -0 ls -A "$XDG_RUNTIME_DIR/worldrun"
	assert_output "$id"
	run -0 stat -c %a "$XDG_RUNTIME_DIR/worldrun"
	assert_output 700
	assert [ ! -e "$RUNDIR" ]
}

# bad_xdg: the job is listed in TMPDIR's directory, not in $XDG_RUNTIME_DIR.
bad_xdg() {
	start_listed -n 2 wr-sleep 60
	run -0 ls -A "$RUNDIR"
	assert_output "$id"
	assert [ ! -e "$XDG_RUNTIME_DIR/worldrun" ]
	assert [ ! -s "$DIR/err" ]
}

@test "worldrun: a world-writable XDG_RUNTIME_DIR is not used" {
	export XDG_RUNTIME_DIR=$DIR/xdg
	mkdir "$XDG_RUNTIME_DIR"
	chmod 0777 "$XDG_RUNTIME_DIR"
	bad_xdg
}

@test "worldrun: an XDG_RUNTIME_DIR that is a symbolic link is not used" {
	mkdir -m 0700 "$DIR/real"
	ln -s "$DIR/real" "$DIR/xdg"
	export XDG_RUNTIME_DIR=$DIR/xdg
	bad_xdg
	assert [ ! -e "$DIR/real/worldrun" ]
}

@test "worldrun: an XDG_RUNTIME_DIR of another user is not used" {
	[ "$(id -u)" = 0 ] || skip "needs root, to give a directory to nobody"
	export XDG_RUNTIME_DIR=$DIR/xdg
	mkdir -m 0700 "$XDG_RUNTIME_DIR"
	chown nobody "$XDG_RUNTIME_DIR"
	bad_xdg
}

@test "worldrun: a runtime directory open to others is refused in one line, and the job still runs" {
	mkdir -m 0755 "$RUNDIR"
	run --separate-stderr -0 worldrun -n 2 wr-exit 0
	assert_equal "$(echo "$stderr" | grep -c .)" 1
	assert_equal "${stderr#worldrun: not listing job ????????????}" " in $RUNDIR (worldctl jobs will not show it): group or others may access it (it must be 0700)"
	run -125 worldctl jobs
	assert_output "worldctl: jobs: $RUNDIR: not used: group or others may access it (it must be 0700)"
}

@test "worldrun: a runtime directory that is a symbolic link is refused, its target left alone" {
	mkdir -m 0700 "$DIR/elsewhere"
	ln -s "$DIR/elsewhere" "$RUNDIR"
	run --separate-stderr -0 worldrun -n 1 wr-exit 0
	assert_equal "$(echo "$stderr" | grep -c .)" 1
	assert_equal "${stderr##*: }" 'it is a symbolic link'
	run -0 ls -A "$DIR/elsewhere"
	assert_output ''
}

@test "worldctl: another user sees no job, cannot read the entry and cannot connect" {
	[ "$(id -u)" = 0 ] || skip "needs root, to run as nobody"
	# A TMPDIR that nobody may enter: only the modes of what is ours stop it.
	shared=$(mktemp -d /tmp/worldctl-jobs.XXXXXX)
	chmod 0755 "$shared"
	export TMPDIR=$shared
	RUNDIR=$shared/worldrun-$(id -u)
	# nobody runs copies of the tools from there: the build tree may sit
	# under a directory only we may enter (a CI's mktemp -d).
	mkdir "$shared/bin"
	cp "$WORLDCTL" "$HELPERS/wr-regpoke" "$shared/bin/"
	chmod -R a+rX "$shared/bin"
	start_listed -n 2 wr-sleep 60
	run -0 as_nobody "$shared/bin/worldctl" jobs
	assert_output ''
	run -1 as_nobody cat "$RUNDIR/$id"
	assert_output --partial 'Permission denied'
	run -2 as_nobody ls "$RUNDIR"
	assert_output --partial 'Permission denied'
	run -125 as_nobody "$shared/bin/worldctl" --job "$id" ranks
	assert_output "worldctl: job $id: no such job of this user (see worldctl jobs)"
	run -125 as_nobody "$shared/bin/worldctl" status "$id"
	assert_output "worldctl: job $id: no such job of this user (see worldctl jobs)"
	# The registry's address is no secret; without the secret it is shut,
	# and to another user's process on this machine at once.
	reg=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["registry"])' \
		"$RUNDIR/$id")
	run -1 as_nobody env WORLD_REGISTRY="$reg" "$shared/bin/wr-regpoke" hello observer -1 0
	assert_output --partial 'Permission denied'
	# Closed before it reads a byte: the hello's write may fail, or its
	# answer is the end of the connection; never an answer.
	run as_nobody env WORLD_REGISTRY="$reg" "$shared/bin/wr-regpoke" -t hello observer -1 \
		00000000000000000000000000000000
	[ "$status" -ne 0 ] || [ "$output" = EOF ]
	refute_output --partial '"error"'
	run -0 worldctl --job "$id" ranks
	assert_line '0 up'
}

@test "worldctl --job: an unknown JOBID is one line and status 125" {
	start_listed -n 1 wr-sleep 60
	run --separate-stderr -125 worldctl --job fffffffffffff ranks
	assert_equal "$stderr" 'worldctl: job fffffffffffff: no such job of this user (see worldctl jobs)'
	run --separate-stderr -125 worldctl --job xyz ranks
	assert_equal "$(echo "$stderr" | grep -c .)" 1
	run --separate-stderr -125 worldctl status nothex
	assert_equal "$stderr" 'worldctl: job nothex: no such job of this user (see worldctl jobs)'
}

@test "worldctl --job: an ambiguous prefix is one line and status 125; a unique one works" {
	local twin

	start_listed -n 2 wr-sleep 60
	# A second entry that shares the first two digits of the id.
	twin=${id:0:2}$(printf '%s' "${id:2}" | tr '0-9a-f' '1-9a-f0')
	(umask 077 && echo '{}' >"$RUNDIR/$twin")
	run --separate-stderr -125 worldctl --job "${id:0:2}" ranks
	assert_equal "$stderr" "worldctl: job ${id:0:2}: ambiguous: it starts $(printf '%s\n' "$id" "$twin" | sort | head -1) and $(printf '%s\n' "$id" "$twin" | sort | tail -1) (give more of the id)"
	run -0 worldctl --job "${id:0:3}" ranks
	assert_output "$(printf '0 up\n1 up')"
	run -0 worldctl --job "$id" ranks
	assert_line '1 up'
}

@test "worldctl --job: an observer reads the ranks and the keys, and may not change anything" {
	start_listed -n 2 sh -c '[ "$WORLD_RANK" = 0 ] && worldctl kv set color blue
		exec wr-sleep 60'
	wait_until 20 worldctl --job "$id" kv get color
	run -0 worldctl --job "$id" kv get color
	assert_output blue
	run -0 worldctl --job "$id" kv wait color --timeout 1
	run -0 worldctl --job "$id" ranks
	assert_output "$(printf '0 up\n1 up')"
	run -2 worldctl --job "$id" kv set color red
	assert_output 'worldctl: kv set acts for a rank: it does not run with --job (see worldctl --help)'
	run -2 worldctl --job "$id" barrier
	run -2 worldctl --job "$id" rank
	run -0 worldctl --job "$id" kv get color
	assert_output blue
}

# poke_job ID STEP...: wr-regpoke STEP... against job ID, with its secret.
poke_job() {
	local reg secret

	reg=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["registry"])' "$RUNDIR/$1")
	secret=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["secret"])' "$RUNDIR/$1")
	shift
	WORLD_REGISTRY=$reg WORLD_SECRET=$secret wr-regpoke "$@"
}

@test "registry: an observer's hello acts for no rank, and only reads are answered" {
	start_listed -n 2 wr-sleep 60
	run -0 poke_job "$id" hello observer -1 \
		send '{"op":"ranks","id":1}' read \
		send '{"op":"stats","id":2}' read \
		send '{"op":"kv.get","id":3,"key":"k"}' read \
		blob '{"op":"kv.set","id":4,"key":"k"}' 78 read \
		send '{"op":"barrier","id":5,"name":"b"}' read \
		send '{"op":"goodbye","id":6}' read \
		send '{"op":"lut.claim","id":7,"table":"values","group":"g","key":"k"}' read
	assert_line --index 0 --partial '"rank":-1'
	assert_line --index 1 --partial '"ranks":[{"rank":0,"state":"up"}'
	assert_line --index 2 --partial '"role":"observer"'
	assert_line --index 3 --partial '"name":"ENOENT"'
	assert_line --index 4 --partial 'an observer may only read'
	assert_line --index 5 --partial 'an observer may only read'
	assert_line --index 6 --partial 'an observer may only read'
	assert_line --index 7 --partial 'an observer may only read'
	run -0 poke_job "$id" hello observer 0
	assert_output --partial 'an observer acts for no rank'
	run -0 worldctl --job "$id" ranks
	assert_output "$(printf '0 up\n1 up')"
}

@test "worldctl jobs: an entry whose worldrun is gone is listed once as stale, then removed" {
	local dead

	dead=$(sh -c 'echo $$')
	mkdir -m 0700 "$RUNDIR"
	(umask 077 && printf '%s\n' '{"jobid":"0123456789ab","pid":'"$dead"',"ranks":4,"host":"h","start":1,"registry":"unix:/nonexistent","secret":"s","msg_max":1048576,"blob_max":1024,"program":"/bin/true","argv":["true"],"command":"true"}' >"$RUNDIR/0123456789ab")
	run -0 worldctl jobs
	assert_line --index 1 --regexp '^0123456789ab +4 +[0-9]+d[0-9]+h +stale +true$'
	assert [ ! -e "$RUNDIR/0123456789ab" ]
	run -0 worldctl jobs
	assert_output ''
}

@test "worldctl jobs: an entry that is not a 0600 file of ours is not listed" {
	mkdir -m 0700 "$RUNDIR"
	printf '{}' >"$RUNDIR/0123456789ab"
	chmod 0644 "$RUNDIR/0123456789ab"
	ln -s /etc/passwd "$RUNDIR/ba9876543210"
	run -0 worldctl jobs
	assert_output ''
	run -125 worldctl --job 01 ranks
	assert_output --partial 'unable to read its entry'
}

@test "worldctl status: outside a job and without a JOBID, it says so in one line (125)" {
	run --separate-stderr -125 env -u WORLD_REGISTRY worldctl status
	assert_equal "$stderr" 'worldctl: not inside a job: WORLD_REGISTRY is not set (run worldctl in a rank of worldrun, or name a job with --job JOBID)'
}

@test "worldctl status JOBID: the hang report of a job, from another shell" {
	start_listed -n 2 wr-sleep 60
	run --separate-stderr -0 worldctl status "${id:0:4}"
	assert_line --index 0 --regexp "^job $id after [0-9.]+ s: 2 ranks running\$"
	assert_line --index 1 --regexp '^  rank 0 not in any libworld wait \(pid [0-9]+, sleeping \(S\), [0-9.]+ s CPU\)$'
	assert_equal "$stderr" ""
	run --separate-stderr -0 worldctl --job "$id" status --json
	run /usr/bin/python3 -c '
import json, sys
r = json.loads(sys.argv[1])
print(r["jobid"], len(r["ranks"]), r["ranks"][1]["state"], r["ranks"][1]["proc"]["state"])' "$output"
	assert_output "$id 2 running S"
}

@test "worldctl status: inside a rank, the report of its own job, naming the barrier it waits in" {
	start_job -n 3 sh -c 'case "$WORLD_RANK" in
		0) worldctl barrier b --timeout 60;;
		1) i=0; until worldctl status >"$0/s" && grep -q "rank 0 in barrier" "$0/s" &&
			grep -q "rank 2 in kv wait" "$0/s"; do
			i=$((i + 1)); [ "$i" -lt 200 ] || exit 9; sleep 0.05; done
		   mv "$0/s" "$0/status"; worldctl barrier b --timeout 60;;
		2) worldctl kv wait never --timeout 60;; esac' "$DIR"
	wait_until 30 test -s "$DIR/status"
	run cat "$DIR/status"
	assert_line --regexp '^  rank 0 in barrier "b" via worldctl \(since [0-9.]+ s\), waiting for ranks 1-2$'
	assert_line --regexp '^  rank 2 in kv wait "never" via worldctl \(since [0-9.]+ s\)$'
	kill -TERM "$wpid"
	finish_job 30
}

@test "completion: offers this user's job ids after status and --job" {
	start_listed -n 1 wr-sleep 60
	for words in 'status ""' '--job ""' "status ${id:0:2}"; do
		run -0 bash -c 'source "$0" || exit 99
			eval "COMP_WORDS=(worldctl $1)"
			COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
			_worldctl
			printf "%s\n" "${COMPREPLY[@]}"' \
			"$SRCDIR/share/completions/bash/worldctl" "$words"
		assert_output "$id"
	done
}
