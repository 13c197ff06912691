"""``python -m neuron_migrate.verify.legacy_env DIR``: build the legacy environment that ``verify`` runs the
legacy side in (``--legacy-python DIR/bin/python``): a venv with torch 2.9.0 and torch-xla 2.9.0, the last
release of both that legacy Neuron programs were written for, on XLA's CPU device.

torch-xla does not declare torch as a dependency, so torch is installed first and may come from any index: with
``--torch-index URL`` (PyTorch's CPU wheels, ``https://download.pytorch.org/whl/cpu``) it is the CPU build, about
1 GB installed; from PyPI it is the CUDA build, which pulls 4.3 GB of NVIDIA libraries (7.1 GB in all, about
5 minutes). ``--with`` adds packages the legacy programs import (transformers, accelerate) at the versions of
this environment, so that both sides run the same library code.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import subprocess
import sys
import venv
from pathlib import Path

TORCH = "torch==2.9.0"
TORCH_XLA = "torch-xla==2.9.0"
BASE = ("numpy",)
# torch_xla's CPU device, a tensor on it and a step: what verify's legacy side needs to work
CHECK = ("import torch, torch_xla; d = torch_xla.device(); t = torch.ones(2, device=d) * 2; torch_xla.sync(); "
         "print(torch.__version__, torch_xla.__version__, d, t.cpu().tolist())")


def commands(folder: Path, torch_index: str | None = None, same_as_here: tuple[str, ...] = ()) -> list[list[str]]:
    """The pip commands that fill the venv at ``folder``, in order."""
    pip = [str(folder / "bin" / "python"), "-m", "pip", "install", "--disable-pip-version-check"]
    torch = [*pip, TORCH, *(["--index-url", torch_index] if torch_index else [])]
    return [torch, [*pip, TORCH_XLA, *BASE, *pinned(same_as_here)]]


def pinned(names: tuple[str, ...]) -> list[str]:
    """``name==version`` of each package as installed here; a package not installed here is taken unpinned."""
    out = []
    for name in names:
        try:
            out.append(f"{name}=={importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            out.append(name)
    return out


def make(folder: Path, torch_index: str | None = None, same_as_here: tuple[str, ...] = ()) -> str:
    """Create the venv and install into it; returns the interpreter to give to ``--legacy-python``."""
    folder = folder.absolute()
    if not (folder / "bin" / "python").exists():
        venv.EnvBuilder(with_pip=True).create(folder)
    for command in commands(folder, torch_index, same_as_here):
        print("+", " ".join(command), flush=True)
        subprocess.run(command, check=True)
    python = str(folder / "bin" / "python")
    subprocess.run([python, "-c", CHECK], check=True, env={**os.environ, "PJRT_DEVICE": "CPU"})
    return python


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m neuron_migrate.verify.legacy_env", description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="where the venv goes (created, or completed when it exists)")
    parser.add_argument("--torch-index", metavar="URL",
                        help="the index torch comes from, e.g. https://download.pytorch.org/whl/cpu for the CPU build")
    parser.add_argument("--with", dest="same_as_here", action="append", default=[], metavar="PACKAGE",
                        help="a package the legacy programs import, at this environment's version (repeatable)")
    args = parser.parse_args(argv)
    try:
        python = make(args.folder, args.torch_index, tuple(args.same_as_here))
    except subprocess.CalledProcessError as exc:
        print(f"legacy_env: failed: {' '.join(map(str, exc.cmd))} (status {exc.returncode})", file=sys.stderr)
        return 1
    print(f"legacy environment ready: neuron-migrate verify LEGACY MIGRATED --legacy-python {python}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
