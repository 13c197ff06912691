"""Overhead of ``audit --run`` (the runtime analyzer) over a plain run, on the emulated neuron device.

    python benchmarks/bench_audit_run.py [--steps 30] [--repeats 3]

The program is a tiny Llama (hidden 64, 2 layers, vocab 128) trained for ``--steps`` steps with
``torch.compile(backend="neuron")`` and fixed shapes. Each run is a fresh process: plain is
``python -m neuron_migrate.analyzers.emulator train.py``, analyzed is ``analyze_script("train.py")``. Prints the
median wall time of each (whole process, and the training loop the program times itself), the ratios, and the
analyzer's summary line.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TRAIN = '''\
import sys
import time

import torch
from transformers import LlamaConfig, LlamaForCausalLM

steps = int(sys.argv[1])
torch.manual_seed(0)
config = LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                     num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128)
model = LlamaForCausalLM(config).to("neuron")
compiled = torch.compile(model, backend="neuron")
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
ids = torch.randint(0, 128, (4, 32), generator=torch.Generator().manual_seed(0)).to("neuron")
start = time.perf_counter()
for _ in range(steps):
    loss = compiled(input_ids=ids, labels=ids).loss
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
print(f"train_seconds={time.perf_counter() - start:.3f}")
'''

ANALYZE = '''\
import sys
from neuron_migrate.analyzers.runtime import analyze_script
result = analyze_script(sys.argv[1], sys.argv[2:], emulate=True)
print("summary:", result.summary.text())
for finding in result.findings:
    print("finding:", finding.rule, f"{finding.path}:{finding.span.line}", finding.message[:160])
'''


def timed(command: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    wall = time.perf_counter() - start
    train = float(re.search(r"train_seconds=([\d.]+)", done.stdout).group(1))
    return wall, train, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    root = str(Path(__file__).resolve().parents[1])
    path = os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1",
           "TOKENIZERS_PARALLELISM": "false"}
    with tempfile.TemporaryDirectory() as folder:
        train = Path(folder) / "train.py"
        train.write_text(TRAIN)
        plain_cmd = [sys.executable, "-m", "neuron_migrate.analyzers.emulator", str(train), str(args.steps)]
        audit_cmd = [sys.executable, "-c", ANALYZE, str(train), str(args.steps)]
        plain, audited, output = [], [], ""
        for _ in range(args.repeats):  # interleaved, so drift in machine load hits both alike
            plain.append(timed(plain_cmd, env)[:2])
            wall, loop, output = timed(audit_cmd, env)
            audited.append((wall, loop))
    p_wall, p_loop = (statistics.median(x) for x in zip(*plain))
    a_wall, a_loop = (statistics.median(x) for x in zip(*audited))
    print(f"tiny Llama, {args.steps} compiled training steps on the emulated neuron device, median of {args.repeats}")
    print(f"whole process   plain {p_wall:6.2f} s   audit --run {a_wall:6.2f} s   ratio {a_wall / p_wall:.2f}x")
    print(f"training loop   plain {p_loop:6.2f} s   audit --run {a_loop:6.2f} s   ratio {a_loop / p_loop:.2f}x")
    for line in output.splitlines():
        if line.startswith(("summary:", "finding:")):
            print(line)


if __name__ == "__main__":
    main()
