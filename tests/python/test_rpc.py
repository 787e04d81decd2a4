# SPDX-License-Identifier: MIT
"""Machin's World scenarios W1-W3, G1-G4, P1-P10, R1-R10, C1-C4, B1-B3
(reference/machin.md, section b) on the world package, under
worldrun -n 3. Where Machin's tests order ranks with sleeps, these
order them with barriers of the whole job."""
import operator
import pickle
import random
import signal
import threading
import time

import pytest

import world

T = 30  # seconds: every wait here is bounded


def add(a, b):
    return a + b


def fail(text):
    raise ValueError(text)


def whoami():
    return world.get_cur_name()


class Box:
    def __init__(self, n):
        self.counter = n


class Counter:
    def __init__(self, n):
        self.counter = n
        self.lock = threading.Lock()

    def count(self):
        with self.lock:
            self.counter += 1
            return self.counter

    def get_count(self):
        return self.counter


def test_w1_ranks_and_names(w):
    assert w.get_ranks() == [0, 1, 2]
    assert w.get_members() == ["0", "1", "2"]
    assert world.get_cur_rank() == w.rank
    assert world.get_cur_name() == str(w.rank)
    assert world.get_world() is w
    assert world.is_world_initialized()


def test_w2_one_world_per_process(w):
    with pytest.raises(RuntimeError, match="World could only be initialized once!"):
        world.World()


def test_w3_world_does_not_pickle_a_group_does(w):
    with pytest.raises(RuntimeError, match="World is not picklable"):
        pickle.dumps(w)
    g = w.create_rpc_group("w3", ["0", "1", "2"], timeout=T)
    copy = pickle.loads(pickle.dumps(g))
    assert copy.get_group_name() == "w3"
    assert copy.get_group_members() == ["0", "1", "2"]
    g.barrier(timeout=T)
    g.destroy()


def test_g1_only_members_create(w):
    if w.rank in (0, 1):
        g = w.create_rpc_group("g1", ["0", "1"], timeout=T)
        assert g.size() == 2
        assert g.is_member()
        g.barrier(timeout=T)
        g.destroy()
    w.barrier("g1", timeout=T)


def test_g2_g3_creator_not_member_and_twice(w):
    with pytest.raises(world.InvalidError, match=r"Creator Process \[\d\] not in Group"):
        w.create_rpc_group("g2", [str((w.rank + 1) % 3)], timeout=T)
    g = w.create_rpc_group(f"g3-{w.rank}", [w.name], timeout=T)
    with pytest.raises(world.ExistsError, match="already exists"):
        w.create_rpc_group(f"g3-{w.rank}", [w.name], timeout=T)
    g.destroy()


def test_g4_members_sorted(w):
    g = w.create_rpc_group("g4", ["2", "0", "1"], timeout=T)
    assert g.size() == 3
    assert g.is_member("0")
    assert g.is_member()
    assert not g.is_member("7")
    assert g.get_group_members() == ["0", "1", "2"]
    assert g.get_cur_name() == w.name
    g.barrier(timeout=T)
    g.destroy()


def test_p1_to_p8_pair(w):
    g = w.create_rpc_group("pairs", ["0", "1"], timeout=T) if w.rank < 2 else None
    if w.rank == 0:
        g.pair("service", Box(20))                                        # P1
        with pytest.raises(world.ExistsError, match="already paired to Group"):
            g.pair("service", Box(1))                                     # P2
    w.barrier("p-paired", timeout=T)
    if w.rank == 1:
        assert g.is_paired("service")                                     # P3
        with pytest.raises(KeyError, match="already paired to Group"):
            g.pair("service", 1)                                          # P4
        with pytest.raises(KeyError, match="not paired to"):
            g.unpair("service")                                           # P5
        with pytest.raises(KeyError, match="not found on Group"):
            g.get_paired("service2", timeout=T)                           # P6
        assert g.get_paired("service", timeout=T).to_here().counter == 20  # P7
    w.barrier("p-checked", timeout=T)
    if w.rank == 0:
        g.unpair("service")                                               # P8
    w.barrier("p-unpaired", timeout=T)
    if w.rank == 1:
        assert not g.is_paired("service")
    if g is not None:
        g.barrier(timeout=T)
        g.destroy()


def test_p10_pair_as_test_and_set(w):
    g = w.create_rpc_group("solved", ["0", "1", "2"], timeout=T)
    results = []
    if w.rank == 0:
        g.register("report", results.append)
    g.barrier(timeout=T)
    try:
        g.pair("solved", w.rank)
        won = True
    except world.ExistsError:
        won = False
    g.registered_sync("report", args=(won,), timeout=T)
    g.barrier(timeout=T)
    assert g.is_paired("solved")
    if w.rank == 0:
        assert sorted(results) == [False, False, True]
    g.barrier(timeout=T)
    g.destroy()


def test_r1_to_r9_register(w):
    g = w.create_rpc_group("services", ["0", "1"], timeout=T) if w.rank < 2 else None
    counter = Counter(20)
    if w.rank == 0:
        g.register("count", counter.count)                                 # R1
        g.register("get_count", counter.get_count)
        with pytest.raises(world.ExistsError, match="already registered in Group"):
            g.register("count", counter.count)                             # R2
    w.barrier("r-registered", timeout=T)
    if w.rank == 1:
        assert g.is_registered("count")                                   # R3
        assert g.is_registered("get_count")
        with pytest.raises(KeyError, match="already registered in Group"):
            g.register("count", counter.count)                             # R4
        with pytest.raises(KeyError, match="not registered in"):
            g.deregister("count")                                         # R5
        with pytest.raises(KeyError, match="not found on Group"):
            g.registered_sync("service2", timeout=T)                      # R6
        assert g.registered_sync("count", timeout=T) == 21                # R7
        assert g.registered_async("count", timeout=T).wait(T) == 22
        assert g.registered_remote("count", timeout=T).to_here(T) == 23
    w.barrier("r-called", timeout=T)
    if w.rank == 0:
        assert counter.get_count() == 23                                  # R8
        g.deregister("count")
        g.deregister("get_count")
    w.barrier("r-deregistered", timeout=T)
    if w.rank == 1:
        assert not g.is_registered("count")                               # R9
        assert not g.is_registered("get_count")
    if g is not None:
        g.barrier(timeout=T)
        g.destroy()


def test_r10_a_raising_service_is_a_remote_error(w):
    g = w.create_rpc_group("raising", ["0", "1", "2"], timeout=T)
    if w.rank == 0:
        g.register("fail", fail)
    g.barrier(timeout=T)
    with pytest.raises(world.RemoteError) as e:
        g.registered_sync("fail", args=(f"from {w.rank}",), timeout=T)
    assert e.value.remote_type == "builtins.ValueError"
    assert e.value.remote_message == f"from {w.rank}"
    assert "raise ValueError(text)" in e.value.remote_traceback
    assert isinstance(e.value, world.WorldError)
    g.barrier(timeout=T)
    g.destroy()


def test_c1_to_c4_direct_calls(w):
    g = w.create_rpc_group("direct", ["0", "1", "2"], timeout=T)
    assert g.rpc_sync("1", add, args=(1, 2), timeout=1) == 3             # C1
    assert g.rpc_async("1", add, args=(1, 2), timeout=1).wait(T) == 3    # C2
    assert g.remote("1", add, args=(1, 2), timeout=1).to_here(T) == 3    # C3
    assert g.rpc_sync("2", whoami, timeout=T) == "2"
    assert g.rpc_sync(0, operator.mul, args=(6, 7), timeout=T) == 42
    with pytest.raises(world.NotMemberError, match="RPC target is not a member of group."):
        g.rpc_sync("5", add, args=(1, 2))                                # C4
    with pytest.raises(RuntimeError):
        g.rpc_sync("5", add, args=(1, 2))
    with pytest.raises(world.RemoteError, match="ZeroDivisionError"):
        g.rpc_sync("0", operator.truediv, args=(1, 0), timeout=T)
    g.barrier(timeout=T)
    g.destroy()


def test_b1_to_b3_barriers_back_to_back(w):
    g = w.create_rpc_group("barriers", ["0", "1", "2"], timeout=T)
    rng = random.Random(w.rank)
    for _ in range(200):
        if rng.random() < 0.1:
            time.sleep(rng.random() / 1000)
        g.barrier(timeout=T)
    g.destroy()


def test_b4_a_non_member_barrier_is_refused(w):
    if w.rank < 2:
        g = w.create_rpc_group("b4", ["0", "1"], timeout=T)
        g.barrier(timeout=T)
    w.barrier("b4-made", timeout=T)
    if w.rank == 2:
        other = w.get_rpc_group("b4")
        assert not other.is_member()
        with pytest.raises(world.NotMemberError):
            other.barrier(timeout=T)
    w.barrier("b4-done", timeout=T)
    if w.rank < 2:
        g.destroy()


def test_x7_a_call_that_cannot_finish_times_out(w):
    g = w.create_rpc_group("slow", ["0", "1", "2"], timeout=T)
    if w.rank == 0:
        g.register("slow", lambda: time.sleep(3))
    g.barrier(timeout=T)
    if w.rank == 1:
        with pytest.raises(world.WorldTimeoutError):
            g.registered_sync("slow", timeout=0.2)
        with pytest.raises(TimeoutError):
            g.registered_async("slow", timeout=0.2).wait(T)
    g.barrier(timeout=T)
    g.destroy()


def nap():
    time.sleep(5)


def test_ctrl_c_ends_a_wait_for_a_call(w):
    """SIGINT while a call waits: the wait returns and KeyboardInterrupt is
    raised, within a slice (0.1 s), not when the call is done."""
    g = w.create_rpc_group("interrupt", ["0", "1", "2"], timeout=T)
    if w.rank == 0:
        g.register("nap", nap)
    g.barrier(timeout=T)
    if w.rank == 1:
        main = threading.main_thread().ident
        for wait in (lambda: g.registered_sync("nap", timeout=T),
                     lambda: g.registered_async("nap", timeout=T).wait(),
                     lambda: g.rpc_async("0", nap, timeout=T).wait(T)):
            threading.Timer(0.3, signal.pthread_kill, (main, signal.SIGINT)).start()
            start = time.monotonic()
            with pytest.raises(KeyboardInterrupt):
                wait()
            assert time.monotonic() - start < 4
    g.barrier(timeout=T)
    g.destroy()


def test_g5_x8_a_destroyed_group_can_be_created_again(w):
    for _ in range(3):
        g = w.create_rpc_group("again", ["0", "1", "2"], timeout=T)
        if w.rank == 0:
            g.register("svc", add)
            g.pair("val", 1)
        g.barrier(timeout=T)
        assert g.registered_sync("svc", args=(2, 3), timeout=T) == 5
        g.barrier(timeout=T)
        g.destroy()
        w.barrier("again", timeout=T)


class Meeting:
    """Two calls that must be in the handler at once to get through."""

    def __init__(self):
        self.both = threading.Barrier(2, timeout=10)

    def meet(self):
        self.both.wait()
        return True


def test_r11_calls_of_a_service_run_at_once_unless_serial(w):
    g = w.create_rpc_group("concurrent", ["0", "1", "2"], timeout=T)
    meeting, order = Meeting(), []
    if w.rank == 0:
        g.register("meet", meeting.meet)

        def one_at_a_time(i):
            order.append(("in", i))
            time.sleep(0.05)
            order.append(("out", i))
        g.register("serial", one_at_a_time, serial=True)
    g.barrier(timeout=T)
    if w.rank in (1, 2):
        assert g.registered_sync("meet", timeout=T)
        futures = [g.registered_async("serial", args=(10 * w.rank + i,), timeout=T)
                   for i in range(3)]
        for f in futures:
            f.wait(T)
    g.barrier(timeout=T)
    if w.rank == 0:
        kinds = [k for k, _ in order]
        assert kinds == ["in", "out"] * 6
    g.barrier(timeout=T)
    g.destroy()


def test_ctrl_c_ends_a_wait_in_a_barrier_and_in_group_creation(w):
    """The same in libworld's waits for the registry: a group barrier that
    the others enter late, and a group another member has not created."""
    g = w.create_rpc_group("late-barrier", ["0", "1", "2"], timeout=T)
    main = threading.main_thread().ident
    if w.rank == 1:
        threading.Timer(0.3, signal.pthread_kill, (main, signal.SIGINT)).start()
        start = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            g.barrier(timeout=T)
        assert time.monotonic() - start < 2
        threading.Timer(0.3, signal.pthread_kill, (main, signal.SIGINT)).start()
        start = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            w.create_rpc_group("never", ["1", "2"], timeout=T)
        assert time.monotonic() - start < 2
    else:
        time.sleep(2.5)
        g.barrier(timeout=T)  # rank 1 arrived before it was interrupted
    w.barrier("late-barrier", timeout=T)
    g.destroy()
