#!/usr/bin/env bash
# Train on one trn1.2xlarge (2 NeuronCores). `./run.sh --precompile` first fills the Neuron
# compile cache with neuron_parallel_compile, so the real run does not stop to compile.
set -euo pipefail
cd "$(dirname "$0")"

NPROC=${NPROC:-2}
EPOCHS=${EPOCHS:-4}

export PJRT_DEVICE=NEURON
# whole-model bfloat16 on the device (the recipe from the torch-neuronx 1.x days)
export XLA_USE_BF16=${XLA_USE_BF16:-1}
export NEURON_CC_FLAGS="--model-type=generic --cache_dir=${HOME}/neuron_cache --retry_failed_compilation"
export NEURON_RT_STOCHASTIC_ROUNDING_EN=1
export MALLOC_ARENA_MAX=64

if [[ "${1:-}" == "--precompile" ]]; then
    shift
    # graph extraction only: losses printed by this run are meaningless
    neuron_parallel_compile torchrun --nproc_per_node="${NPROC}" train.py --epochs 1 "$@"
fi

torchrun --nproc_per_node="${NPROC}" train.py --epochs "${EPOCHS}" "$@"
