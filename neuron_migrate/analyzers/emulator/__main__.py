"""``python -m neuron_migrate.analyzers.emulator [-m MODULE | SCRIPT] [ARGS...]``: run a program on the emulator.

This is what ``neuron-migrate emulate`` starts (once, or once per rank under torchrun). The program runs as
``python`` would run it: ``sys.argv``, ``__main__``, ``sys.path[0]`` and the exit status are the same. Started
outside torchrun, it is the one process of a torchrun launch (as ``audit --run`` runs it), since migrated
programs start their process group from what torchrun sets. A program that still imports a module of the
legacy stack is told to go through ``neuron-migrate rewrite`` first.
"""

from __future__ import annotations

import os
import runpy
import sys

from neuron_migrate.analyzers.launch import single_process_launch


def main(argv: list[str]) -> None:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr)
        raise SystemExit(2)
    from neuron_migrate.analyzers.emulator import NOTHING_PLACED, RealDeviceAvailable, activate, tensors_placed

    try:
        activate()
    except RealDeviceAvailable as exc:
        print(f"neuron-migrate emulate: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    if argv[0] == "-m" and len(argv) < 2:
        print("neuron-migrate emulate: -m needs a module name", file=sys.stderr)
        raise SystemExit(2)
    try:
        with single_process_launch([]):
            _run(argv)
    except ModuleNotFoundError as exc:
        legacy = _legacy_module(exc.name or "")
        if legacy is None:
            _finish(1, show_error=True)
            raise
        print(f"neuron-migrate emulate: {_importer(exc, argv)}imports {exc.name}, which only the legacy Neuron stack "
              f"has: migrate the program first (neuron-migrate rewrite {_target(argv)}), then emulate it",
              file=sys.stderr, flush=True)
        _finish(2)
        raise SystemExit(2) from None
    except SystemExit as exc:
        if exc.code in (None, 0):
            _warn_if_nothing_placed(tensors_placed(), NOTHING_PLACED)
        _finish(exc.code)
        raise
    except Exception:
        _finish(1, show_error=True)
        raise
    _warn_if_nothing_placed(tensors_placed(), NOTHING_PLACED)
    _finish(0)


def _finish(code, show_error: bool = False) -> None:
    """End a program that made process groups here, without the interpreter's teardown.

    The groups live until the interpreter exits (see ``distributed``); destroying a gloo group then, with
    its worker threads still running, can abort the process ("terminate called without an active
    exception") or hang it, so a rank that did its work would fail. The program's exit handlers and
    output are flushed first; nothing else of the teardown matters to a finished program."""
    from neuron_migrate.analyzers.emulator import distributed

    if not distributed.live_groups():
        return  # the exception, if any, goes on and is printed as usual
    import atexit
    import traceback

    if show_error:
        traceback.print_exc()

    atexit._run_exitfuncs()
    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code or 0)


# Modules only the legacy stack has (the packages of neuron_migrate.rules.LEGACY_MODULES, which the analyzers
# may not import; a test keeps the two in step). torch_neuronx is TorchNeuron's package too, and the emulator
# provides one: a part of it that cannot be found is one of its XLA-era parts.
LEGACY_PACKAGES = ("torch_xla", "optimum.neuron", "neuronx_distributed", "libneuronxla", "torch_neuronx.")


def _legacy_module(name: str) -> str | None:
    return next((p for p in LEGACY_PACKAGES if name.startswith(p) and (name == p or p.endswith(".")
                                                                         or name[len(p)] == ".")), None)


def _importer(exc: BaseException, argv: list[str]) -> str:
    """``utils.py:3: `` for the line of the program's own code that imported the module (the innermost frame
    outside the import machinery), or nothing when there is none."""
    import traceback

    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not f.filename.startswith("<")]
    own = [f for f in frames if not f.filename.startswith(os.path.dirname(os.path.dirname(__file__)))
           and "runpy" not in os.path.basename(f.filename)]
    if not own:
        return ""
    frame = own[-1]
    name = os.path.relpath(frame.filename) if not os.path.relpath(frame.filename).startswith("..") else frame.filename
    return f"{name}:{frame.lineno}: "


def _target(argv: list[str]) -> str:
    if argv[0] == "-m":
        return "."
    return argv[0]


def _run(argv: list[str]) -> None:
    if argv[0] == "-m":
        sys.argv = [argv[1], *argv[2:]]
        sys.path.insert(0, os.getcwd())
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    else:
        script = argv[0]
        sys.argv = [script, *argv[1:]]
        sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
        runpy.run_path(script, run_name="__main__")


def _warn_if_nothing_placed(placed: bool, message: str) -> None:
    # a program run on the emulator is meant for the neuron device: finishing without using it is worth a line
    if not placed and os.environ.get("RANK", "0") == "0":
        print(f"neuron-migrate emulate: {message}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
