#!/usr/bin/env bats
load helpers

setup() {
	if ! command -v python3 >/dev/null; then
		skip "python3 is not installed"
	fi
	D=$BATS_TEST_TMPDIR
	mkdir "$D/rep"
	R=$D/rep/report.json
}

# check_report CODE: run python CODE with the report in r (a dict) and
# rank(i) returning r["ranks"][i]; CODE asserts. Shows the report when
# an assertion fails.
check_report() {
	run python3 -c "
import json, re, sys
r = json.load(open(sys.argv[1]))
def rank(i):
    return r['ranks'][i]
try:
$(echo "$1" | sed 's/^/    /')
except AssertionError:
    print(json.dumps(r, indent=1))
    raise" "$R"
	assert_success
}

@test "worldrun: --report writes the report of a successful job" {
	local before after
	before=$(date +%s)
	run -0 worldrun --report "$R" -l -n 3 sh -c 'echo "pid $$ job $WORLD_JOBID"'
	after=$(date +%s)
	for r in 0 1 2; do
		echo "$output" | sed -n "s/^$r: pid \\([0-9]*\\) job .*/\\1/p" >"$D/pid$r"
	done
	local jobid
	jobid=$(echo "$output" | sed -n 's/^0: pid [0-9]* job //p')
	assert_regex "$jobid" '^[0-9a-f]{12}$'
	check_report "
assert r['jobid'] == '$jobid'
assert re.fullmatch('[0-9a-f]{12}', r['jobid'])
assert r['status'] == 0
assert r['cause'] == 'success'
assert r.get('failed_rank') is None
assert len(r['ranks']) == 3
for i in range(3):
    x = rank(i)
    assert set(x) >= {'rank', 'host', 'pid', 'exit_code', 'signal', 'start', 'end', 'maxrss_kib', 'killed_by_worldrun'}, x
    assert x['rank'] == i
    assert x['host'] == '$(hostname)'
    assert x['pid'] == int(open('$D/pid%d' % i).read())
    assert x['exit_code'] == 0 and x['signal'] is None
    assert x['killed_by_worldrun'] is False
    assert isinstance(x['maxrss_kib'], int) and x['maxrss_kib'] > 0
    assert $before - 1 <= x['start'] <= x['end'] <= $after + 1, x
"
}

@test "worldrun: --report's jobid is the WORLD_JOBID the ranks saw" {
	run -0 worldrun --report "$R" -n 2 wr-env WORLD_JOBID
	local jobid=${lines[0]#WORLD_JOBID=}
	assert_regex "$jobid" '^[0-9a-f]{12}$'
	check_report "assert r['jobid'] == '$jobid'"
}

@test "worldrun: --report of a rank failure names the failed rank and the stopped ones" {
	# Rank 1 fails once the others run (see worldrun-exit-status.bats for
	# ranks stopped while still starting).
	run -3 worldrun --report "$R" -n 3 sh -c '
		if [ "$WORLD_RANK" = 1 ]; then
			i=0
			while [ ! -e "$0.0" ] || [ ! -e "$0.2" ]; do
				i=$((i + 1))
				[ "$i" -gt 1200 ] && exit 99
				sleep 0.05
			done
			exit 3
		fi
		touch "$0.$WORLD_RANK"
		exec wr-sleep 60' "$D/running"
	check_report "
assert r['status'] == 3
assert r['cause'] == 'rank-exited'
assert r['failed_rank'] == 1
assert rank(1)['exit_code'] == 3 and rank(1)['signal'] is None
assert rank(1)['killed_by_worldrun'] is False
for i in (0, 2):
    assert rank(i)['killed_by_worldrun'] is True, rank(i)
    assert rank(i)['exit_code'] is None and rank(i)['signal'] == 15, rank(i)
"
}

@test "worldrun: --report of a rank killed by a signal has exit_code null and the signal" {
	run -139 worldrun --report "$R" -n 2 sh -c '[ "$WORLD_RANK" = 0 ] && exec wr-kill 11; exec wr-sleep 60'
	check_report "
assert r['status'] == 139
assert r['cause'] == 'rank-killed'
assert r['failed_rank'] == 0
assert rank(0)['exit_code'] is None
assert rank(0)['signal'] == 11
assert rank(0)['killed_by_worldrun'] is False
assert rank(1)['killed_by_worldrun'] is True
"
}

@test "worldrun: --report gives each rank's own max RSS" {
	run -0 worldrun --report "$R" -n 2 sh -c '[ "$WORLD_RANK" = 0 ] && exec wr-alloc 64; exec wr-exit 0'
	check_report "
assert rank(0)['maxrss_kib'] >= 60000, rank(0)
assert 0 < rank(1)['maxrss_kib'] < 60000, rank(1)
"
}

@test "worldrun: --report's max RSS counts memory a rank really touched" {
	# The same check with python3 filling 64 MiB, which no compiler can
	# optimise away.
	run -0 worldrun --report "$R" -n 2 sh -c \
		'[ "$WORLD_RANK" = 1 ] && exec python3 -c "b = b\"x\" * (64 << 20)"; exec wr-exit 0'
	check_report "
assert rank(1)['maxrss_kib'] >= 65536, rank(1)
assert 0 < rank(0)['maxrss_kib'] < 60000, rank(0)
"
}

@test "worldrun: --report after --timeout says timeout" {
	run -124 worldrun --report "$R" --timeout 0.5 -n 2 wr-sleep 60
	check_report "
assert r['status'] == 124
assert r['cause'] == 'timeout'
assert r.get('failed_rank') is None
for i in range(2):
    assert rank(i)['killed_by_worldrun'] is True, rank(i)
    assert rank(i)['signal'] == 15, rank(i)
"
}

@test "worldrun: --report after SIGINT to worldrun says signal" {
	worldrun --report "$R" -n 2 sh -c 'echo $$ >"$0.$WORLD_RANK"; exec wr-sleep 60' "$D/pid" 3>&- &
	local wpid=$! rc=0
	wait_until 30 pids_in "$D/pid.0" 1
	wait_until 30 pids_in "$D/pid.1" 1
	kill -INT "$wpid"
	wait_job 60 "$wpid" || rc=$?
	assert_equal "$rc" 130
	check_report "
assert r['status'] == 130
assert r['cause'] == 'signal'
for i in range(2):
    assert rank(i)['pid'] == int(open('$D/pid.%d' % i).read())
    assert rank(i)['signal'] == 2, rank(i)
"
}

@test "worldrun: --report when the program is not found says not-found" {
	run -127 worldrun --report "$R" -n 2 wr-no-such-program
	[ -f "$R" ]
	check_report "
assert r['status'] == 127
assert r['cause'] == 'not-found'
assert re.fullmatch('[0-9a-f]{12}', r['jobid'])
"
}

@test "worldrun: --report when the program is not executable says not-executable" {
	printf '#!/bin/sh\n' >"$D/not-exec"
	chmod 644 "$D/not-exec"
	run -126 worldrun --report "$R" "$D/not-exec"
	[ -f "$R" ]
	check_report "
assert r['status'] == 126
assert r['cause'] == 'not-executable'
"
}

@test "worldrun: --report leaves no temporary file behind" {
	run -0 worldrun --report "$R" -n 4 wr-exit 0
	run -3 worldrun --report "$R" -n 4 sh -c '[ "$WORLD_RANK" = 2 ] && exit 3; exec wr-sleep 60'
	run -124 worldrun --report "$R" --timeout 0.3 wr-sleep 60
	assert_equal "$(ls -A "$D/rep")" report.json
	check_report "assert r['status'] == 124"
}

@test "worldrun: --report replaces the file by a rename, not by writing into it" {
	echo old >"$D/rep/other-link"
	ln "$D/rep/other-link" "$R"
	run -0 worldrun --report "$R" wr-exit 0
	# Written in place, the other name would show the new report too.
	assert_equal "$(cat "$D/rep/other-link")" old
	check_report "assert r['status'] == 0"
	assert_equal "$(ls -A "$D/rep" | sort | tr '\n' ' ')" "other-link report.json "
}

@test "worldrun: a --report path that goes away during the job is an error but keeps the job's status" {
	# An unwritable path known at the start is refused then (125); one
	# that the job itself removes can only fail at the end.
	mkdir "$D/gone"
	run --separate-stderr -3 worldrun --report "$D/gone/report.json" \
		sh -c 'rmdir "$1"; exit 3' sh "$D/gone"
	assert_regex "$stderr" "worldrun: .*$D/gone/report.json"
	[ ! -e "$D/gone" ]
	mkdir "$D/gone"
	run --separate-stderr -0 worldrun --report "$D/gone/report.json" -n 2 \
		sh -c '[ "$WORLD_RANK" = 1 ] || rmdir "$1"' sh "$D/gone"
	assert_equal "${#stderr_lines[@]}" 1
	assert_regex "${stderr_lines[0]}" "^worldrun: .*$D/gone/report.json"
}
