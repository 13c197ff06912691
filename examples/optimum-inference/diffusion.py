"""Stable Diffusion on Inferentia2 with optimum-neuron: compile once for 512x512, then generate."""

import argparse

from optimum.neuron import NeuronStableDiffusionPipeline


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", default="stabilityai/stable-diffusion-2-1-base")
    parser.add_argument("--prompt", default="a photo of an astronaut riding a horse on mars")
    parser.add_argument("--steps", type=int, default=25)
    parser.add_argument("--output", default="astronaut.png")
    args = parser.parse_args(argv)

    pipe = NeuronStableDiffusionPipeline.from_pretrained(
        args.model,
        export=True,
        batch_size=1,
        height=512,
        width=512,
        num_images_per_prompt=1,
        auto_cast="matmul",
        auto_cast_type="bf16",
    )
    pipe.save_pretrained("sd_neuron/")

    image = pipe(args.prompt, num_inference_steps=args.steps).images[0]
    image.save(args.output)


if __name__ == "__main__":
    main()
