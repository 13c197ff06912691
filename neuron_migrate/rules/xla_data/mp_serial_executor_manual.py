"""NM144: xmp.MpSerialExecutor has no equivalent"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.migrate.context import code_of
from neuron_migrate.rules.base import MANUAL, Example, Rule, RuleMeta, register
from neuron_migrate.rules.calls import has_params, receiver
from neuron_migrate.rules.tables.xla_data import ROWS
from neuron_migrate.rules.xla_data.common import file_index
from neuron_migrate.rules.xla_step.common import DOCS_DISTRIBUTED


@register
class MpSerialExecutorManual(Rule):
    """``xmp.MpSerialExecutor`` serialized a function across forked workers; there is no TorchNeuron
    counterpart, so the call sites are marked for a human."""

    meta = RuleMeta(
        "NM144",
        "xmp.MpSerialExecutor has no equivalent",
        safety=MANUAL,
        risks=frozenset({"launch"}),
        summary=(
            "Call the function given to `.run()` directly; if it must run once (a download), run it on "
            "rank 0 first and let the others wait on dist.barrier()."
        ),
        docs=(DOCS_DISTRIBUTED,),
        example=Example(
            before=(
                "import torch_xla.distributed.xla_multiprocessing as xmp\n\n"
                "SERIAL_EXEC = xmp.MpSerialExecutor()\n"
                "dataset = SERIAL_EXEC.run(lambda: load_dataset(path))\n"
            ),
            after=(
                "import torch_xla.distributed.xla_multiprocessing as xmp\n\n"
                "# TODO(neuron-migrate NM144): delete the executor and call the functions given to its .run() "
                "directly\n"
                "SERIAL_EXEC = xmp.MpSerialExecutor()\n"
                "# TODO(neuron-migrate NM144): call it directly: `load_dataset(path)`\n"
                "dataset = SERIAL_EXEC.run(lambda: load_dataset(path))\n"
            ),
        ),
    )
    rows = ROWS

    def leave_Call(self, original: cst.Call, updated: cst.Call):
        func = original.func
        if not isinstance(func, cst.Attribute) or func.attr.value != "run":
            return updated
        index = file_index(self.ctx)
        if index is None or id(original) not in index.executors:
            return updated
        fn = updated.args[0].value if len(updated.args) == 1 and not updated.args[0].keyword else None
        if isinstance(fn, cst.Lambda) and not has_params(fn):
            direct = code_of(fn.body)
        elif fn is not None:
            direct = f"{receiver(fn)}()"
        else:
            direct = "fn()"
        self.ctx.manual(self.meta, original, f"call it directly: `{direct}`")
        return updated
