"""Jupyter notebooks: what the notebook adapter (``migrate/notebook.py``) reports about a notebook itself.

The code of a notebook is migrated by the Python rules (code cells) and the shell rules (``!`` lines,
``%env``, ``%%bash`` cells); this module holds only the one finding that belongs to notebooks: a code
cell that is not Python the engine can read, which is therefore left as it is.
"""

from __future__ import annotations

from neuron_migrate.rules.base import MANUAL, Example, Rule, RuleMeta, register

DOCS_IPYTHON_SYNTAX = "https://ipython.readthedocs.io/en/stable/interactive/reference.html"

_UNPARSED_CELL = """\
{
 "cells": [
  {
   "cell_type": "code",
   "execution_count": null,
   "metadata": {},
   "outputs": [],
   "source": [
    "import torch_xla.core.xla_model as xm\\n",
    "device = xm.xla_device(\\n"
   ]
  }
 ],
 "metadata": {},
 "nbformat": 4,
 "nbformat_minor": 5
}
"""


@register
class UnparsedNotebookCell(Rule):
    """A code cell that does not parse as Python once its IPython lines (``!cmd``, ``%magic``,
    ``%%magic`` cells, ``obj?``) are set aside. The rest of the notebook is still migrated; the
    cell's imports stay, since it may still use them."""

    role = "unparsable-cell"

    meta = RuleMeta(
        "NM550",
        "notebook cell that does not parse",
        safety=MANUAL,
        summary=(
            "The cell is left as it is and named in the report: fix its syntax (or move IPython-only "
            "syntax to a cell of its own) and run again."
        ),
        docs=(DOCS_IPYTHON_SYNTAX,),
        kind="notebook",
        example=Example(_UNPARSED_CELL, _UNPARSED_CELL),
    )

    MESSAGE = (
        "cell does not parse as Python ({where}: {problem}), so it was not migrated: fix it, or move "
        "IPython-only syntax to a cell of its own, and run again"
    )
