#!/usr/bin/env bats
load helpers

# `import world` as Machin's users run it: what a rank's Python program
# does to the job. The ranks' default wait is 300 s and --timeout 100
# keeps a hang bounded: a job that waits for its timeout ends 124, so
# the statuses below tell an at-once ending from a late one.

setup() {
	world_python
	DIR=$BATS_TEST_TMPDIR
	# A runtime directory of the test's own: the secret files of worlds
	# without worldrun whose rank 0 the tests kill stay in it.
	mkdir -m 0700 "$DIR/run"
	export XDG_RUNTIME_DIR=$DIR/run
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

@test "world (python): a rank that calls os._exit(3) while peers wait for it fails the job as itself, status 3" {
	cat >"$DIR/exit.py" <<'PY'
import os, world
w = world.World()
if w.rank == 1:
    os._exit(3)
w.barrier("b")
PY
	run --separate-stderr -3 "${PY[@]:0:${#PY[@]}-1}" worldrun --timeout 100 -n 3 "$PYTHON" "$DIR/exit.py"
	assert_regex "$stderr" 'worldrun: rank 1 \(pid [0-9]+ on [^)]+\) exited with status 3 after [0-9.]+ s'
	refute_regex "$stderr" 'rank [02] \(pid'
}

@test "world (python): a rank that calls sys.exit(3) while peers wait for it fails the job as itself, status 3" {
	cat >"$DIR/exit.py" <<'PY'
import sys, world
w = world.World()
if w.rank == 1:
    sys.exit(3)
w.barrier("b")
PY
	run --separate-stderr -3 "${PY[@]:0:${#PY[@]}-1}" worldrun --timeout 100 -n 3 "$PYTHON" "$DIR/exit.py"
	assert_regex "$stderr" 'worldrun: rank 1 \(pid [0-9]+ on [^)]+\) exited with status 3 after [0-9.]+ s'
	refute_regex "$stderr" 'rank [02] \(pid'
}

@test "world (python): a rank that stops and ends well while a peer waits for it: the peer's failure stands, naming it" {
	cat >"$DIR/exit.py" <<'PY'
import world
w = world.World()
if w.rank == 1:
    w.stop()
    raise SystemExit(0)
w.barrier("b")
PY
	run --separate-stderr -1 "${PY[@]:0:${#PY[@]}-1}" worldrun --timeout 100 -n 2 "$PYTHON" "$DIR/exit.py"
	assert_regex "$stderr" 'worldrun: rank 0 \(pid [0-9]+ on [^)]+\) failed: uncaught PeerDeadError: rank 1 is stopping \(world_stop\); it will not enter barrier "b"'
	refute_regex "$stderr" 'rank 1 \(pid'
}

@test "world (python): a rank that stops with status 3 but lingers past 2 s leaves its peer's failure standing" {
	cat >"$DIR/exit.py" <<'PY'
import atexit, os, sys, time
if os.environ["WORLD_RANK"] == "1":
    atexit.register(time.sleep, 60)  # runs after World's own stop
import world
w = world.World()
if w.rank == 1:
    sys.exit(3)
w.barrier("b")
PY
	run --separate-stderr -1 "${PY[@]:0:${#PY[@]}-1}" worldrun --timeout 100 -n 2 "$PYTHON" "$DIR/exit.py"
	assert_regex "$stderr" 'worldrun: rank 0 \(pid [0-9]+ on [^)]+\) failed: uncaught PeerDeadError: rank 1 is stopping'
	assert_regex "$stderr" 'worldrun: stopped 1 other rank'
}

@test "world (python): a long reason is cut on a character's boundary" {
	cat >"$DIR/long.py" <<'PY'
import world
w = world.World()
if w.rank == 1:
    raise ValueError("é" * 150)
w.barrier("b")
PY
	run --separate-stderr -1 "${PY[@]:0:${#PY[@]}-1}" worldrun --timeout 100 -n 2 "$PYTHON" "$DIR/long.py"
	assert_regex "$stderr" 'worldrun: rank 1 \(pid [0-9]+ on [^)]+\) failed: uncaught ValueError: (é){80,}'$'\n'
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

@test "world (python): processes a program starts itself, with their own ranks, form a world" {
	spawned <<'PY'
import world
def main(rank, port):
    w = world.World(str(rank), rank=rank, world_size=3,
                    rpc_init_method=f"tcp://localhost:{port}")
    g = w.create_rpc_group("g", ["0", "1", "2"])
    if rank == 0:
        g.register("add", lambda a, b: a + b)
    g.barrier()
    out = (w.rank, w.size, len(w.jobid), g.registered_sync("add", args=(rank, 10)))
    w.stop()
    return out
PY
	run -0 env WORLD_WAIT_TIMEOUT=60 "${PY[@]}" "$DIR/prog.py"
	assert_line "rank 0: (0, 3, 12, 10)"
	assert_line "rank 1: (1, 3, 12, 11)"
	assert_line "rank 2: (2, 3, 12, 12)"
	# Under worldrun -n 1 they form a world of their own, as without it.
	run -0 env WORLD_WAIT_TIMEOUT=60 "${PY[@]:0:${#PY[@]}-1}" worldrun --timeout 100 -n 1 "$PYTHON" "$DIR/prog.py"
	assert_line "rank 2: (2, 3, 12, 12)"
}

@test "world (python): in such a world, a peer gone fails the waits for it; rank 0 gone ends the world" {
	spawned <<'PY'
import os, world
def main(rank, port):
    w = world.World(str(rank), rank=rank, world_size=3,
                    rpc_init_method=f"tcp://localhost:{port}")
    if rank < 2:
        g = w.create_rpc_group("g", ["0", "1"])
    w.barrier("a")
    if rank == 2:
        os._exit(0)
    try:
        w.barrier("b")
    except world.PeerDeadError as e:
        out = f"{type(e).__name__} {e.rank}"
    if rank == 0:
        g.barrier(timeout=60)
        os._exit(0)
    try:
        # Rank 0 may be gone before the first is answered.
        g.barrier(timeout=60)
        g.barrier(timeout=60)
    except world.RegistryError as e:
        out += f"; {type(e).__name__}: {e}"
    return out
PY
	run env WORLD_WAIT_TIMEOUT=60 "${PY[@]}" "$DIR/prog.py"
	assert_line "rank 1: PeerDeadError 2; RegistryError: rank 0, which hosted this world's registry, is gone"
	assert_line "rank 0: none"
	assert_line "rank 2: none"
}

@test "world (python): in such a world each rank's socket is in a private directory, gone at its stop or, after a crash, at the next world's start" {
	spawned <<'PY'
import os, world
def main(rank, port):
    w = world.World(str(rank), rank=rank, world_size=3,
                    rpc_init_method=f"tcp://localhost:{port}")
    run = os.environ["XDG_RUNTIME_DIR"] + "/worldrun"
    mine = [d for d in os.listdir(run) if d.startswith(f"rank-{os.getpid()}-")]
    out = f"{len(mine)} {os.listdir(f'{run}/{mine[0]}')} {oct(os.stat(f'{run}/{mine[0]}').st_mode & 0o777)}"
    w.barrier("a")
    if rank == 2:
        os._exit(0)
    try:
        w.stop()
    except world.WorldError:
        pass
    return out
PY
	run -0 env WORLD_WAIT_TIMEOUT=60 "${PY[@]}" "$DIR/prog.py"
	assert_line "rank 0: 1 ['rank.0'] 0o700"
	assert_line "rank 1: 1 ['rank.1'] 0o700"
	left=$(cd "$XDG_RUNTIME_DIR/worldrun" && echo rank-*)
	# Only the directory of the rank that ended without its stop is left.
	assert_equal "$(wc -w <<<"$left")" 1
	run -0 env WORLD_WAIT_TIMEOUT=60 "${PY[@]}" "$DIR/prog.py"
	assert_line "rank 1: 1 ['rank.1'] 0o700"
	assert [ ! -e "$XDG_RUNTIME_DIR/worldrun/$left" ]
	assert_equal "$(cd "$XDG_RUNTIME_DIR/worldrun" && ls -d rank-* | wc -l)" 1
}

@test "world (python): another user's process cannot join such a world" {
	[ "$(id -u)" = 0 ] || skip "needs root, to run as nobody"
	# nobody runs a copy of the package: the build tree may sit under a
	# directory only we may enter (a CI's mktemp -d).
	shared=$(mktemp -d /tmp/world-python.XXXXXX)
	chmod 0755 "$shared"
	cp -r "$WORLD_PY_PATH/world" "$shared/"
	cp -L "$(dirname "$WORLDRUN")/../../runtime/libworld.so.0" "$shared/"
	chmod -R a+rX "$shared"
	port=$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	cat >"$shared/rank.py" <<'PY'
import sys, world
rank, port, ready = int(sys.argv[1]), sys.argv[2], sys.argv[3]
try:
    w = world.World(str(rank), rank=rank, world_size=2,
                    rpc_init_method=f"tcp://localhost:{port}")
except world.WorldError as e:
    print(f"rank {rank}: {type(e).__name__}: {e}", flush=True)
    sys.exit(1)
open(ready, "w").close()
w.barrier("never", timeout=60)
PY
	chmod a+r "$shared/rank.py"
	LD_LIBRARY_PATH="$shared" "${PY[@]}" "$shared/rank.py" 0 "$port" "$DIR/ready" &
	pid=$!
	wait_until 60 test -e "$DIR/ready"
	py=("${PY[@]:0:${#PY[@]}-1}")
	run -1 env -C / "${py[@]/#PYTHONPATH=*/PYTHONPATH=$shared}" \
		LD_LIBRARY_PATH="$shared" WORLD_WAIT_TIMEOUT=2 \
		setpriv --reuid=nobody --regid=nogroup --clear-groups \
		"$PYTHON" "$shared/rank.py" 1 "$port" /dev/null
	kill "$pid"
	rm -rf "$shared"
	assert_output --partial "rank 1: WorldTimeoutError: no rank 0 at tcp://localhost:$port within the wait timeout"
}

@test "world (python): ranks take any name; groups, calls and members use names; worldrun's lines show them" {
	cat >"$DIR/names.py" <<'PY'
import os, world
r = int(os.environ["WORLD_RANK"])
w = world.World("learner" if r == 0 else f"worker_{r}")
print(f"rank {r}: {w.name} {w.get_members()}", flush=True)
if r != 1:
    g = w.create_rpc_group("g", ["learner", "worker_2"])
    if r == 0:
        g.register("who", world.get_cur_name)
    g.barrier()
    if r == 2:
        print(f"call: {g.registered_sync('who')} {g.rpc_sync('learner', world.get_cur_name)}",
              g.group_members, g.is_member("worker_1"), flush=True)
    g.barrier()
w.barrier()
if r == 1:
    raise ValueError("boom")
w.barrier()
PY
	run --separate-stderr -1 "${PY[@]:0:${#PY[@]}-1}" worldrun --timeout 100 -n 3 "$PYTHON" "$DIR/names.py"
	assert_line "rank 0: learner ['learner', 'worker_1', 'worker_2']"
	assert_line "rank 2: worker_2 ['learner', 'worker_1', 'worker_2']"
	assert_line "call: learner learner ['learner', 'worker_2'] False"
	assert_regex "$stderr" 'worldrun: rank 1 "worker_1" \(pid [0-9]+ on [^)]+\) failed: uncaught ValueError: boom'
	assert_regex "$stderr" 'worldrun: rank 1 "worker_1" \(pid [0-9]+ on [^)]+\) exited with status 1 after'
}

@test "world (python): two ranks of one name are one clear error at World() on every member" {
	cat >"$DIR/same.py" <<'PY'
import os, world
r = int(os.environ["WORLD_RANK"])
try:
    world.World("learner" if r == 0 else "worker")
except RuntimeError as e:
    print(f"rank {r}: {type(e).__name__}: {e}", flush=True)
PY
	run -0 "${PY[@]:0:${#PY[@]}-1}" worldrun --timeout 100 -n 3 "$PYTHON" "$DIR/same.py"
	assert_line "rank 0: ExistsError: 'ranks 1 and 2 are both named \"worker\"'"
	assert_line "rank 1: ExistsError: 'ranks 1 and 2 are both named \"worker\"'"
	assert_line "rank 2: ExistsError: 'ranks 1 and 2 are both named \"worker\"'"
}

@test "world (python): waits for a rank that is stopping fail at once, saying so" {
	cat >"$DIR/stop.py" <<'PY'
import numpy as np
import world
w = world.World()
g = w.create_collective_group(ranks=[0, 1])
g.all_reduce(np.ones(1))
if w.rank == 1:
    w.stop()
    raise SystemExit(0)
for what in (lambda: w.barrier("g"), lambda: w.create_rpc_group("late", ["0", "1"]),
             lambda: g.all_reduce(np.ones(1))):
    try:
        what()
    except world.PeerDeadError as e:
        print(f"rank 0: {type(e).__name__} {e.rank}: {e}", flush=True)
# Having heard of the stop, this rank's connection is quiet again: its
# standing watch of losses is one request, not asked again and again.
import json, subprocess, time
def requests():
    out = subprocess.run(["wr-regpoke", "hello", "tool", "send", '{"op":"stats","id":1}', "read"],
                         capture_output=True, text=True, check=True).stdout.splitlines()[-1]
    return next(c["requests"] for c in json.loads(out)["result"]["connections"]
                if c["role"] == "rank" and c["rank"] == 0)
before = requests()
time.sleep(1)
print(f"rank 0: requests in a quiet second: {requests() - before}", flush=True)
w.stop()
PY
	run -0 "${PY[@]:0:${#PY[@]}-1}" worldrun --timeout 100 -n 2 "$PYTHON" "$DIR/stop.py"
	assert_line 'rank 0: PeerDeadError 1: rank 1 is stopping (world_stop); it will not enter barrier "g"'
	assert_line 'rank 0: PeerDeadError 1: rank 1 is stopping (world_stop); it will not join group "late"'
	assert_line --partial 'rank 0: PeerDeadError 1: rank 1 is stopping (world_stop); it will not join all_reduce (operation 2 of coll '
	# A lease, if one falls in that second, is the only request.
	assert_line --regexp '^rank 0: requests in a quiet second: [01]$'
}

@test "world (python): under worldrun, worldrun's own rank and world_size join its job" {
	cat >"$DIR/own.py" <<'PY'
import os, world
r, n = int(os.environ["WORLD_RANK"]), int(os.environ["WORLD_SIZE"])
w = world.World(f"r{r}", rank=r, world_size=n)
print(f"rank {r}: {w.jobid == os.environ['WORLD_JOBID']} {w.get_members()}", flush=True)
w.stop()
PY
	run -0 "${PY[@]:0:${#PY[@]}-1}" worldrun --timeout 100 -n 2 "$PYTHON" "$DIR/own.py"
	assert_line "rank 0: True ['r0', 'r1']"
	assert_line "rank 1: True ['r0', 'r1']"
}

@test "world (python): a program that clears its environment after World() still forms collective groups" {
	cat >"$DIR/clean.py" <<'PY'
import os
import numpy as np
import world
w = world.World()
for name in [n for n in os.environ if n.startswith("WORLD_")]:
    del os.environ[name]
c = w.create_collective_group(ranks=[0, 1])
a = np.full(3, w.rank + 1.0)
c.all_reduce(a)
print(f"rank {w.rank}: {a.tolist()}", flush=True)
w.stop()
PY
	run -0 "${PY[@]:0:${#PY[@]}-1}" worldrun --timeout 100 -n 2 "$PYTHON" "$DIR/clean.py"
	assert_line "rank 0: [3.0, 3.0, 3.0]"
	assert_line "rank 1: [3.0, 3.0, 3.0]"
}

@test "world (python): two processes given one rank, or rank 0 where another listens, are one clear line each" {
	port=$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	cat >"$DIR/rank.py" <<'PY'
import sys, world
rank, port, ready = int(sys.argv[1]), sys.argv[2], sys.argv[3]
try:
    w = world.World(str(rank), rank=rank, world_size=2,
                    rpc_init_method=f"tcp://localhost:{port}")
except RuntimeError as e:
    print(f"{type(e).__name__}: {e}", flush=True)
    sys.exit(1)
open(ready, "w").close()
w.barrier(f"never.{rank}", timeout=60)  # the other never enters it
PY
	"${PY[@]}" "$DIR/rank.py" 0 "$port" "$DIR/ready0" &
	pid0=$!
	wait_until 60 test -e "$DIR/ready0"
	"${PY[@]}" "$DIR/rank.py" 1 "$port" "$DIR/ready1" &
	pid1=$!
	wait_until 60 test -e "$DIR/ready1"
	run -1 env WORLD_WAIT_TIMEOUT=20 "${PY[@]}" "$DIR/rank.py" 1 "$port" /dev/null
	assert_output "ExistsError: 'rank 1 of the world at tcp://localhost:$port has joined already: two processes were given that rank (several copies of a program that starts its own processes, at one address? under worldrun, start it with -n 1)'"
	run -1 "${PY[@]}" "$DIR/rank.py" 0 "$port" /dev/null
	kill "$pid0" "$pid1"
	assert_output --partial "rank 0 cannot host the world at tcp://localhost:$port: another process listens there"
}

@test "world (python): the hang report names a rank that named itself" {
	cat >"$DIR/hang.py" <<'PY'
import os, time, world
r = int(os.environ["WORLD_RANK"])
w = world.World("learner" if r == 0 else "worker")
if r == 0:
    w.barrier("step")
else:
    time.sleep(100)
PY
	run --separate-stderr -124 "${PY[@]:0:${#PY[@]}-1}" worldrun --timeout 15 -n 2 "$PYTHON" "$DIR/hang.py"
	assert_regex "$stderr" 'rank 0 in barrier "step" \(since [0-9.]+ s\), waiting for rank 1 "worker"'
}
