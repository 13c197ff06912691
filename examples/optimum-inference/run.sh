#!/usr/bin/env bash
# Compile ahead of time with the optimum CLI, then generate with the compiled artifacts.
set -euo pipefail
cd "$(dirname "$0")"

optimum-cli export neuron --model meta-llama/Llama-3.2-1B-Instruct \
    --batch_size 1 --sequence_length 256 --num_cores 2 --auto_cast_type bf16 llama-neuron/
python generate.py --save-dir llama-neuron --prompt "What is a NeuronCore?"
python diffusion.py --steps 25
