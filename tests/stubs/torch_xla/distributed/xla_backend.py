"""Registers a process-group backend named "xla" that is gloo underneath.

A gloo group left for the interpreter's teardown can abort a process that finished its work ("terminate called
without an active exception": a worker thread destroyed while joinable), so the groups are destroyed by an exit
handler while the interpreter is whole. Legacy programs rarely destroy their group themselves; torch_xla's own
runtime ends cleanly without it."""

import atexit

import torch.distributed as dist


def _create_xla_process_group(store, rank, size, timeout):
    return dist.ProcessGroupGloo(store, rank, size, timeout)


def _destroy_at_exit():
    if dist.is_initialized():
        dist.destroy_process_group()


if "xla" not in dist.Backend.backend_list:
    dist.Backend.register_backend("xla", _create_xla_process_group, devices=["cpu"])
    atexit.register(_destroy_at_exit)
