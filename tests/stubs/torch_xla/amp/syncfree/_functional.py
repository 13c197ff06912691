"""The update rules of torch_xla's fused optimizer ops (BuildSgdOptimizerStep and BuildAdamOptimizerStep in
torch_xla/csrc/xla_lower_util.cpp), in torch. Every tensor is updated by a select on ``found_inf``, so a
skipped step leaves parameters, moments and the step counter as they were."""

import torch


def _keep(found_inf, old, new):
    return torch.where(found_inf != 0, old, new)


def sgd_step(found_inf, state_steps, params, d_p_list, momentum_buffer_list, *, weight_decay, momentum, lr,
             dampening, nesterov, maximize):
    lr = -lr if maximize else lr
    for param, d_p, buf, step in zip(params, d_p_list, momentum_buffer_list, state_steps):
        update = d_p + param * weight_decay if weight_decay != 0 else d_p
        if momentum != 0:
            # The first valid step (counter still 0) starts the buffer at the update, as torch.optim.SGD does.
            new_buf = torch.where(step != 0, buf * momentum + update * (1 - dampening), update)
            update = update + new_buf * momentum if nesterov else new_buf
            buf.copy_(_keep(found_inf, buf, new_buf))
        param.copy_(_keep(found_inf, param, param - update * lr))
        step.add_((found_inf == 0).to(step.dtype))


def _bias_correction(beta, step, dtype):
    # In float64: in float32, 1 - 0.999 ** step loses five digits, and XLA's results match torch.optim's.
    return (1 - torch.pow(beta, step.double())).to(dtype)


def adam_step(found_inf, state_steps, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, *, amsgrad, beta1,
              beta2, lr, weight_decay, eps, maximize, use_adamw):
    for i, param in enumerate(params):
        grad = -grads[i] if maximize else grads[i]
        step, exp_avg, exp_avg_sq = state_steps[i], exp_avgs[i], exp_avg_sqs[i]
        step.add_((found_inf == 0).to(step.dtype))
        bias_correction1 = _bias_correction(beta1, step, param.dtype)
        bias_correction2 = _bias_correction(beta2, step, param.dtype)
        new_param = param
        if weight_decay != 0:
            if use_adamw:
                new_param = _keep(found_inf, param, param * (1 - lr * weight_decay))
            else:
                grad = _keep(found_inf, grad, grad + param * weight_decay)
        new_exp_avg = _keep(found_inf, exp_avg, exp_avg * beta1 + grad * (1 - beta1))
        new_exp_avg_sq = _keep(found_inf, exp_avg_sq, exp_avg_sq * beta2 + grad * grad * (1 - beta2))
        second_moment = new_exp_avg_sq
        if amsgrad:
            second_moment = _keep(found_inf, max_exp_avg_sqs[i], torch.maximum(max_exp_avg_sqs[i], new_exp_avg_sq))
            max_exp_avg_sqs[i].copy_(second_moment)
        denom = second_moment.sqrt() / bias_correction2.sqrt() + eps
        step_size = lr / bias_correction1
        param.copy_(_keep(found_inf, param, new_param - step_size * (new_exp_avg / denom)))
        exp_avg.copy_(new_exp_avg)
        exp_avg_sq.copy_(new_exp_avg_sq)


def closure_loss(found_inf, closure):
    """What each syncfree step does first: check that found_inf is a scalar, then run the closure, if any."""
    if found_inf.shape:
        raise ValueError("The found_inf tensor has to be scalar type")
    if closure is None:
        return None
    with torch.enable_grad():
        return closure()
