"""The readiness card of a diffusion model of diffusers (a DiT, SD3, Flux, PixArt, Sana, Wan transformer, or the
UNet of Stable Diffusion): a tiny random one run on the neuron device through what a pipeline and a fine-tune do.

- forward: one eager call at one timestep;
- denoise: the model compiled with the neuron backend, called at several timesteps of one schedule, as a
  pipeline's loop does: graphs and recompiles (a timestep whose value is compiled in recompiles every step);
- train: the compiled model, two optimizer steps of a noise-prediction loss of equal shapes.

What a model reads differs from class to class, so each class is a row of ``recipes.RECIPES``: its tiny config and
its inputs. A diffusers ``config.json`` names its class (``_class_name``); its size fields give way to the tiny
ones, the others are kept.
"""

from __future__ import annotations

from neuron_migrate.analyzers.models.card import (
    MAX_PARAMETERS,
    add_findings,
    failure,
    on_the_device,
    train_compiled,
    watching,
    where_of,
)
from neuron_migrate.analyzers.models.model import Card, Problem
from neuron_migrate.analyzers.models.recipes import BATCH, RECIPES, TIMESTEPS, Recipe
from neuron_migrate.analyzers.models.tiny import Spec, TinyConfigError


def is_diffusers(spec: Spec) -> bool:
    return spec.model_type in RECIPES or "_class_name" in spec.config


def build(card: Card, spec: Spec) -> None:
    """The phases of a diffusers model: ``card.build_card(spec, run=build)``."""
    on_the_device(card)
    import diffusers
    import torch

    diffusers.utils.logging.set_verbosity_error()
    card.versions = {"diffusers": diffusers.__version__, "torch": torch.__version__.split("+")[0]}
    card.generates = False
    card.kind = "diffusers"
    built = _build(card, spec)
    if built is None:
        return
    model, recipe = built
    inputs = _inputs(model, recipe, "neuron")
    if not _forward(card, model, recipe, inputs):
        return
    _denoise(card, model, recipe, inputs)
    _train(card, model, recipe, inputs)


def _build(card: Card, spec: Spec):
    import diffusers
    import torch

    try:
        recipe = RECIPES.get(spec.model_type)
        if recipe is None:
            known = ", ".join(sorted(RECIPES))
            raise TinyConfigError(f"no tiny recipe for the diffusers class {spec.model_type!r} (known: {known})")
        cls = getattr(diffusers, spec.model_type)
        given = {k: v for k, v in spec.config.items() if not k.startswith("_")}
        config = {**given, **recipe.tiny}  # the config's own switches, the recipe's sizes
        with torch.device("meta"):
            shape = cls.from_config(config)
        card.parameters = sum(p.numel() for p in shape.parameters())
        if card.parameters > MAX_PARAMETERS:
            raise TinyConfigError(f"the tiny config still has {card.parameters:,} parameters")
        torch.manual_seed(0)
        model = cls.from_config(config)
    except Exception as exc:  # noqa: BLE001 - whatever stops the build is the card's answer
        message = str(exc) if isinstance(exc, TinyConfigError) else f"the tiny model cannot be built: {exc}"
        card.problems.append(Problem("build", "error", message.splitlines()[0][:400], where=where_of(exc)))
        return None
    card.model_class = type(model).__name__
    return model.to("neuron").eval(), recipe


def _inputs(model, recipe: Recipe, device: str) -> dict:
    import torch

    made = recipe.inputs(model.config, torch, torch.Generator().manual_seed(0))
    return _to(made, device)


def _to(value, device: str):
    if isinstance(value, dict):
        return {k: _to(v, device) for k, v in value.items()}
    return value.to(device) if hasattr(value, "to") else value


def _timestep(recipe: Recipe, value: int):
    import torch

    dtype = torch.long if recipe.integer_timestep else torch.float32
    return torch.full((BATCH,), value, dtype=dtype).to("neuron")


def _forward(card: Card, model, recipe: Recipe, inputs: dict) -> bool:
    import torch

    with watching() as watch, torch.no_grad():
        try:
            model(**inputs, timestep=_timestep(recipe, TIMESTEPS[0]))
        except Exception as exc:  # noqa: BLE001
            card.problems.append(failure("forward", "the forward pass failed", exc,
                                         cpu_check=lambda: _fails_on_the_cpu(model, recipe)))
            return False
    add_findings(card, "forward", watch)
    return True


def _fails_on_the_cpu(model, recipe: Recipe) -> bool:
    import copy

    import torch

    try:
        twin = copy.deepcopy(model).to("cpu")
        dtype = torch.long if recipe.integer_timestep else torch.float32
        timestep = torch.full((BATCH,), TIMESTEPS[0], dtype=dtype)
        with torch.no_grad():
            twin(**_inputs(twin, recipe, "cpu"), timestep=timestep)
    except Exception:  # noqa: BLE001 - any failure on the CPU is the answer
        return True
    return False


def _denoise(card: Card, model, recipe: Recipe, inputs: dict) -> None:
    import torch
    import torch._dynamo

    torch._dynamo.reset()
    compiled = torch.compile(model, backend="neuron")
    with watching(len(TIMESTEPS)) as watch, torch.no_grad():
        try:
            for value in TIMESTEPS:
                compiled(**inputs, timestep=_timestep(recipe, value))
        except Exception as exc:  # noqa: BLE001
            card.problems.append(failure("denoise", "the compiled denoising loop failed", exc))
            return
    summary = watch.summary()
    card.decode_graphs, card.generate_recompiles = summary.graphs, summary.recompiles
    add_findings(card, "denoise", watch)


def _train(card: Card, model, recipe: Recipe, inputs: dict) -> None:
    def loss_of(compiled):
        predicted = getattr(compiled(**inputs, timestep=_timestep(recipe, TIMESTEPS[1])), recipe.output)
        return predicted.float().pow(2).mean()  # a noise-prediction loss against zero noise: shapes only

    train_compiled(card, model, loss_of)
