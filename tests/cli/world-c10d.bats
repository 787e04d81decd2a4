#!/usr/bin/env bats
load helpers

# The torch.distributed backend "world" (world.c10d) as whole programs use
# it: a rank that dies mid-training, torch's own processes without
# worldrun, and a World that stops under its groups. The collectives
# themselves are tests/python/test_c10d.py's.

setup() {
	world_python
	[ -n "${WORLD_C10D:-}" ] || skip "the c10d backend is not built (libtorch-dev)"
	DIR=$BATS_TEST_TMPDIR
	mkdir -m 0700 "$DIR/run"
	export XDG_RUNTIME_DIR=$DIR/run
}

@test "c10d: a rank killed mid-training fails the others' next operation at once, naming it" {
	cat >"$DIR/train.py" <<'PY'
import datetime, os, signal, sys, time
import torch, torch.distributed as dist, torch.nn as nn
import world.c10d
from torch.nn.parallel import DistributedDataParallel as DDP
dist.init_process_group("world", timeout=datetime.timedelta(seconds=600))
rank = dist.get_rank()
ddp = DDP(nn.Linear(64, 64))
opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
for step in range(1000):
    if rank == 2 and step == 5:
        with open(sys.argv[1], "w") as f:
            f.write(repr(time.time()))
        os.kill(os.getpid(), signal.SIGKILL)
    try:
        opt.zero_grad()
        ddp(torch.randn(16, 64)).sum().backward()
        opt.step()
    except RuntimeError as e:
        late = time.time() - float(open(sys.argv[1]).read())
        print(f"rank {rank}: step {step}: {str(e).splitlines()[0]}", flush=True)
        print(f"rank {rank}: {'at once' if late < 30 else f'after {late:.0f} s'}", flush=True)
        sys.exit(3)
PY
	run -137 --separate-stderr "${PY[@]:0:${#PY[@]}-1}" worldrun --keep-going --timeout 100 -n 3 \
		"$PYTHON" "$DIR/train.py" "$DIR/killed"
	assert_line --regexp "^rank 0: step 5: .*rank 2"
	assert_line --regexp "^rank 1: step 5: .*rank 2"
	assert_line "rank 0: at once"
	assert_line "rank 1: at once"
	assert_regex "$stderr" 'worldrun: rank 2 \(pid [0-9]+ on [^)]+\) killed by signal 9'
}

@test "c10d: torch's own processes, given rank, size and a tcp:// store, form a world without worldrun" {
	spawned <<'PY'
def main(rank, port):
    import torch, torch.distributed as dist
    import world, world.c10d
    dist.init_process_group("world", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=3)
    t = torch.tensor([rank + 1.0])
    dist.all_reduce(t)
    g = dist.new_group([0, 2], backend="world")
    s = torch.tensor([float(rank)])
    if rank != 1:
        dist.all_reduce(s, group=g)
    return f"{t.item()} {s.item()} of {world.get_world().size}"
PY
	run -0 env WORLD_WAIT_TIMEOUT=60 "${PY[@]}" "$DIR/prog.py"
	assert_line "rank 0: 6.0 2.0 of 3"
	assert_line "rank 1: 6.0 1.0 of 3"
	assert_line "rank 2: 6.0 2.0 of 3"
}

@test "c10d: a World that stops ends its groups first; their later calls say the world is stopped" {
	cat >"$DIR/stop.py" <<'PY'
import torch, torch.distributed as dist
import world, world.c10d
# No torch default group: the group's own hook ends it at the stop.
w = world.World(init_dist=False)
assert not dist.is_initialized()
cg = w.create_collective_group([0, 1])
pg = cg.group
pending = pg.allreduce([torch.ones(4)])
w.stop()
print("waited:", pending.is_completed())
try:
    pg.allreduce([torch.ones(2)])
except RuntimeError as e:
    print("after:", e)
PY
	run -0 --separate-stderr "${PY[@]:0:${#PY[@]}-1}" worldrun --timeout 100 -n 2 \
		"$PYTHON" "$DIR/stop.py"
	assert_line --index 0 "waited: True"
	assert_line "after: world: all_reduce: the world is stopped (world.World.stop())"
}

@test "c10d: torch's ranks that are not the World's are one clear error" {
	cat >"$DIR/wrong.py" <<'PY'
import torch, torch.distributed as dist
import world, world.c10d
w = world.World(init_dist=False)
try:
    dist.init_process_group("world", rank=1 - w.rank, world_size=2,
                            init_method="env://")
except ValueError as e:
    print(f"rank {w.rank}: {e}")
PY
	run -0 --separate-stderr "${PY[@]:0:${#PY[@]}-1}" worldrun --timeout 100 -n 2 \
		"$PYTHON" "$DIR/wrong.py"
	assert_line --regexp "^rank 0: torch's rank 1 of 2 is not this world's rank 0 of 2: "
	assert_line --regexp "^rank 1: torch's rank 0 of 2 is not this world's rank 1 of 2: "
}

@test "c10d: a collective a peer never joins fails at the process group's timeout" {
	cat >"$DIR/late.py" <<'PY'
import datetime, time, torch, torch.distributed as dist
import world, world.c10d
dist.init_process_group("world")
# The short timeout is a group's: the job's start may take longer.
g = dist.new_group([0, 1], backend="world", timeout=datetime.timedelta(seconds=2))
w = world.get_world()
if w.rank == 0:
    t0 = time.time()
    try:
        dist.all_reduce(torch.ones(1), group=g)
    except RuntimeError as e:
        print("rank 0:", str(e).splitlines()[0])
        print("rank 0:", "in time" if time.time() - t0 < 30 else "late")
w.barrier("over", timeout=60)
PY
	run -0 --separate-stderr "${PY[@]:0:${#PY[@]}-1}" worldrun --timeout 100 -n 2 \
		"$PYTHON" "$DIR/late.py"
	assert_line --regexp "^rank 0: world: all_reduce: .*\(the process group's timeout, 2000 ms\)$"
	assert_line "rank 0: in time"
}
