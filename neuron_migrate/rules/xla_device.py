"""Device selection and runtime queries: the XLA device becomes the native ``"neuron"`` device.

On TorchNeuron the device is ``torch.device("neuron")`` and ``torch.neuron`` is the device module
(it plays the role ``torch.cuda`` plays for CUDA), so ``xm.xla_device()``, the ``"xla"`` device
strings and the ``torch_xla.runtime`` queries all map onto stock PyTorch.
"""

from __future__ import annotations

import re

import libcst as cst

from neuron_migrate.migrate.context import code_of
from neuron_migrate.rules.base import REVIEW, SAFE, Example, Rule, RuleMeta, StatementReplacement, register
from neuron_migrate.rules.calls import ComparisonRule, bind_args, literal
from neuron_migrate.rules.tables.xla_device import ROWS

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
        ctx.facts["distributed"] = bool(_DISTRIBUTED_WORDS.search(ctx.text))
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
        text = neuron_device_code(self.ctx, updated, qname)
        if text is None:
            self.ctx.manual(original, 'arguments not understood; replace with torch.device("neuron", <index>)')
            return updated
        if looks_distributed(self.ctx):
            self.ctx.review(_BIND_CORE)
        return self.ctx.expr(text)


def neuron_device_code(ctx, call: cst.Call, qname: str) -> str | None:
    """``torch.device("neuron"[, index])`` for an XLA device constructor call, None if unreadable."""
    params = XLA_DEVICE_CALLS[qname]
    bound = bind_args(call, params)
    if bound is None:
        return None
    index = bound.get(params[0])
    torch = ctx.require_import("torch")
    if is_none(index):
        return f'{torch}.device("neuron")'
    return f'{torch}.device("neuron", {ctx.code(index.value)})'


def xla_device_constructor(ctx, node: cst.CSTNode) -> str | None:
    """The XLA device constructor ``node`` names (``xm.xla_device``, ``torch_xla.device``), also
    through a name only a compatibility shim imports (``try: import torch_xla.core.xla_model as
    xm``), which is never resolved."""
    last = node.attr.value if isinstance(node, cst.Attribute) else getattr(node, "value", None)
    if last not in ("xla_device", "device"):
        return None  # cheap: most names are neither
    qname = ctx.any_qualified_name(node, XLA_DEVICE_CALLS.keys())
    if qname is not None or not ctx.is_shim_name(node):
        return qname
    if code_of(node) == "torch_xla.device":
        return "torch_xla.device"
    return "torch_xla.core.xla_model.xla_device" if last == "xla_device" else None


def xla_device_call(ctx, call: cst.Call) -> str | None:
    """The XLA device constructor ``call`` calls, if it is one."""
    return xla_device_constructor(ctx, call.func)


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
        test = legacy_name_test(node, pending=False)
        if test is not None and from_outside(test[0]):
            return  # NM106: the setting may still say "xla"
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


# ----- device names the program is given: "xla" may still arrive ------------------------------

# Objects that hold what the program was told: argparse namespaces, configs, the instance.
_SETTINGS_HOLDERS = re.compile(
    r"self|cls|args|opts?|options|flags|config|conf|cfg|hparams|params|settings|ns|\w+_(args|config|cfg|opts)",
    re.IGNORECASE,
)
_ARGV = "sys.argv"


def _is_bare_xla(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.SimpleString) and node.evaluated_value == "xla"


def _is_neuron(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.SimpleString) and node.evaluated_value == "neuron"


def _holds_settings(node: cst.CSTNode) -> bool:
    name = node.attr.value if isinstance(node, cst.Attribute) else getattr(node, "value", None)
    return isinstance(name, str) and _SETTINGS_HOLDERS.fullmatch(name) is not None


def _names_a_device_setting(node: cst.CSTNode | None) -> bool:
    value = literal(node)
    return isinstance(value, str) and _device_word(value.lstrip("-").replace("-", "_"))


def from_outside(node: cst.CSTNode) -> bool:
    """A device name the program was given rather than made: a ``device`` variable or parameter,
    ``args.device``, ``self.device``, ``config["device"]``, ``os.environ.get("DEVICE")``,
    ``sys.argv[1]``. A device object's ``.type`` or a tensor's ``.device`` is not one."""
    if isinstance(node, cst.Name):
        return _device_word(node.value)
    if isinstance(node, cst.Attribute):
        return node.attr.value != "type" and _device_word(node.attr.value) and _holds_settings(node.value)
    if isinstance(node, cst.Subscript):
        if code_of(node.value) == _ARGV:
            return True
        index = node.slice[0].slice if len(node.slice) == 1 else None
        return isinstance(index, cst.Index) and _names_a_device_setting(index.value)
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.args:
        return node.func.attr.value in ("get", "getenv") and _names_a_device_setting(node.args[0].value)
    return False


def legacy_name_test(
    node: cst.Comparison, *, pending: bool = True
) -> tuple[cst.BaseExpression, cst.BaseExpression] | None:
    """``x == "xla"``, ``"xla" != x``, ``x in ("cpu", "xla")``: ``(x, the "xla" literal or the
    collection holding it)``; with ``pending``, only while the check does not accept "neuron" yet."""
    if len(node.comparisons) != 1:
        return None
    left, target = node.left, node.comparisons[0]
    right, op = target.comparator, target.operator
    if isinstance(op, (cst.Equal, cst.NotEqual)):
        if _is_bare_xla(left):
            left, right = right, left
        return (left, right) if _is_bare_xla(right) else None
    if isinstance(op, (cst.In, cst.NotIn)) and isinstance(right, (cst.Tuple, cst.List, cst.Set)):
        values = [element.value for element in right.elements]
        if any(map(_is_bare_xla, values)) and not (pending and any(map(_is_neuron, values))):
            return left, right
    return None


def with_neuron_accepted(collection: cst.Tuple | cst.List | cst.Set):
    """The same literal collection with ``"neuron"`` next to ``"xla"``."""
    elements = []
    for element in collection.elements:
        if isinstance(element, cst.Element) and _is_bare_xla(element.value):
            comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
            elements.append(cst.Element(value=to_neuron_string(element.value), comma=comma))
        elements.append(element)
    return collection.with_changes(elements=elements)


class _XlaDeviceCalls(cst.CSTVisitor):
    """The calls in a block that make the XLA device (``xm.xla_device()``, ``torch.device("xla")``)."""

    def __init__(self, ctx) -> None:
        super().__init__()
        self.ctx = ctx
        self.calls: list[cst.Call] = []
        # id(call) -> the constructor, for calls through a name only a compatibility shim imports
        self.shim_calls: dict[int, str] = {}

    def visit_Call(self, node: cst.Call) -> None:
        qname = xla_device_call(self.ctx, node)
        if qname is not None:
            self.calls.append(node)
            if self.ctx.is_shim_name(node.func):
                self.shim_calls[id(node)] = qname
        elif "torch.device" in self.ctx.qualified_names(node.func) and node.args and is_xla_string(node.args[0].value):
            self.calls.append(node)


def xla_device_calls(ctx, block: cst.CSTNode) -> _XlaDeviceCalls:
    visitor = _XlaDeviceCalls(ctx)
    block.visit(visitor)
    return visitor


_SETTING_REVIEW = (
    '"xla" is still accepted: this value can come from a command line, the environment or a config '
    'written for torch_xla; drop "xla" once they all say "neuron"'
)
_HELPER_REVIEW = 'this branch now gives the neuron device for "neuron" and for the legacy "xla"'
_OPTION_REVIEW = (
    '"xla" stays a valid value so existing launch commands keep working; check each use of this option '
    'accepts "neuron" too'
)
_UNKNOWN_HELPER = (
    'this helper picks the device by name and does not know "neuron": make its "xla" case also accept '
    '"neuron" and return torch.device("neuron")'
)


_XLA_CONSTRUCTOR_WORDS = re.compile(r"xla_device\b|torch_xla\.device\b")


class _HelperShape(cst.CSTVisitor):
    """Whether a function body (its nested functions and classes left out) names an XLA device
    constructor and picks something by the name "xla" in a way no rule rewrote."""

    def __init__(self, ctx, handled: dict[int, str]) -> None:
        super().__init__()
        self.ctx = ctx
        self.handled = handled
        self.makes_device = False
        self.picks_by_name = False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_Comparison(self, node: cst.Comparison) -> None:
        test = legacy_name_test(node)
        if test is not None and id(node) not in self.handled and not names_a_device(test[0]):
            self.picks_by_name = True

    def visit_DictElement(self, node: cst.DictElement) -> None:
        self.picks_by_name = self.picks_by_name or _is_bare_xla(node.key)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.makes_device = self.makes_device or xla_device_constructor(self.ctx, node) is not None

    def visit_Name(self, node: cst.Name) -> None:
        self.makes_device = self.makes_device or xla_device_constructor(self.ctx, node) is not None


@register
class LegacyDeviceNameAccepted(Rule):
    """A device name the program is given may still say ``"xla"`` after the migration.

    Launch scripts, configs and environments written for torch_xla pass ``--device xla``; a check
    rewritten to ``== "neuron"`` would silently skip the device branch for them. So a check of such
    a value accepts both names, a device-picking helper's ``"xla"`` branch gives the neuron device
    for both, and a ``--device`` option defaults to ``"neuron"`` while still accepting ``"xla"``.
    A helper whose shape is not recognised gets a TODO marker saying what to change.
    """

    meta = RuleMeta(
        "NM106",
        'device names from outside accept "neuron" and the legacy "xla"',
        safety=REVIEW,
        risks=frozenset({"launch"}),
        summary=(
            'A device name read from argv, the environment or a config may still be "xla": checks and '
            'device-picking helpers accept both names; --device options default to "neuron".'
        ),
        docs=(DOCS_CHANGES,),
        triggers=(b"xla",),
        example=Example(
            before=(
                "import argparse\n\n"
                "import torch\n"
                "import torch_xla.core.xla_model as xm\n\n\n"
                "def get_device(name):\n"
                '    if name == "xla":\n'
                "        return xm.xla_device()\n"
                '    return torch.device("cpu")\n\n\n'
                "parser = argparse.ArgumentParser()\n"
                'parser.add_argument("--device", default="xla", choices=["cpu", "xla"])\n'
                "args = parser.parse_args()\n"
                "device = get_device(args.device)\n"
                'if args.device == "xla":\n'
                "    print(device)\n"
            ),
            after=(
                "import argparse\n\n"
                "import torch\n\n\n"
                "def get_device(name):\n"
                f"    # neuron-migrate(NM106): {_HELPER_REVIEW}\n"
                '    if name in ("neuron", "xla"):\n'
                '        return torch.device("neuron")\n'
                '    return torch.device("cpu")\n\n\n'
                "parser = argparse.ArgumentParser()\n"
                f"# neuron-migrate(NM106): {_OPTION_REVIEW}\n"
                'parser.add_argument("--device", default="neuron", choices=["cpu", "neuron", "xla"])\n'
                "args = parser.parse_args()\n"
                "device = get_device(args.device)\n"
                f"# neuron-migrate(NM106): {_SETTING_REVIEW}\n"
                'if args.device in ("neuron", "xla"):\n'
                "    print(device)\n"
            ),
        ),
    )

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.tests: dict[int, str] = {}  # id(comparison) -> review message
        self.helper_tests: set[int] = set()
        self.shim_calls: dict[int, str] = {}  # id(call) -> the XLA constructor it stands for
        self.options: set[int] = set()

    # -- recording, top-down ------------------------------------------------------------------
    def visit_If(self, node: cst.If) -> None:
        tests = [node.test]
        if isinstance(node.test, cst.BooleanOperation) and isinstance(node.test.operator, cst.Or):
            tests = [node.test.left, node.test.right]
        tests = [t for t in tests if isinstance(t, cst.Comparison) and legacy_name_test(t) is not None]
        if not tests:
            return
        found = xla_device_calls(self.ctx, node.body)
        if found.calls:
            self.helper_tests.update(id(t) for t in tests)
            self.shim_calls.update(found.shim_calls)

    def visit_Comparison(self, node: cst.Comparison) -> None:
        test = legacy_name_test(node)
        if test is None:
            return
        operand = test[0]
        if from_outside(operand):
            self.tests[id(node)] = _SETTING_REVIEW
        elif id(node) in self.helper_tests and not names_a_device(operand):
            self.tests[id(node)] = _HELPER_REVIEW

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "add_argument":
            names = [a.value for a in node.args if a.keyword is None] + [
                a.value for a in node.args if a.keyword is not None and a.keyword.value == "dest"
            ]
            if any(_names_a_device_setting(name) for name in names) and self._option_change(node) is not node:
                self.options.add(id(node))

    # -- rewriting, bottom-up -----------------------------------------------------------------
    def leave_Comparison(self, original: cst.Comparison, updated: cst.Comparison):
        message = self.tests.get(id(original))
        if message is None:
            return updated
        test = legacy_name_test(updated)
        if test is None:
            return updated
        operand, legacy = test
        target = updated.comparisons[0]
        negated = isinstance(target.operator, (cst.NotEqual, cst.NotIn))
        if isinstance(legacy, cst.SimpleString):
            names = with_neuron_accepted(cst.Tuple([cst.Element(legacy)]))
        else:
            names = with_neuron_accepted(legacy)
        self.ctx.note('device-name check accepts "neuron" and the legacy "xla"')
        self.ctx.review(message)
        return updated.with_changes(
            left=operand,
            comparisons=[cst.ComparisonTarget(operator=cst.NotIn() if negated else cst.In(), comparator=names)],
        )

    def leave_Call(self, original: cst.Call, updated: cst.Call):
        qname = self.shim_calls.get(id(original))
        if qname is not None:
            text = neuron_device_code(self.ctx, updated, qname)
            if text is None:
                return updated
            self.ctx.note('XLA device -> torch.device("neuron") in a device-picking helper')
            self.ctx.confirm_safe()
            return self.ctx.expr(text)
        if id(original) in self.options:
            self.ctx.note('--device option defaults to "neuron" and accepts it')
            choices = next((a.value for a in updated.args if a.keyword and a.keyword.value == "choices"), None)
            fixed = choices is None or isinstance(choices, (cst.Tuple, cst.List, cst.Set))
            self.ctx.review(_OPTION_REVIEW if fixed else _OPTION_REVIEW + '; add "neuron" to its choices')
            return self._option_change(updated)
        return updated

    def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef):
        if "makes_xla_device" not in self.ctx.facts:
            self.ctx.facts["makes_xla_device"] = bool(_XLA_CONSTRUCTOR_WORDS.search(self.ctx.text))
        if self.ctx.facts["makes_xla_device"]:
            shape = _HelperShape(self.ctx, self.tests)
            original.body.visit(shape)
            if shape.makes_device and shape.picks_by_name:
                self.ctx.manual(original, _UNKNOWN_HELPER)
        return updated

    @staticmethod
    def _option_change(call: cst.Call) -> cst.Call:
        """``add_argument(..., default="xla", choices=[..., "xla"])`` with "neuron" as the default and
        among the choices (the same call when there is nothing to change)."""
        args = []
        for arg in call.args:
            keyword = arg.keyword.value if arg.keyword is not None else None
            if keyword == "default" and _is_bare_xla(arg.value):
                arg = arg.with_changes(value=to_neuron_string(arg.value))
            elif (
                keyword == "choices"
                and isinstance(arg.value, (cst.Tuple, cst.List, cst.Set))
                and not any(_is_neuron(e.value) for e in arg.value.elements)
                and any(_is_bare_xla(e.value) for e in arg.value.elements)
            ):
                arg = arg.with_changes(value=with_neuron_accepted(arg.value))
            args.append(arg)
        return call if all(a is b for a, b in zip(args, call.args)) else call.with_changes(args=args)


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

# What ``xr.device_type()`` and ``xm.xla_device_hw(dev)`` answered on Trainium: the PJRT device type
# (torch_xla/runtime.py reads it from PJRT_DEVICE; "TPU", "CUDA" or "CPU" elsewhere). Code written
# for Trainium compares against it, so it is what the migrated code must see.
TRAINIUM_DEVICE_TYPE = "NEURON"
DEVICE_TYPE_QUERIES = {
    "torch_xla.runtime.device_type": (),
    "torch_xla.core.xla_model.xla_device_hw": ("device",),
}


def is_device_type_query(ctx, node: cst.CSTNode) -> bool:
    if not isinstance(node, cst.Call):
        return False
    qname = ctx.any_qualified_name(node.func, DEVICE_TYPE_QUERIES.keys())
    return qname is not None and bind_args(node, DEVICE_TYPE_QUERIES[qname]) is not None


def device_type_check(ctx, node: cst.Comparison) -> tuple[cst.Call, bool] | None:
    """``xr.device_type() == "NEURON"`` and the like: the query and the check's value on Trainium."""
    if len(node.comparisons) != 1:
        return None
    left, target = node.left, node.comparisons[0]
    right, op = target.comparator, target.operator
    if isinstance(op, (cst.Equal, cst.NotEqual)):
        if is_device_type_query(ctx, right):
            left, right = right, left
        value = literal(right)
        if not is_device_type_query(ctx, left) or not isinstance(value, str):
            return None
        return left, (value == TRAINIUM_DEVICE_TYPE) == isinstance(op, cst.Equal)
    if isinstance(op, (cst.In, cst.NotIn)) and is_device_type_query(ctx, left):
        values = literal(right)
        if not isinstance(values, (tuple, list, set)) or not all(isinstance(v, str) for v in values):
            return None
        return left, (TRAINIUM_DEVICE_TYPE in values) == isinstance(op, cst.In)
    return None


def known_condition(ctx, node: cst.CSTNode) -> tuple[cst.Call, bool] | None:
    """A device-type check, or ``check and x`` / ``check or x`` that the check decides: the query
    and the value on Trainium. Only a known left operand decides: ``x and False`` still evaluates x."""
    if isinstance(node, cst.Comparison):
        return device_type_check(ctx, node)
    if not isinstance(node, cst.BooleanOperation):
        return None
    check = known_condition(ctx, node.left)
    if check is None or check[1] is not isinstance(node.operator, cst.Or):
        return None
    return check


def block_statements(block: cst.BaseSuite) -> list[cst.BaseStatement]:
    """The statements of an ``if``/``else`` body, ready to stand one level up."""
    if isinstance(block, cst.IndentedBlock):
        return list(block.body)
    return [cst.SimpleStatementLine(body=block.body, trailing_whitespace=block.trailing_whitespace)]


@register
class RuntimeDeviceQueries(Rule):
    """``torch_xla.runtime`` device queries -> ``torch.neuron`` (DOCS_MODULE) or the torchrun env.

    A check of the device type against a literal is known on TorchNeuron: it is folded to what it
    was on Trainium, and an ``if`` on it keeps only the branch Trainium took.
    """

    meta = RuleMeta(
        "NM104",
        "runtime device queries -> torch.neuron",
        safety=SAFE,
        summary=(
            "Device count and bf16 queries of torch_xla.runtime map onto torch.neuron; the device type is "
            'what Trainium reported ("NEURON"), and a check of it keeps the branch Trainium took.'
        ),
        docs=(DOCS_MODULE, DOCS_DISTRIBUTED),
        example=Example(
            before=(
                "import torch_xla.runtime as xr\n\n"
                "xr.set_device_type(\"NEURON\")\n"
                "kind = xr.device_type()\n"
                "cores = xr.local_device_count()\n"
                'if xr.device_type() == "NEURON":\n'
                "    batch_size = 4\n"
                "else:\n"
                "    batch_size = 16\n"
            ),
            after=(
                "import torch\n\n"
                'kind = "NEURON"\n'
                f"# neuron-migrate(NM104): {_DEVICE_COUNT_REVIEW}\n"
                "cores = torch.neuron.device_count()\n"
                "# neuron-migrate(NM104): xr.device_type() was \"NEURON\" on Trainium, so this check is always True "
                "on TorchNeuron: only its branch is kept\n"
                "batch_size = 4\n"
            ),
        ),
    )
    rows = ROWS
    calls = {
        "torch_xla.runtime.device_type": "device_type",
        "torch_xla.runtime.local_device_count": "local_count",
        "torch_xla.runtime.addressable_device_count": "local_count",
        "torch_xla.device_count": "local_count",
        "torch_xla.torch_xla.device_count": "local_count",
        "torch_xla.runtime.global_runtime_device_count": "global_count",
        "torch_xla.core.xla_model.get_xla_supported_devices": "supported_devices",
        "torch_xla.runtime.is_bf16_supported": "bf16_supported",
        "torch_xla.core.xla_model.xla_device_hw": "device_hw",
    }

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        # id(comparison) -> (query, value on Trainium); the queries inside are left to the fold
        self.checks: dict[int, tuple[cst.Call, bool]] = {}
        self.folded_queries: set[int] = set()
        self.if_tests: set[int] = set()
        self.elifs: set[int] = set()
        # id(``check and x`` / ``check or x``) -> (query, value of the check, value of the whole or None)
        self.conditions: dict[int, tuple[cst.Call, bool, bool | None]] = {}

    def visit_Comparison(self, node: cst.Comparison) -> None:
        check = device_type_check(self.ctx, node)
        if check is not None:
            self.checks[id(node)] = check
            self.folded_queries.add(id(check[0]))

    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> None:
        check = known_condition(self.ctx, node.left)
        if check is None:
            return
        query, value = check
        whole = known_condition(self.ctx, node)
        self.conditions[id(node)] = (query, value, None if whole is None else whole[1])
        self.if_tests.add(id(node.left))  # folded with its condition, in one edit
        if whole is not None:
            self.checks[id(node)] = whole

    def leave_BooleanOperation(self, original: cst.BooleanOperation, updated: cst.BooleanOperation):
        condition = self.conditions.get(id(original))
        if condition is None:
            return updated
        query, value, whole = condition
        if whole is not None and id(original) in self.if_tests:
            return updated  # the ``if`` keeps the branch it decides
        self.ctx.note(f"device-type check folded to {value}, its value on Trainium")
        self.ctx.review(self._fold_message(query, value))
        return cst.Name(str(whole)) if whole is not None else updated.right

    def visit_If(self, node: cst.If) -> None:
        self.if_tests.add(id(node.test))
        if isinstance(node.orelse, cst.If):
            self.elifs.add(id(node.orelse))

    def _fold_message(self, query: cst.Call, value: bool) -> str:
        return (
            f'{self.ctx.code(query.func)}() was "{TRAINIUM_DEVICE_TYPE}" on Trainium, '
            f"so this check is always {value} on TorchNeuron"
        )

    def leave_Comparison(self, original: cst.Comparison, updated: cst.Comparison):
        check = self.checks.get(id(original))
        if check is None or id(original) in self.if_tests:
            return updated
        self.ctx.note(f"device-type check folded to {check[1]}, its value on Trainium")
        self.ctx.review(self._fold_message(*check))
        return cst.Name(str(check[1]))

    def leave_If(self, original: cst.If, updated: cst.If):
        check = self.checks.get(id(original.test))
        if check is None:
            return updated
        value = check[1]
        message = self._fold_message(*check)
        self.ctx.note(f"device-type check folded to {value}, its value on Trainium")
        kept = None if id(original) in self.elifs else self._taken_branch(original, updated)
        if kept is None:
            self.ctx.review(message + ("" if value else ": delete the block"))
            return updated.with_changes(test=cst.Name(str(value)))
        self.ctx.review(message + (": only its branch is kept" if value else ": only the other branch is kept"))
        first = kept[0]
        kept[0] = first.with_changes(leading_lines=[*original.leading_lines, *first.leading_lines])
        return cst.FlattenSentinel(kept)

    def _taken_branch(self, original: cst.If, updated: cst.If) -> list[cst.BaseStatement] | None:
        """The statements Trainium ran, or None when that leaves nothing to stand in the ``if``'s place.
        An ``elif`` that becomes the ``if`` is simplified the same way when its check is known too."""
        check = self.checks.get(id(original.test))
        if check is None:
            return [updated]
        if check[1]:
            return block_statements(updated.body)
        if isinstance(updated.orelse, cst.Else):
            return block_statements(updated.orelse.body)
        if isinstance(updated.orelse, cst.If):
            return self._taken_branch(original.orelse, updated.orelse) or [updated.orelse]
        return None

    def device_type(self, original, updated, qname):
        if id(original) in self.folded_queries:
            return updated
        self.ctx.note(f'xr.device_type() -> "{TRAINIUM_DEVICE_TYPE}", what it returned on Trainium')
        return self.ctx.expr(f'"{TRAINIUM_DEVICE_TYPE}"')

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

    def device_hw(self, original, updated, qname):
        if id(original) in self.folded_queries:
            return updated
        if not is_device_type_query(self.ctx, original):
            self.ctx.manual(original, f'arguments not understood; on Trainium this was "{TRAINIUM_DEVICE_TYPE}"')
            return updated
        self.ctx.note(f'xm.xla_device_hw() -> "{TRAINIUM_DEVICE_TYPE}", what it returned on Trainium')
        self.ctx.review(
            f'"{TRAINIUM_DEVICE_TYPE}" is what Trainium reported; the tensor device type is now "neuron" '
            "(dev.type), if that is what the code needs"
        )
        return self.ctx.expr(f'"{TRAINIUM_DEVICE_TYPE}"')


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
