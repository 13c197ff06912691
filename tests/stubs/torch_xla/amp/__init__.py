import torch


def autocast(device, enabled=True, dtype=torch.bfloat16, cache_enabled=True):
    return torch.autocast("cpu", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)
