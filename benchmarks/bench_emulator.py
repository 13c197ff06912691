"""Overhead of the emulated neuron device over plain CPU: tiny Llama (hidden 64, 2 layers) forward+backward.

    python benchmarks/bench_emulator.py [--repeats 30] [--profile]

Prints the median time per step on cpu and on neuron, the ratio, the aten ops per step, and with --profile the
functions of the emulator where the time goes.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch


def tiny_llama():
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128)
    torch.manual_seed(0)
    return LlamaForCausalLM(config)


def step_time(model, ids, repeats):
    def step():
        model.zero_grad(set_to_none=True)
        model(input_ids=ids, labels=ids).loss.backward()

    for _ in range(3):
        step()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def count_ops(model, ids):
    from torch.utils._python_dispatch import TorchDispatchMode

    class Counter(TorchDispatchMode):
        n = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            Counter.n += 1
            return func(*args, **(kwargs or {}))

    with Counter():
        model(input_ids=ids, labels=ids).loss.backward()
    return Counter.n


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    from neuron_migrate.analyzers.emulator import activate

    activate(banner=False)
    ids = torch.randint(0, 256, (2, 32), generator=torch.Generator().manual_seed(0))
    cpu_model = tiny_llama()
    neuron_model = tiny_llama().to("neuron")
    cpu = step_time(cpu_model, ids, args.repeats)
    neuron = step_time(neuron_model, ids.to("neuron"), args.repeats)
    print(f"tiny Llama fwd+bwd  cpu {cpu * 1e3:.2f} ms  neuron {neuron * 1e3:.2f} ms  overhead {neuron / cpu:.1f}x")
    print(f"aten ops per step   cpu {count_ops(cpu_model, ids)}  neuron {count_ops(neuron_model, ids.to('neuron'))}")
    if args.profile:
        import cProfile
        import pstats

        profiler = cProfile.Profile()
        profiler.enable()
        step_time(neuron_model, ids.to("neuron"), 10)
        profiler.disable()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(12)


if __name__ == "__main__":
    main()
