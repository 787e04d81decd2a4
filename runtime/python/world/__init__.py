# SPDX-License-Identifier: MIT
"""Machin's distributed World, on libworld.

A process that worldrun started joins its job with ``World()``; one
started without worldrun gets a world of one. Ranks are named by their
decimal rank ("0", "1", ...). RPC groups pair values and register
services under keys unique in the group, and call them, or any function
of a member, synchronously, as a future or as a remote reference::

    import world

    w = world.World()
    g = w.create_rpc_group("servers", ["0", "1"])
    if w.rank == 0:
        g.register("add", lambda a, b: a + b)
    g.barrier()
    print(g.registered_sync("add", args=(1, 2)))   # 3, computed on rank 0
    w.stop()

Values, arguments and results are pickled (protocol 5); numpy arrays and
CPU torch tensors inside them travel as out-of-band buffers, and arrive
as arrays on the received bytes, not copied out of them. Functions given
to ``rpc_sync`` and its kind travel by reference (module and qualified
name), as pickle sends them, so the callee must be able to import them.
Every blocking call takes ``timeout`` in seconds: ``None`` (or Machin's
-1) is the job's default (``WORLD_WAIT_TIMEOUT``, 300 s), ``FOREVER``
waits as long as it takes. Every error of libworld is a ``WorldError``,
which is also a RuntimeError, as torch's errors are under Machin; an
exception raised by a remote handler is a ``RemoteError`` (Machin's
``RpcException``) that carries its type, message and traceback.
"""

import atexit
import copyreg
import io
import json
import logging
import os
import pickle
import struct
import sys
import time
import traceback
from typing import Any, Callable, Dict, List, Optional, Sequence

from . import _world
from ._coll import CollectiveGroup, ReduceOp, Work
from ._timeout import FOREVER, _ms
from ._world import (
    AuthError,
    ExistsError,
    FabricError,
    InvalidError,
    MismatchError,
    NotFoundError,
    NotMemberError,
    NotOwnerError,
    OutOfMemoryError,
    PeerDeadError,
    ProtocolError,
    RegistryError,
    RemoteError,
    TooBigError,
    UnsupportedError,
    WorldError,
    WorldTimeoutError,
)

__all__ = [
    "World", "RpcGroup", "Future", "RRef", "CollectiveGroup", "Work", "ReduceOp",
    "FOREVER", "get_world",
    "is_world_initialized", "get_cur_rank", "get_cur_name", "debug_with_process",
    "RpcException",
    "WorldError", "NotFoundError", "ExistsError", "NotOwnerError",
    "NotMemberError", "WorldTimeoutError", "PeerDeadError", "RemoteError",
    "RegistryError", "AuthError", "ProtocolError", "FabricError", "MismatchError",
    "UnsupportedError", "InvalidError", "TooBigError", "OutOfMemoryError",
]

#: Machin's name for what a remote handler raised.
RpcException = RemoteError

# The direct handler every process exports for rpc_sync and its kind.
_CALL = "py.call"
# The one it exports for get_paired: a value it paired, as it is now.
_VALUE = "py.value"
# How _world's calls answer: waited for, as a future, as a remote result.
_WAIT, _ASYNC, _REMOTE = 0, 1, 2

_the_world: Optional["World"] = None


def _record_uncaught(kind, value, tb) -> None:
    # torchrun's error file (TORCHELASTIC_ERROR_FILE), in torch's @record
    # format, for a rank that dies of an uncaught exception: worldrun's
    # failure line then says it. What @record wrote first stands.
    path = os.environ.get("TORCHELASTIC_ERROR_FILE")
    if path and not issubclass(kind, KeyboardInterrupt) and not os.path.exists(path):
        data = {"message": {
            "message": f"{kind.__name__}: {value}",
            "extraInfo": {
                "py_callstack": "".join(traceback.format_exception(kind, value, tb)),
                "timestamp": str(int(time.time())),
            }}}
        try:
            with open(f"{path}.{os.getpid()}", "w", encoding="utf-8") as f:
                json.dump(data, f)
            os.replace(f"{path}.{os.getpid()}", path)
        except (OSError, ValueError):
            pass
    _first_hook(kind, value, tb)


_first_hook = sys.excepthook
sys.excepthook = _record_uncaught


def _tensor(buf: Any, dtype: str, shape: tuple, grad: bool, param: bool) -> Any:
    """A CPU tensor rebuilt on an out-of-band buffer, without a copy."""
    import numpy
    import torch
    arr = numpy.frombuffer(buf, dtype="<i2" if dtype == "bfloat16" else dtype)
    if not arr.flags.writeable:
        arr = arr.copy()  # bytes, not a Blob: torch takes writable arrays only
    t = torch.from_numpy(arr)
    if dtype == "bfloat16":
        t = t.view(torch.bfloat16)
    t = t.view(shape)
    if param:
        return torch.nn.Parameter(t, requires_grad=grad)
    return t.requires_grad_(grad) if grad else t


def _reduce_tensor(obj: Any) -> Any:
    """A CPU tensor as an out-of-band buffer (torch's own pickling copies
    it through torch.save); others as torch pickles them."""
    import torch  # a tensor is here, so torch is
    if obj.device.type != "cpu" or obj.layout != torch.strided or obj.is_quantized:
        return obj.__reduce_ex__(5)
    x = obj.detach().contiguous()
    name = str(x.dtype).rsplit(".", 1)[-1]
    try:
        arr = x.view(torch.int16).numpy() if name == "bfloat16" else x.numpy()
    except (TypeError, RuntimeError):
        return obj.__reduce_ex__(5)
    return (_tensor, (pickle.PickleBuffer(arr.reshape(-1)),
                      "bfloat16" if name == "bfloat16" else arr.dtype.str,
                      tuple(x.shape), bool(obj.requires_grad),
                      type(obj).__name__ == "Parameter"))


class _Pickler(pickle.Pickler):
    """Protocol 5 with out-of-band buffers: numpy arrays give theirs, and
    CPU tensors become one too, through a dispatch table (looked up by
    type in C: nothing runs for the other objects)."""

    dispatch_table = copyreg.dispatch_table


def _torch_table() -> None:
    """Once torch is imported: the tensor types in _Pickler's table."""
    torch = sys.modules.get("torch")
    if torch is None or _Pickler.dispatch_table is not copyreg.dispatch_table:
        return
    table = dict(copyreg.dispatch_table)
    table[torch.Tensor] = _reduce_tensor
    table[torch.nn.Parameter] = _reduce_tensor
    _Pickler.dispatch_table = table


_NO_BUFFERS = struct.pack("<IQ", 0, 0)[:4]


def _parts(obj: Any) -> list:
    """obj as libworld's blob, in parts that are not copied: a header (the
    count of out-of-band buffers, the pickle's length and theirs), the
    pickle, then the buffers themselves."""
    _torch_table()
    out, bufs = io.BytesIO(), []
    _Pickler(out, protocol=5, buffer_callback=bufs.append).dump(obj)
    if not bufs:
        return [struct.pack("<IQ", 0, out.getbuffer().nbytes), out.getbuffer()]
    raws = [b.raw() for b in bufs]
    head = struct.pack(f"<I{len(raws) + 1}Q", len(raws), out.getbuffer().nbytes,
                       *(r.nbytes for r in raws))
    return [head, out.getbuffer(), *raws]


def _dumps(obj: Any) -> bytes:
    """obj as libworld's blob in one bytes object (see _parts)."""
    return b"".join(_parts(obj))


def _blob(obj: Any, how: int) -> Any:
    """A call's blob: its parts, lent to libworld until the call is
    answered; in one piece for a remote call."""
    return _dumps(obj) if how == _REMOTE else _parts(obj)


def _loads(data: Any) -> Any:
    """What _dumps made; the out-of-band buffers are views of data (a
    Blob from libworld: the arrays rebuilt on them keep it)."""
    view = memoryview(data)
    if view[:4] == _NO_BUFFERS:
        return pickle.loads(view[12:])
    n, = struct.unpack_from("<I", view)
    lens = struct.unpack_from(f"<{n + 1}Q", view, 4)
    at = 4 + 8 * (n + 1)
    body = view[at:at + lens[0]]
    at += lens[0]
    bufs = []
    for ln in lens[1:]:
        bufs.append(view[at:at + ln])
        at += ln
    return pickle.loads(body, buffers=bufs)


def _answer(fn: Callable, args: Sequence, kwargs: Optional[Dict]) -> bytes:
    """What a handler sends back: (True, result) or (False, type, text, trace)."""
    try:
        return _dumps((True, fn(*args, **(kwargs or {}))))
    except BaseException as e:  # the caller gets it, whatever it is
        kind = type(e)
        return _dumps((False, f"{kind.__module__}.{kind.__qualname__}", str(e),
                       traceback.format_exc()))


def _service(fn: Callable) -> Callable:
    def handler(view: memoryview) -> bytes:
        try:
            args, kwargs = _loads(view)
        except BaseException as e:
            return _dumps((False, type(e).__qualname__, str(e), traceback.format_exc()))
        return _answer(fn, args, kwargs)
    return handler


def _direct(view: memoryview) -> bytes:
    try:
        fn, args, kwargs = _loads(view)
    except BaseException as e:
        return _dumps((False, type(e).__qualname__, str(e), traceback.format_exc()))
    return _answer(fn, args, kwargs)


def _value(paired: Dict, view: memoryview) -> bytes:
    """py.value: (True, the object) paired here under (group, key), pickled
    now; (False, None) if it is not (any more)."""
    try:
        slot = _loads(view)
    except BaseException as e:
        return _dumps((False, type(e).__qualname__, str(e), traceback.format_exc()))
    return _answer(_paired_now, (paired, slot), None)


def _paired_now(paired: Dict, slot: tuple) -> tuple:
    cell = paired.get(slot)
    return (False, None) if cell is None else (True, cell[0])


def _result(data: bytes) -> Any:
    ok, *rest = _loads(data)
    if ok:
        return rest[0]
    kind, text, trace = rest
    e = RemoteError(f"{kind}: {text}")
    e.code, e.name, e.rank, e.remote_code = -4099, "WORLD_EREMOTE", -1, 0
    e.remote_type, e.remote_message, e.remote_traceback = kind, text, trace
    raise e


def _reworded(e: WorldError, text: str) -> WorldError:
    """The same error in Machin's words, for what its users match on."""
    again = type(e)(text)
    for attr in ("code", "name", "rank", "remote_code"):
        setattr(again, attr, getattr(e, attr, None))
    return again


def _left(timeout: Optional[float], start: float) -> Optional[float]:
    """What is left of ``timeout`` seconds begun at ``start``."""
    if timeout is None or timeout < 0 or timeout == FOREVER:
        return timeout
    return max(0.001, timeout - (time.monotonic() - start))


def _key(key: Any) -> str:
    """libworld's keys are strings; Machin's may be any hashable: str() them."""
    return key if isinstance(key, str) else str(key)


def _name(member: Any) -> str:
    return member if isinstance(member, str) else str(member)


class Future:
    """The result of a call to come: ``wait(timeout)`` returns it."""

    def __init__(self, fut: "_world.Future") -> None:
        self._f = fut

    def wait(self, timeout: Optional[float] = None) -> Any:
        """The result, waiting at most ``timeout`` seconds for it."""
        return _result(self._f.wait(_ms(timeout)))

    def done(self) -> bool:
        """Whether ``wait`` would return at once."""
        return self._f.done()


class RRef:
    """A result that stays with the callee until ``to_here()`` fetches it."""

    def __init__(self, ref: Any, value: Any = None, local: bool = False) -> None:
        self._r, self._value, self._local = ref, value, local

    def to_here(self, timeout: Optional[float] = None) -> Any:
        """A copy of the result, fetched from the callee."""
        if self._local:
            return self._value
        return _result(self._r.fetch(_ms(timeout)))


class RpcGroup:
    """A named group of ranks that pair values, register services and call them.

    Members are rank names, sorted. Any process holding the group (members,
    and non-members through ``World.get_rpc_group``) may look values and
    services up and call them; only members pair, register and barrier.
    An RpcGroup pickles as its name: another process gets the group back.
    """

    def __init__(self, world: "World", g: "_world.Group") -> None:
        self._world, self._g = world, g
        self._name, self._members = g.info()

    def __reduce__(self):
        return (_open_group, (self._name,))

    @property
    def group_name(self) -> str:
        """Machin's attribute: the group's name."""
        return self._name

    @property
    def group_members(self) -> List[str]:
        """Machin's attribute: the members' names, sorted."""
        return list(self._members)

    # -- identity
    def size(self) -> int:
        return len(self._members)

    def is_member(self, target: Optional[str] = None) -> bool:
        """Whether ``target`` (None: this process) is a member."""
        return self._g.is_member(None if target is None else _name(target))

    def get_group_name(self) -> str:
        return self._name

    def get_group_members(self) -> List[str]:
        return list(self._members)

    def get_cur_name(self) -> str:
        return self._world.name

    # -- values
    #
    # The registry keeps who owns a key, and libworld's copy of the value
    # is only the owner's name: the object itself stays with its owner,
    # which pickles it when it is fetched (py.value), so that get_paired
    # sees it as it is then, as Machin's does.
    def pair(self, key: Any, value: Any) -> None:
        """Pair ``value`` under ``key``: ExistsError if the group has it already."""
        slot, cell = (self._name, _key(key)), [value]
        paired = self._world._paired
        # Kept before it is claimed, so that a fetch never finds it missing;
        # a key this process has already is refused by libworld below.
        mine = paired.setdefault(slot, cell) is cell
        try:
            self._g.pair(slot[1], _dumps((_VALUE, self._world.name)))
        except BaseException as e:
            if mine and paired.get(slot) is cell:
                del paired[slot]
            if isinstance(e, ExistsError):
                raise _reworded(e, f'Value with key "{key}" already paired to Group '
                                f'[{self._name}]') from None
            raise
        paired[slot] = cell  # the key is ours: this object, whatever was left

    def unpair(self, key: Any) -> None:
        """Unpair a value this process paired (NotOwnerError for another's)."""
        try:
            self._g.unpair(_key(key))
        except (NotFoundError, NotOwnerError) as e:
            raise _reworded(e, f'Value with key "{key}" not paired to Group '
                            f'[{self._name}] on Process[{self._world.name}]') from None
        self._world._paired.pop((self._name, _key(key)), None)

    def is_paired(self, key: Any) -> bool:
        return self._g.is_paired(_key(key))

    def get_paired(self, key: Any, timeout: Optional[float] = None) -> RRef:
        """A reference to the value as its owner has it now: ``.to_here()``
        gives a copy of it (the owner's own process, the object itself)."""
        slot, start = (self._name, _key(key)), time.monotonic()
        try:
            _, owner = _loads(self._g.get_paired(slot[1], _ms(timeout)))
            if owner == self._world.name:
                found, value = _paired_now(self._world._paired, slot)
            else:
                found, value = _result(self._g.call_direct(
                    owner, _VALUE, _parts(slot), _ms(_left(timeout, start)), _WAIT))
        except NotFoundError as e:
            raise _reworded(e, f"Value with key [{key}] not found on Group "
                            f"[{self._name}]") from None
        if not found:
            # Unpaired since the registry answered.
            raise NotFoundError(f"Value with key [{key}] not found on Group "
                                f"[{self._name}]")
        return RRef(None, value, True)

    # -- services
    def register(self, key: Any, service: Callable, serial: bool = False) -> None:
        """Register ``service`` under ``key``; calls may run at once on
        libworld's workers unless ``serial``."""
        try:
            self._g.register(_key(key), _service(service), serial)
        except ExistsError as e:
            raise _reworded(e, f'Service with key "{key}" already registered in Group '
                            f'[{self._name}]') from None

    def deregister(self, key: Any) -> None:
        try:
            self._g.deregister(_key(key))
        except (NotFoundError, NotOwnerError) as e:
            raise _reworded(e, f'Service with key "{key}" not registered in Group '
                            f'[{self._name}] on Process[{self._world.name}]') from None

    def is_registered(self, key: Any) -> bool:
        return self._g.is_registered(_key(key))

    def _call(self, key: Any, args: Sequence, kwargs: Optional[Dict],
              timeout: Optional[float], how: int) -> Any:
        try:
            return self._g.call(_key(key), _blob((tuple(args), kwargs), how), _ms(timeout),
                                how)
        except NotFoundError as e:
            raise _reworded(e, f"Service with key [{key}] not found on Group "
                            f"[{self._name}]") from None

    def registered_sync(self, key: Any, args: Sequence = (), kwargs: Optional[Dict] = None,
                        timeout: Optional[float] = None) -> Any:
        """Call service ``key`` where it is registered, and return its result."""
        return _result(self._call(key, args, kwargs, timeout, _WAIT))

    def registered_async(self, key: Any, args: Sequence = (), kwargs: Optional[Dict] = None,
                         timeout: Optional[float] = None) -> Future:
        return Future(self._call(key, args, kwargs, timeout, _ASYNC))

    def registered_remote(self, key: Any, args: Sequence = (),
                          kwargs: Optional[Dict] = None,
                          timeout: Optional[float] = None) -> RRef:
        return RRef(self._call(key, args, kwargs, timeout, _REMOTE))

    # -- direct calls of a function on a member
    def _direct(self, to: Any, func: Callable, args: Sequence, kwargs: Optional[Dict],
                timeout: Optional[float], how: int) -> Any:
        to = _name(to)
        if to not in self._members:
            raise NotMemberError("RPC target is not a member of group.")
        return self._g.call_direct(to, _CALL, _blob((func, tuple(args), kwargs), how),
                                   _ms(timeout), how)

    def rpc_sync(self, to: Any, func: Callable, timeout: Optional[float] = None,
                 args: Sequence = (), kwargs: Optional[Dict] = None) -> Any:
        """Run ``func(*args, **kwargs)`` on member ``to`` and return its result."""
        return _result(self._direct(to, func, args, kwargs, timeout, _WAIT))

    def rpc_async(self, to: Any, func: Callable, timeout: Optional[float] = None,
                  args: Sequence = (), kwargs: Optional[Dict] = None) -> Future:
        return Future(self._direct(to, func, args, kwargs, timeout, _ASYNC))

    def remote(self, to: Any, func: Callable, timeout: Optional[float] = None,
               args: Sequence = (), kwargs: Optional[Dict] = None) -> RRef:
        return RRef(self._direct(to, func, args, kwargs, timeout, _REMOTE))

    # -- the rest
    def barrier(self, timeout: Optional[float] = None) -> None:
        """Return once every member has entered (members only)."""
        self._g.barrier(_ms(timeout))

    def destroy(self) -> None:
        """Leave the group: this member's values and services go with it."""
        mine = self._world._groups.get(self._name) is self
        if mine:
            self._world._groups.pop(self._name)
        self._g.destroy()
        if mine:
            for slot in [s for s in self._world._paired if s[0] == self._name]:
                self._world._paired.pop(slot, None)


def _open_group(name: str) -> RpcGroup:
    if _the_world is None:
        raise RuntimeError("Distributed environment not initialized!")
    return _the_world.get_rpc_group(name)


def _given(n: Any) -> bool:
    return n not in (-1, None)


def _where(rank: Any, world_size: Any, address: str) -> Dict[str, Any]:
    """How World() opens its world: worldrun's job, when the program gives
    no rank and size or worldrun's own; else a world of the program's own
    processes (Machin's way) at the address, rank 0 hosting its registry."""
    import os
    if not _given(rank) and not _given(world_size):
        return {}
    if not (_given(rank) and _given(world_size)):
        raise ValueError("give World() both rank and world_size, or neither "
                         "(under worldrun, its own are taken)")
    env = (os.environ.get("WORLD_RANK"), os.environ.get("WORLD_SIZE"))
    if os.environ.get("WORLD_REGISTRY") and env == (str(rank), str(world_size)):
        return {}
    if int(world_size) == 1 and int(rank) == 0 and not os.environ.get("WORLD_REGISTRY"):
        return {}
    return {"rank": int(rank), "size": int(world_size), "address": address}


def _open(where: Dict[str, Any]) -> "_world.World":
    """The world _where() chose, its refusals in words that say what to do."""
    try:
        return _world.World(**where)
    except ExistsError as e:
        if e.code == -17 and "named" in str(e):
            raise
        if "address" in where:
            raise _reworded(e, f"rank {where['rank']} of the world at {where['address']} "
                            "has joined already: two processes were given that rank "
                            "(several copies of a program that starts its own "
                            "processes, at one address? under worldrun, start it "
                            "with -n 1)") from None
        raise _reworded(e, "this rank of worldrun's job has a world already: a "
                        "process started by a rank (torch.multiprocessing.spawn?) "
                        "gave World() worldrun's own rank and world_size; start "
                        "such a program with worldrun -n 1, or without worldrun, "
                        "so that its processes form a world of their own") from None
    except WorldTimeoutError as e:
        if "address" not in where:
            raise
        raise _reworded(e, f"no rank 0 at {where['address']} within the wait "
                        "timeout (WORLD_WAIT_TIMEOUT): start rank 0 there; only "
                        "the same user's processes on its host find its secret "
                        "(across hosts, set WORLD_SECRET in every process)") from None
    except WorldError as e:
        if "address" in where and where["rank"] == 0 and e.name == "EADDRINUSE":
            raise _reworded(e, f"rank 0 cannot host the world at {where['address']}: "
                            "another process listens there (a world of another "
                            "program?); give World() another rpc_init_method") from None
        raise


class World:
    """This process as a rank of its job: one per process.

    Machin's constructor arguments are taken and checked against the job
    (a ``rank`` or ``world_size`` that worldrun did not give is a
    ValueError); the rest (ports, backends) mean nothing here.
    """

    def __init__(self, name: Optional[str] = None, rank: int = -1, world_size: int = -1,
                 rpc_init_method: str = "tcp://localhost:9101",
                 **machin_options: Any) -> None:
        global _the_world
        if _the_world is not None:
            raise RuntimeError("World could only be initialized once!")
        where = _where(rank, world_size, rpc_init_method)
        if name is not None:
            where["name"] = str(name)
        self._w = _open(where)
        self.rank, self.size, self.name, self.jobid = self._w.info()
        self._groups: Dict[str, RpcGroup] = {}
        self._stopped = False
        self._w.export(_CALL, _direct)
        # (group, key) -> [object] this process paired: see RpcGroup.pair.
        paired: Dict[tuple, list] = {}
        self._paired = paired
        self._w.export(_VALUE, lambda view: _value(paired, view))
        _the_world = self
        self._uncaught: Optional[str] = None
        self._stop_hooks: List[Callable[[], None]] = []
        self._hook = sys.excepthook
        sys.excepthook = self._excepthook
        atexit.register(self._at_exit)
        if machin_options.get("init_dist", True) and "torch" in sys.modules:
            self._init_dist(machin_options)

    def __reduce__(self):
        raise RuntimeError("World is not picklable, create it per process!")

    def _init_dist(self, options: Dict[str, Any]) -> None:
        """Machin's init_dist: torch.distributed's default group, of the
        backend "world" (Machin's default "gloo" is taken as it; another is
        passed to torch as it is), for a program that imported torch. Its
        store is torch's: worldrun's MASTER_ADDR and MASTER_PORT, or
        Machin's dist_init_method in a world without worldrun."""
        import datetime
        try:
            import torch.distributed as dist
            from . import c10d  # noqa: F401 (registers the backend)
        except ImportError:
            return
        if not dist.is_available() or dist.is_initialized():
            return
        backend = options.get("dist_backend", "gloo")
        if backend == "gloo":
            backend = c10d.NAME
        under_worldrun = os.environ.get("WORLD_REGISTRY") is not None and \
            os.environ.get("WORLD_RANK") == str(self.rank)
        method = "env://" if under_worldrun else \
            options.get("dist_init_method", "tcp://localhost:9100")
        dist.init_process_group(
            backend, init_method=method, rank=self.rank, world_size=self.size,
            timeout=datetime.timedelta(seconds=options.get("dist_timeout", 60)))
        self._before_stop(lambda: dist.is_initialized() and dist.destroy_process_group())

    @property
    def world_size(self) -> int:
        """Machin's attribute: the number of ranks (``size``)."""
        return self.size

    def get_ranks(self) -> List[int]:
        return list(range(self.size))

    def get_members(self) -> List[str]:
        """Every rank's name, in rank order (once every rank has its World)."""
        return self._w.names()

    def create_rpc_group(self, group_name: str, members: Sequence[Any],
                         timeout: Optional[float] = None) -> RpcGroup:
        """Create the group with these members and wait until all have (members only)."""
        names = [_name(m) for m in members]
        if self.name not in names:
            raise InvalidError(f"Creator Process [{self.name}] not in Group [{group_name}]")
        if group_name in self._groups:
            raise ExistsError(f"Group {group_name} already exists!")
        g = RpcGroup(self, self._w.create_group(group_name, names, _ms(timeout)))
        self._groups[group_name] = g
        return g

    def create_collective_group(self, ranks: Sequence[int], timeout: Optional[float] = 60,
                                backend: Any = None) -> CollectiveGroup:
        """A collective group of these world ranks, over libfabric. Every rank
        may call it, as in Machin; members wait (at most timeout seconds)
        until every member has."""
        return CollectiveGroup(self, ranks, timeout)

    def get_rpc_group(self, group_name: str) -> RpcGroup:
        """This process's group of that name, or a handle on another's."""
        if group_name in self._groups:
            return self._groups[group_name]
        return RpcGroup(self, self._w.open_group(group_name))

    def barrier(self, name: str = "world", timeout: Optional[float] = None) -> None:
        """Every rank of the job."""
        self._w.barrier(name, _ms(timeout))

    def _before_stop(self, hook: Callable[[], None]) -> None:
        """Call hook once before this world stops or fails (world.c10d ends
        its groups' use there: libworld frees them in the stop)."""
        if hook not in self._stop_hooks:
            self._stop_hooks.append(hook)

    def _run_stop_hooks(self) -> None:
        hooks, self._stop_hooks = self._stop_hooks, []
        for hook in hooks:
            hook()

    def stop(self, timeout: Optional[float] = None) -> None:
        """Wait until every rank has stopped, answering peers meanwhile."""
        global _the_world
        if self._stopped:
            return
        self._stopped = True
        self._groups.clear()
        self._run_stop_hooks()
        # Handlers still run while the others stop: the world stays this
        # process's (get_cur_name()) until the stop is over.
        try:
            self._w.stop(_ms(timeout))
        finally:
            _the_world = None

    def _excepthook(self, kind, value, tb) -> None:
        # An exception that ends the main thread ends this rank with
        # status 1: remember it, so that the exit fails the job at once
        # rather than waiting in stop() for ranks that wait for this one.
        if not issubclass(kind, KeyboardInterrupt):
            self._uncaught = f"uncaught {kind.__qualname__}: {value}"
        self._hook(kind, value, tb)

    def _at_exit(self) -> None:
        # A program that did not stop: stop now, before the interpreter
        # goes, so that no worker thread calls into it afterwards; after
        # an uncaught exception, tell the job that this rank failed.
        global _the_world
        if sys.excepthook == self._excepthook:
            sys.excepthook = self._hook
        if self._uncaught is not None and not self._stopped:
            self._stopped = True
            self._groups.clear()
            _the_world = None
            self._run_stop_hooks()
            try:
                self._w.fail(1, self._uncaught)
            except WorldError:
                pass
            return
        try:
            self.stop()
        except WorldError:
            pass


def get_world() -> Optional[World]:
    return _the_world


def is_world_initialized() -> bool:
    return _the_world is not None


def get_cur_rank() -> int:
    if _the_world is None:
        raise RuntimeError("Distributed environment not initialized!")
    return _the_world.rank


def get_cur_name() -> str:
    if _the_world is None:
        raise RuntimeError("Distributed environment not initialized!")
    return _the_world.name


def debug_with_process(message: str) -> None:
    """Log ``message`` at DEBUG on the "world" logger, prefixed with this
    process's rank and the caller's file and line, as Machin's does; nothing
    unless that logger takes DEBUG."""
    logger = logging.getLogger("world")
    if not logger.isEnabledFor(logging.DEBUG):
        return
    caller = sys._getframe(1)
    logger.debug(f"Process [{get_cur_rank()}]: "
                 f"<{caller.f_code.co_filename},L{caller.f_lineno}> {message}")
