"""NM657: CUDA-only packages marked"""

from __future__ import annotations

from neuron_migrate.rules.base import MANUAL, RuleMeta, register
from neuron_migrate.rules.requirements.common import DOCS_RESOURCES, RequirementRule, _example
from neuron_migrate.rules.requirements.cuda_table import CUDA_PACKAGES, CUDA_PREFIXES


def _words(rule_id: str) -> tuple[bytes, ...]:
    names = [name for name, row in {**CUDA_PACKAGES, **CUDA_PREFIXES}.items() if row[0] == rule_id]
    return tuple(sorted({spelling.encode() for name in names for spelling in (name, name.replace("-", "_"))}))


@register
class CudaOnlyPackages(RequirementRule):
    """bitsandbytes, flash-attn, xformers, apex, DeepSpeed, Triton, CuPy, NVML: kept, each with a TODO naming
    what takes its place on the neuron device (the code still imports it until then)."""

    source = "cuda"
    meta = RuleMeta(
        "NM657",
        "CUDA-only packages marked",
        safety=MANUAL,
        summary="A dependency built for NVIDIA GPUs only stays in the file with a TODO naming its counterpart on "
        "the neuron device; drop it once the code that imports it is ported (NM640 marks those imports).",
        docs=(DOCS_RESOURCES,),
        triggers=_words("NM657"),
        kind="requirements",
        example=_example(
            "transformers\nflash-attn==2.5.8\n",
            "transformers\n# TODO(neuron-migrate NM657): flash-attn kept: " + CUDA_PACKAGES["flash-attn"][2]
            + "\nflash-attn==2.5.8\n",
        ),
    )
