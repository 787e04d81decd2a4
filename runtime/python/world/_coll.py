# SPDX-License-Identifier: MIT
"""Machin's CollectiveGroup over libworld's collective groups, on numpy
arrays and CPU torch tensors (any C-contiguous buffer of a type libworld
has): what world/__init__.py's World.create_collective_group() gives."""
from typing import TYPE_CHECKING, Any, Callable, List, Optional, Sequence

from ._timeout import _ms
from ._world import InvalidError, NotMemberError, UnsupportedError

if TYPE_CHECKING:
    from . import World


# libworld's element types and reductions (world.h), by numpy's and
# torch's names, and by the struct codes of the buffer protocol.
_DTYPES = {"int8": 0, "int16": 1, "int32": 2, "int64": 3, "uint8": 4, "uint16": 5,
           "uint32": 6, "uint64": 7, "float16": 8, "bfloat16": 9, "float32": 10,
           "float64": 11, "half": 8, "float": 10, "double": 11, "long": 3, "int": 2,
           "short": 1}
_FORMATS = {"b": 0, "h": 1, "i": 2, "l": 3, "q": 3, "B": 4, "H": 5, "I": 6, "L": 7,
            "Q": 7, "e": 8, "f": 10, "d": 11}
# Collective kinds of _world.Coll.run().
(_BROADCAST, _ALL_REDUCE, _REDUCE, _ALL_GATHER, _GATHER, _SCATTER, _REDUCE_SCATTER,
 _ALL_TO_ALL, _BARRIER) = range(9)


class ReduceOp:
    """How all_reduce, reduce and reduce_scatter combine (torch's names).
    BAND, BOR and BXOR take integers only, AVG floating types only."""
    SUM, PRODUCT, MIN, MAX, BAND, BOR, BXOR, AVG = range(8)


_OPS = {"SUM": 0, "PRODUCT": 1, "PROD": 1, "MIN": 2, "MAX": 3, "BAND": 4, "BOR": 5,
        "BXOR": 6, "AVG": 7}
_GPU = "GPU collectives are not supported"


def _op(op: Any) -> int:
    """A ReduceOp, a name ("sum", "max"...), or torch.distributed's ReduceOp,
    by its name, never its number (torch's differ from ours): before 1.13 an
    enum with .name; in 1.13 ReduceOp objects whose .op is a RedOpType;
    from 2.0 ReduceOp.MAX is the RedOpType itself, and ReduceOp(...) objects
    carry one in .op."""
    if isinstance(op, int) and not isinstance(op, bool):
        if op not in _OPS.values():
            raise InvalidError(f"no such reduction: {op!r}")
        return op
    if not isinstance(op, str):
        op = getattr(op, "op", op)
    name = op if isinstance(op, str) else getattr(op, "name", None)
    if not isinstance(name, str):
        name = str(op)
    name = name.rsplit(".", 1)[-1].upper()
    if name == "PREMUL_SUM":
        raise UnsupportedError(f"PREMUL_SUM is NCCL's: {_GPU}")
    if name not in _OPS:
        raise InvalidError(f"no such reduction: {op!r}")
    return _OPS[name]


def _is_tensor(x: Any) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "is_contiguous")


def _buffer(x: Any):
    """x as a buffer libworld can use, and its element type: a contiguous
    CPU torch tensor (float16 and bfloat16 too), a C-contiguous numpy
    array, or any C-contiguous buffer of a plain numeric type."""
    if _is_tensor(x):
        if x.device.type != "cpu":
            raise UnsupportedError(f"a {x.device.type} tensor: {_GPU}; "
                                   "collectives take CPU tensors")
        if not x.is_contiguous():
            raise InvalidError("a tensor that is not contiguous: use .contiguous()")
        name = str(x.dtype).rsplit(".", 1)[-1]
        if name not in _DTYPES:
            raise InvalidError(f"no collective takes {x.dtype}")
        x = x.detach()
        if name == "bfloat16":
            import torch  # a tensor is here, so torch is
            x = x.view(torch.int16)
        return x.numpy(), _DTYPES[name]
    if hasattr(x, "dtype") and hasattr(x, "flags"):
        if not x.flags.c_contiguous:
            raise InvalidError("an array that is not C-contiguous: use numpy.ascontiguousarray")
        if x.dtype.name not in _DTYPES:
            raise InvalidError(f"no collective takes {x.dtype}")
        return x, _DTYPES[x.dtype.name]
    view = memoryview(x)
    if view.format.lstrip("@=<") not in _FORMATS:
        raise InvalidError(f"no collective takes buffers of format {view.format!r}")
    return x, _FORMATS[view.format.lstrip("@=<")]


def _stacked(like: Any, n: int):
    """A new contiguous array or tensor of n blocks of like's shape and type."""
    if _is_tensor(like):
        import torch
        return torch.empty((n,) + tuple(like.shape), dtype=like.dtype)
    import numpy
    return numpy.empty((n,) + tuple(like.shape), dtype=like.dtype)


def _copy(dst: Any, src: Any) -> None:
    if _is_tensor(dst):
        dst.copy_(src)
    else:
        dst[...] = src


class Work:
    """A started collective: ``wait(timeout)`` returns once it is done (for
    a receive, the sender's world rank); ``is_completed()`` tests it."""

    def __init__(self, req: Any, then: Optional[Callable[[int], Any]] = None) -> None:
        self._req, self._then, self._done, self._value = req, then, False, None

    def wait(self, timeout: Optional[float] = None) -> Any:
        if not self._done:
            source = self._req.wait(_ms(timeout)) if self._req is not None else -1
            self._value = self._then(source) if self._then is not None else None
            self._done = True
        return self._value

    def is_completed(self) -> bool:
        return self._done or self._req is None or self._req.test()


class CollectiveGroup:
    """Machin's CollectiveGroup: the members are world ranks, and so are
    ``dst``, ``src`` and what ``recv`` returns. Every world rank may create
    it (Machin's rule); a non-member gets one whose ``current_rank`` is
    None and whose calls raise NotMemberError (its ``irecv`` waits for
    nothing and gives -1)."""

    def __init__(self, world: "World", ranks: Sequence[int], timeout: Optional[float]) -> None:
        self.group_ranks = sorted(int(r) for r in ranks)
        self._world = world
        self._timeout = 60 if timeout is None else timeout
        self._pg = None
        self._c = None
        self.current_rank: Optional[int] = None
        if world.rank in self.group_ranks:
            self._c = world._w.create_coll(self.group_ranks, _ms(timeout))
            self.current_rank, _ = self._c.info()

    def _coll(self):
        if self._c is None:
            raise NotMemberError("You should not execute function when current process "
                                 "is not a member of the group")
        return self._c

    def _g(self, world_rank: Any) -> int:
        if world_rank not in self.group_ranks:
            raise InvalidError(f"rank {world_rank} is not a member of the group")
        return self.group_ranks.index(world_rank)

    def size(self) -> int:
        return len(self.group_ranks)

    # -- point to point
    def send(self, tensor: Any, dst: int, tag: int = 0,
             timeout: Optional[float] = None) -> None:
        buf, dt = _buffer(tensor)
        self._coll().p2p(True, buf, dt, self._g(dst), tag, _ms(timeout), False)

    def recv(self, tensor: Any, src: Optional[int] = None, tag: int = 0,
             timeout: Optional[float] = None) -> int:
        """Receive into tensor from src (None: any member); the sender's rank."""
        buf, dt = _buffer(tensor)
        peer = -1 if src is None else self._g(src)
        return self.group_ranks[self._coll().p2p(False, buf, dt, peer, tag, _ms(timeout),
                                                 False)]

    def isend(self, tensor: Any, dst: int, tag: int = 0) -> Work:
        buf, dt = _buffer(tensor)
        return Work(self._coll().p2p(True, buf, dt, self._g(dst), tag, 0, True))

    def irecv(self, tensor: Any, src: Optional[int] = None, tag: int = 0) -> Work:
        """A receive; its ``wait()`` returns the sender's world rank."""
        if self._c is None:
            return Work(None, lambda source: -1)
        buf, dt = _buffer(tensor)
        peer = -1 if src is None else self._g(src)
        return Work(self._c.p2p(False, buf, dt, peer, tag, 0, True),
                    lambda source: self.group_ranks[source])

    # -- collectives
    def _run(self, kind: int, inb: Any, outb: Any, dt: int, op: int, root: int,
             async_op: bool, timeout: Optional[float], then: Optional[Callable] = None):
        req = self._coll().run(kind, inb, outb, dt, op, root, _ms(timeout), async_op)
        if async_op:
            return Work(req, then)
        if then is not None:
            then(-1)
        return None

    def broadcast(self, tensor: Any, src: int, async_op: bool = False,
                  timeout: Optional[float] = None):
        buf, dt = _buffer(tensor)
        return self._run(_BROADCAST, buf, None, dt, 0, self._g(src), async_op, timeout)

    def all_reduce(self, tensor: Any, op: Any = ReduceOp.SUM, async_op: bool = False,
                   timeout: Optional[float] = None):
        buf, dt = _buffer(tensor)
        return self._run(_ALL_REDUCE, buf, None, dt, _op(op), 0, async_op, timeout)

    def reduce(self, tensor: Any, dst: int, op: Any = ReduceOp.SUM, async_op: bool = False,
               timeout: Optional[float] = None):
        buf, dt = _buffer(tensor)
        return self._run(_REDUCE, buf, None, dt, _op(op), self._g(dst), async_op, timeout)

    def all_gather(self, tensor_list: List[Any], tensor: Any, async_op: bool = False,
                   timeout: Optional[float] = None):
        """tensor_list[i] gets member i's tensor."""
        buf, dt = _buffer(tensor)
        out = _stacked(tensor, self.size())
        obuf, _ = _buffer(out)

        def then(source):
            for i, t in enumerate(tensor_list):
                _copy(t, out[i])
        return self._run(_ALL_GATHER, buf, obuf, dt, 0, 0, async_op, timeout, then)

    def gather(self, tensor: Any, gather_list: Optional[List[Any]] = None, dst: int = 0,
               async_op: bool = False, timeout: Optional[float] = None):
        """On dst, gather_list[i] gets member i's tensor."""
        buf, dt = _buffer(tensor)
        root = self._g(dst)
        out = _stacked(tensor, self.size()) if root == self.current_rank else None

        def then(source):
            for i, t in enumerate(gather_list or []):
                _copy(t, out[i])
        return self._run(_GATHER, buf, None if out is None else _buffer(out)[0], dt, 0,
                         root, async_op, timeout, then if out is not None else None)

    def scatter(self, tensor: Any, scatter_list: Optional[List[Any]] = None, src: int = 0,
                async_op: bool = False, timeout: Optional[float] = None):
        """Member i gets src's scatter_list[i] in tensor."""
        buf, dt = _buffer(tensor)
        root = self._g(src)
        inb = None
        if root == self.current_rank:
            stacked = _stacked(tensor, self.size())
            for i, t in enumerate(scatter_list or []):
                _copy(stacked[i], t)
            inb = _buffer(stacked)[0]
        return self._run(_SCATTER, inb, buf, dt, 0, root, async_op, timeout)

    def reduce_scatter(self, output: Any, input_list: List[Any], op: Any = ReduceOp.SUM,
                       async_op: bool = False, timeout: Optional[float] = None):
        """Member i gets the reduction of every member's input_list[i]."""
        buf, dt = _buffer(output)
        stacked = _stacked(output, self.size())
        for i, t in enumerate(input_list):
            _copy(stacked[i], t)
        return self._run(_REDUCE_SCATTER, _buffer(stacked)[0], buf, dt, _op(op), 0,
                         async_op, timeout)

    def all_to_all(self, output: Any, input: Any, async_op: bool = False,
                   timeout: Optional[float] = None):
        """Block j of input (size equal blocks) goes to member j, whose block i
        of output comes from member i."""
        inb, dt = _buffer(input)
        outb, _ = _buffer(output)
        return self._run(_ALL_TO_ALL, inb, outb, dt, 0, 0, async_op, timeout)

    def barrier(self, async_op: bool = False, timeout: Optional[float] = None):
        return self._run(_BARRIER, None, None, 0, 0, 0, async_op, timeout)

    # -- what needs GPUs or torch's own process groups
    def broadcast_multigpu(self, *args: Any, **kwargs: Any):
        raise UnsupportedError(f"broadcast_multigpu: {_GPU}")

    def all_reduce_multigpu(self, *args: Any, **kwargs: Any):
        raise UnsupportedError(f"all_reduce_multigpu: {_GPU}")

    def reduce_multigpu(self, *args: Any, **kwargs: Any):
        raise UnsupportedError(f"reduce_multigpu: {_GPU}")

    def all_gather_multigpu(self, *args: Any, **kwargs: Any):
        raise UnsupportedError(f"all_gather_multigpu: {_GPU}")

    @property
    def group(self):
        """Machin's torch process group of these members, the one
        DistributedDataParallel takes (Ape-X's and IMPALA's learners): a
        ProcessGroup of the backend "world" over a libworld group of its
        own, made at the first use, which every member makes alike (as
        Machin's members make theirs in create_collective_group). A
        non-member gets torch's GroupMember.NON_GROUP_MEMBER."""
        if self._pg is None:
            try:
                import torch.distributed as dist
                from . import c10d
            except ImportError as e:
                raise UnsupportedError("CollectiveGroup.group: the torch.distributed backend "
                                       f"world is not here ({e}): build world with "
                                       "Debian's libtorch-dev") from None
            if self._c is None:
                return dist.GroupMember.NON_GROUP_MEMBER
            self._pg = c10d.group(self._world, self.group_ranks, self._timeout)
        return self._pg

    def destroy(self) -> None:
        """Idempotent; also done when the group is garbage."""
        if self._pg is not None:
            from . import c10d
            c10d.forget(self._pg)
        self._pg = None
        if self._c is not None:
            self._c.destroy()
            self._c = None

    def __reduce__(self):
        raise RuntimeError("Group is not picklable, create it per process!")
