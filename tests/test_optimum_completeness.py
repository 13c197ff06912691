"""Every public name of the released optimum-neuron 0.4.5, and every NeuronTrainingArguments field,
has a rule or an explicit manual entry: nothing a user imports from it can pass through silently.

The package is read with libcst from the copy the test command unpacks (see tests/reference).
"""

from __future__ import annotations

import pytest

from neuron_migrate.rules import hf_fields
from neuron_migrate.rules.base import all_rules
from reference.optimum_neuron import dataclass_fields, missing, public_names


def handled_names() -> dict[str, str]:
    """Qualified name (or ``Class.method`` of it) -> the rule id that handles it."""
    out: dict[str, str] = {}
    for rule in all_rules():
        for qname in (*rule.calls, *rule.references):
            out.setdefault(qname, rule.meta.id)
    return out


def rule_for(qname: str, handled: dict[str, str]) -> str | None:
    if qname in handled:
        return handled[qname]
    prefix = qname + "."
    return next((rule for name, rule in handled.items() if name.startswith(prefix)), None)


MISSING = missing()
pytestmark = pytest.mark.skipif(MISSING is not None, reason=MISSING or "")
NAMES = public_names() if MISSING is None else []


@pytest.mark.parametrize("name", NAMES, ids=lambda n: f"{n.package or 'optimum.neuron'}:{n.name}")
def test_public_name_has_a_rule_under_every_import_path(name):
    handled = handled_names()
    missing = [path for path in name.import_paths if rule_for(path, handled) is None]
    assert not missing, f"no rule or manual entry for {', '.join(missing)}"


def test_the_reference_package_was_read():
    assert len(NAMES) > 100
    assert {"NeuronTrainer", "NeuronSFTConfig", "NeuronModelForCausalLM", "NeuronFluxPipeline"} <= {n.name for n in NAMES}


def test_every_training_argument_field_is_accounted_for():
    fields = set(dataclass_fields("trainers.training_args", "NeuronTrainingArguments"))
    accounted = hf_fields.SHARED_FIELDS | hf_fields.VERSIONED_FIELDS | hf_fields.NEURON_ONLY_FIELDS
    assert len(fields) > 60
    assert fields - accounted == set(), "fields with neither a mapping nor a reason to drop them"
    assert not (hf_fields.SHARED_FIELDS & hf_fields.NEURON_ONLY_FIELDS), "a field cannot be both kept and dropped"


def test_every_training_config_field_is_accounted_for():
    """TrainingNeuronConfig (the trn_config) fields: tensor/pipeline parallel sizes map, the rest are named."""
    fields = set(dataclass_fields("models.training.config", "TrainingNeuronConfig"))
    known = set(hf_fields.TRN_CONFIG_ORDER) | set(hf_fields.TRN_CONFIG_DEFAULTS)
    assert fields - known == set()
