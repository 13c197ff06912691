import torch

from . import _functional as F


def syncfree_step(optimizer, closure, found_inf, use_adamw):
    loss = F.closure_loss(found_inf, closure)
    for group in optimizer.param_groups:
        params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps = [], [], [], [], [], []
        for p in group["params"]:
            if p.grad is None:
                continue
            if p.grad.is_sparse:
                raise RuntimeError(f"{type(optimizer).__name__} does not support sparse gradients")
            state = optimizer.state[p]
            if not state:
                _init_state(state, p, found_inf, group["amsgrad"])
            params.append(p)
            grads.append(p.grad)
            exp_avgs.append(state["exp_avg"])
            exp_avg_sqs.append(state["exp_avg_sq"])
            max_exp_avg_sqs.append(state["max_exp_avg_sq"])
            steps.append(state["step"])
        beta1, beta2 = group["betas"]
        F.adam_step(found_inf, steps, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs,
                    amsgrad=group["amsgrad"], beta1=beta1, beta2=beta2, lr=group["lr"],
                    weight_decay=group["weight_decay"], eps=group["eps"], maximize=group["maximize"],
                    use_adamw=use_adamw)
    return loss


def _init_state(state, param, found_inf, amsgrad):
    state["step"] = torch.zeros_like(found_inf)
    state["exp_avg"] = torch.zeros_like(param, memory_format=torch.preserve_format)
    state["exp_avg_sq"] = torch.zeros_like(param, memory_format=torch.preserve_format)
    state["max_exp_avg_sq"] = (torch.zeros_like(param, memory_format=torch.preserve_format) if amsgrad
                               else torch.empty(0, dtype=torch.float))
