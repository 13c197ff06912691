"""Device selection and runtime queries: the XLA device becomes the native ``"neuron"`` device.

On TorchNeuron the device is ``torch.device("neuron")`` and ``torch.neuron`` is the device module
(it plays the role ``torch.cuda`` plays for CUDA), so ``xm.xla_device()``, the ``"xla"`` device
strings and the ``torch_xla.runtime`` queries all map onto stock PyTorch.
"""

from __future__ import annotations

import re

import libcst as cst

from neuron_migrate.rules.base import SAFE, Example, Rule, RuleMeta, StatementReplacement, register
from neuron_migrate.rules.calls import ComparisonRule, bind_args

DOCS_CHANGES = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/index.html"
DOCS_MODULE = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/reference/api/torch-neuron-module.html"
DOCS_DISTRIBUTED = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/guides/torch-distributed.html"
DOCS_OLD_VS_NATIVE = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/setup/troubleshooting.html"
DOCS_ENV = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/reference/env-vars.html"


def is_none(arg: cst.Arg | None) -> bool:
    return arg is None or (isinstance(arg.value, cst.Name) and arg.value.value == "None")


def looks_distributed(ctx) -> bool:
    """Whether the file runs one process per device (spawned, torchrun-launched or rank-aware)."""
    if "distributed" not in ctx.facts:
        ctx.facts["distributed"] = bool(_DISTRIBUTED_WORDS.search(ctx.module.code))
    return bool(ctx.facts["distributed"])


_DISTRIBUTED_WORDS = re.compile(
    r"xmp\.spawn|xla_multiprocessing|torch_xla\.launch|_ordinal|world_size|init_process_group"
    r"|LOCAL_RANK|torchrun|DistributedDataParallel|torch\.distributed"
)

_BIND_CORE = (
    "each torchrun process must bind its own NeuronCore: "
    'call torch.neuron.set_device(int(os.environ["LOCAL_RANK"])) before using this device'
)


# Device constructors -> their parameters; the first one is the device index.
XLA_DEVICE_CALLS = {
    "torch_xla.core.xla_model.xla_device": ("n", "devkind"),
    "torch_xla.device": ("index",),
    "torch_xla.torch_xla.device": ("index",),
}


@register
class XlaDeviceToNeuron(Rule):
    """``xm.xla_device()`` / ``torch_xla.device()`` -> ``torch.device("neuron")``.

    The one official old-to-new snippet (``DOCS_OLD_VS_NATIVE``) shows exactly this replacement.
    The docs do not settle whether a torchrun process must also select its own core
    (DOCS_DISTRIBUTED uses the bare device), so in distributed files the edit asks for the
    explicit ``torch.neuron.set_device`` that is right either way.
    """

    meta = RuleMeta(
        "NM101",
        'XLA device -> torch.device("neuron")',
        safety=SAFE,
        summary="The XLA device handle becomes the native neuron device; `devkind=` is dropped.",
        docs=(DOCS_OLD_VS_NATIVE, DOCS_CHANGES, DOCS_DISTRIBUTED),
        example=Example(
            before=(
                "import torch\n"
                "import torch_xla.core.xla_model as xm\n\n"
                "device = xm.xla_device()\n"
                "model = model.to(device)\n"
            ),
            after=(
                "import torch\n\n"
                'device = torch.device("neuron")\n'
                "model = model.to(device)\n"
            ),
        ),
    )
    calls = {qname: "to_neuron_device" for qname in XLA_DEVICE_CALLS}

    def to_neuron_device(self, original: cst.Call, updated: cst.Call, qname: str):
        params = XLA_DEVICE_CALLS[qname]
        bound = bind_args(updated, params)
        if bound is None:
            self.ctx.manual(original, 'arguments not understood; replace with torch.device("neuron", <index>)')
            return updated
        index = bound.get(params[0])
        torch = self.ctx.require_import("torch")
        if is_none(index):
            text = f'{torch}.device("neuron")'
        else:
            text = f'{torch}.device("neuron", {self.ctx.code(index.value)})'
        if looks_distributed(self.ctx):
            self.ctx.review(_BIND_CORE)
        return self.ctx.expr(text)


# Keyword arguments and parameters whose value is a device spec, in any call.
DEVICE_KEYWORDS = frozenset({"device", "device_type", "map_location"})
# Stock functions whose first positional argument is a device or device type.
DEVICE_FIRST_ARG = frozenset(
    {
        "torch.device",
        "torch.set_default_device",
        "torch.get_autocast_dtype",
        "torch.set_autocast_dtype",
        "torch.is_autocast_enabled",
        "torch.set_autocast_enabled",
    }
)
# Handled whole by the autocast rule (NM150), which also makes the dtype explicit.
AUTOCAST_CALLS = frozenset({"torch.autocast", "torch.amp.autocast", "torch.amp.autocast_mode.autocast"})

_XLA_DEVICE = re.compile(r"xla(:\d+)?")


def is_xla_string(node: cst.CSTNode) -> bool:
    """``"xla"``, ``"xla:3"`` or ``f"xla:{i}"``."""
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return isinstance(value, str) and _XLA_DEVICE.fullmatch(value) is not None
    if isinstance(node, cst.FormattedString):
        parts = node.parts
        return (
            len(parts) == 2
            and isinstance(parts[0], cst.FormattedStringText)
            and parts[0].value == "xla:"
            and isinstance(parts[1], cst.FormattedStringExpression)
        )
    return False


def to_neuron_string(node):
    """The same literal naming the neuron device, quotes and prefix kept."""
    if isinstance(node, cst.SimpleString):
        return node.with_changes(value=node.value.replace("xla", "neuron", 1))
    first = node.parts[0].with_changes(value="neuron:")
    return node.with_changes(parts=[first, *node.parts[1:]])


def _device_word(word: str) -> bool:
    word = word.lower()
    return "device" in word or word == "dev" or word.endswith("_dev")


def names_a_device(node: cst.CSTNode) -> bool:
    """``x.device.type``, ``device``, ``self._device``, ``str(dev)``: expressions holding a device."""
    if isinstance(node, cst.Call):
        return (
            isinstance(node.func, cst.Name)
            and node.func.value == "str"
            and len(node.args) == 1
            and names_a_device(node.args[0].value)
        )
    if isinstance(node, cst.Attribute):
        if node.attr.value == "type":
            return names_a_device(node.value)
        return _device_word(node.attr.value)
    if isinstance(node, cst.Name):
        return _device_word(node.value)
    return False


@register
class XlaDeviceString(Rule):
    """``"xla"`` / ``"xla:N"`` -> ``"neuron"`` / ``"neuron:N"``, only where the string is a device spec.

    The strings are found while visiting their call or comparison and rewritten when the string
    itself is left, so each edit covers exactly one literal.
    """

    meta = RuleMeta(
        "NM102",
        '"xla" device strings -> "neuron"',
        safety=SAFE,
        summary='Device specs "xla" and "xla:N" name the neuron device instead.',
        docs=(DOCS_CHANGES, DOCS_MODULE),
        triggers=(b"xla",),
        example=Example(
            before=(
                'batch = batch.to("xla")\n'
                'mask = torch.ones(4, device="xla:0")\n'
                'if logits.device.type == "xla":\n'
                "    pass\n"
            ),
            after=(
                'batch = batch.to("neuron")\n'
                'mask = torch.ones(4, device="neuron:0")\n'
                'if logits.device.type == "neuron":\n'
                "    pass\n"
            ),
        ),
    )

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.device_specs: set[int] = set()

    def _mark(self, node: cst.CSTNode) -> None:
        if is_xla_string(node):
            self.device_specs.add(id(node))

    def visit_Call(self, node: cst.Call) -> None:
        if not any(is_xla_string(arg.value) for arg in node.args):
            return
        names = self.ctx.qualified_names(node.func)
        if names & AUTOCAST_CALLS:
            return
        positional = [arg for arg in node.args if arg.keyword is None and not arg.star]
        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "to":
            for arg in positional:
                self._mark(arg.value)
        if names & DEVICE_FIRST_ARG and positional:
            self._mark(positional[0].value)
        for arg in node.args:
            if arg.keyword is not None and (
                arg.keyword.value in DEVICE_KEYWORDS or (arg.keyword.value == "type" and "torch.device" in names)
            ):
                self._mark(arg.value)

    def visit_Param(self, node: cst.Param) -> None:
        if node.default is not None and node.name.value in DEVICE_KEYWORDS:
            self._mark(node.default)

    def visit_Assign(self, node: cst.Assign) -> None:
        # ``device = "xla"`` then ``.to(device)``: the style of the AWS samples.
        if any(names_a_device(target.target) for target in node.targets):
            self._mark(node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None and names_a_device(node.target):
            self._mark(node.value)

    def visit_Comparison(self, node: cst.Comparison) -> None:
        operands = [node.left, *(target.comparator for target in node.comparisons)]
        for i, target in enumerate(node.comparisons):
            left, right = operands[i], operands[i + 1]
            if isinstance(target.operator, (cst.Equal, cst.NotEqual)):
                if names_a_device(left):
                    self._mark(right)
                elif names_a_device(right):
                    self._mark(left)
            elif isinstance(target.operator, (cst.In, cst.NotIn)) and names_a_device(left):
                for element in right.elements if isinstance(right, (cst.Tuple, cst.List, cst.Set)) else ():
                    self._mark(element.value)

    def leave_SimpleString(self, original: cst.SimpleString, updated: cst.SimpleString):
        return to_neuron_string(updated) if id(original) in self.device_specs else updated

    def leave_FormattedString(self, original: cst.FormattedString, updated: cst.FormattedString):
        return to_neuron_string(updated) if id(original) in self.device_specs else updated


@register
class IsXlaTensor(ComparisonRule):
    """``xm.is_xla_tensor(t)`` -> ``t.device.type == "neuron"`` (DOCS_MODULE: tensors on the device)."""

    meta = RuleMeta(
        "NM103",
        'xm.is_xla_tensor(t) -> t.device.type == "neuron"',
        safety=SAFE,
        summary="Tensor placement is read from the tensor's device type.",
        docs=(DOCS_MODULE,),
        example=Example(
            before=(
                "import torch_xla.core.xla_model as xm\n\n"
                "if xm.is_xla_tensor(t):\n"
                "    t = t.cpu()\n"
            ),
            after=(
                'if t.device.type == "neuron":\n'
                "    t = t.cpu()\n"
            ),
        ),
    )
    calls = {"torch_xla.core.xla_model.is_xla_tensor": "to_device_check"}
    # `not t.device.type == "neuron"` reads as meant without them.
    PARENTHESIZE_AFTER_NOT = False

    def to_device_check(self, original: cst.Call, updated: cst.Call, qname: str):
        bound = bind_args(updated, ("tensor",))
        if not bound or "tensor" not in bound:
            return updated
        tensor = bound["tensor"].value
        text = self.ctx.code(tensor)
        if not isinstance(tensor, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)):
            text = f"({text})"
        text = f'{text}.device.type == "neuron"'
        if self.needs_parentheses(original):
            text = f"({text})"
        return self.ctx.expr(text)


_DEVICE_COUNT_REVIEW = (
    "counts the NeuronCores visible to this process; use dist.get_world_size() for the job-wide count"
)


@register
class RuntimeDeviceQueries(Rule):
    """``torch_xla.runtime`` device queries -> ``torch.neuron`` (DOCS_MODULE) or the torchrun env."""

    meta = RuleMeta(
        "NM104",
        "runtime device queries -> torch.neuron",
        safety=SAFE,
        summary="Device type, count and bf16 queries of torch_xla.runtime map onto torch.neuron.",
        docs=(DOCS_MODULE, DOCS_DISTRIBUTED),
        example=Example(
            before=(
                "import torch_xla.runtime as xr\n\n"
                "xr.set_device_type(\"NEURON\")\n"
                "kind = xr.device_type()\n"
                "cores = xr.local_device_count()\n"
            ),
            after=(
                "import torch\n\n"
                'kind = "neuron"\n'
                f"# neuron-migrate(NM104): {_DEVICE_COUNT_REVIEW}\n"
                "cores = torch.neuron.device_count()\n"
            ),
        ),
    )
    calls = {
        "torch_xla.runtime.device_type": "device_type",
        "torch_xla.runtime.set_device_type": "remove",
        "torch_xla.runtime.local_device_count": "local_count",
        "torch_xla.runtime.addressable_device_count": "local_count",
        "torch_xla.device_count": "local_count",
        "torch_xla.torch_xla.device_count": "local_count",
        "torch_xla.runtime.global_runtime_device_count": "global_count",
        "torch_xla.core.xla_model.get_xla_supported_devices": "supported_devices",
        "torch_xla.runtime.is_bf16_supported": "bf16_supported",
        "torch_xla.core.xla_model.get_memory_info": "memory_info",
        "torch_xla.core.xla_model.xla_device_hw": "device_hw",
    }

    def device_type(self, original, updated, qname):
        self.ctx.note('xr.device_type() -> "neuron"')
        return self.ctx.expr('"neuron"')

    def remove(self, original, updated, qname):
        self.ctx.note("xr.set_device_type() removed: neuron is the only device type")
        return StatementReplacement([], fallback="delete the call; TorchNeuron has a single device type")

    def local_count(self, original, updated, qname):
        self.ctx.note("local device count -> torch.neuron.device_count()")
        self.ctx.review(_DEVICE_COUNT_REVIEW)
        return self.ctx.expr(f"{self.ctx.require_import('torch')}.neuron.device_count()")

    def global_count(self, original, updated, qname):
        self.ctx.note("global device count -> WORLD_SIZE")
        self.ctx.review("WORLD_SIZE counts torchrun processes (one per NeuronCore) and is 1 outside torchrun")
        os_name = self.ctx.require_import("os")
        return self.ctx.expr(f'int({os_name}.environ.get("WORLD_SIZE", "1"))')

    def supported_devices(self, original, updated, qname):
        bound = bind_args(updated, ("devkind", "max_devices"))
        if bound is None or not is_none(bound.get("max_devices")):
            self.ctx.manual(
                original,
                'list the devices yourself: [f"neuron:{i}" for i in range(torch.neuron.device_count())]',
            )
            return updated
        self.ctx.review('device names are now "neuron:<i>"; check code that parses them')
        torch = self.ctx.require_import("torch")
        return self.ctx.expr(f'[f"neuron:{{i}}" for i in range({torch}.neuron.device_count())]')

    def bf16_supported(self, original, updated, qname):
        self.ctx.review(
            "torch.neuron.is_bf16_supported() is inferred, not documented; confirm your torch-neuronx has it"
        )
        return self.ctx.expr(f"{self.ctx.require_import('torch')}.neuron.is_bf16_supported()")

    def memory_info(self, original, updated, qname):
        self.ctx.manual(
            original,
            "read memory use from torch.neuron.memory_stats() instead; its keys differ from get_memory_info()",
        )
        return updated

    def device_hw(self, original, updated, qname):
        self.ctx.manual(
            original,
            'TorchNeuron has one hardware kind: use dev.type (which is "neuron") or drop the check',
        )
        return updated


@register
class InitializeCacheToEnv(Rule):
    """``xr.initialize_cache(path)`` -> ``TORCH_NEURONX_NEFF_CACHE_DIR`` (DOCS_ENV, cache settings)."""

    meta = RuleMeta(
        "NM105",
        "xr.initialize_cache -> TORCH_NEURONX_NEFF_CACHE_DIR",
        safety=SAFE,
        risks=frozenset({"performance"}),
        summary="The persistent compile cache folder is set with TORCH_NEURONX_NEFF_CACHE_DIR.",
        docs=(DOCS_ENV,),
        example=Example(
            before=(
                "import torch_xla.runtime as xr\n\n"
                'xr.initialize_cache("/var/cache/neff")\n'
            ),
            after=(
                "import os\n\n"
                "# neuron-migrate(NM105): must run before anything compiles (safest: before `import torch`)\n"
                'os.environ["TORCH_NEURONX_NEFF_CACHE_DIR"] = "/var/cache/neff"\n'
            ),
        ),
    )
    calls = {"torch_xla.runtime.initialize_cache": "to_env"}

    def to_env(self, original: cst.Call, updated: cst.Call, qname: str):
        bound = bind_args(updated, ("path", "readonly"))
        line = self.ctx.statement_for_call.get(id(original))
        if bound is None or "path" not in bound or line is None or not isinstance(line.body[0], cst.Expr):
            self.ctx.manual(
                original, 'set os.environ["TORCH_NEURONX_NEFF_CACHE_DIR"] = <path> before the first compile'
            )
            return updated
        message = "must run before anything compiles (safest: before `import torch`)"
        readonly = bound.get("readonly")
        if not is_none(readonly) and not (isinstance(readonly.value, cst.Name) and readonly.value.value == "False"):
            message += "; readonly= has no equivalent"
        self.ctx.review(message)
        os_name = self.ctx.require_import("os")
        path = self.ctx.code(bound["path"].value)
        setting = f'{os_name}.environ["TORCH_NEURONX_NEFF_CACHE_DIR"] = {path}\n'
        return StatementReplacement(self.ctx.statements(setting))
