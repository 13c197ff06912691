"""The call helpers the rule families share: an argument list rebuilt keeps each argument's comments."""

from __future__ import annotations

import libcst as cst
import pytest

from neuron_migrate.rules.calls import new_keyword, with_args, with_elements


def _rebuilt(code: str, keep: set[str], add: tuple[str, ...] = ()) -> str:
    """``code`` (one call) with only the keyword arguments in ``keep``, plus ``name=1`` for each of ``add``."""
    call = cst.parse_expression(code)
    args = [arg for arg in call.args if arg.keyword is None or arg.keyword.value in keep]
    args += [new_keyword(name, "1") for name in add]
    out = cst.Module(body=[]).code_for_node(with_args(call, args))
    cst.parse_expression(out)  # still a call
    return out


def test_a_last_argument_without_a_comma_keeps_its_comment_when_arguments_follow():
    before = "f(\n    a=1,  # first\n    b=2  # second\n)"
    assert _rebuilt(before, {"a", "b"}, add=("c",)) == "f(\n    a=1,  # first\n    b=2,  # second\n    c=1\n)"


def test_the_comment_lines_above_a_dropped_argument_move_to_the_next_one_and_its_line_comment_goes():
    before = "f(\n    a=1,\n    # about b\n    b=2,  # b's own\n    # about c\n    c=3,\n)"
    assert _rebuilt(before, {"a", "c"}) == "f(\n    a=1,\n    # about b\n    # about c\n    c=3,\n)"


def test_the_comment_lines_above_a_dropped_last_argument_stay_above_the_closing_parenthesis():
    before = "f(\n    x,\n    a=1,  # keep me\n    # why b\n    b=2,  # gone\n)"
    assert _rebuilt(before, {"a"}, add=("c",)) == "f(\n    x,\n    a=1,  # keep me\n    c=1,\n    # why b\n)"


def test_a_first_argument_dropped_hands_its_comment_lines_to_the_new_first_one():
    before = "f(\n    # about a\n    a=1,\n    # about b\n    b=2,\n)"
    assert _rebuilt(before, {"b"}) == "f(\n    # about a\n    # about b\n    b=2,\n)"


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("f(x, a=1, b=2)", "f(x, b=2, c=1)"),
        ("f(x, a=1)  ", "f(x, c=1)"),
    ],
)
def test_a_call_on_one_line_stays_on_one_line(before, after):
    assert _rebuilt(before.strip(), {"b"}, add=("c",)) == after


def test_a_comment_ending_a_line_of_a_call_broken_by_hand_keeps_its_line():
    before = "f(a=1,  # why a\n  b=2)"
    out = _rebuilt(before, {"a"})
    assert "# why a" in out and out.rstrip().endswith(")")


def _dict_rebuilt(code: str, keep: set[str], add: tuple[str, ...] = ()) -> str:
    node = cst.parse_expression(code)
    elements = [e for e in node.elements if e.key.evaluated_value in keep]
    elements += [cst.DictElement(cst.SimpleString(f'"{name}"'), cst.Integer("1")) for name in add]
    out = cst.Module(body=[]).code_for_node(with_elements(node, elements))
    cst.parse_expression(out)
    return out


def test_a_dict_entry_dropped_last_takes_its_line_comment_and_leaves_the_lines_above_it():
    before = '{\n    "a": 1,  # keep\n    # about b\n    "b": 2,  # gone\n}'
    assert _dict_rebuilt(before, {"a"}) == '{\n    "a": 1,  # keep\n    # about b\n}'


def test_a_dict_keeps_each_entry_s_comment_when_entries_are_added():
    before = '{\n    "a": 1,  # first\n    "b": 2  # second\n}'
    after = '{\n    "a": 1,  # first\n    "b": 2,  # second\n    "c": 1\n}'
    assert _dict_rebuilt(before, {"a", "b"}, add=("c",)) == after
