import torch

from . import _functional as F


class SGD(torch.optim.SGD):

    @torch.no_grad()
    def step(self, closure=None, found_inf=None):
        if found_inf is None:
            return super().step(closure=closure)
        loss = F.closure_loss(found_inf, closure)
        for group in self.param_groups:
            params, grads, buffers, steps = [], [], [], []
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                state.setdefault("step", torch.zeros_like(found_inf))
                state.setdefault("momentum_buffer", torch.clone(p.grad).detach())
                params.append(p)
                grads.append(p.grad)
                buffers.append(state["momentum_buffer"])
                steps.append(state["step"])
            F.sgd_step(found_inf, steps, params, grads, buffers, weight_decay=group["weight_decay"],
                       momentum=group["momentum"], lr=group["lr"], dampening=group["dampening"],
                       nesterov=group["nesterov"], maximize=group["maximize"])
        return loss
