"""NM538: hashes of a changed requirement dropped"""

from __future__ import annotations

from neuron_migrate.rules.base import MANUAL, RuleMeta, register
from neuron_migrate.rules.requirements.common import (
    DOCS_HASHES,
    HASH_MARKER,
    PACKAGES,
    TRIGGERS,
    RequirementRule,
    _example,
)


@register
class HashesDropped(RequirementRule):
    """A changed requirement's ``--hash`` options no longer match; they go and the file needs re-locking."""

    role = "requirement-hashes"
    MARKER = HASH_MARKER

    meta = RuleMeta(
        "NM538",
        "hashes of a changed requirement dropped",
        safety=MANUAL,
        summary="pip checks --hash values against the downloaded file, so the hashes of a rewritten requirement "
        "are dropped with it, and a TODO marker asks to re-lock the file with the tool that wrote them.",
        docs=(DOCS_HASHES,),
        triggers=TRIGGERS,
        kind="requirements",
        example=_example(
            "torch-xla==2.1.2 \\\n    --hash=sha256:0123\ntorch==2.1.2 \\\n    --hash=sha256:4567\n",
            f"# neuron-migrate(NM535): {PACKAGES['torch'].why}\n# TODO(neuron-migrate NM538): {HASH_MARKER}\n"
            "torch>=2.13\n",
        ),
    )
