"""Dynamo's guard failures rewritten in plain words.

``tensor 'x' size mismatch at index 1. expected 7, actual 12`` becomes "input `x` changed shape in dim 1" with the
detail "7 -> 12"; ``n == 1`` (a specialised Python value) becomes "Python value `n` was compiled in as a constant"
with "1 -> 2" when the new value is known. Each pattern is a row of ``PATTERNS``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DTYPES = {
    "Float": "float32", "Double": "float64", "Half": "float16", "BFloat16": "bfloat16", "Long": "int64",
    "Int": "int32", "Short": "int16", "Char": "int8", "Byte": "uint8", "Bool": "bool",
    "ComplexFloat": "complex64", "ComplexDouble": "complex128",
}

GLOBAL_STATE = {
    "grad_mode": "autograd mode changed (a call under torch.no_grad() or inference_mode())",
    "autocast": "autocast was turned on or off around the call",
    "deterministic_algorithms": "torch.use_deterministic_algorithms changed",
    "torch_function": "a torch function mode was entered or left",
    "default_dtype": "the default dtype changed",
}

# What a recompile is about; findings order and de-duplicate by it.
SHAPE, DTYPE, TENSOR, VALUE, CARRIED, GLOBAL, IDENTITY, HOOKS, OTHER = (
    "shape", "dtype", "tensor", "value", "carried", "global", "identity", "hooks", "other",
)


@dataclass(frozen=True)
class Change:
    subject: str  # "input `x` changed shape in dim 1"
    detail: str  # "7 -> 12", or ""
    kind: str

    def text(self) -> str:
        return f"{self.subject} ({self.detail})" if self.detail else self.subject


def clean_name(name: str) -> str:
    """A guard's source expression as the user wrote it: L['x'] -> x, fn._modules['fc'] -> fn.fc."""
    name = re.sub(r"\._modules\['([^']+)'\]", r".\1", name)
    name = re.sub(r"^[LG]\['([^']+)'\]", r"\1", name)
    name = re.sub(r"^kwargs\['([^']+)'\]", r"\1", name)
    return name


def _tensor(match, what: str, kind: str, detail: str = "") -> Change:
    name = clean_name(match["n"])
    if name.startswith("___stack"):
        return Change(f"a tensor carried across a graph break {what}", detail, CARRIED)
    return Change(f"input `{name}` {what}", detail, kind)


def _size(m, new):
    return _tensor(m, f"changed shape in dim {m['d']}", SHAPE, f"{m['a']} -> {m['b']}")


def _rank(m, new):
    return _tensor(m, "changed its number of dimensions", SHAPE, f"{m['a']} -> {m['b']}")


def _stride(m, new):
    return _tensor(m, f"changed memory layout (stride of dim {m['d']}; .contiguous() fixes it)", TENSOR,
                   f"{m['a']} -> {m['b']}")


def _dtype(m, new):
    return _tensor(m, "changed dtype", DTYPE, f"{DTYPES.get(m['a'], m['a'])} -> {DTYPES.get(m['b'], m['b'])}")


def _requires_grad(m, new):
    before = m["a"] == "1"
    return _tensor(m, "changed requires_grad", TENSOR, f"{before} -> {not before}")


def _dispatch(m, new):
    return _tensor(m, "changed device or tensor type", TENSOR)


def _device_index(m, new):
    return _tensor(m, "moved to another device", TENSOR)


def _global(m, new):
    items = [item.strip() for item in m["what"].split(",") if item.strip()]
    words = [GLOBAL_STATE.get(item, f"global state `{item}` changed") for item in items] or ["global state changed"]
    return Change("; ".join(words), "", GLOBAL)


def _length(m, new):
    return Change(f"the length of `{clean_name(m['n'])}` changed", f"compiled for {m['v']}", VALUE)


def _training(m, new):
    # ``fn`` is the compiled module inside torch.compile(module)'s wrapper
    name = re.sub(r"^fn\.", "", clean_name(m["n"]))
    shown = "the compiled module" if name == "fn" else f"module `{name}`"
    return Change(f"{shown} switched between train() and eval()",
                  f"compiled with training={m['v']}", VALUE)


def _none(m, new):
    return Change(f"`{clean_name(m['n'])}` switched between None and a value", "", VALUE)


def _value(m, new):
    name = clean_name(m["n"])
    if name.startswith("___stack"):
        return Change("a value read before a graph break (e.g. by .item()) was compiled in as a constant",
                      f"compiled for {m['v']}", VALUE)
    if new is not None and repr(new) != m["v"]:
        return Change(f"Python value `{name}` was compiled in as a constant", f"{m['v']} -> {new!r}", VALUE)
    return Change(f"Python value `{name}` was compiled in as a constant", f"compiled for {m['v']}", VALUE)


def _identity(m, new):
    return Change(f"a different object was passed as `{clean_name(m['n'])}`", "", IDENTITY)


def _type(m, new):
    return Change(f"the type of `{clean_name(m['n'])}` changed", "", IDENTITY)


def _hooks(m, new):
    return Change("module hooks were added or removed", "", HOOKS)


PATTERNS = tuple(
    (re.compile(pattern), build)
    for pattern, build in (
        (r"_global_\w*hooks", _hooks),
        (r"tensor '(?P<n>.+?)' size mismatch at index (?P<d>\d+)\. expected (?P<a>\d+), actual (?P<b>\d+)", _size),
        (r"tensor '(?P<n>.+?)' rank mismatch\. expected (?P<a>\d+), actual (?P<b>\d+)", _rank),
        (r"tensor '(?P<n>.+?)' stride mismatch at index (?P<d>\d+)\. expected (?P<a>\d+), actual (?P<b>\d+)",
         _stride),
        (r"tensor '(?P<n>.+?)' dtype mismatch\. expected (?P<a>\w+), actual (?P<b>\w+)", _dtype),
        (r"tensor '(?P<n>.+?)' requires_grad mismatch\. expected requires_grad=(?P<a>\d)", _requires_grad),
        (r"tensor '(?P<n>.+?)' dispatch key set mismatch", _dispatch),
        (r"tensor '(?P<n>.+?)' .*device index mismatch", _device_index),
        (r"GLOBAL_STATE changed: (?P<what>.*)", _global),
        (r"^len\((?P<n>.+?)\) == (?P<v>\S+)$", _length),
        (r"^(?P<n>.+?)\.training == (?P<v>True|False)$", _training),
        (r"^(?P<n>\S+?) is (?:not )?None$", _none),
        (r"^(?P<n>\S+?) == (?P<v>.+)$", _value),
        (r"___check_obj_id\((?P<n>.+?), \d+\)", _identity),
        (r"___check_type_id\((?P<n>.+?), \d+\)", _type),
    )
)

_COMPILE_ID = re.compile(r"^(?P<id>[!\w]*\d+/\d+(?:_\d+)?): ", re.MULTILINE)


def split_failures(text: str) -> list[tuple[str, str]]:
    """(compile id of the cache entry, its guard failure) for each entry in a recompile reason or log record."""
    lines = (line.lstrip() for line in text.splitlines())
    text = "\n".join(line.removeprefix("- ") for line in lines)
    starts = list(_COMPILE_ID.finditer(text))
    return [
        (normal_id(m["id"]), text[m.end(): starts[i + 1].start() if i + 1 < len(starts) else len(text)].strip())
        for i, m in enumerate(starts)
    ]


def normal_id(compile_id: str) -> str:
    """'0/1_2' (a restarted attempt) and '0/1' name the same compilation."""
    return re.sub(r"_\d+$", "", str(compile_id).strip())


def plain(failure: str, new_values: dict | None = None) -> Change:
    """One guard failure in plain words. ``new_values`` maps an input name to the value the failing call passed."""
    expr = failure.splitlines()[0].split("  #")[0].strip() if failure.strip() else ""
    for pattern, build in PATTERNS:
        match = pattern.search(expr)
        if match:
            name = clean_name(match.groupdict().get("n") or "")
            new = (new_values or {}).get(name)
            return build(match, new)
    shown = expr if len(expr) <= 120 else expr[:117] + "..."
    return Change(f"guard failed: {shown}" if shown else "guard failed", "", OTHER)
