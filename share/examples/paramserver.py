# A parameter server (rank 0) and two samplers (ranks 1 and 2), as Machin
# users build them: the samplers pull the model, work out a gradient from
# their own data and push it; the server averages what it gets into the
# model. Run: worldrun -n 3 -x PYTHONPATH=build/runtime/python \
#   /usr/bin/python3 share/examples/paramserver.py
import threading

import torch

import world

w = world.World()
g = w.create_rpc_group("ps", ["0", "1", "2"])
if w.rank == 0:
    model, lock = torch.nn.Linear(4, 1), threading.Lock()

    def push(grads, lr=0.1):
        with lock, torch.no_grad():
            for p, dp in zip(model.parameters(), grads):
                p -= lr * dp
    g.register("pull", lambda: {k: v.clone() for k, v in model.state_dict().items()})
    g.register("push", push)
g.barrier()
if w.rank != 0:
    local = torch.nn.Linear(4, 1)
    x = torch.randn(64, 4)
    y = x @ torch.tensor([1.0, -2.0, 3.0, 0.5]) + 1.0  # what the data says
    for step in range(50):
        local.load_state_dict(g.registered_sync("pull"))
        loss = torch.nn.functional.mse_loss(local(x).squeeze(1), y)
        grads = torch.autograd.grad(loss, list(local.parameters()))
        g.registered_sync("push", args=(grads,))
    print(f"sampler {w.rank}: loss {loss.item():.3f} after {step + 1} steps")
g.barrier()
if w.rank == 0:
    print("server: weights", [round(v, 2) for v in model.weight.view(-1).tolist()])
g.destroy()
w.stop()
