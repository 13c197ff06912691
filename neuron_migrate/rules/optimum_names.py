"""Where optimum-neuron's public names live, so a rule table can list every import path of a name.

optimum-neuron exports most names lazily from ``optimum.neuron`` and also from the subpackage and
module that define them; users import from all three. The module paths below are those of 0.4.5
(plus the older ones for names that moved), read from the released package.
"""

from __future__ import annotations

PACKAGE = "optimum.neuron"


def optimum_names(name: str, *modules: str, top_level: bool = True) -> tuple[str, ...]:
    """The qualified names ``name`` is imported under: ``optimum.neuron.<name>`` (when it is a
    top-level export) and ``optimum.neuron.<module>.<name>`` for each module given."""
    names = [f"{PACKAGE}.{name}"] if top_level else []
    names += [f"{PACKAGE}.{module}.{name}" for module in modules]
    return tuple(names)


def with_methods(qnames: tuple[str, ...], *methods: str) -> tuple[str, ...]:
    """``Class.method`` for every import path of a class (``NeuronModelForCausalLM.from_pretrained``)."""
    return tuple(f"{qname}.{method}" for qname in qnames for method in methods)
