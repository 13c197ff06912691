"""Runtime evidence that confirms a static hazard: the same construct seen by the static audit, so the runtime
finding carries the static id (and with it the same fingerprint)."""

from __future__ import annotations

import re

# graph-break reason text -> static hazard id (first match wins)
BREAK_TWINS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), rule)
    for pattern, rule in (
        (r"Tensor\.item\(\)", "NA201"),
        (r"tolist\(\)|Tensor\.numpy\(\)", "NA202"),
        (r"aten\.(nonzero|argwhere)\b", "NA203"),
        (r"aten\.(_unique2|_unique|unique_dim|unique_consecutive|unique_dim_consecutive)\b", "NA204"),
        (r"aten\.masked_select\b", "NA205"),
        (r"aten\.repeat_interleave\b", "NA207"),
        (r"Data-dependent branching", "NA208"),
        (r"builtin operator `print`", "NA209"),
    )
)

# aten op (name without overload) -> static hazard id, for ops the recorder sees executing
OP_TWINS = {
    "aten::_local_scalar_dense": "NA201",  # .item(), int(t), float(t), bool(t)
    "aten::nonzero": "NA203",
    "aten::argwhere": "NA203",
    "aten::_unique": "NA204",
    "aten::_unique2": "NA204",
    "aten::unique_dim": "NA204",
    "aten::unique_consecutive": "NA204",
    "aten::unique_dim_consecutive": "NA204",
    "aten::masked_select": "NA205",
    "aten::index": "NA205",  # only recorded with a boolean index
    "aten::repeat_interleave": "NA207",
}

_WHERE_CALL = re.compile(r"\bwhere\(")  # not argwhere: no word boundary inside it
_PRINT_CALL = re.compile(r"\bprint\(")


def refine(rule: str, line_text: str, *, subscript: bool = False) -> str:
    """The static id the user's line itself shows: ``torch.where(cond)`` and ``x[mask]`` both run nonzero, and the
    static audit names them NA206 and NA205; a host read of a tensor is named by what the line does with it."""
    if rule == "NA203":
        if subscript:
            return "NA205"
        if _WHERE_CALL.search(line_text):
            return "NA206"
    if rule == "NA201":
        return scalar_read_twin(line_text)
    return rule


_BRANCH = re.compile(r"^(if|elif|while|assert)\b|\bif\b.+\belse\b")


def scalar_read_twin(line_text: str) -> str:
    """The static id of the user's line that read a tensor value on the host (``aten::_local_scalar_dense``):
    .item() (NA201), .tolist() (NA202), a branch on a tensor (NA208), print (NA209), else a plain NA504."""
    if _PRINT_CALL.search(line_text):
        return "NA209"
    if ".item()" in line_text:
        return "NA201"
    if ".tolist()" in line_text:
        return "NA202"
    if _BRANCH.search(line_text):
        return "NA208"
    return "NA504"


def break_twin(reason: str, line_text: str) -> str | None:
    for pattern, rule in BREAK_TWINS:
        if pattern.search(reason):
            twin = refine(rule, line_text, subscript="BINARY_SUBSCR" in reason)
            return twin if twin != "NA504" else None
    return None
