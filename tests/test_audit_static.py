"""Static audit checks, one fixture folder per hazard id: ``fixtures/audit/<ID>/hit.py`` marks each
line that must be reported with ``# expect: <ID>``, and ``clean.py`` must give no hazard at all."""

from __future__ import annotations

import re

import pytest

from conftest import FIXTURES
from neuron_migrate.analyzers.hazards import HAZARDS
from neuron_migrate.analyzers.static import scan_source

AUDIT = FIXTURES / "audit"
EXPECT = re.compile(r"#\s*expect:\s*(?P<ids>NA\d{3}(?:\s*,\s*NA\d{3})*)")
STATIC_IDS = sorted(h for h in HAZARDS if not h.startswith("NA5"))


def expected(source: str) -> set[tuple[int, str]]:
    out = set()
    for number, line in enumerate(source.splitlines(), start=1):
        match = EXPECT.search(line)
        if match:
            out.update((number, rid.strip()) for rid in match.group("ids").split(","))
    return out


def found(source: str, path: str) -> set[tuple[int, str]]:
    return {(f.span.line, f.rule) for f in scan_source(source, path) if not f.suppressed}


@pytest.mark.parametrize("rule_id", STATIC_IDS)
def test_hit_fixture_reports_exactly_the_marked_lines(rule_id):
    path = AUDIT / rule_id / "hit.py"
    source = path.read_text(encoding="utf-8")
    marked = expected(source)
    assert marked and all(rid == rule_id for _, rid in marked), "a hit fixture marks its own id only"
    assert found(source, path.name) == marked


@pytest.mark.parametrize("rule_id", STATIC_IDS)
def test_clean_fixture_reports_nothing(rule_id):
    path = AUDIT / rule_id / "clean.py"
    assert found(path.read_text(encoding="utf-8"), path.name) == set()


def test_a_finding_carries_its_line_fix_and_a_stable_fingerprint():
    source = "import torch\n\nmodel = torch.compile(model, dynamic=True)\n"
    (first,) = [f for f in scan_source(source, "a.py") if f.rule == "NA104"]
    assert first.span.line == 3 and first.before == "model = torch.compile(model, dynamic=True)"
    assert first.fix == HAZARDS["NA104"].fix and first.severity == "error" and first.evidence == "static"
    moved = scan_source("import torch\n\n\n\n" + source.split("\n", 2)[2], "a.py")
    assert first.fingerprint in {f.fingerprint for f in moved}


def test_an_ignore_comment_suppresses_only_its_ids():
    source = "import torch\n\nm = torch.compile(m, dynamic=True, mode='max-autotune')  # neuron-migrate: ignore[NA104]\n"
    by_rule = {f.rule: f.suppressed for f in scan_source(source, "a.py")}
    assert by_rule["NA104"] is True and by_rule["NA105"] is False


def test_names_resolve_through_import_aliases_and_locals_do_not_count():
    aliased = "from torch import compile as tc\n\nm = tc(m, dynamic=True)\n"
    assert ("NA104" in {f.rule for f in scan_source(aliased, "a.py")})
    local = "def compile(m, dynamic):\n    return m\n\nm = compile(m, dynamic=True)\n"
    assert scan_source(local, "a.py") == []


def test_every_static_hazard_has_fixtures():
    for rule_id in STATIC_IDS:
        assert (AUDIT / rule_id / "hit.py").exists() and (AUDIT / rule_id / "clean.py").exists(), rule_id


HAZARD_SOURCE = "import torch\n\nm = torch.compile(m, dynamic=True)\nx = t.cuda()\n"


def _audit(folder, **options):
    from neuron_migrate import audit
    from neuron_migrate.config import load_config

    return audit.audit([folder], load_config([folder], jobs=1, **options))


def _hazards(report):
    return sorted((f.path, f.span.line, f.rule, f.message) for f in report.findings if f.rule.startswith("NA"))


def test_a_warm_audit_takes_the_hazards_from_the_cache(tmp_path, monkeypatch):
    import neuron_migrate.analyzers.static as static

    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(HAZARD_SOURCE, encoding="utf-8")
    (tmp_path / "other.py").write_text("import torch\n\ny = torch.ones(2).item()\n", encoding="utf-8")
    cold = _hazards(_audit(tmp_path))
    assert {rule for _, _, rule, _ in cold} >= {"NA104", "NA401"}

    scanned = []
    real = static.scan_source
    monkeypatch.setattr(static, "scan_source", lambda source, path: scanned.append(path) or real(source, path))
    assert _hazards(_audit(tmp_path)) == cold and scanned == []  # nothing parsed again
    # --select / --ignore apply to cached findings as to fresh ones
    assert {f.rule for f in _audit(tmp_path, select=("NA4",)).findings} == {"NA401"} and scanned == []

    (tmp_path / "train.py").write_text(HAZARD_SOURCE.replace("t.cuda()", "t"), encoding="utf-8")
    changed = _hazards(_audit(tmp_path))
    assert scanned == ["train.py"] and ("train.py", 4, "NA401") not in [c[:3] for c in changed]
    _audit(tmp_path, cache=False)
    assert scanned == ["train.py", "other.py", "train.py"]  # --no-cache reads every file


def test_each_missing_piece_of_the_recipe_is_one_finding_at_its_call():
    source = (
        "from transformers import Trainer, TrainingArguments\n"
        'args = TrainingArguments("out")\n'
        "first = Trainer(model=model, args=args)\n"
        "second = Trainer(model=model, args=args)\n"
        "text = model.generate(**inputs, max_new_tokens=8)\n"
    )
    assert found(source, "train.py") == {
        (2, "NA701"), (2, "NA702"), (3, "NA703"), (3, "NA108"), (5, "NA103"),
    }
    recipe = (
        "import os\nimport torch\nfrom transformers import Trainer, TrainingArguments\n"
        'os.environ.setdefault("HF_DEACTIVATE_ASYNC_LOAD", "1")\n'
        "torch._dynamo.config.automatic_dynamic_shapes = False\n"
        'args = TrainingArguments("out", bf16=True, torch_compile=True)\n'
        "trainer = Trainer(model=model, args=args)\n"
    )
    assert found(recipe, "train.py") == set()
