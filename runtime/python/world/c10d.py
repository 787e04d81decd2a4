"""The torch.distributed backend "world": importing this module registers
it, then ``dist.init_process_group("world")`` joins worldrun's job (or the
World this process opened, or makes a world of torch's own processes) and
``dist.new_group(ranks, backend="world")`` makes a libworld collective
group. CPU tensors only."""
import datetime
import os
import socket
from typing import Any, List, Optional

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


# Where rank 0 of a world of torch's own processes says its address.
_ADDRESS_KEY = "world/address"


def _store_host(store: Any) -> Optional[str]:
    while isinstance(store, dist.PrefixStore):
        store = store.underlying_store
    return store.host if isinstance(store, dist.TCPStore) else None


def _free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _world_of_store(opts: Any) -> "_world_pkg.World":
    """A world of the processes torch was given (no worldrun): rank 0 hosts
    its registry on a free port of the store's host and puts the address
    in the store, where the others read it."""
    host = _store_host(opts.store) or "127.0.0.1"
    if opts.group_rank != 0:
        address = opts.store.get(_ADDRESS_KEY).decode()
        return _world_pkg.World(rank=opts.group_rank, world_size=opts.group_size,
                                rpc_init_method=address, init_dist=False)
    for attempt in range(8):
        address = f"tcp://{host}:{_free_port(host)}"
        try:
            w = _world_pkg.World(rank=0, world_size=opts.group_size, rpc_init_method=address,
                                 init_dist=False)
        except _world_pkg.WorldError as e:
            # Another process took the port between our look and our bind.
            if e.name == "EADDRINUSE" and attempt < 7:
                continue
            raise
        opts.store.set(_ADDRESS_KEY, address)
        return w
    raise AssertionError("unreachable")


def _the_world(opts: Any) -> "_world_pkg.World":
    """This process's World: the program's own, else worldrun's job when
    torch's ranks are worldrun's (or there is one rank and no worldrun),
    else a world of torch's processes. It stops at exit, as any World;
    torch.distributed is being initialised, so not by it (init_dist)."""
    w = _world_pkg.get_world()
    if w is not None:
        return w
    job = os.environ.get("WORLD_REGISTRY")
    here = (os.environ.get("WORLD_RANK"), os.environ.get("WORLD_SIZE"))
    if (job and here == (str(opts.group_rank), str(opts.group_size))) or \
            (not job and opts.group_size == 1):
        return _world_pkg.World(init_dist=False)
    return _world_of_store(opts)


def _torch_tables() -> Optional[tuple]:
    import torch.distributed.distributed_c10d as c10d
    tables = getattr(c10d, "_world", None)
    maps = (tables.pg_map, tables.pg_names, tables.pg_group_ranks) if tables is not None \
        else (getattr(c10d, "_pg_map", None), getattr(c10d, "_pg_names", None),
              getattr(c10d, "_pg_group_ranks", None))
    return None if None in maps else maps


def forget(pg: Any) -> None:
    """Take a group of group() out of torch's tables (CollectiveGroup.destroy)."""
    maps = _torch_tables()
    for table in maps or ():
        table.pop(pg, None)


def _known_to_torch(pg: Any, ranks: List[int]) -> None:
    """Enter a group made outside dist.new_group in torch's own tables, so
    that torch.distributed's calls take it as group= (get_rank, broadcast
    from a global rank...). Those tables are torch's private ones: 1.13's
    module globals, 2.x's _world; where neither is found, the group still
    works as a ProcessGroup (DDP takes it) but not in those calls."""
    maps = _torch_tables()
    if maps is None or not dist.is_initialized():
        return
    pg_map, pg_names, pg_group_ranks = maps
    pg_map[pg] = (dist.Backend(NAME), None)
    pg_names[pg] = f"world:{','.join(map(str, ranks))}:{id(pg)}"
    pg_group_ranks[pg] = {r: i for i, r in enumerate(ranks)}


def group(w: "_world_pkg.World", ranks: List[int], timeout: Any) -> Any:
    """The process group of these world ranks (this one among them), over a
    new libworld group, known to torch.distributed: every member calls it.
    world's CollectiveGroup.group makes its own so."""
    w._before_stop(_c10d.world_stopping)
    pg = _c10d.create(w._w.handle(), list(ranks), list(ranks).index(w.rank), len(ranks),
                      _timeout_ms(timeout))
    _known_to_torch(pg, list(ranks))
    return pg


def _create(opts: Any, pg_options: Any = None) -> Any:
    if pg_options is not None:
        raise ValueError("the world backend takes no pg_options")
    w = _the_world(opts)
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
    return _c10d.create(w._w.handle(), ranks, ranks.index(w.rank), len(ranks),
                        _timeout_ms(opts.timeout))


if NAME.upper() not in dist.Backend._plugins:
    dist.Backend.register_backend(NAME, _create, extended_api=True)
