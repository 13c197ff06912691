"""NM540: XLA-era Neuron container image in SageMaker code"""

from __future__ import annotations

import re

import libcst as cst

from neuron_migrate.rules.base import MANUAL, Example, Rule, RuleMeta, register
from neuron_migrate.rules.calls import first_argument
from neuron_migrate.rules.dockerfiles import legacy_image
from neuron_migrate.rules.sagemaker.common import (
    DLC_IMAGES,
    DOCS_DLC,
    TORCH_NEURON_HARDWARE,
    TORCH_NEURON_RELEASE,
    VLLM_IMAGE,
    string_text,
)

# An image in a Deep Learning Container registry: <account>.dkr.ecr.<region>.amazonaws.com[.cn]/repo:tag
# (the account and region often f-string fields), or the Neuron gallery, public.ecr.aws/neuron/repo:tag.
_IMAGE = re.compile(
    r"(?:[\w{}.-]*\.dkr\.ecr\.[\w{}.-]+\.amazonaws\.com(?:\.cn)?|public\.ecr\.aws/neuron)/(?P<repo>[\w.-]+):(?P<tag>[\w{}.-]+)"
)
# The sagemaker SDK's names of the Hugging Face Neuron images (image_uris.retrieve / the LLM helper).
HF_FRAMEWORK = "huggingface-neuronx"
IMAGE_HELPERS = frozenset(
    {
        "sagemaker.image_uris.retrieve",
        "sagemaker.huggingface.get_huggingface_llm_image_uri",
        "sagemaker.huggingface.llm_utils.get_huggingface_llm_image_uri",
    }
)

TRAINING_STEP = (
    "{image} is an XLA-era Neuron container ({what}): the migrated code needs a TorchNeuron one ({release}: "
    'the "PyTorch Training (TorchNeuron)" image of {dlcs}); {hardware}'
)
INFERENCE_STEP = (
    "{image} is an XLA-era Neuron container ({what}): the migrated code needs TorchNeuron ({release}); the "
    "Neuron DLCs for it are a training image and, for LLM serving with vLLM Neuron, {vllm} (a Neuron SDK 2.33+ "
    "tag): serve other models "
    "from a container built on the TorchNeuron one; {hardware}"
)
HF_STEP = (
    "the Hugging Face Neuron container runs optimum-neuron on the XLA stack, which the migrated code no longer "
    'uses: run it in a TorchNeuron container ({release}: the "PyTorch Training (TorchNeuron)" image of {dlcs}) '
    "with the stock Hugging Face libraries from requirements.txt; {hardware}"
)
TGI_STEP = (
    "TGI on Neuron serves through optimum-neuron on the XLA stack: serve the model with vLLM Neuron instead "
    "(image {vllm}, a Neuron SDK 2.33+ tag); {hardware}"
)


def _step(template: str, **fields: str) -> str:
    return template.format(
        release=TORCH_NEURON_RELEASE, dlcs=DLC_IMAGES, vllm=VLLM_IMAGE, hardware=TORCH_NEURON_HARDWARE, **fields
    )


def image_step(repo: str, tag: str) -> str | None:
    """The next step for a container image ``repo:tag``, None when it is no XLA-era Neuron image."""
    if "vllm" in repo:
        return None  # vLLM Neuron images are what serving moves to
    if "tgi" in repo and "neuronx" in tag:
        return _step(TGI_STEP)
    what = legacy_image(f"{repo}:{tag}")
    if what is None:
        return None
    version = tag.split("-", 1)[0]
    template = INFERENCE_STEP if "inference" in repo else TRAINING_STEP
    return _step(template, image=f"{repo}:{version}", what=what)


def image_in(text: str) -> tuple[str, str] | None:
    """(repo, tag) of the container image a string names, when it names one."""
    match = _IMAGE.fullmatch(text)
    return (match["repo"], match["tag"]) if match else None


@register
class XlaEraContainerImage(Rule):
    """A SageMaker job or endpoint whose container is a Neuron DLC of the XLA era: the image URI
    written out (``pytorch-training-neuronx:2.1.2-...``, a ``huggingface-pytorch-*-neuronx`` image, an
    optimum-neuron TGI image), or asked of the sagemaker SDK by its Hugging Face Neuron framework name
    (``image_uris.retrieve("huggingface-neuronx", ...)``, ``get_huggingface_llm_image_uri("huggingface-neuronx")``).
    Neuron DLCs before PyTorch 2.13 hold PyTorch/XLA; TorchNeuron ships in the Neuron 2.33 images
    (DOCS_DLC, DLC_IMAGES), which run on Trn2 and Trn3. No URI is written in: the tag to use depends on
    the region, the release and the job."""

    meta = RuleMeta(
        "NM540",
        "XLA-era Neuron container image in SageMaker code",
        safety=MANUAL,
        risks=frozenset({"launch"}),
        summary=(
            "A Neuron Deep Learning Container with PyTorch before 2.13, a Hugging Face Neuron container or an "
            "optimum-neuron TGI image holds the PyTorch/XLA stack: the migrated code needs a TorchNeuron container."
        ),
        docs=(DOCS_DLC, DLC_IMAGES),
        triggers=(b"neuronx", b"optimum-neuron"),
        example=Example(
            before=(
                "from sagemaker.pytorch import PyTorch\n\n"
                'image = f"763104351884.dkr.ecr.{region}.amazonaws.com/pytorch-training-neuronx:'
                '2.1.2-neuronx-py310-sdk2.20.0-ubuntu20.04"\n'
                'estimator = PyTorch(entry_point="train.py", image_uri=image, instance_count=1)\n'
            ),
            after=(
                "from sagemaker.pytorch import PyTorch\n\n"
                f"# TODO(neuron-migrate NM540): {image_step('pytorch-training-neuronx', '2.1.2-neuronx')}\n"
                'image = f"763104351884.dkr.ecr.{region}.amazonaws.com/pytorch-training-neuronx:'
                '2.1.2-neuronx-py310-sdk2.20.0-ubuntu20.04"\n'
                'estimator = PyTorch(entry_point="train.py", image_uri=image, instance_count=1)\n'
            ),
        ),
    )
    calls = {name: "image_helper" for name in IMAGE_HELPERS}

    def image_helper(self, original: cst.Call, updated: cst.Call, qname: str):
        framework = first_argument(original, "framework")
        if framework is None:
            framework = first_argument(original, "backend")
        if isinstance(framework, cst.SimpleString) and framework.evaluated_value == HF_FRAMEWORK:
            llm = qname.endswith("get_huggingface_llm_image_uri")
            self.ctx.manual(self.meta, original, _step(TGI_STEP) if llm else _step(HF_STEP))
        return updated

    def leave_SimpleString(self, original: cst.SimpleString, updated: cst.SimpleString):
        return self._check(original, updated)

    def leave_FormattedString(self, original: cst.FormattedString, updated: cst.FormattedString):
        return self._check(original, updated)

    def _check(self, original, updated):
        text = string_text(original, "neuron")
        found = image_in(text) if text else None
        step = image_step(*found) if found else None
        if step is not None:
            self.ctx.manual(self.meta, original, step)
        return updated
