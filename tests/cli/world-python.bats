#!/usr/bin/env bats
load helpers

# `import world` as Machin's users run it: what a rank's Python program
# does to the job. The ranks' default wait is 300 s and --timeout 100
# keeps a hang bounded: a job that waits for its timeout ends 124, so
# the statuses below tell an at-once ending from a late one.

setup() {
	world_python
	DIR=$BATS_TEST_TMPDIR
}

@test "world (python): an uncaught exception in rank 1 ends the job at once, status 1, naming rank 1" {
	cat >"$DIR/raise.py" <<'PY'
import world
w = world.World()
if w.rank == 1:
    raise ValueError("boom")
w.barrier("b")
PY
	run --separate-stderr -1 "${PY[@]:0:${#PY[@]}-1}" worldrun --timeout 100 -n 3 "$PYTHON" "$DIR/raise.py"
	assert_regex "$stderr" 'ValueError: boom'
	assert_regex "$stderr" 'worldrun: rank 1 \(pid [0-9]+ on [^)]+\) failed: uncaught ValueError: boom'
	assert_regex "$stderr" 'worldrun: rank 1 \(pid [0-9]+ on [^)]+\) exited with status 1 after [0-9.]+ s'
	refute_regex "$stderr" 'rank [02] \(pid'
}

@test "world (python): an uncaught exception while peers wait on the rank tells them why" {
	cat >"$DIR/raise.py" <<'PY'
import signal, world
signal.signal(signal.SIGTERM, signal.SIG_IGN)  # see what the peer gets
w = world.World()
g = w.create_rpc_group("g", ["0", "1"])
if w.rank == 0:
    g.barrier()
    raise KeyError("nope")
try:
    g.barrier()
    g.barrier()
except world.PeerDeadError as e:
    print(f"rank 1: {type(e).__name__}: {e}", flush=True)
PY
	run --separate-stderr -1 "${PY[@]:0:${#PY[@]}-1}" worldrun --timeout 100 -n 2 "$PYTHON" "$DIR/raise.py"
	assert_line "rank 1: PeerDeadError: rank 0 failed (uncaught KeyError: 'nope') before entering barrier \"group.g\""
	assert_regex "$stderr" 'worldrun: rank 0 \(pid [0-9]+ on [^)]+\) exited with status 1 after'
	refute_regex "$stderr" 'rank 1 \(pid'
}

@test "world (python): a rank that catches its exception and stops ends well" {
	cat >"$DIR/caught.py" <<'PY'
import world
w = world.World()
try:
    raise ValueError("handled")
except ValueError:
    pass
w.barrier("b")
w.stop()
print(f"rank {w.rank} done")
PY
	run -0 "${PY[@]:0:${#PY[@]}-1}" worldrun --timeout 100 -n 2 "$PYTHON" "$DIR/caught.py"
	assert_line "rank 0 done"
	assert_line "rank 1 done"
	refute_output --partial failed
}
