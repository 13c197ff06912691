#!/usr/bin/env bash
# LoRA fine-tuning on one trn1.32xlarge node: 32 NeuronCores, tensor parallel degree 2.
# `./run.sh --precompile` extracts and compiles the graphs first with neuron_parallel_compile.
set -euo pipefail
cd "$(dirname "$0")"

PROCESSES_PER_NODE=${PROCESSES_PER_NODE:-32}
MODEL_ID=${MODEL_ID:-meta-llama/Llama-3.2-1B}
OUTPUT_DIR=${OUTPUT_DIR:-llama-lora}

export NEURON_CC_FLAGS="--model-type transformer --retry_failed_compilation"
export NEURON_FUSE_SOFTMAX=1
export NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS=3
export MALLOC_ARENA_MAX=64
export XLA_USE_BF16=1

LAUNCH=(torchrun --nproc_per_node "${PROCESSES_PER_NODE}")
ARGS=(
    --model_id "${MODEL_ID}"
    --bf16 true
    --tensor_parallel_size 2
    --zero_1 true
    --per_device_train_batch_size 1
    --gradient_accumulation_steps 8
    --gradient_checkpointing true
    --learning_rate 5e-5
    --num_train_epochs 3
    --logging_steps 10
    --output_dir "${OUTPUT_DIR}"
)

if [[ "${1:-}" == "--precompile" ]]; then
    shift
    MAX_STEPS=10
    neuron_parallel_compile "${LAUNCH[@]}" train.py "${ARGS[@]}" --max_steps "${MAX_STEPS}" "$@"
fi

"${LAUNCH[@]}" train.py "${ARGS[@]}" "$@"
