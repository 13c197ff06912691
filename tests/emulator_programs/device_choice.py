"""A legacy script that picks its batch size from the device type and its device through a helper
that knows the XLA device names, the way many Trainium scripts do."""

import argparse

import torch
import torch_xla.core.xla_model as xm
import torch_xla.runtime as xr


def get_device(name):
    if name == "xla":
        return xm.xla_device()
    elif name == "cuda":
        return torch.device("cuda")
    return torch.device("cpu")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="xla", choices=["cpu", "cuda", "xla"])
    args = parser.parse_args()
    if xr.device_type() == "NEURON":
        batch_size = 4
    else:
        batch_size = 16
    device = get_device(args.device)
    model = torch.nn.Linear(8, 2).to(device)
    out = model(torch.randn(batch_size, 8).to(device))
    place = "accelerator" if args.device == "xla" else "host"
    print(f"batch_size={out.shape[0]} device={out.device.type} place={place}")


if __name__ == "__main__":
    main()
