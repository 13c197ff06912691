"""Overhead of the emulated neuron device over plain CPU: a Llama forward+backward, tiny (hidden 64, 2 layers,
the size of a readiness card's model) or large enough that compute dominates (hidden 1024, 8 layers).

    python benchmarks/bench_emulator.py [--size tiny|large] [--repeats 30] [--breakdown] [--profile]

Steps on cpu and on neuron alternate, so both see the same machine load, and each is timed in CPU seconds of
the process (the backward pass of a neuron tensor runs on the autograd engine's device thread, which
``process_time`` counts and a profiler of the main thread misses). Prints the median step on cpu and on neuron,
the median of the per-pair ratios, and the aten ops per step. ``--breakdown`` adds forward and backward apart
and the cost of each part of one op's path (entry into the wrapper's dispatch, run, wrap, the rest), as the
minimum over many rounds; ``--profile`` the emulator functions where the forward's time goes.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

clock = time.process_time


SIZES = {  # name: (config fields, batch, sequence)
    "tiny": (dict(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, max_position_embeddings=128), 2, 32),
    "large": (dict(vocab_size=8192, hidden_size=1024, intermediate_size=2816, num_hidden_layers=8,
                   num_attention_heads=16, num_key_value_heads=4, max_position_embeddings=512), 1, 128),
}


def llama(size: str):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    return LlamaForCausalLM(LlamaConfig(**SIZES[size][0]))


def phases(model, ids):
    """One training step split in (forward seconds, backward seconds)."""
    model.zero_grad(set_to_none=True)
    start = clock()
    loss = model(input_ids=ids, labels=ids).loss
    middle = clock()
    loss.backward()
    return middle - start, clock() - middle


def paired(runs, repeats):
    """Alternate the runs (name -> step function) ``repeats`` times: name -> list of (forward, backward)."""
    for step in runs.values():
        for _ in range(3):
            step()
    times = {name: [] for name in runs}
    for _ in range(repeats):
        for name, step in runs.items():
            times[name].append(step())
    return times


def count_ops(model, ids):
    """aten ops in a forward and in a backward, as a dispatch mode sees them."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Counter(TorchDispatchMode):
        n = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            Counter.n += 1
            return func(*args, **(kwargs or {}))

    with Counter():
        loss = model(input_ids=ids, labels=ids).loss
        forward = Counter.n
        loss.backward()
    return forward, Counter.n - forward


def least(fn, rounds=30, calls=2000):
    """Microseconds per call of ``fn``: the least of ``rounds`` rounds (the run least disturbed by the load)."""
    best = float("inf")
    for _ in range(rounds):
        start = time.thread_time()
        for _ in range(calls):
            fn()
        best = min(best, (time.thread_time() - start) / calls)
    return best * 1e6


def op_path():
    """What each part of one op costs, in microseconds: ``torch.add`` of two 4x8 tensors."""
    from neuron_migrate.analyzers.emulator import tensor

    class Echo(torch.Tensor):
        """A wrapper whose dispatch does nothing: what entering Python from the dispatcher costs."""

        __torch_function__ = torch._C._disabled_torch_function_impl

        @classmethod
        def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
            return args[0]

    device = tensor.current_device()
    a, b = torch.randn(4, 8), torch.randn(4, 8)
    na, nb = a.to(device), b.to(device)
    echo = torch.Tensor._make_wrapper_subclass(Echo, a.size(), dtype=a.dtype, device=device)
    add = torch.ops.aten.add.Tensor
    parts = {
        "cpu op (torch.add)": least(lambda: torch.add(a, b)),
        "neuron op (torch.add)": least(lambda: torch.add(na, nb)),
        "  entry: dispatcher to __torch_dispatch__ and back": least(lambda: torch.add(echo, echo)),
        "  the emulator's dispatch (unwrap + run + wrap)": least(lambda: tensor._dispatch(add, (na, nb), None)),
        "    run the aten op on the payloads": least(lambda: add._op(a, b)),
        "    wrap the result": least(lambda: tensor._new_wrapper(a, device)),
    }
    parts["    unwrap and the rest (the dispatch less run and wrap)"] = (
        parts["  the emulator's dispatch (unwrap + run + wrap)"]
        - parts["    run the aten op on the payloads"]
        - parts["    wrap the result"]
    )
    return parts


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", choices=sorted(SIZES), default="tiny")
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--breakdown", action="store_true")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    from neuron_migrate.analyzers.emulator import activate

    activate(banner=False)
    fields, batch, sequence = SIZES[args.size]
    ids = torch.randint(0, 256, (batch, sequence), generator=torch.Generator().manual_seed(0))
    models = {"cpu": (llama(args.size), ids), "neuron": (llama(args.size).to("neuron"), ids.to("neuron"))}
    times = paired({name: (lambda m=m, i=i: phases(m, i)) for name, (m, i) in models.items()}, args.repeats)
    steps = {name: [f + b for f, b in pairs] for name, pairs in times.items()}
    cpu, neuron = statistics.median(steps["cpu"]), statistics.median(steps["neuron"])
    ratio = statistics.median(n / c for n, c in zip(steps["neuron"], steps["cpu"]))
    print(f"{args.size} Llama fwd+bwd  cpu {cpu * 1e3:.2f} ms  neuron {neuron * 1e3:.2f} ms  overhead {ratio:.2f}x")
    ops = {name: count_ops(m, i) for name, (m, i) in models.items()}
    print(f"aten ops per step   cpu {sum(ops['cpu'])}  neuron {sum(ops['neuron'])}")
    if args.breakdown:
        for index, phase in enumerate(("forward", "backward")):
            c = statistics.median(pair[index] for pair in times["cpu"])
            n = statistics.median(pair[index] for pair in times["neuron"])
            extra = (n - c) / ops["neuron"][index] * 1e6
            print(f"{phase:9} cpu {c * 1e3:6.2f} ms ({ops['cpu'][index]} ops)  neuron {n * 1e3:6.2f} ms "
                  f"({ops['neuron'][index]} ops)  {n / c:.1f}x  {extra:.1f} us more per neuron op")
        print("one op, microseconds (least of 30 rounds):")
        for part, cost in op_path().items():
            print(f"  {cost:6.2f}  {part}")
    if args.profile:
        import cProfile
        import pstats

        model, inputs = models["neuron"]
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(10):
            phases(model, inputs)
        profiler.disable()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(12)


if __name__ == "__main__":
    main()
