"""Helpers for train.py: rank-aware logging, cross-worker reductions and XLA debug output."""

import logging
import os
import random

import torch
import torch_xla.core.xla_model as xm
import torch_xla.debug.metrics as met

try:
    import torch_xla.debug.profiler as xp
except ImportError:  # some torch-neuronx builds ship without the profiler
    xp = None

logging.basicConfig(format="%(asctime)s %(levelname)s %(message)s", level=logging.INFO)
logger = logging.getLogger("xla-training")


def log_rank0(message):
    # every worker runs the same script; one copy of each line is enough
    if xm.is_master_ordinal(local=False):
        logger.info(message)


def seed_everything(seed):
    random.seed(seed)
    torch.manual_seed(seed)
    xm.set_rng_state(seed)


def wait_for_all(tag):
    """Block until every worker reaches the same tag."""
    xm.rendezvous(tag)


def _sum_counts(per_worker):
    return sum(c for c, _ in per_worker), sum(n for _, n in per_worker)


def reduce_accuracy(correct, seen):
    """Accuracy over every worker's share of the evaluation set."""
    correct, seen = xm.mesh_reduce("eval_counts", (correct, seen), _sum_counts)
    return correct / max(seen, 1)


def start_profiler(port=9012):
    if xp is None:
        logger.warning("torch_xla profiler not available; not starting the server")
        return None
    return xp.start_server(port)


def print_compile_stats():
    """More than a few compilations after the first epoch means some shape keeps changing."""
    compile_time = met.metric_data("CompileTime")
    compiles = compile_time[0] if compile_time else 0
    log_rank0(f"graphs compiled: {compiles}")
    if os.environ.get("XLA_METRICS_VERBOSE") == "1":
        log_rank0(met.metrics_report())
