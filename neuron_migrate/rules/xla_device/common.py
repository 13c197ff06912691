"""What the xla_device rules share: helpers, constants and base classes."""

from __future__ import annotations

import re

import libcst as cst

from neuron_migrate.migrate.context import code_of
from neuron_migrate.rules.base import Fact
from neuron_migrate.rules.calls import bind_args, literal

DOCS_CHANGES = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/index.html"
DOCS_MODULE = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/reference/api/torch-neuron-module.html"
DOCS_DISTRIBUTED = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/guides/torch-distributed.html"
DOCS_OLD_VS_NATIVE = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/setup/troubleshooting.html"
DOCS_ENV = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/reference/env-vars.html"


def is_none(arg: cst.Arg | None) -> bool:
    return arg is None or (isinstance(arg.value, cst.Name) and arg.value.value == "None")


def looks_distributed(ctx) -> bool:
    """Whether the file runs one process per device (spawned, torchrun-launched or rank-aware)."""
    return ctx.fact(LOOKS_DISTRIBUTED)


_DISTRIBUTED_WORDS = re.compile(
    r"xmp\.spawn|xla_multiprocessing|torch_xla\.launch|_ordinal|world_size|init_process_group"
    r"|LOCAL_RANK|torchrun|DistributedDataParallel|torch\.distributed"
)
LOOKS_DISTRIBUTED = Fact("distributed", lambda ctx: bool(_DISTRIBUTED_WORDS.search(ctx.text)))
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

    def visit_Call(self, node: cst.Call) -> None:
        qname = xla_device_call(self.ctx, node)
        if qname is not None:
            self.calls.append(node)
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
