"""NM172: test_utils log helpers -> local functions"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rules.base import SAFE, Example, RuleMeta, register
from neuron_migrate.rules.calls import bind_args
from neuron_migrate.rules.xla_utils.common import (
    DOCS_TENSORBOARD,
    DOCS_XLA_TEST_UTILS,
    HELPERS,
    TEST_UTILS,
    TEST_UTILS_FUNCTIONS,
    WRITE_TO_SUMMARY_PARAMS,
    XLA_METRICS_DROPPED,
    HelperRule,
    importable,
)


@register
class TestUtilsToLocalHelpers(HelperRule):
    """``torch_xla.test.test_utils`` log and TensorBoard helpers -> local functions printing the
    same lines; ``test_utils.now()`` -> ``datetime.now().strftime(...)`` (DOCS_XLA_TEST_UTILS,
    DOCS_TENSORBOARD)."""

    meta = RuleMeta(
        "NM172",
        "test_utils log helpers -> local functions",
        safety=SAFE,
        risks=frozenset({"performance"}),
        summary="The torch_xla test_utils progress printers and TensorBoard helpers become local functions.",
        docs=(DOCS_XLA_TEST_UTILS, DOCS_TENSORBOARD),
        example=Example(
            before=(
                "import torch_xla.test.test_utils as test_utils\n\n"
                'print("Epoch 1 train begin {}".format(test_utils.now()))\n'
                "test_utils.close_summary_writer(writer)\n"
            ),
            after=(
                "from datetime import datetime\n\n\n"
                "# Stands in for torch_xla's test_utils.close_summary_writer.\n"
                + HELPERS["close_summary_writer"].code
                + '\n\nprint("Epoch 1 train begin {}".format(datetime.now().strftime("%H:%M:%S")))\n'
                "close_summary_writer(writer)\n"
            ),
        ),
    )
    calls = {TEST_UTILS + "now": "now_to_datetime", **{TEST_UTILS + name: "to_local_function" for name in TEST_UTILS_FUNCTIONS}}
    references = {TEST_UTILS + name: "to_local_function" for name in TEST_UTILS_FUNCTIONS}

    def now_to_datetime(self, original: cst.Call, updated: cst.Call, qname: str):
        bound = bind_args(updated, ("format",))
        if bound is None:
            self.ctx.manual(self.meta, original, 'replace it with `datetime.now().strftime("%H:%M:%S")`')
            return updated
        fmt = self.ctx.code(bound["format"].value) if "format" in bound else '"%H:%M:%S"'
        datetime = importable(self.ctx, "from datetime import datetime")
        if datetime is None:
            self.ctx.manual(self.meta, original, 'replace it with `datetime.now().strftime("%H:%M:%S")`')
            return updated
        return self.ctx.expr(f"{datetime}.now().strftime({fmt})")

    def to_local_function(self, original, updated, qname: str):
        name = qname.removeprefix(TEST_UTILS)
        review = ""
        if name == "write_to_summary" and isinstance(updated, cst.Call):
            updated, review = self._without_xla_metrics(updated)
        return self.use_helper(original, updated, name, TEST_UTILS.rstrip("."), review=review)

    def _without_xla_metrics(self, updated: cst.Call) -> tuple[cst.Call, str]:
        """``write_xla_metrics=`` asked for XLA's counters, which TorchNeuron does not have: the call
        without it, and what to tell the reviewer when it asked for them."""
        bound = bind_args(updated, WRITE_TO_SUMMARY_PARAMS)
        flag = bound.get("write_xla_metrics") if bound else None
        if flag is None:
            return updated, ""
        args = [arg for arg in updated.args if arg is not flag]
        if args:
            args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        review = XLA_METRICS_DROPPED if self.ctx.code(flag.value).strip() != "False" else ""
        return updated.with_changes(args=args), review
