"""NM142: xmp.spawn / torch_xla.launch -> direct call, launched with torchrun"""

from __future__ import annotations

import os

import libcst as cst

from neuron_migrate.migrate.context import code_of
from neuron_migrate.rules.base import REVIEW, Edit, Example, Rule, RuleMeta, register
from neuron_migrate.rules.calls import arg_value, bind_args, receiver, spread_arguments
from neuron_migrate.rules.xla_data.common import LAUNCHERS
from neuron_migrate.rules.xla_step.common import DOCS_DISTRIBUTED


@register
class SpawnToTorchrun(Rule):
    """``xmp.spawn(fn, args)`` / ``torch_xla.launch(fn, args)`` -> ``fn(<rank>, *args)`` in a
    process started by ``torchrun`` (one per NeuronCore; Neuron torch.distributed guide)."""

    meta = RuleMeta(
        "NM142",
        "xmp.spawn / torch_xla.launch -> direct call, launched with torchrun",
        safety=REVIEW,
        risks=frozenset({"launch"}),
        summary=(
            "The script no longer forks its workers: torchrun starts one process per NeuronCore and each "
            "calls the worker function with its rank. `python script.py` still runs one process when the worker "
            "joins the process group only under torchrun (the join NM128 adds); a file that starts its own "
            "process group runs a single process under torchrun too, and a worker defined elsewhere must join "
            "the group itself."
        ),
        docs=(DOCS_DISTRIBUTED,),
        example=Example(
            before=(
                "import torch_xla.distributed.xla_multiprocessing as xmp\n\n\n"
                "def _mp_fn(index, flags):\n"
                "    print(index, flags)\n\n\n"
                "if __name__ == \"__main__\":\n"
                "    xmp.spawn(_mp_fn, args=(flags,), nprocs=8)\n"
            ),
            after=(
                "import os\n"
                "import torch\n"
                "import torch.distributed as dist\n\n\n"
                "def _mp_fn(index, flags):\n"
                "    # torchrun started this process: join the other ranks on its own NeuronCore, as the workers "
                "of xmp.spawn did\n"
                "    if \"WORLD_SIZE\" in os.environ and not dist.is_initialized():\n"
                "        dist.init_process_group(\"neuron\")\n"
                "        torch.neuron.set_device(int(os.environ.get(\"LOCAL_RANK\", \"0\")))\n"
                "    print(index, flags)\n\n\n"
                "if __name__ == \"__main__\":\n"
                "    # neuron-migrate(NM142): launch with `torchrun --nproc_per_node=8 example.py` (one process per "
                "NeuronCore); plain `python` runs one process\n"
                "    _mp_fn(int(os.environ.get(\"RANK\", \"0\")), flags)\n"
            ),
        ),
    )
    calls = {name: "direct_call" for name in LAUNCHERS}

    def direct_call(self, original: cst.Call, updated: cst.Call, qname: str):
        params, variable = LAUNCHERS[qname]
        args = bind_args(updated, params)
        script = self._script()
        line = self.ctx.statement_for_call.get(id(original))
        fn = args["fn"].value if args and "fn" in args else None
        if fn is None or isinstance(fn, cst.Lambda) or line is None or not isinstance(line.body[0], cst.Expr) or (
            self._legacy_worker(original, params)
        ):
            self.ctx.manual(
                self.meta,
                original,
                f"call the worker as `fn(int(os.environ.get(\"{variable}\", \"0\")), *args)` and launch with "
                f"`torchrun --nproc_per_node=N {script}`",
            )
            return updated
        os_module = self.ctx.require_import("os")
        call_args = [f'int({os_module}.environ.get("{variable}", "0"))']
        extra = spread_arguments(args.get("args"))
        if extra:
            call_args.append(extra)
        review = (
            f"launch with `torchrun --nproc_per_node={self._processes(args)} {script}` (one process per NeuronCore)"
            + self._single_process(fn)
        )
        return Edit(self.ctx.expr(f"{receiver(fn)}({', '.join(call_args)})"), review=review)

    def _single_process(self, fn: cst.BaseExpression) -> str:
        """What a run without torchrun does, as far as this file tells."""
        # The distributed rules read this family's launcher table: their plan is imported here.
        from neuron_migrate.rules.xla_distributed.spmd_plan import spmd_plan
        from neuron_migrate.rules.xla_distributed.xla_backend_to_neuron import process_group_plan

        plan = process_group_plan(self.ctx)
        if plan.starts_own_group or spmd_plan(self.ctx).meshes:
            # The file's own init_process_group (or DeviceMesh) needs torchrun's rendezvous variables.
            return "; the file starts its own process group, so run one process with `--nproc_per_node=1` too"
        if isinstance(fn, cst.Name) and fn.value in plan.functions:
            # The worker joins the group only when torchrun started it (WORKER_INIT).
            return "; plain `python` runs one process"
        return (
            f"; nothing in this file joins the ranks: under torchrun `{code_of(fn)}` has to start the \"neuron\" "
            "process group (itself, or through a library such as accelerate) and put its rank on its own core "
            "(`torch.neuron.set_device(local_rank)`), or each rank trains alone"
        )

    def _legacy_worker(self, original: cst.Call, params: tuple[str, ...]) -> bool:
        """A worker that is itself a legacy API (``torch_xla.launch(xm.xla_device)``) is no program to call."""
        args = bind_args(original, params)
        fn = args.get("fn") if args else None
        return fn is not None and any(name.startswith("torch_xla") for name in self.ctx.qualified_names(fn.value))

    def _script(self) -> str:
        name = os.path.basename(self.ctx.path)
        return name if name.endswith(".py") and self.ctx.cell is None else "<script>.py"

    @staticmethod
    def _processes(args: dict[str, cst.Arg]) -> str:
        if arg_value(args, "debug_single_process") is True:
            return "1"
        count = arg_value(args, "nprocs", single_token=True)
        return str(count) if isinstance(count, int) and not isinstance(count, bool) else "N"
