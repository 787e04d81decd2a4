#!/usr/bin/env bats
# --max-restarts: torchrun's restarts. When a rank fails, the whole job
# is stopped and started again, up to N times; each attempt is a new
# worldrun process with nothing of the last one left; --report lists
# every attempt.
load helpers

setup() {
	D=$BATS_TEST_TMPDIR
}

# flaky.sh: rank 1 fails with status 3 + its attempt while the attempt is
# below $OK; every rank prints what it sees.
flaky_sh() {
	cat >"$D/flaky.sh" <<-'SH'
	echo "rank $RANK attempt $TORCHELASTIC_RESTART_COUNT $WORLD_RESTART_COUNT of $TORCHELASTIC_MAX_RESTARTS job $WORLD_JOBID $TORCHELASTIC_RUN_ID"
	if [ "$RANK" = 1 ] && [ "$WORLD_RESTART_COUNT" -lt "${OK:-99}" ]; then
		exit $((3 + WORLD_RESTART_COUNT))
	fi
	SH
}

report_field() {
	python3 -c 'import json, sys; r = json.load(open(sys.argv[1]))
print(eval(sys.argv[2], {"r": r}))' "$D/r.json" "$1"
}

@test "restart: a rank that fails on attempts 0 and 1 and not on 2, with --max-restarts 2: status 0, three attempts" {
	flaky_sh
	OK=2 run -0 --separate-stderr worldrun --nproc-per-node 2 --max-restarts 2 --monitor-interval 0.1 \
		--report "$D/r.json" --no-python sh "$D/flaky.sh"
	jobid=$(report_field 'r["jobid"]')
	assert_line "rank 1 attempt 0 0 of 2 job $jobid $jobid"
	assert_line "rank 1 attempt 1 1 of 2 job $jobid $jobid"
	assert_line "rank 1 attempt 2 2 of 2 job $jobid $jobid"
	assert_line "rank 0 attempt 2 2 of 2 job $jobid $jobid"
	assert_equal "$(grep -c '^worldrun: restart' <<<"$stderr")" 2
	# torchrun's line about OMP_NUM_THREADS, once for the job.
	assert_equal "$(grep -c '^worldrun: OMP_NUM_THREADS=1' <<<"$stderr")" 1
	assert_equal "$(grep '^worldrun: restart 1' <<<"$stderr")" 'worldrun: restart 1 of 2: rank 1 exited (status 3)'
	assert_equal "$(grep '^worldrun: restart 2' <<<"$stderr")" 'worldrun: restart 2 of 2: rank 1 exited (status 4)'
	assert_equal "$(report_field '[(a["restart"], a["status"], a["cause"], a["failed_rank"]) for a in r["attempts"]]')" \
		"[(0, 3, 'rank-exited', 1), (1, 4, 'rank-exited', 1), (2, 0, 'success', None)]"
	assert_equal "$(report_field 'r["status"], r["cause"]')" "(0, 'success')"
}

@test "restart: with --max-restarts 1 the status is the last attempt's failure" {
	flaky_sh
	run -4 --separate-stderr worldrun -n 2 --max_restarts=1 --monitor-interval 0.1 \
		--report "$D/r.json" sh "$D/flaky.sh"
	assert_equal "$(grep -c '^worldrun: restart' <<<"$stderr")" 1
	assert_equal "$(report_field 'len(r["attempts"]), r["status"], r["failed_rank"]')" '(2, 4, 1)'
	run -3 --separate-stderr worldrun -n 2 sh "$D/flaky.sh"
	assert_equal "$(grep -c 'restart' <<<"$stderr")" 0
}

@test "restart: what is not a rank's failure is not restarted" {
	run -127 worldrun -n 2 --max-restarts 3 no-such-program-here
	assert_output 'worldrun: no-such-program-here: program not found in the ranks'"'"' PATH'
	run -124 --separate-stderr worldrun -n 2 --max-restarts 3 --timeout 1 sleep 30
	assert_equal "$(grep -c 'restart' <<<"$stderr")" 0
	run -125 worldrun --max-restarts 1001 true
	assert_output 'worldrun: --max-restarts 1001: not a number of restarts (0 to 1000) (see worldrun --help)'
}

@test "restart: nothing of an attempt is left when the next starts: processes, job directory, /dev/shm" {
	world_python
	cat >"$D/left.py" <<-'PY'
	import os, sys, time, world
	d, rank, n = sys.argv[1], int(os.environ["RANK"]), int(os.environ["WORLD_RESTART_COUNT"])
	w = world.World()
	g = w.create_collective_group([0, 1])
	g.barrier()
	if n > 0 and rank == 0:
	    gone = []
	    for line in open(f"{d}/seen.{n - 1}"):
	        kind, what = line.split()
	        if kind == "pid":
	            try:
	                os.kill(int(what), 0)
	                gone.append(f"pid {what} still runs")
	            except ProcessLookupError:
	                pass
	        elif os.path.exists(what):
	            gone.append(f"{what} is still there")
	    print(f"attempt {n}: {gone or 'nothing left'}", flush=True)
	with open(f"{d}/seen.{n}", "a") as f:
	    f.write(f"pid {os.getpid()}\ndir {os.environ['WORLD_JOBDIR']}\n")
	    f.writelines(f"shm /dev/shm/{e}\n" for e in os.listdir("/dev/shm")
	                 if e not in open(f"{d}/shm.before").read().split())
	g.barrier()
	if rank == 1 and n < 2:
	    os._exit(3)
	time.sleep(0.5 if n == 2 else 60)
	PY
	ls /dev/shm >"$D/shm.before"
	run -0 --separate-stderr worldrun -n 2 --max-restarts 2 --monitor-interval 0.1 "${PY[@]}" "$D/left.py" "$D"
	assert_line 'attempt 1: nothing left'
	assert_line 'attempt 2: nothing left'
	run grep -c '^shm ' "$D/seen.0"
	refute_output 0
}

@test "restart: a rank that fails at once every time waits a backoff that doubles" {
	run -3 --separate-stderr worldrun -n 1 --max-restarts 3 --monitor-interval 0.3 \
		--report "$D/r.json" sh -c 'exit 3'
	# Each attempt starts at least 0.3, 0.6 and 1.2 s after the last one did.
	run report_field 'all(b["start"] - a["start"] >= 0.3 * 2 ** i for i, (a, b) in enumerate(zip(r["attempts"], r["attempts"][1:])))'
	assert_output True
}

@test "restart: SIGINT during attempt 1 stops it and is never restarted: 130" {
	worldrun -n 2 --max-restarts 3 --monitor-interval 0.1 sh -c \
		'if [ "$WORLD_RESTART_COUNT" = 0 ]; then [ "$RANK" = 1 ] && exit 3; sleep 60; fi
		 touch "'"$D"'/running.$RANK"; exec sleep 60' >"$D/out" 2>&1 &
	pid=$!
	wait_until 20 test -e "$D/running.1"
	kill -INT "$pid"
	rc=0
	wait "$pid" || rc=$?
	assert_equal "$rc" 130
	run grep -c 'worldrun: restart' "$D/out"
	assert_output 1
}

@test "restart: SIGINT while worldrun waits to restart ends it: 130, and no attempt starts" {
	worldrun -n 1 --max-restarts 3 --monitor-interval 30 sh -c \
		'touch "'"$D"'/attempt.$WORLD_RESTART_COUNT"; exit 3' >"$D/out" 2>&1 &
	pid=$!
	wait_until 20 grep -q '^worldrun: restart 1 of 3' "$D/out"
	kill -INT "$pid"
	rc=0
	wait "$pid" || rc=$?
	assert_equal "$rc" 130
	assert [ ! -e "$D/attempt.1" ]
}

@test "restart: a remote rank's failure restarts the job over its hosts" {
	flaky_sh
	OK=1 run -0 --separate-stderr worldrun -H node-a:1,node-b:1 --rsh wr-rsh --max-restarts 1 \
		--monitor-interval 0.1 sh "$D/flaky.sh"
	assert_line --partial 'rank 1 attempt 1 1 of 1 job'
	assert_equal "$(grep '^worldrun: restart' <<<"$stderr")" 'worldrun: restart 1 of 1: rank 1 exited (status 3)'
}

@test "restart: WORLD_RESTART_FD that worldrun did not set is refused" {
	WORLD_RESTART_FD=0 run -125 worldrun true
	assert_output 'worldrun: WORLD_RESTART_FD=0: not the record of an earlier attempt of this job (worldrun sets it for itself)'
	exec 7<"$D"
	WORLD_RESTART_FD=7 run -125 worldrun true
	assert_output 'worldrun: WORLD_RESTART_FD=7: not the record of an earlier attempt of this job (worldrun sets it for itself)'
	# A record of the right shape, in a file that is not worldrun's memfd.
	echo '{"count": 1, "max": 1, "jobid": "0123456789ab", "attempts": []}' >"$D/rec"
	exec 8<"$D/rec"
	WORLD_RESTART_FD=8 run -125 worldrun true
	assert_output 'worldrun: WORLD_RESTART_FD=8: not the record of an earlier attempt of this job (worldrun sets it for itself)'
}

@test "restart: SIGINT while the failed attempt's ranks are still stopping hurries the stop, and nothing restarts" {
	# Rank 1 fails only once rank 0 has its trap: a TERM before it would
	# end rank 0 at once, and the attempt, which would then restart.
	worldrun -n 2 --max-restarts 3 --monitor-interval 0.1 --kill-grace 20 sh -c \
		'[ "$WORLD_RESTART_COUNT" = 0 ] || touch "'"$D"'/restarted"
		 if [ "$RANK" = 1 ]; then
			i=0
			while [ ! -e "'"$D"'/trapped" ] && [ "$i" -lt 400 ]; do sleep 0.05; i=$((i + 1)); done
			exit 3
		 fi
		 trap "touch '"$D"'/termed" TERM; touch "'"$D"'/trapped"
		 while :; do sleep 0.1; done' >"$D/out" 2>&1 &
	pid=$!
	wait_until 20 test -e "$D/termed"
	kill -INT "$pid"
	rc=0
	wait "$pid" || rc=$?
	# The failure decided the job before the signal came: its status.
	assert_equal "$rc" 3
	assert [ ! -e "$D/restarted" ]
	run grep -c 'worldrun: restart' "$D/out"
	assert_output 0
}

@test "restart: a DDP script that checkpoints resumes after a rank dies, and ends as a run that did not fail" {
	needs_torch
	run -0 --separate-stderr worldrun --nproc-per-node 2 "$SRCDIR/tests/cli/ddp_resume.py" "$D/a.ckpt"
	want=$(grep '^final' <<<"$output")
	FAIL_AT=3 run -0 --separate-stderr worldrun --nproc-per-node 2 --max-restarts 1 \
		--monitor-interval 0.1 "$SRCDIR/tests/cli/ddp_resume.py" "$D/b.ckpt"
	assert_line 'rank 1 resumes at step 3'
	assert_equal "$(grep '^worldrun: restart' <<<"$stderr")" 'worldrun: restart 1 of 1: rank 1 exited (status 3)'
	assert_line "$want"
}
