"""What an mpi4py program (Debian's python3-mpi4py, on Open MPI) does
under worldrun, one check after another: each rank prints "rank R: ok
NAME" for each check it passed, "rank R: FAIL NAME: why" for one it did
not, and exits 1 if any failed. Run as: worldrun -n N python3 THIS."""
import os
import sys

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
failed = False


def check(name, cond, why=""):
    global failed
    if cond:
        print(f"rank {rank}: ok {name}", flush=True)
    else:
        failed = True
        print(f"rank {rank}: FAIL {name}: {why}", flush=True)


# Communicators: the world is worldrun's, and it splits and duplicates.
check("world", rank == int(os.environ["WORLD_RANK"]) and size == int(os.environ["WORLD_SIZE"]),
      f"{rank} of {size}")
half = comm.Split(rank % 2, rank)
check("split", half.Get_size() == (size + 1 - rank % 2) // 2 and half.Get_rank() == rank // 2,
      f"{half.Get_rank()} of {half.Get_size()}")
dup = comm.Dup()
check("dup", dup.Get_size() == size and MPI.Comm.Compare(dup, comm) == MPI.CONGRUENT)
node = comm.Split_type(MPI.COMM_TYPE_SHARED)
check("shared", node.Get_size() == int(os.environ["WORLD_LOCAL_SIZE"]),
      f"{node.Get_size()} on the node")

# Point to point: a Python object round the ring, a NumPy buffer back.
if size > 1:
    got = comm.sendrecv({"from": rank}, dest=(rank + 1) % size, source=(rank - 1) % size)
    check("sendrecv", got == {"from": (rank - 1) % size}, repr(got))
    buf = np.empty(1000, dtype="d")
    req = comm.Irecv(buf, source=(rank + 1) % size, tag=7)
    comm.Send(np.full(1000, rank, dtype="d"), dest=(rank - 1) % size, tag=7)
    req.Wait()
    check("buffers", bool((buf == (rank + 1) % size).all()), repr(buf[:3]))

# Collectives.
check("allreduce", comm.allreduce(rank) == size * (size - 1) // 2)
check("bcast", comm.bcast("x" * 100000 if rank == 0 else None) == "x" * 100000)
check("gather", comm.gather(rank, root=0) == (list(range(size)) if rank == 0 else None))
check("alltoall", comm.alltoall([rank * 10 + i for i in range(size)])
      == [i * 10 + rank for i in range(size)])
total = np.zeros(4, dtype="i")
comm.Allreduce(np.full(4, rank + 1, dtype="i"), total, op=MPI.SUM)
check("Allreduce", bool((total == size * (size + 1) // 2).all()), repr(total))

# One-sided: each rank puts its rank into the next rank's window. (Open
# MPI 4.1 without UCX has no one-sided component for a job of one rank,
# nor across nodes over TCP: under mpirun too, MPI_Win_create fails
# there.)
if size > 1 and node.Get_size() == size:
    win_buf = np.full(1, -1, dtype="i")
    win = MPI.Win.Create(win_buf, comm=comm)
    win.Fence()
    win.Put(np.array([rank], dtype="i"), (rank + 1) % size)
    win.Fence()
    win.Free()
    check("rma", int(win_buf[0]) == (rank - 1) % size, repr(win_buf))

# Names: each rank publishes its own service, looks it up, and rank 0
# and 1 connect through one.
port = MPI.Open_port()
MPI.Publish_name(f"wr-svc-{rank}", port)
check("lookup", MPI.Lookup_name(f"wr-svc-{rank}") == port)
comm.Barrier()
if size > 1 and rank < 2:
    other = MPI.Lookup_name("wr-svc-0") if rank == 1 else None
    inter = (MPI.COMM_SELF.Accept(port) if rank == 0 else MPI.COMM_SELF.Connect(other))
    check("connect", inter.Get_remote_size() == 1
          and inter.sendrecv(rank, dest=0, source=0) == 1 - rank)
    inter.Disconnect()
comm.Barrier()
MPI.Unpublish_name(f"wr-svc-{rank}", port)
MPI.Close_port(port)
try:
    MPI.Lookup_name(f"wr-svc-{rank}")
    check("unpublish", False, "the name is still there")
except MPI.Exception:
    check("unpublish", True)

comm.Barrier()
sys.exit(1 if failed else 0)
