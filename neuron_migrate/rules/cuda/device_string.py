"""NM602: "cuda" device strings -> the accelerator"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rules.base import SAFE, Edit, Example, Fact, RuleMeta, register
from neuron_migrate.rules.calls import names_in
from neuron_migrate.rules.cuda.common import (
    DOCS_ACCELERATOR,
    DOCS_TORCH_NEURON,
    CudaRule,
    accelerator,
    accelerator_name,
    cuda_string,
    device_expression,
    nodes,
    string_expression,
)

# Keywords whose value is a device: a "cuda" there becomes the accelerator's device.
DEVICE_KEYWORDS = frozenset({"device", "map_location"})
# Calls whose first argument is a device (``x.to("cuda")``): matched by method name, on any receiver.
DEVICE_METHODS = frozenset({"to"})
_COMPARISON = (
    'a test for "cuda" is False on the neuron device: if this branch is meant for any accelerator, compare with '
    "torch.accelerator.current_accelerator().type (and check what it turns on: fused optimizers, pinned memory)"
)



def _device_type_tests(ctx) -> set[int]:
    """The tests of ``device_type = "cuda" if "cuda" in device else "cpu"``: a device variable set from a test
    for "cuda" whose answer is "cuda". Both strings become the accelerator's name, so the test still asks
    "is the device the accelerator?" (what gates autocast and pinned memory after it)."""
    found: set[int] = set()
    stack: list[cst.CSTNode] = [ctx.module]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Assign) and isinstance(node.value, cst.IfExp):
            named = any("device" in name.lower() for t in node.targets for name in names_in(t.target))
            test = node.value.test
            if named and cuda_string(node.value.body) and _simple_cuda_test(test):
                found.add(id(test))
        stack.extend(c for c in node.children if isinstance(c, cst.CSTNode) and not isinstance(c, cst.BaseExpression))
    return found


def _simple_cuda_test(test: cst.CSTNode) -> bool:
    """``"cuda" in x`` / ``x == "cuda"`` / ``x.startswith("cuda")`` shapes as one comparison."""
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return False
    operator = test.comparisons[0].operator
    if not isinstance(operator, (cst.In, cst.Equal)):
        return False
    return _bare_cuda(test.left) != _bare_cuda(test.comparisons[0].comparator)


def _bare_cuda(node: cst.CSTNode) -> bool:
    """``"cuda"`` itself, without a device number."""
    match = cuda_string(node)
    return match is not None and match.group(1) is None


DEVICE_TYPE_TESTS = Fact("cuda_device_type_tests", _device_type_tests)


def _device_names(ctx) -> frozenset[str]:
    """Names the module passes where a device goes (``map_location=loc``, ``device=where``, ``.to(target)``,
    ``torch.device(name)``): a ``"cuda"`` string bound to one of them is a device, whatever the name says."""
    found: set[str] = set()
    for node in nodes(ctx.module):
        if not isinstance(node, cst.Call):
            continue
        method = node.func.attr.value if isinstance(node.func, cst.Attribute) else None
        is_device = method in DEVICE_METHODS or (method == "device" and isinstance(node.func.value, cst.Name)
                                                 and node.func.value.value == "torch")
        for position, arg in enumerate(node.args):
            keyword = arg.keyword.value if arg.keyword is not None else None
            positional = position == 0 and keyword is None and is_device
            if isinstance(arg.value, cst.Name) and (positional or keyword in DEVICE_KEYWORDS):
                found.add(arg.value.value)
    return frozenset(found)


DEVICE_NAMES = Fact("cuda_device_names", _device_names)


@register
class DeviceString(CudaRule):
    """``"cuda"`` / ``"cuda:N"`` / ``f"cuda:{i}"`` where a device is meant -> the accelerator
    (``torch.accelerator.current_accelerator()`` in ``.to(...)``, its name ``str(...)`` elsewhere, since some
    device parameters take a string only, and a default or setting computed at import must not fail where
    there is no accelerator): the GPU on a
    GPU, the neuron device on Trainium. Device positions: ``device=``, ``map_location=``, ``.to(...)``,
    ``torch.device(...)``, a variable, attribute (``self.device``) or parameter named ``*device*`` or passed to
    one of those positions
    (``loc = f"cuda:{rank}"`` then ``map_location=loc``), a ``--device`` option's default and
    ``getattr(args, "device", "cuda")``. A comparison with
    "cuda" is not rewritten (what the branch turns on may be CUDA-only): it gets a TODO; but in
    ``device_type = "cuda" if "cuda" in device else "cpu"`` both strings become the accelerator's name, so the
    device type is the accelerator's wherever the device is (the autocast it gates runs on it)."""

    meta = RuleMeta(
        "NM602",
        '"cuda" device strings -> the accelerator',
        safety=SAFE,
        summary=(
            '"cuda" where a device is meant becomes torch.accelerator.current_accelerator() (its type, where a '
            'string is kept); a test for "cuda" gets a TODO.'
        ),
        docs=(DOCS_ACCELERATOR, DOCS_TORCH_NEURON),
        triggers=(b"cuda",),
        example=Example(
            before=(
                "import torch\n\n"
                'device = "cuda"\n'
                'x = torch.zeros(4, device="cuda")\n'
                'state = torch.load("model.pt", map_location="cuda:0")\n'
            ),
            after=(
                "import torch\n\n"
                "device = str(torch.accelerator.current_accelerator())\n"
                "x = torch.zeros(4, device=str(torch.accelerator.current_accelerator()))\n"
                'state = torch.load("model.pt", map_location=f"{torch.accelerator.current_accelerator()}:0")\n'
            ),
        ),
    )

    calls = {"torch.device": "device_call"}

    # ----- device positions in calls -------------------------------------------------------------
    def device_call(self, original: cst.Call, updated: cst.Call, qname: str):
        """``torch.device("cuda")``, ``torch.device("cuda", i)``, ``torch.device(f"cuda:{i}")``."""
        args = list(updated.args)
        first = args[0] if args else None
        if first is None or (first.keyword is not None and first.keyword.value != "type"):
            return updated
        match = cuda_string(first.value)
        if len(args) == 1 and match is not None and match.group(1) is None:
            # the accelerator's device itself: None rather than an error where there is none, so a default
            # computed at import (``def f(device=torch.device("cuda"))``) still imports on a CPU-only machine
            return self.ctx.expr(accelerator(self.ctx))
        new = self._string(first.value)
        if new is None:
            return updated
        return updated.with_changes(args=[first.with_changes(value=new), *args[1:]])

    def leave_Call(self, original: cst.Call, updated: cst.Call):
        is_to = isinstance(updated.func, cst.Attribute) and updated.func.attr.value in DEVICE_METHODS
        option = self._device_option(updated)
        if self._device_getattr(updated):
            return updated.with_changes(args=[*updated.args[:2], updated.args[2].with_changes(value=self._string(updated.args[2].value))])
        args = []
        changed = False
        for position, arg in enumerate(updated.args):
            keyword = arg.keyword.value if arg.keyword is not None else None
            new = None
            if position == 0 and keyword is None and is_to:
                new = self._device(arg.value)
            elif keyword in DEVICE_KEYWORDS or (option and keyword == "default"):
                # a string, which every device parameter takes (some, such as GradScaler's, take nothing else)
                new = self._string(arg.value)
            if new is not None:
                arg = arg.with_changes(value=new)
                changed = True
            args.append(arg)
        return updated.with_changes(args=args) if changed else updated

    @staticmethod
    def _device_option(call: cst.Call) -> bool:
        """``parser.add_argument("--device", default="cuda")``: the option's default is a device string."""
        func = call.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "add_argument"):
            return False
        flags = [a.value for a in call.args if a.keyword is None and isinstance(a.value, cst.SimpleString)]
        return any("device" in flag.evaluated_value for flag in flags if isinstance(flag.evaluated_value, str))

    @classmethod
    def _device_getattr(cls, call: cst.Call) -> bool:
        """``getattr(args, "device", "cuda")``: the default of a device setting."""
        args = call.args
        if not (isinstance(call.func, cst.Name) and call.func.value == "getattr" and len(args) == 3):
            return False
        name = args[1].value
        return (isinstance(name, cst.SimpleString) and "device" in str(name.evaluated_value)
                and cuda_string(args[2].value) is not None)

    def leave_Tuple(self, original: cst.Tuple, updated: cst.Tuple):
        return self._numbered_devices(updated)

    def leave_List(self, original: cst.List, updated: cst.List):
        return self._numbered_devices(updated)

    def _numbered_devices(self, updated: cst.Tuple | cst.List):
        """``["cuda:0", "cuda:1"]``, ``("cuda:0",) + args``: numbered devices listed for model parallelism or
        handed to a constructor; a bare "cuda" in a tuple (``device.type in ("cuda",)``) is a test's."""
        elements = []
        for element in updated.elements:
            match = cuda_string(element.value)
            if match is not None and match.group(1) is not None:
                element = element.with_changes(value=self.ctx.expr(string_expression(self.ctx, match)))
            elements.append(element)
        if all(new is old for new, old in zip(elements, updated.elements)):
            return updated
        return Edit(updated.with_changes(elements=elements), safe=True)

    def leave_Param(self, original: cst.Param, updated: cst.Param):
        """``def f(device="cuda")``: a parameter's device default."""
        if updated.default is None or "device" not in updated.name.value.lower():
            return updated
        new = self._string(updated.default)
        return updated if new is None else updated.with_changes(default=new)

    # ----- a variable that holds the device ------------------------------------------------------
    def leave_Assign(self, original: cst.Assign, updated: cst.Assign):
        names = [_target_name(t.target) for t in updated.targets]
        used = self.ctx.fact(DEVICE_NAMES)
        if not any(n is not None and ("device" in n.lower() or n in used) for n in names):
            return updated
        new = self._string(updated.value)
        return updated if new is None else Edit(updated.with_changes(value=new), safe=True)

    # ----- a test for "cuda" ---------------------------------------------------------------------
    def leave_Comparison(self, original: cst.Comparison, updated: cst.Comparison):
        if id(original) in self.ctx.fact(DEVICE_TYPE_TESTS):
            name = self.ctx.expr(accelerator_name(self.ctx))
            if _bare_cuda(updated.left):
                return Edit(updated.with_changes(left=name), safe=True)
            comparison = updated.comparisons[0].with_changes(comparator=name)
            return Edit(updated.with_changes(comparisons=[comparison]), safe=True)
        operands = [original.left, *(c.comparator for c in original.comparisons)]
        if any("current_accelerator()" in self.ctx.code(o) for o in operands):
            return updated  # asks what the accelerator is: a GPU test that already knows other devices
        # ``device.type in ("cuda", "mps")`` tests for "cuda" too
        members = [e.value for o in operands if isinstance(o, (cst.Tuple, cst.List, cst.Set)) for e in o.elements]
        if any(cuda_string(o) for o in (*operands, *members)):
            self.ctx.manual(self.meta, original, _COMPARISON)
        return updated

    # ----- the rewrites --------------------------------------------------------------------------
    def _device(self, value: cst.BaseExpression) -> cst.BaseExpression | None:
        """A device position: "cuda" -> the accelerator's device; other shapes as where a string is kept."""
        match = cuda_string(value)
        if match is not None:
            return self.ctx.expr(device_expression(self.ctx, match))
        return self._string(value)

    def _string(self, value: cst.BaseExpression) -> cst.BaseExpression | None:
        """A device string: "cuda" -> the accelerator's type; ``f"cuda:{i}"``, ``"cuda:{}".format(i)`` and
        ``"cuda:%d" % i``; either branch of ``a if c else b``."""
        match = cuda_string(value)
        if match is not None:
            return self.ctx.expr(string_expression(self.ctx, match))
        if isinstance(value, cst.FormattedString):
            return self._fstring(value)
        index = _formatted_index(value)
        if index is not None:
            return self.ctx.expr(f'f"{{{accelerator(self.ctx)}}}:{{{_code(index)}}}"')
        if isinstance(value, cst.IfExp):
            body, orelse = self._string(value.body), self._string(value.orelse)
            if body is None and orelse is None:
                return None
            return value.with_changes(body=body or value.body, orelse=orelse or value.orelse)
        return None

    def _fstring(self, value: cst.FormattedString) -> cst.FormattedString | None:
        """``f"cuda:{rank}"`` -> ``f"{<accelerator type>}:{rank}"``."""
        parts = list(value.parts)
        first = parts[0] if parts else None
        if not (isinstance(first, cst.FormattedStringText) and first.value.startswith("cuda:")) or len(parts) < 2:
            return None
        if any("'" in _code(p) or '"' in _code(p) for p in parts[1:]):
            return None
        kind = cst.FormattedStringExpression(expression=self.ctx.expr(accelerator(self.ctx)))
        rest = first.with_changes(value=first.value[len("cuda"):])
        return value.with_changes(parts=[kind, rest, *parts[1:]])


# "cuda:{}".format(i), "cuda:{0}".format(i), "cuda:%d" % i, "cuda:%s" % i: a device number put into "cuda:"
_FORMATS = {"cuda:{}", "cuda:{0}"}
_PERCENTS = {"cuda:%d", "cuda:%s", "cuda:%i"}


def _formatted_index(value: cst.BaseExpression) -> cst.BaseExpression | None:
    """The device number of ``"cuda:{}".format(i)`` or ``"cuda:%d" % i`` (an expression without quotes, so it
    can go into an f-string), else None."""
    index = None
    if (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "format"
            and _text(value.func.value) in _FORMATS and len(value.args) == 1 and value.args[0].keyword is None
            and not value.args[0].star):
        index = value.args[0].value
    elif (isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Modulo)
          and _text(value.left) in _PERCENTS and not isinstance(value.right, cst.Tuple)):
        index = value.right
    if index is None or "'" in _code(index) or '"' in _code(index):
        return None
    return index


def _text(node: cst.CSTNode) -> str | None:
    return node.evaluated_value if isinstance(node, cst.SimpleString) and node.prefix.lower() in ("", "u") else None


def _target_name(target: cst.BaseExpression) -> str | None:
    """The name an assignment binds: ``device``, or the attribute of ``self.device`` / ``cls.device``."""
    if isinstance(target, cst.Name):
        return target.value
    if isinstance(target, cst.Attribute):
        return target.attr.value
    return None


def _code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)
