"""A CPU stand-in for the parts of ``torch_xla`` the legacy example uses.

It exists so the test suite can run the unmigrated example as a program: devices are the CPU,
graph cuts do nothing, collectives go through gloo. It is not a model of XLA semantics.
"""

import torch


def device(index=None):
    return torch.device("cpu")


def sync():
    pass


def manual_seed(seed):
    torch.manual_seed(seed)


def compile(f=None, full_graph=False, name=None, max_different_graphs=None):
    """Runs the function eagerly: the reference a compiled migration is compared against."""
    if f is None:
        return lambda fn: fn
    return f
