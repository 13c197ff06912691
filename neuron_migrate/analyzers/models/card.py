"""The readiness card of one architecture: a tiny random model of it run on the neuron device (the emulator
when there is no Trainium) through the three things users do, each under the runtime analyzer.

- forward: one eager forward pass;
- generate: ``generate()`` with a static cache; transformers compiles the decode step itself on neuron, the
  prefill runs eager; graphs and recompiles are counted;
- train: the model compiled with the neuron backend (``automatic_dynamic_shapes`` off), two optimizer steps of
  equal shapes: graph breaks with their reasons, recompiles, data-dependent ops and host syncs.

An image classifier reads two pictures instead of tokens and has no generate phase (``inputs``); a diffusers
model has phases of its own (``diffusion``), made through ``build_card`` too.

The verdict: *ready* when every phase ran, decode compiled to graphs without a recompile and the training step
compiled without a graph break or recompile; *ready with warnings* when everything ran but one of these did
not hold; *not checked without the device* when a phase stopped on an op the emulator's CPU has no kernel for
(only the device can say whether it has one); *not ready* when a phase failed otherwise or the model holds a
dtype the device refuses; *not built* when no tiny model of the architecture could be made (the reason is the
card's only problem).
"""

from __future__ import annotations

import os
import re
import time

from neuron_migrate.analyzers.models.inputs import Inputs, model_inputs
from neuron_migrate.analyzers.models.model import (
    NO_DEVICE_NOTE,
    ONLY_THE_DEVICE,
    REFUSED_DTYPES,
    UNCHECKED_SEVERITY,
    Card,
    Problem,
    verdict,
)
from neuron_migrate.analyzers.models.tiny import Spec, TinyConfigError, tiny_config

NEW_TOKENS = 24
TRAIN_STEPS = 2
MAX_PARAMETERS = 40_000_000  # a "tiny" model above this is a config field the shrinking missed

def build_card(spec: Spec, run=None) -> Card:
    """Run the card of ``spec`` in this process (the emulator is activated when there is no real device):
    ``run(card, spec)`` makes it, the phases of a transformers model by default."""
    started = time.perf_counter()
    card = Card(architecture=spec.model_type, source=spec.source)
    try:
        (run or _run)(card, spec)
    finally:
        card.seconds = round(time.perf_counter() - started, 1)
        card.verdict = verdict(card)
    return card


def on_the_device(card: Card) -> bool:
    """Put the card on the neuron device, the emulator where there is no Trainium; True on the real one."""
    import warnings

    warnings.filterwarnings("ignore")
    from neuron_migrate.analyzers import emulator

    real = emulator.real_torch_neuronx()
    if real is None:
        emulator.activate(banner=False)
        card.notes.append(NO_DEVICE_NOTE)
    card.device = "neuron" if real else "neuron (emulated on CPU)"
    return real is not None


def _run(card: Card, spec: Spec) -> None:
    real = on_the_device(card)
    import torch
    import transformers

    transformers.logging.set_verbosity_error()
    card.versions = {"transformers": transformers.__version__, "torch": torch.__version__.split("+")[0]}
    _MODEL_CODE[:] = [spec.folder] if spec.folder else []
    model = _build(card, spec)
    if model is None:
        return
    if not real:
        _stand_in_cpu_gaps(card)
    _check_dtypes(card, model)
    inputs = model_inputs(model)
    card.generates = inputs.prompt is not None and _can_generate(model)
    ran = _forward(card, model, inputs)
    if any(p.phase == "build" for p in card.problems):
        return  # the tiny model is broken on the CPU too: the rest would only repeat it
    if ran and card.generates:
        _generate(card, model, inputs.prompt)
    _train(card, model, inputs)


def _build(card: Card, spec: Spec):
    import torch

    try:
        config = tiny_config(spec)
        auto = auto_class(config)
        _name_the_architecture(config, auto)
        remote = {"trust_remote_code": True} if spec.folder else {}  # the user's own modeling code, on disk
        with torch.device("meta"):
            shape = auto.from_config(config, **remote)
        card.parameters = sum(p.numel() for p in shape.parameters())
        if card.parameters > MAX_PARAMETERS:
            raise TinyConfigError(f"the tiny config still has {card.parameters:,} parameters: a size field of "
                                  f"{type(config).__name__} is not shrunk yet")
        torch.manual_seed(0)
        model = auto.from_config(config, **remote)
    except Exception as exc:  # noqa: BLE001 - whatever stops the build is the card's answer
        message = str(exc) if isinstance(exc, TinyConfigError) else f"the tiny model cannot be built: {_line(exc)}"
        card.problems.append(Problem("build", "error", message, where=where_of(exc)))
        return None
    card.model_class = type(model).__name__
    try:
        return model.to("neuron").eval()
    except Exception as exc:  # noqa: BLE001
        card.problems.append(Problem("forward", "error", f"moving the model to neuron failed: {_line(exc)}",
                                     where=where_of(exc)))
        return None


# the model heads a card is made with, in this order: the first whose mapping knows the architecture
HEADS = ("AutoModelForCausalLM", "AutoModelForSeq2SeqLM", "AutoModelForMaskedLM", "AutoModelForImageClassification")


def auto_class(config):
    """The transformers auto class that builds a trainable head for ``config``: a language-model head, else an
    image classifier."""
    import transformers

    for name in HEADS:
        auto = getattr(transformers, name)
        if type(config) in auto._model_mapping or _remote_class(config, name):
            return auto
    raise TinyConfigError(f"{type(config).__name__} has no causal LM, seq2seq LM, masked LM or image "
                          "classification head in transformers")


def _name_the_architecture(config, auto) -> None:
    """An auto class mapped to several model classes (DeiT's classifier with and without its teacher) picks by
    the config's ``architectures``, which a checkpoint sets and a config made from scratch leaves empty: the
    first of them is the one a checkpoint of the head names."""
    mapped = auto._model_mapping[type(config)] if type(config) in auto._model_mapping else None
    if isinstance(mapped, (list, tuple)) and mapped and not getattr(config, "architectures", None):
        config.architectures = [mapped[0].__name__]


def _remote_class(config, name: str) -> bool:
    return name in (getattr(config, "auto_map", None) or {})


def _check_dtypes(card: Card, model) -> None:
    seen = {str(t.dtype) for t in [*model.parameters(), *model.buffers()]}
    for dtype in sorted(seen & REFUSED_DTYPES.keys()):
        card.problems.append(Problem("dtypes", "error", f"the model holds {dtype.replace('torch.', '')} tensors",
                                     fix=REFUSED_DTYPES[dtype]))


def _forward(card: Card, model, inputs: Inputs) -> bool:
    import torch

    with watching() as watch, torch.no_grad():
        try:
            model(**inputs.forward)
        except Exception as exc:  # noqa: BLE001
            card.problems.append(failure("forward", "the forward pass failed", exc,
                                         cpu_check=lambda: _fails_on_the_cpu(model)))
            return False
    add_findings(card, "forward", watch)
    return True


def _can_generate(model) -> bool:
    return callable(getattr(model, "generate", None)) and getattr(model, "can_generate", lambda: False)()


def _generate(card: Card, model, ids) -> None:
    import torch._dynamo

    torch._dynamo.reset()
    with watching() as watch:
        try:
            model.generate(ids, max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS, do_sample=False,
                           cache_implementation="static", attention_mask=torch.ones_like(ids))
        except Exception as exc:  # noqa: BLE001
            card.problems.append(failure("generate", "generate() with a static cache failed", exc,
                                          fix=_static_cache_fix(exc)))
            return
    summary = watch.summary()
    card.decode_graphs, card.generate_recompiles = summary.graphs, summary.recompiles
    if not summary.graphs:
        card.problems.append(Problem("generate", "warning", "transformers did not compile the decode step: "
                                     "every token runs eager", fix=_no_compile_fix(model)))
    add_findings(card, "generate", watch)


def _train(card: Card, model, inputs: Inputs) -> None:
    train_compiled(card, model, lambda compiled: _loss(compiled(**inputs.train)))


def train_compiled(card: Card, model, loss_of) -> None:
    """Two optimizer steps of ``model`` compiled with the neuron backend, ``loss_of(compiled)`` each step's loss:
    graphs, graph breaks and recompiles go on the card."""
    import torch
    import torch._dynamo

    torch._dynamo.reset()
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    compiled = torch.compile(model, backend="neuron")
    with watching(TRAIN_STEPS) as watch:
        try:
            for _ in range(TRAIN_STEPS):
                loss_of(compiled).backward()
                optimizer.step()
                optimizer.zero_grad()
        except Exception as exc:  # noqa: BLE001
            card.problems.append(failure("train", "the compiled training step failed", exc))
            return
    summary = watch.summary()
    card.train_graphs, card.train_graph_breaks = summary.graphs, summary.graph_breaks
    card.train_recompiles = summary.recompiles
    add_findings(card, "train", watch)


def _loss(output):
    """The loss the model computed from the labels; a model the auto class maps to a class without a head (no
    loss) trains on the mean of its first output, which compiles the same graph shapes."""
    loss = getattr(output, "loss", None)
    return loss if loss is not None else output[0].float().mean()


# what each runtime finding means for a card: phase-independent severity and, for the generation loop's own host
# syncs, that they are expected (the stopping criteria read a value per token)
SEVERITY = {"NA501": "warning", "NA502": "warning", "NA503": "warning", "NA504": "warning", "NA505": "warning",
            "NA506": "warning", "NA507": "error"}
GENERATION_LOOP = ("transformers/generation/",)


def add_findings(card: Card, phase: str, watch) -> None:
    for finding in watch.findings():
        where = _relative(finding.path, finding.span.line)
        syncs = finding.rule.startswith("NA2") or finding.rule == "NA504"
        if syncs and phase == "generate" and where.startswith(GENERATION_LOOP):
            continue  # generate()'s own per-token checks, on every architecture alike
        if syncs:
            card.host_syncs += 1
        own = (*(f"{name}/" for name in LIBRARIES), *(os.path.basename(f) + "/" for f in _MODEL_CODE))
        if not where.startswith(own):
            where = ""  # a line of the standard library or of torch says nothing of the model
        fix = next((fix for pattern, fix in KNOWN_FIXES if pattern.search(finding.message)), finding.fix)
        card.problems.append(Problem(phase, SEVERITY.get(finding.rule, "warning"), finding.message, where=where,
                                     fix=fix, rule=finding.rule))


# causes whose fix is known better than the analyzer's general advice, by what the finding says
KNOWN_FIXES = (
    (re.compile(r"config\.problem_type` switched"),
     'set model.config.problem_type (for example "single_label_classification") before compiling: transformers '
     "sets it at the first loss it computes, which recompiles the second step"),
)


def _stand_in_cpu_gaps(card: Card) -> None:
    """Ops the CPU has no kernel for, with the dtypes transformers picks for the neuron device, are run in a
    dtype the CPU has, once noted as unchecked: the run goes on, so the card still shows everything after them
    (transformers' MoE layers count tokens per expert with ``torch.histc`` on integers on every device but the
    CPU and MPS)."""
    import torch

    _CURRENT[0] = card
    if getattr(torch.histc, "_stand_in", False):
        return  # a worker makes many cards: the stand-in is installed once and reports to the current card
    histc = torch.histc

    def histc_on_the_cpu(input, *args, **kwargs):
        if input.device.type == "neuron" and not input.is_floating_point():
            current = _CURRENT[0]
            if current is not None and not any(p.what.startswith(HISTC_GAP) for p in current.problems):
                current.problems.append(Problem("forward", UNCHECKED_SEVERITY, f"{HISTC_GAP} {input.dtype}",
                                                where=_caller_in_transformers(), fix=ONLY_THE_DEVICE))
            return histc(input.float(), *args, **kwargs).to(input.dtype)
        return histc(input, *args, **kwargs)

    histc_on_the_cpu._stand_in = True
    torch.histc = histc_on_the_cpu


_CURRENT: list[Card | None] = [None]  # the card being made in this process


HISTC_GAP = "torch.histc on integers, which the CPU cannot run, was run in float32 here: input"


def _caller_in_transformers() -> str:
    import traceback

    frames = [f for f in traceback.extract_stack()[:-2] if f"{os.sep}transformers{os.sep}" in f.filename]
    return _relative(frames[-1].filename, frames[-1].lineno or 0) if frames else ""


def failure(phase: str, what: str, exc: BaseException, fix: str = "", cpu_check=None) -> Problem:
    """``cpu_check()`` says whether the same call fails on the CPU (a forward pass's failure asks it)."""
    """A phase that raised: an op the emulator's CPU has no kernel for is the device's to judge, not an error;
    a forward pass that fails the same way on the CPU says nothing of the device: the tiny model itself is
    broken (a size the shrinking left inconsistent, or a config transformers cannot run), and no card is made."""
    if _cpu_kernel_missing(exc):
        return Problem(phase, UNCHECKED_SEVERITY, f"{what}: {_line(_root(exc) or exc)}", where=where_of(exc),
                       fix=ONLY_THE_DEVICE)
    if _emulator_trace_limit(exc):
        return Problem(phase, UNCHECKED_SEVERITY, f"{what}: {EMULATOR_TRACE_LIMIT}", where=_traced_line(exc),
                       fix="make the card on a Trainium host")
    if cpu_check is not None and cpu_check():
        return Problem("build", "error", f"the tiny model fails on the CPU too, so no card is made: {_line(exc)}",
                       where=where_of(exc))
    return Problem(phase, "error", f"{what}: {_line(exc)}", where=where_of(exc), fix=fix)


# torch.compile traces with fake tensors; a constant moved to the emulated device there (``torch.tensor(0).to(
# device)``, as transformers' caches and masks do) trips fake-tensor constant propagation on the emulator's wrapper
# tensors, where a device backend's own tensors would not: the emulator cannot say what the device does
EMULATOR_TRACE_LIMIT = ("the emulator cannot trace a constant moved to the neuron device under torch.compile (a "
                        "limit of the emulator's device tensors, not known of the device)")


def _emulator_trace_limit(exc: BaseException) -> bool:
    text = str(exc)
    return "when making fake tensor call" in text and "device(type='neuron'" in text and "with a constant" in text


def _traced_line(exc: BaseException) -> str:
    """The innermost transformers line of dynamo's "from user code" trace in the message."""
    found = re.findall(r'File "([^"]+)", line (\d+)', str(exc))
    inside = [(f, int(n)) for f, n in found if _in_library(f)]
    return _relative(*inside[-1]) if inside else ""


def _fails_on_the_cpu(model) -> bool:
    import copy

    import torch

    try:
        twin = copy.deepcopy(model).to("cpu")
        with torch.no_grad():
            twin(**model_inputs(twin, "cpu").forward)
    except Exception:  # noqa: BLE001 - any failure on the CPU is the answer
        return True
    return False


# what torch says when the CPU has no kernel for an op with these dtypes
CPU_KERNEL_MISSING = re.compile(r'"\w+_cpu" not implemented for|not implemented for \'\w+\' on CPU|'
                                r"Could not run '[\w:.]+' with arguments from the 'CPU' backend")


def _cpu_kernel_missing(exc: BaseException) -> bool:
    return _root(exc) is not None


def _chain(exc: BaseException):
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def _root(exc: BaseException) -> BaseException | None:
    """The exception of the chain that says the CPU has no kernel, if one does."""
    return next((e for e in _chain(exc) if CPU_KERNEL_MISSING.search(str(e))), None)


def watching(steps: int = 1):
    import importlib.util

    from neuron_migrate.analyzers.runtime.session import Watch

    found = [importlib.util.find_spec(name) for name in LIBRARIES]
    roots = [os.path.dirname(spec.origin) for spec in found if spec is not None and spec.origin]
    return Watch(steps, user_roots=[*roots, *_MODEL_CODE, *_code_copies()])


def _code_copies() -> list[str]:
    """Where transformers imports a model folder's own code from (a copy in its modules cache)."""
    if not _MODEL_CODE:
        return []
    from transformers.utils import HF_MODULES_CACHE

    return [str(HF_MODULES_CACHE)]


_MODEL_CODE: list[str] = []  # the folder of a model with its own modeling code, whose lines the card names


def _relative(path: str, line: int) -> str:
    text = path.replace(os.sep, "/")
    copy = f"{os.sep}transformers_modules{os.sep}"
    library = next((name for name in LIBRARIES if f"{os.sep}{name}{os.sep}" in path), None)
    if _MODEL_CODE and copy in path:  # the model folder's own file, as transformers copied it
        text = f"{os.path.basename(_MODEL_CODE[0])}/{os.path.basename(path)}"
    elif library is not None:
        text = f"{library}/" + path.split(f"{os.sep}{library}{os.sep}", 1)[1].replace(os.sep, "/")
    return f"{text}:{line}" if line else text


# the libraries whose model code a card names lines of
LIBRARIES = ("transformers", "diffusers")


def _in_library(path: str) -> bool:
    return any(f"{os.sep}{name}{os.sep}" in path for name in LIBRARIES)


def where_of(exc: BaseException) -> str:
    """The innermost frame of the model's library code (transformers, diffusers) in the exception's traceback."""
    import traceback

    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if _in_library(f.filename) or f"{os.sep}transformers_modules{os.sep}" in f.filename]
    return _relative(frames[-1].filename, frames[-1].lineno or 0) if frames else ""


def _static_cache_fix(exc: BaseException) -> str:
    text = str(exc).lower()
    if "static" in text or "cache" in text:
        return ("this architecture has no static cache in this transformers: generate with a fixed "
                "max_length and padding to it, or keep decoding eager")
    return ""


def _no_compile_fix(model) -> str:
    if not getattr(model, "_can_compile_fullgraph", True):
        return (f"{type(model).__name__} declares it cannot compile a full graph: decode with "
                "torch.compile(model.forward, backend=\"neuron\") and expect graph breaks")
    return 'pass generation_config.compile_config, or compile model.forward with backend="neuron"'


def _line(exc: BaseException) -> str:
    """The exception in one line: its first line, and for dynamo's wrappers the error they wrap."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    text = f"{type(exc).__name__}: {lines[0] if lines else ''}"
    inner = next((line for line in lines[1:] if re.match(r"\w+(Error|Exception): ", line)), "")
    cause = next((e for e in _chain(exc) if e is not exc), None)
    if not inner and cause is not None:
        inner = f"{type(cause).__name__}: {str(cause).strip().splitlines()[0] if str(cause).strip() else ''}"
    return (f"{text} ({inner})" if inner and inner not in text else text)[:400]
