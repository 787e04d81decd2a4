# A torch.distributed program as torchrun would start it: env://
# rendezvous from RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT, a gloo
# all_reduce of rank + 1 (the sum is N(N+1)/2) and a barrier. Prints
# "RANK SUM LOCAL_RANK MASTER_ADDR" and exits 0; any failure raises.
import datetime
import os

import torch
import torch.distributed as dist

dist.init_process_group("gloo", init_method="env://",
                        timeout=datetime.timedelta(seconds=60))
rank = dist.get_rank()
t = torch.tensor([float(rank + 1)])
dist.all_reduce(t, op=dist.ReduceOp.SUM)
dist.barrier()
print(rank, int(t.item()), os.environ["LOCAL_RANK"], os.environ["MASTER_ADDR"], flush=True)
dist.destroy_process_group()
