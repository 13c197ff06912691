"""``torch.autocast(device_type="neuron")``: the casts CPU autocast makes, made for neuron tensors.

PyTorch has autocast kernels for CPU and CUDA only; for the PrivateUse1 device every op would fail. Ops with no
autocast rule fall through unchanged, and the ops below get the casting policy CPU autocast gives them, so a
bf16 autocast region computes in bf16 on ``neuron`` exactly as it does on ``cpu``.
"""

from __future__ import annotations

import torch

# the CPU autocast policy lists (aten/src/ATen/autocast_mode.cpp), op name -> overloads
LOWER_PRECISION = {
    "conv1d": ("default", "padding"),
    "conv2d": ("default", "padding"),
    "conv3d": ("default", "padding"),
    "bmm": ("default",),
    "mm": ("default",),
    "linalg_vecdot": ("default",),
    "baddbmm": ("default",),
    "addmm": ("default",),
    "addbmm": ("default",),
    "linear": ("default",),
    "_convolution": ("deprecated",),
    "matmul": ("default",),
    "conv_tbc": ("default",),
    "conv_transpose1d": ("default",),
    "conv_transpose2d": ("input",),
    "conv_transpose3d": ("input",),
    "prelu": ("default",),
    "scaled_dot_product_attention": ("default",),
}
FP32 = {
    "avg_pool3d": ("default",),
    "binary_cross_entropy": ("default",),
    "grid_sampler": ("default",),
    "polar": ("default",),
    "prod": ("default", "dim_int"),
    "quantile": ("default", "scalar"),
    "nanquantile": ("default", "scalar"),
    "stft": ("default",),
    "cdist": ("default",),
    "trace": ("default",),
    "view_as_complex": ("default",),
    "cholesky": ("default",),
    "cholesky_inverse": ("default",),
    "cholesky_solve": ("default",),
    "inverse": ("default",),
    "lu_solve": ("default",),
    "orgqr": ("default",),
    "ormqr": ("default",),
    "pinverse": ("default",),
    "max_pool3d": ("default",),
    "max_unpool2d": ("default",),
    "max_unpool3d": ("default",),
    "adaptive_avg_pool3d": ("default",),
    "reflection_pad1d": ("default",),
    "reflection_pad2d": ("default",),
    "replication_pad1d": ("default",),
    "replication_pad2d": ("default",),
    "replication_pad3d": ("default",),
    "mse_loss": ("default",),
    "cosine_embedding_loss": ("default",),
    "nll_loss": ("default",),
    "nll_loss2d": ("default",),
    "hinge_embedding_loss": ("default",),
    "poisson_nll_loss": ("default",),
    "smooth_l1_loss": ("default",),
    "cross_entropy_loss": ("default",),
    "l1_loss": ("default",),
    "huber_loss": ("default",),
    "margin_ranking_loss": ("default",),
    "soft_margin_loss": ("default",),
    "triplet_margin_loss": ("default",),
    "multi_margin_loss": ("default",),
    "ctc_loss": ("IntList", "Tensor"),
    "kl_div": ("default",),
    "multilabel_margin_loss": ("default",),
    "binary_cross_entropy_with_logits": ("default",),
}
PROMOTE = {"stack": ("default",), "cat": ("default",), "index_copy": ("default",)}

_AUTOCAST_KEY = torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastPrivateUse1)
_libraries = []


def _cast(value, dtype):
    # as CPU autocast: floating tensors of the device, float64 excepted, take the policy's dtype
    if isinstance(value, torch.Tensor):
        if (
            value.dtype != dtype
            and value.is_floating_point()
            and value.dtype is not torch.float64
            and value.device.type == "neuron"
        ):
            return value.to(dtype)
        return value
    if type(value) in (list, tuple):
        return type(value)(_cast(v, dtype) for v in value)
    return value


def _widest(values):
    found = None
    for value in values:
        if isinstance(value, torch.Tensor) and value.is_floating_point() and value.device.type == "neuron":
            found = value.dtype if found is None else torch.promote_types(found, value.dtype)
        elif type(value) in (list, tuple):
            inner = _widest(value)
            if inner is not None:
                found = inner if found is None else torch.promote_types(found, inner)
    return found


def _kernel(op, policy):
    def run(*args, **kwargs):
        with torch._C._ExcludeDispatchKeyGuard(_AUTOCAST_KEY):
            if policy == "promote":
                dtype = _widest(list(args) + list(kwargs.values()))
            else:
                dtype = torch.get_autocast_dtype("neuron") if policy == "lower" else torch.float32
            if dtype is not None:
                args = _cast(args, dtype)
                kwargs = {k: _cast(v, dtype) for k, v in kwargs.items()}
            return op(*args, **kwargs)

    return run


def kernel_functions():
    """The Python functions PyTorch calls for autocast (one code object serves every op)."""
    return [_kernel(None, "lower")]


def install() -> None:
    """Fall through for every op, then register the CPU policy for the listed ones."""
    fallback = torch.library.Library("_", "IMPL")
    fallback.fallback(torch.library.fallthrough_kernel, "AutocastPrivateUse1")
    kernels = torch.library.Library("aten", "IMPL")
    for table, policy in ((LOWER_PRECISION, "lower"), (FP32, "fp32"), (PROMOTE, "promote")):
        for name, overloads in table.items():
            packet = getattr(torch.ops.aten, name, None)
            if packet is None:
                continue
            for overload in overloads:
                op = getattr(packet, overload, None)
                if op is None:
                    continue
                qualified = name if overload == "default" else f"{name}.{overload}"
                kernels.impl(qualified, _kernel(op, policy), "AutocastPrivateUse1")
    _libraries.extend([fallback, kernels])
