"""The torch.distributed backend "world": importing this module registers
it, then ``dist.init_process_group("world")`` joins worldrun's job (or the
World this process opened) and ``dist.new_group(ranks, backend="world")``
makes a libworld collective group. CPU tensors only."""
import datetime
from typing import Any

import torch.distributed as dist

import world as _world_pkg
from . import _c10d

NAME = "world"
# The largest tag send and recv take (the one above is alltoall's own).
TAG_MAX = _c10d.TAG_MAX


def _timeout_ms(timeout: Any) -> int:
    if isinstance(timeout, datetime.timedelta):
        ms = int(timeout.total_seconds() * 1000)
    else:
        ms = int(timeout * 1000)
    return max(1, min(ms, 2**31 - 1))


def _the_world() -> "_world_pkg.World":
    """This process's World, opened from worldrun's environment when the
    program has none yet (it stops at exit, as any World)."""
    w = _world_pkg.get_world()
    if w is None:
        w = _world_pkg.World()
        w._opened_by_c10d = True
    return w


def _create(opts: Any, pg_options: Any = None) -> Any:
    if pg_options is not None:
        raise ValueError("the world backend takes no pg_options")
    w = _the_world()
    ranks = list(opts.global_ranks_in_group)
    if not ranks:
        # The default group: torch's ranks must be the world's.
        if (opts.group_rank, opts.group_size) != (w.rank, w.size):
            raise ValueError(
                f"torch's rank {opts.group_rank} of {opts.group_size} is not this "
                f"world's rank {w.rank} of {w.size}: under worldrun, give "
                "init_process_group no rank or world_size (or worldrun's own: "
                "RANK, WORLD_SIZE)")
        ranks = list(range(w.size))
    elif dist.is_initialized() and dist.get_rank() != w.rank:
        raise ValueError(f"torch's rank {dist.get_rank()} is not this world's rank "
                         f"{w.rank}: a world group needs torch's default group to "
                         "number the ranks as worldrun does")
    w._before_stop(_c10d.world_stopping)
    return _c10d.create(w._w.handle(), ranks, opts.group_rank, opts.group_size,
                        _timeout_ms(opts.timeout))


if NAME.upper() not in dist.Backend._plugins:
    dist.Backend.register_backend(NAME, _create, extended_api=True)
