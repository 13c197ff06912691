"""The machine-readable report: ``Report.to_dict()`` as described by ``schema.json``.

The schema ships inside the package (``neuron_migrate/report/schema.json``), its one copy. Keys are sorted
and indentation fixed, so two runs over the same tree give the same bytes apart from ``duration_seconds``.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from neuron_migrate.report.model import Report


def to_data(report: Report, rules: dict[str, dict[str, Any]]) -> dict[str, Any]:
    data = report.to_dict()
    data["rules"] = rules
    data["exit_code"] = report.exit_code()
    return data


def render(report: Report, rules: dict[str, dict[str, Any]]) -> str:
    return json.dumps(to_data(report, rules), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of the report, loaded from the package data."""
    text = resources.files("neuron_migrate.report").joinpath("schema.json").read_text(encoding="utf-8")
    return json.loads(text)
