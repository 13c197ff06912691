"""What the xla_utils rules share: helpers, constants and base classes."""

from __future__ import annotations

from dataclasses import dataclass, field
from string import Template

import libcst as cst

from neuron_migrate.migrate.context import code_of
from neuron_migrate.rules.base import Edit, Rule

DOCS_XLA_UTILS = "https://github.com/pytorch/xla/blob/master/torch_xla/utils/utils.py"
DOCS_XLA_TEST_UTILS = "https://github.com/pytorch/xla/blob/master/torch_xla/test/test_utils.py"
DOCS_TENSORBOARD = "https://docs.pytorch.org/docs/stable/tensorboard.html"
DOCS_CHECKPOINT = "https://docs.pytorch.org/docs/stable/checkpoint.html"
DOCS_SYNC_BATCH_NORM = "https://docs.pytorch.org/docs/stable/generated/torch.nn.SyncBatchNorm.html"
DOCS_XLA_MODEL = "https://github.com/pytorch/xla/blob/master/torch_xla/core/xla_model.py"
DOCS_PYTREE = "https://github.com/pytorch/pytorch/blob/main/torch/utils/_pytree.py"
DOCS_XLA_RELEASES = "https://github.com/pytorch/xla/releases"
SAMPLE_GENERATOR = "torch_xla.utils.utils.SampleGenerator"
RATE_TRACKER = "torch_xla.core.xla_model.RateTracker"
TEST_UTILS = "torch_xla.test.test_utils."
CONVERT_TO_CPU = "torch_xla.core.xla_model._maybe_convert_to_cpu"


@dataclass(frozen=True)
class Helper:
    """A definition added to the file; ``$name`` placeholders in ``code`` are modules it imports."""

    code: str
    replaces: str  # the torch_xla API it stands in for
    imports: dict[str, str] = field(default_factory=dict)  # placeholder -> import (see importable)
    needs: tuple[str, ...] = ()  # other helpers it calls
    review: str = ""


_RANK = "$dist.get_rank() if $dist.is_initialized() else 0"
# Helper name -> its definition. Each keeps the behaviour (and printed format) of the torch_xla
# function of the same name; the ordinal that torch_xla printed after the device is the rank.
HELPERS = {
    "RateTracker": Helper(
        '''class RateTracker:
    """Items per second: rate() since its previous call (smoothed), global_rate() since creation."""

    def __init__(self, smooth_factor=None):
        if smooth_factor is None:
            smooth_factor = float($os.environ.get("RATE_TRACKER_SMOOTHING", 0.4))
        self._smooth_factor = smooth_factor
        self._start = self._last = $time.time()
        self._counted = 0.0
        self._pending = 0.0
        self._last_rate = None

    def add(self, count):
        self._pending += count

    def rate(self):
        now = $time.time()
        elapsed = now - self._last
        if elapsed <= 0:
            return 0.0
        rate = self._pending / elapsed
        if self._last_rate is not None:
            rate = (1 - self._smooth_factor) * rate + self._smooth_factor * self._last_rate
        self._counted += self._pending
        self._pending = 0.0
        self._last = now
        self._last_rate = rate
        return rate

    def global_rate(self):
        elapsed = $time.time() - self._start
        return (self._counted + self._pending) / elapsed if elapsed > 0 else 0.0
''',
        "xm.RateTracker",
        imports={"os": "os", "time": "time"},
    ),
    "write_to_summary": Helper(
        '''def write_to_summary(summary_writer, global_step=None, dict_to_write=None):
    """Write each scalar of dict_to_write to a TensorBoard writer; nothing when there is no writer."""
    if summary_writer is None:
        return
    for name, value in (dict_to_write or {}).items():
        summary_writer.add_scalar(name, value, global_step)
''',
        "test_utils.write_to_summary",
    ),
    "get_summary_writer": Helper(
        '''def get_summary_writer(logdir):
    """A TensorBoard writer for logdir, or None when no logdir is given."""
    if not logdir:
        return None
    # Imported here so that runs without a logdir do not need the tensorboard package.
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(log_dir=logdir)
    write_to_summary(writer, 0, {"TensorboardStartTimestamp": $time.time()})
    return writer
''',
        "test_utils.get_summary_writer",
        imports={"time": "time"},
        needs=("write_to_summary",),
        review="TensorBoard logs now go through torch.utils.tensorboard: install the tensorboard package",
    ),
    "close_summary_writer": Helper(
        '''def close_summary_writer(summary_writer):
    """Flush and close a TensorBoard writer, if there is one."""
    if summary_writer is not None:
        summary_writer.flush()
        summary_writer.close()
''',
        "test_utils.close_summary_writer",
    ),
    "print_training_update": Helper(
        f'''def print_training_update(device, step, loss, rate, global_rate, epoch=None, summary_writer=None):
    """Print one "| Training Device=... Step=... Loss=..." progress line, as torch_xla's test_utils did."""
    rank = {_RANK}
    fields = [
        "Training",
        f"Device={{device}}/{{rank}}",
        None if epoch is None else f"Epoch={{epoch}}",
        f"Step={{step}}",
        f"Loss={{loss:.5f}}",
        f"Rate={{rate:.2f}}",
        f"GlobalRate={{global_rate:.2f}}",
        f"Time={{$datetime.now():%H:%M:%S}}",
    ]
    print("|", " ".join(field for field in fields if field), flush=True)
    if summary_writer:
        write_to_summary(summary_writer, dict_to_write={{"examples/sec": rate, "average_examples/sec": global_rate}})
''',
        "test_utils.print_training_update",
        imports={"datetime": "from datetime import datetime", "dist": "torch.distributed as dist"},
        needs=("write_to_summary",),
    ),
    "print_test_update": Helper(
        f'''def print_test_update(device, accuracy, epoch=None, step=None):
    """Print one "| Test Device=... Accuracy=..." line, as torch_xla's test_utils did."""
    rank = {_RANK}
    fields = [
        "Test",
        f"Device={{device}}/{{rank}}",
        None if step is None else f"Step={{step}}",
        None if epoch is None else f"Epoch={{epoch}}",
        None if accuracy is None else f"Accuracy={{accuracy:.2f}}",
        f"Time={{$datetime.now():%H:%M:%S}}",
    ]
    print("|", " ".join(field for field in fields if field), flush=True)
''',
        "test_utils.print_test_update",
        imports={"datetime": "from datetime import datetime", "dist": "torch.distributed as dist"},
    ),
}
# The torch_xla.test.test_utils functions that become the helper of the same name.
TEST_UTILS_FUNCTIONS = (
    "print_training_update",
    "print_test_update",
    "get_summary_writer",
    "write_to_summary",
    "close_summary_writer",
)
WRITE_TO_SUMMARY_PARAMS = ("summary_writer", "global_step", "dict_to_write", "write_xla_metrics")
XLA_METRICS_DROPPED = (
    "XLA metrics are no longer written to TensorBoard; "
    "add torch_neuronx.metrics values to dict_to_write if they are needed"
)
FROM_IMPORT_STEP = (
    "replace the `from {module} import {name}` line with `import {module}` and use it through that name, "
    "then run neuron-migrate again: it adds a local {name} that needs no torch_xla"
)
IMPORT_TAKEN = (
    "a module `{name}` needs is bound to something else in this file: "
    "copy the `neuron-migrate rules {rule}` definition and adapt its imports"
)
NAME_TAKEN = "`{name}` already means something else in this file: copy the `neuron-migrate rules {rule}` definition under another name"


class HelperRule(Rule):
    """Base of the rules that point a legacy helper at a local definition added to the file."""

    def use_helper(self, original: cst.CSTNode, updated: cst.CSTNode, name: str, module: str, review: str = ""):
        """``updated`` (a use of legacy ``module.name``) as a use of the local helper ``name``.

        ``review`` is what the caller's own change to ``updated`` asks a reviewer; the helper's
        review replaces it. The caller's change stands when the helper cannot be used."""
        target = original.func if isinstance(original, cst.Call) else original
        if isinstance(target, cst.Name):
            self.ctx.manual(self.meta, original, FROM_IMPORT_STEP.format(module=module, name=target.value))
            return Edit(updated, review=review)
        if not self.add_helper(original, name):
            return Edit(updated, review=review)
        use = updated.with_changes(func=cst.Name(name)) if isinstance(updated, cst.Call) else cst.Name(name)
        return Edit(use, review=HELPERS[name].review or review)

    def add_helper(self, node: cst.CSTNode, name: str) -> bool:
        """Schedule ``name`` (and the helpers it calls) after the imports, once per file."""
        helper = HELPERS[name]
        if name in self.ctx.module_names:
            self.ctx.manual(self.meta, node, NAME_TAKEN.format(name=name, rule=self.meta.id))
            return False
        if not all(self.add_helper(node, need) for need in helper.needs):
            return False  # the helper it needs has said why
        scheduled = set(self.ctx.imports_needed)
        names = {placeholder: importable(self.ctx, spec) for placeholder, spec in helper.imports.items()}
        if None in names.values():
            for key in set(self.ctx.imports_needed) - scheduled:
                del self.ctx.imports_needed[key]
            self.ctx.manual(self.meta, node, IMPORT_TAKEN.format(name=name, rule=self.meta.id))
            return False
        code = Template(helper.code).substitute(names).rstrip("\n")
        self.ctx.add_setup(
            self.meta, node, code, f"Stands in for torch_xla's {helper.replaces}.", unless=_definition(name)
        )
        return True


def importable(ctx, spec: str) -> str | None:
    """The expression naming ``spec`` (``"time"``, ``"torch.distributed as dist"``, ``"from
    datetime import datetime"``) here, imported if needed; None when the name it needs already
    means something else in this file (``from time import time`` leaves no name for the module)."""
    if spec.startswith("from "):
        _, module, _, name = spec.split()
        if (module, name) in ctx.existing_from_imports:
            return ctx.existing_from_imports[(module, name)]
        bound = ctx.require_from_import(module, name)
        if bound == name:
            return bound
    else:
        module, _, alias = spec.partition(" as ")
        if module in ctx.existing_imports:
            return ctx.existing_imports[module]
        if not alias and module in ctx.module_names:
            # ``from time import time``: the module comes in under a name of its own.
            alias = f"{module}_module"
        bound = ctx.require_import(module, alias=alias or None)
    root = bound.split(".")[0]
    if root in ctx.module_names and ctx.existing_imports.get(root) != root:
        return None
    return bound


def _operand(node: cst.BaseExpression) -> str:
    """Code for ``node`` as the right operand of ``*``: parenthesized unless it binds tighter."""
    text = code_of(node).strip()
    if isinstance(node, (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Integer)) or node.lpar:
        return text
    return f"({text})"


def _definition(name: str) -> str:
    return f"class {name}:" if name[:1].isupper() else f"def {name}("


SYNC_BATCH_NORM_REVIEW = (
    "averages the batch statistics over the default process group: "
    "init it (dist.init_process_group) before training, or this acts as a plain BatchNorm"
)
