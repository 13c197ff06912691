"""The parts a rule can play for the engine or an adapter, each a Protocol of what that one reads.

The engine and the adapters find such a rule by its role (``rule_with_role``), never by its id, and read
the class attributes below from the rule class itself; :func:`~neuron_migrate.ruleapi.registry.register`
refuses a rule that claims a role and lacks one of them.
"""

from __future__ import annotations

from typing import Protocol


class Leftover(Protocol):
    """Reports a legacy reference no rule handled (NM100), and says which modules are legacy."""

    # The legacy modules: a reference to one that survives the pass is reported, an import of one is
    # removed once unused, and a try importing one is a dual-stack guard.
    legacy_modules: tuple[str, ...]

    @staticmethod
    def message_for(qname: str) -> str:
        """The finding's message for a leftover use of ``qname``."""

    @staticmethod
    def fix_for(qname: str) -> str:
        """The finding's fix for a leftover use of ``qname``."""


class Shim(Protocol):
    """Migrates dual-stack guards (``try: import torch_xla``, ``if is_torch_xla_available():``); the engine
    and the import pass do the work and say it with these texts."""

    # availability check (qualified name) -> its handler: the checks this rule migrates
    calls: dict[str, str]
    # the short names whose call makes an ``if`` a dual-stack guard
    guard_names: tuple[str, ...]
    # the import that tells whether TorchNeuron is installed, and the name it binds
    PROBE: str
    PROBE_NAME: str
    # the edits of the import pass: the probe in place of a try's legacy imports, a try that did nothing
    # else removed, a legacy import the try still needs, a fallback name's presence test ({name})
    PROBE_MESSAGE: str
    GONE_MESSAGE: str
    LEGACY_IMPORT_KEPT: str
    PRESENCE_MESSAGE: str
    # --keep-dual-stack: the neuron test added beside a legacy one ({torch}: the torch module's name), the
    # tests that are one already, and what a paired, an unpairable and a kept guard are told
    NEURON_AVAILABLE: str
    NEURON_CHECKS: tuple[str, ...]
    PAIRED_MESSAGE: str
    PAIRED_REVIEW: str
    UNPAIRED_MESSAGE: str
    MESSAGE: str
    # a use of a name only a guard imports ({name})
    USE_MESSAGE: str


class UnusedImport(Protocol):
    """Owns the removal of legacy imports nothing uses any more: its id and title are the findings'."""


class Marker(Protocol):
    """Says why a line of a requirements file is kept or changed: ``neuron-index`` (a line pointing pip
    at the Neuron repository is kept), ``requirement-hashes`` (a changed requirement's hashes go)."""

    MARKER: str


class UnparsableCell(Protocol):
    """Reports a notebook cell that does not parse."""

    # the finding's message ({where}: line:column, {problem}: the parser's words)
    MESSAGE: str


# role -> what the engine or the adapter that asks for it reads of the rule
ROLES: dict[str, type] = {
    "leftover": Leftover,
    "shim": Shim,
    "unused-import": UnusedImport,
    "neuron-index": Marker,
    "requirement-hashes": Marker,
    "unparsable-cell": UnparsableCell,
}


def role_members(protocol: type) -> list[str]:
    """The attributes and methods a role's Protocol declares."""
    declared = list(protocol.__annotations__)
    declared += [
        name
        for name, value in vars(protocol).items()
        if not name.startswith("_") and (callable(value) or isinstance(value, staticmethod))
    ]
    return sorted(set(declared))


def missing_members(cls: type, role: str) -> list[str]:
    """What ``cls`` lacks of the role it claims."""
    return [name for name in role_members(ROLES[role]) if not hasattr(cls, name)]
