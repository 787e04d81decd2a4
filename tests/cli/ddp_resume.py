# A DDP training loop that survives a restart as torchrun's users write
# it: rank 0 checkpoints after every step, and a start resumes from the
# last checkpoint. The data of a step depend on (rank, step) only, so a
# run that fails and resumes ends with the same parameters as one that
# does not. With FAIL_AT=K, rank 1 of the first attempt dies at the
# start of step K. Prints the final parameters (repr) on rank 0.
import datetime
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = 6
ckpt = sys.argv[1]
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
rank = dist.get_rank()
torch.manual_seed(0)
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
start = 0
if os.path.exists(ckpt):
    state = torch.load(ckpt)
    model.module.load_state_dict(state["model"])
    opt.load_state_dict(state["opt"])
    start = state["step"] + 1
    print(f"rank {rank} resumes at step {start}", flush=True)
for step in range(start, STEPS):
    if (step == int(os.environ.get("FAIL_AT", "-1")) and rank == 1
            and os.environ["TORCHELASTIC_RESTART_COUNT"] == "0"):
        os._exit(3)
    g = torch.Generator().manual_seed(1000 * rank + step)
    x, y = torch.randn(8, 4, generator=g), torch.randn(8, 1, generator=g)
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.step()
    dist.barrier()
    if rank == 0:
        torch.save({"step": step, "model": model.module.state_dict(),
                    "opt": opt.state_dict()}, ckpt + ".tmp")
        os.replace(ckpt + ".tmp", ckpt)
    dist.barrier()
if rank == 0:
    print("final", [p.tolist() for p in model.module.parameters()], flush=True)
dist.destroy_process_group()
