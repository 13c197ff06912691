"""Text generation on Inferentia2 / Trainium with optimum-neuron.

The first run compiles the model for the shapes below (a few minutes) and saves the compiled
artifacts to ``--save-dir``; later runs load them from there.
"""

import argparse
import os

from transformers import AutoTokenizer

from optimum.neuron import NeuronModelForCausalLM

compiler_args = {"num_cores": 2, "auto_cast_type": "bf16"}
input_shapes = {"batch_size": 1, "sequence_length": 256}


def load(model_id, save_dir):
    if os.path.isdir(save_dir):
        return NeuronModelForCausalLM.from_pretrained(save_dir)
    model = NeuronModelForCausalLM.from_pretrained(model_id, export=True, **compiler_args, **input_shapes)
    model.save_pretrained(save_dir)
    return model


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", default="meta-llama/Llama-3.2-1B-Instruct")
    parser.add_argument("--save-dir", default="llama-neuron")
    parser.add_argument("--prompt", default="What is a NeuronCore?")
    parser.add_argument("--max-new-tokens", type=int, default=64)
    args = parser.parse_args(argv)

    tokenizer = AutoTokenizer.from_pretrained(args.model)
    model = load(args.model, args.save_dir)

    inputs = tokenizer(args.prompt, return_tensors="pt")
    outputs = model.generate(**inputs, max_new_tokens=args.max_new_tokens, do_sample=False)
    print(tokenizer.decode(outputs[0], skip_special_tokens=True))


if __name__ == "__main__":
    main()
