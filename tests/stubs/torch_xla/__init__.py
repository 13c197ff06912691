"""A CPU stand-in for the parts of ``torch_xla`` that legacy training scripts use.

It exists so the test suite can run unmigrated programs: devices are the CPU, graph cuts do
nothing, and collectives reach every process of a torchrun job through gloo, with or without a
process group of the program's own, as they did under PJRT. It is not a model of XLA compilation.
"""

import contextlib

import torch

# The release whose semantics the double follows; transformers' Trainer reads it.
__version__ = "2.9.0"


def device(index=None):
    return torch.device("cpu")


def sync():
    pass


def manual_seed(seed, device=None):
    from torch_xla.core import xla_model

    xla_model.set_rng_state(seed, device)


def launch(fn, args=(), start_method="spawn", debug_single_process=False):
    from torch_xla.distributed import xla_multiprocessing

    return xla_multiprocessing.spawn(fn, args=args)


def compile(f=None, full_graph=False, name=None, max_different_graphs=None, num_different_graphs_allowed=None):
    # Graphs ran eagerly here: compiling is the identity, as a decorator or a call; without a function it is
    # a context manager (a decorator too), as in torch_xla.
    return f if f is not None else _region()


@contextlib.contextmanager
def _region():
    yield


def step():
    return compile()

from torch_xla import experimental  # noqa: E402  (scripts reach it as torch_xla.experimental)
from torch_xla import _autocast, _bf16  # noqa: E402

_autocast.install()
_bf16.install()
