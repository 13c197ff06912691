"""The emulator's share of a readiness card's time: the card's three phases (a forward pass, ``generate()`` with a
static cache, two compiled training steps) on the emulated neuron device against the same phases on the CPU with
``backend="eager"`` (what the emulator's neuron backend does by default: the captured graphs run op by op, on
neuron tensors there, on CPU tensors here).

    python benchmarks/bench_cards.py [--arch llama,qwen3,gpt2,bert]   # or an image classifier: vit, resnet

Each architecture and device runs in a fresh process (dynamo's caches and the emulator start clean), one after the
other, so both sides see the same machine. Prints seconds per phase and the emulator's share of the card's time.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

PHASES = ("build", "forward", "generate", "train")


def phases(model_type: str, device: str) -> dict[str, float]:
    """Seconds of each phase of a card of ``model_type`` on ``device`` ("neuron": the emulator)."""
    import warnings

    warnings.filterwarnings("ignore")
    if device == "neuron":
        from neuron_migrate.analyzers import emulator

        emulator.activate(banner=False)
    import torch
    import torch._dynamo
    import transformers

    from neuron_migrate.analyzers.models.card import auto_class
    from neuron_migrate.analyzers.models.inputs import model_inputs
    from neuron_migrate.analyzers.models.tiny import read_spec, tiny_config

    transformers.logging.set_verbosity_error()
    backend = "neuron" if device == "neuron" else "eager"
    times, start = {}, time.perf_counter()
    config = tiny_config(read_spec(model_type))
    torch.manual_seed(0)
    model = auto_class(config).from_config(config).to(device).eval()
    inputs = model_inputs(model, device)  # the card's own: tokens, or pictures for an image classifier
    times["build"] = time.perf_counter() - start
    start = time.perf_counter()
    with torch.no_grad():
        model(**inputs.forward)
    times["forward"] = time.perf_counter() - start
    start = time.perf_counter()
    if inputs.prompt is not None and model.can_generate():
        # transformers compiles the decode step itself on neuron (backend "neuron"); on the CPU it is asked to
        compile = transformers.CompileConfig(backend=backend, dynamic=False, mode="default")
        compile._compile_all_devices = True
        model.generation_config.compile_config = compile
        model.generate(inputs.prompt, max_new_tokens=24, min_new_tokens=24, do_sample=False,
                       cache_implementation="static", attention_mask=torch.ones_like(inputs.prompt))
    times["generate"] = time.perf_counter() - start
    torch._dynamo.reset()
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    compiled = torch.compile(model, backend=backend)
    start = time.perf_counter()
    for _ in range(2):
        compiled(**inputs.train).loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    times["train"] = time.perf_counter() - start
    return times


def measure(model_type: str, device: str) -> dict[str, float]:
    code = (f"import json, sys; sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r}); "
            f"from bench_cards import phases; print(json.dumps(phases({model_type!r}, {device!r})))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=900)
    if run.returncode:
        raise SystemExit(f"{model_type} on {device} failed:\n{run.stderr[-2000:]}")
    return json.loads(run.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--arch", default="llama,qwen3,gpt2,bert")  # dense: a MoE needs the card's CPU stand-in
    args = parser.parse_args()
    print(f"{'architecture':14} {'device':8} " + " ".join(f"{p:>9}" for p in PHASES) + "     total")
    for model_type in args.arch.split(","):
        totals = {}
        for device in ("cpu", "neuron"):
            times = measure(model_type, device)
            totals[device] = sum(times.values())
            print(f"{model_type:14} {device:8} " + " ".join(f"{times[p]:9.2f}" for p in PHASES)
                  + f" {totals[device]:9.2f}")
        share = 1 - totals["cpu"] / totals["neuron"]
        print(f"{'':14} emulator's share of the card: {share:.0%}")


if __name__ == "__main__":
    main()
