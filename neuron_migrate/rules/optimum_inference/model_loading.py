"""A Neuron model class -> its transformers class, shared by NM301 (task models) and NM302 (causal LMs;
NM308 moves the inputs of the models these two load): the ``from_pretrained`` call rebuilt from the
export settings, and the class name in annotations, isinstance checks and base classes.
"""

from __future__ import annotations

import libcst as cst

from neuron_migrate.rules.base import Edit
from neuron_migrate.rules.calls import new_keyword
from neuron_migrate.rules.optimum_inference.export_settings import (
    RENAMED,
    ExportSettings,
    Migration,
    model_argument,
    shapes_review,
    stock_loading_args,
    tensor_parallel_size,
    torchrun_review,
    unresolved_review,
)
from neuron_migrate.rules.optimum_inference.loader_rule import BASE, ISINSTANCE, OTHER, NeuronLoaderRule
from neuron_migrate.rules.optimum_inference.reading import Keyword
from neuron_migrate.rules.optimum_names import with_methods
from neuron_migrate.rules.xla_step.common import with_args


class TransformersModelRule(NeuronLoaderRule):
    """A Neuron model class -> a transformers class: ``from_pretrained`` calls and the class name."""

    # legacy class qname -> transformers class name
    targets: dict[str, str] = {}
    # cast settings apply only with auto_cast on (traced encoders), or are the weights' dtype (decoders)
    gated_cast = True

    def target_of(self, qname: str) -> tuple[str, str]:
        """(legacy class name, transformers class) for a qname of the class or of one of its methods."""
        for legacy, target in self.targets.items():
            if qname == legacy or qname.startswith(legacy + "."):
                return legacy.rsplit(".", 1)[1], target
        raise KeyError(qname)

    def migrate_load(self, original: cst.Call, updated: cst.Call, qname: str) -> tuple[cst.Call, Migration] | None:
        """The transformers ``from_pretrained`` call for a legacy one (None: left to a human)."""
        legacy, target = self.target_of(qname)
        load = self.load_of(original)
        if not load.migrates:
            self.ctx.manual(
                self.meta,
                original,
                f'load with `{target}.from_pretrained(checkpoint, device_map="neuron")`, without the Neuron export '
                "arguments",
            )
            return None
        reading = load.reading
        settings = ExportSettings.read(reading)
        migration = Migration(args=[])
        migration.dropped = list(settings.dropped)
        passed = settings.passed
        leading: list[cst.Arg] = []
        if load.linked is not None:
            # An export: its settings came from get_neuron_config, and its model id may be a keyword.
            settings.export = True
            if "model_id" in passed:
                del passed["model_id"]
                leading = [cst.Arg(a.value) for a in updated.args if a.keyword and a.keyword.value == "model_id"]
        extra: list[cst.Arg] = []
        if "dtype" not in passed and "torch_dtype" not in passed:
            dtype, review = settings.cast_dtype(self.gated_cast)
            if dtype is not None:
                extra.append(new_keyword("dtype", f"{self.ctx.require_import('torch')}.{dtype}"))
            if review:
                migration.review.append(review)
        for keyword in (settings.auto_cast, settings.auto_cast_type):
            if keyword is not None:
                migration.dropped.append(f"{keyword.name} (dtype= sets the precision)")
        cores = tensor_parallel_size(settings.tensor_parallel)
        if cores == 1:
            if settings.tensor_parallel is not None:
                migration.dropped.append(f"{settings.tensor_parallel.name} (one NeuronCore)")
            if "device_map" not in passed:
                extra.append(new_keyword("device_map", '"neuron"'))
        else:
            config = self.ctx.require_from_import("transformers.distributed", "DistributedConfig")
            size = cores.code if isinstance(cores, Keyword) else str(cores)
            extra.append(new_keyword("distributed_config", f"{config}(tp_size={size})"))
            migration.dropped.append(f"{settings.tensor_parallel.name} (now DistributedConfig tp_size)")
            migration.review.append(torchrun_review(cores))
        for review in (self.shapes_review(settings.shapes), unresolved_review(original, reading)):
            migration.review += [review] if review else []
        checkpoint = settings.checkpoint_review(model_argument(original, reading))
        migration.review += [checkpoint] if checkpoint else []

        def rename(keyword: Keyword) -> str | None:
            if keyword.name not in passed:
                return None
            return RENAMED.get(keyword.name, keyword.name)

        migration.args, dropped, attention = stock_loading_args(leading + reading.rebuilt(updated, rename) + extra)
        migration.dropped += dropped
        migration.review += [attention] if attention else []
        cls = self.ctx.require_from_import("transformers", target)
        new = with_args(updated.with_changes(func=self.ctx.expr(f"{cls}.from_pretrained")), migration.args)
        migration.message = migration.note(legacy, target, ' on device "neuron"' + self.spread_note(reading))
        return new, migration

    def shapes_review(self, shapes: dict[str, str]) -> str:
        return shapes_review(shapes) if shapes else ""

    # The class name used elsewhere:
    def constructor(self, original: cst.Call, updated: cst.Call, qname: str):
        _, target = self.target_of(qname)
        self.ctx.manual(
            self.meta,
            original,
            f'the constructor took a compiled TorchScript module; load with `{target}.from_pretrained(checkpoint, '
            'device_map="neuron")`',
        )
        return updated

    def reference(self, original: cst.CSTNode, updated: cst.CSTNode, qname: str):
        legacy, target = self.target_of(qname)
        load = f'{target}.from_pretrained(checkpoint, device_map="neuron")'
        if not target.startswith("AutoModel"):
            return self.rename_class(original, updated, legacy, "transformers", target, load)
        # An Auto class is a factory: type checks name the common base class instead.
        context = self.context_of(original)
        if context in (BASE, OTHER):
            if context == BASE:
                self.ctx.manual(self.meta, original, f"{target} is a factory; subclass the concrete model class")
            else:
                self.ctx.manual(
                    self.meta, original, f"use `{target}` and load with `{load}`, without the Neuron export arguments"
                )
            return updated
        base = self.transformers_name("PreTrainedModel")
        message = f"{legacy} -> PreTrainedModel ({target} loads it)"
        if context == ISINSTANCE:
            review = f"any transformers model matches PreTrainedModel; {legacy} matched only this task"
            return Edit(base, message=message, review=review)
        return Edit(base, message=message, safe=True)


def _class_calls(targets: dict[str, str], **methods: str) -> dict[str, str]:
    """Call table for classes: ``Class(...)`` -> ``constructor``, ``Class.<method>(...)`` -> handler."""
    table = dict.fromkeys(targets, "constructor")
    for method, handler in methods.items():
        table.update(dict.fromkeys(with_methods(tuple(targets), method), handler))
    return table
