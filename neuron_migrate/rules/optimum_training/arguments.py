"""The TrainingArguments field map (NM202, NM204, and NM205's ORPOConfig): what each keyword of a
legacy arguments class becomes in its stock twin, per target release (the tables of hf_fields, checked
against the installed release), whether written in the call or in a dict literal spread into it, and
what the parallel sizes and ZeRO-1 become (DistributedConfig; NM211 reads the same ZeRO-1 wording).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

import libcst as cst

from neuron_migrate.migrate.context import code_of
from neuron_migrate.rules import hf_fields as hf
from neuron_migrate.rules.calls import UNKNOWN, literal
from neuron_migrate.rules.optimum_training.classes import Target
from neuron_migrate.rules.optimum_training.keyword_edits import (
    ArgumentEdits,
    edited_args,
    edited_dict,
    positional_to_keywords,
    rebuilt,
)
from neuron_migrate.rules.optimum_training.script_facts import Spread, literal_entries
from neuron_migrate.rules.optimum_training.script_scan import script_facts
from neuron_migrate.rules.optimum_training.stock_class import StockClassRule


PARSER_FLAGS_GONE = (
    "command-line flags of Neuron-only fields (--tensor_parallel_size, --zero_1, ...) are gone; "
    "pass --torch_compile true --torch_compile_backend neuron"
)


class ArgumentsRule(StockClassRule):
    """NeuronTrainingArguments-like dataclasses: the field map of hf_fields, per target release."""

    # Its TODOs are about fields the edit dropped (a parallel size to pass where the model is built): the
    # next run sees a stock class and cannot write them again, so it keeps them.
    follow_up_todos = True

    def apply_row(self, original, updated, qname: str):
        if isinstance(original, cst.Call):
            return self.rename_call(original, updated, qname)
        return self.rename_reference(original, updated, qname)

    def rename_call(self, original: cst.Call, updated: cst.Call, qname: str):
        target = self.twins[qname]
        legacy = qname.rsplit(".", 1)[1]
        call = positional_to_keywords(updated, target)
        if call is None:
            self.ctx.manual(self.meta, original, "pass every argument after output_dir by keyword, then run again")
            return updated
        facts = script_facts(self.ctx)
        entries = {arg.keyword.value: arg.value for arg in call.args if arg.keyword}
        context = {}  # every keyword the class gets, spread ones included, as far as they can be read
        unread, migrated = [], []
        for arg in original.args:
            if arg.star == "**":
                spread = facts.spreads.get(id(arg.value), Spread(entries=None))
                if spread.arguments:
                    migrated.append(f"`**{code_of(arg.value)}` holds {spread.arguments}'s TrainingArguments fields")
                    continue
                if spread.entries is None:
                    unread.append(code_of(arg.value))
                    continue
                context.update(spread.entries)
                refused = self.refused_keys(original, spread.entries, target)
                if refused and not spread.editable:
                    self.ctx.manual(
                        self.meta,
                        original,
                        f"remove {', '.join(refused)} from `{code_of(arg.value)}`: {target.name} does not take them",
                    )
        edits = self.plan(
            original, entries, target, context={**context, **entries}, additions=not unread, compile_flags=not migrated
        )
        if migrated:
            # the dict already has torch_compile and torch_compile_backend: passing them again is a TypeError
            edits.notes += [f"{text}, torch_compile with them" for text in migrated]
        edits.consumed = id(original) in facts.consumed_args
        if unread:
            settings = 'torch_compile=True, torch_compile_backend="neuron"'
            if target.sft and "padding_free" not in entries:
                settings += ", padding_free=False"  # nothing was added: the spread may set it
            edits.reviews.append(
                f"`**{unread[0]}` is not read here: drop its Neuron-only keys (e.g. tensor_parallel_size, zero_1) "
                f"and set {settings}"
            )
        self.parallel(original, entries, target, edits)
        func = self.ctx.expr(self.stock_name(target))
        renamed = rebuilt(call.with_changes(func=func), edited_args(call.args, edits))
        return self.finish(legacy, target, edits, original, renamed)

    def refused_keys(self, node, keys: Iterable[str], target: Target) -> list[str]:
        """The keys of a spread dict that the stock class would reject (or that mean something else)."""
        refused = []
        for key in sorted(keys):
            if key in hf.NEURON_ONLY_FIELDS or (target.sft and key in hf.SFT_RENAMED):
                refused.append(key)
            elif key in hf.VERSIONED_FIELDS:
                if not self.accepts(node, target.owner, key, "TrainingArguments"):
                    refused.append(key)
            elif not self.accepts(node, target.owner, key):
                refused.append(key)
        return refused

    def rename_reference(self, original, updated, qname: str):
        edit = super().rename_reference(original, updated, qname)
        facts = script_facts(self.ctx)
        if edit.review or id(original) not in facts.parser_elements:
            return edit
        if not facts.fields.added:
            return replace(edit, review=PARSER_FLAGS_GONE)
        kept = ", ".join(f"--{name}" for name in facts.fields.added)
        return replace(
            edit,
            review=(
                f"command-line flags of the other Neuron-only fields are gone, {facts.fields.own_class} takes {kept} "
                "over; pass --torch_compile true --torch_compile_backend neuron"
            ),
        )

    def subclass_review(self, target: Target) -> str:
        return f"check this subclass's fields and defaults against {target.module}.{target.name}"

    # One dict literal spread into the call:
    def leave_Dict(self, original: cst.Dict, updated: cst.Dict):
        return self.spread_dict(original, updated)

    def leave_Call(self, original: cst.Call, updated: cst.Call):
        return self.spread_dict(original, updated)

    def spread_dict(self, original, updated):
        """A ``{...}`` / ``dict(...)`` literal whose only use is ``**`` into a legacy arguments call."""
        target = script_facts(self.ctx).dict_edits.get(id(original))
        if target is None or target not in self.twins.values():
            return updated
        if isinstance(updated, cst.Dict):
            entries = {element.key.evaluated_value: element.value for element in updated.elements}
        else:
            entries = {arg.keyword.value: arg.value for arg in updated.args}
        edits = self.plan(original, entries, target, context=None, additions=False)
        self.parallel(original, entries, target, edits)
        if isinstance(updated, cst.Dict):
            result = edited_dict(updated, edits)
        else:
            result = rebuilt(updated, edited_args(updated.args, edits))
        result = result if code_of(result) != code_of(updated) else updated
        return self.report_edits(f"keyword arguments for {target.name} edited", edits, original, result)

    # The field map:
    def plan(
        self, node, entries: dict[str, cst.BaseExpression], target: Target, *, context, additions, compile_flags=True
    ) -> ArgumentEdits:
        """The edits for ``entries``; with ``context`` (every keyword the call gets) also the reviews that
        look at several fields and the fields to add. A spread dict is planned without: its call does that."""
        edits = ArgumentEdits()
        present = set(context or entries)
        for name, value in entries.items():
            if name in hf.PARALLEL_FIELDS:
                edits.drop.add(name)
            elif name in hf.DROPPED_FIELDS:
                edits.drop.add(name)
                edits.notes.append(f"`{name}` dropped: {hf.DROPPED_FIELDS[name]}")
            elif name in hf.REVIEWED_FIELDS:
                edits.drop.add(name)
                self.reviewed_field(name, value, entries, edits)
            elif name in hf.VERSIONED_FIELDS:
                if not self.accepts(node, target.owner, name, "TrainingArguments"):
                    self.removed_field(name, value, entries, edits)
            elif target.sft and name in hf.SFT_RENAMED:
                new = hf.SFT_RENAMED[name]
                edits.rename[name] = new
                if new in entries:
                    edits.drop.add(new)
                    edits.notes.append(
                        f"`{name}` renamed `{new}`, replacing {new}={code_of(entries[new]).strip()}: "
                        f"NeuronSFTConfig let {name} win"
                    )
                else:
                    edits.notes.append(f"`{name}` renamed `{new}`")
            elif target.sft and name == "padding_free":
                if literal(value) is not False:
                    edits.values[name] = "False"
                    edits.notes.append(
                        f"padding_free={code_of(value).strip()} set to False: NeuronSFTConfig always forced it off "
                        "(padding-free batches change shape)"
                    )
            elif name in hf.RENAMED_FIELDS and self.accepts(node, target.owner, hf.RENAMED_FIELDS[name]):
                new = hf.RENAMED_FIELDS[name]
                if new in present:
                    edits.drop.add(name)
                else:
                    edits.rename[name] = new
                edits.notes.append(f"`{name}` is now `{new}`")
            elif name == "ddp_backend" and literal(value) in ("xla", "neuron"):
                edits.drop.add(name)
                edits.notes.append("ddp_backend dropped: accelerate picks the neuron process-group backend")
            elif not self.accepts(node, target.owner, name):
                package = hf.OWNER_PACKAGE[target.owner]
                edits.manuals.append(
                    f"`{name}` is not a {target.name} field in {hf.version_text(package)}: remove or rename it"
                )
        if context is None:
            return edits
        self.mixed_precision(context, edits)
        if target.sft:
            self.static_shapes(context, edits)
        if additions:
            if compile_flags and not any(name.startswith("torch_compile") for name in present):
                edits.add += [("torch_compile", "True"), ("torch_compile_backend", '"neuron"')]
            if target.sft and "padding_free" not in present:
                edits.add.append(("padding_free", "False"))
                edits.notes.append("padding_free=False added: NeuronSFTConfig always forced it off")
        return edits

    def reviewed_field(self, name, value, entries, edits: ArgumentEdits) -> None:
        harmless = hf.REVIEWED_HARMLESS.get(name, UNKNOWN)
        if harmless is not UNKNOWN and literal(value) is harmless:
            edits.notes.append(f"`{name}` dropped: it was off")
        elif name == "zero_1":
            pass  # parallel() turns it into FSDP, or says why not
        elif name == "neuron_cc_optlevel":
            edits.reviews.append(hf.REVIEWED_FIELDS[name])
        elif not self.full_bf16(entries):
            # master weights and stochastic rounding only acted in full-bf16 training
            edits.notes.append(f"`{name}` dropped: {hf.REVIEWED_FIELDS[name]}")

    @staticmethod
    def full_bf16(entries) -> bool:
        bf16 = entries.get("bf16")
        return bf16 is not None and literal(bf16) is not False and literal(entries.get("use_autocast")) is not True

    def mixed_precision(self, entries, edits: ArgumentEdits) -> None:
        if self.full_bf16(entries):
            edits.reviews.append(
                "bf16=True was pure bf16 with fp32 master weights here; Trainer's bf16=True is autocast "
                "over fp32 weights"
            )

    def removed_field(self, name: str, value, entries, edits: ArgumentEdits) -> None:
        version = hf.version_text("transformers")
        edits.drop.add(name)
        if name == "overwrite_output_dir":
            edits.notes.append(f"overwrite_output_dir dropped: {version} always writes into output_dir")
        elif name == "warmup_ratio":
            self.warmup_ratio(value, entries, edits)
        elif name == "logging_dir":
            directory = literal(value)
            if directory is None:
                return
            if isinstance(directory, str):
                os_name = self.ctx.require_import("os")
                self.ctx.add_setup(
                    self.meta,
                    value,
                    f'{os_name}.environ.setdefault("TENSORBOARD_LOGGING_DIR", {code_of(value)})',
                    "TrainingArguments has no logging_dir since transformers 5.2; TensorBoard reads this instead",
                    unless="TENSORBOARD_LOGGING_DIR",
                )
                edits.notes.append("logging_dir moved to TENSORBOARD_LOGGING_DIR")
            else:
                edits.reviews.append(
                    f'logging_dir is gone in {version}: set os.environ["TENSORBOARD_LOGGING_DIR"] = '
                    f"{code_of(value)} before this line"
                )

    def warmup_ratio(self, value, entries, edits: ArgumentEdits) -> None:
        ratio = literal(value)
        steps = entries.get("warmup_steps")
        if ratio == 0 and ratio is not UNKNOWN:
            edits.notes.append("warmup_ratio=0 dropped")
            return
        if steps is None:
            edits.drop.discard("warmup_ratio")
            edits.rename["warmup_ratio"] = "warmup_steps"
            edits.notes.append("warmup_ratio passed as warmup_steps, which takes a ratio below 1")
            if isinstance(ratio, (int, float)) and ratio >= 1:
                edits.reviews.append("warmup_steps of 1 or more counts steps, not a ratio: use a value below 1")
            return
        count = literal(steps)
        if count == 0 and count is not UNKNOWN:
            edits.drop.discard("warmup_ratio")
            edits.drop.add("warmup_steps")
            edits.rename["warmup_ratio"] = "warmup_steps"
            edits.notes.append("warmup_ratio passed as warmup_steps (warmup_steps was 0)")
        elif isinstance(count, (int, float)):
            edits.notes.append("warmup_ratio dropped: warmup_steps overrode it")
        else:
            edits.reviews.append(
                f"warmup_ratio dropped: when warmup_steps is 0, pass the ratio as warmup_steps={code_of(value)}"
            )

    def static_shapes(self, entries, edits: ArgumentEdits) -> None:
        packing = entries.get("packing")
        if packing is not None and literal(packing) is not False:
            strategy = entries.get("packing_strategy")
            if strategy is None or literal(strategy) in ("bfd", "bfd_split", UNKNOWN):
                edits.reviews.append(
                    'bfd packing turns padding-free on and shapes vary: use packing_strategy="wrapped" or packing=False'
                )
        if "pad_to_multiple_of" not in entries:
            edits.notes.append(hf.SFT_PADDING_DEFAULT)
        length = entries.get("max_seq_length", entries.get("max_length"))
        value = literal(length)
        if isinstance(value, int) and not isinstance(value, bool) and value > hf.RECIPE_MAX_LENGTH:
            edits.reviews.append(
                f"max_length={value} is past {hf.RECIPE_MAX_LENGTH}, the longest sequence of the published Trainium "
                "fine-tuning recipe: check device memory and compile time before a long run"
            )

    def parallel(self, node, entries, target: Target, edits: ArgumentEdits) -> None:
        """tensor/pipeline parallel sizes, and ZeRO-1 as FSDP over the data-parallel ranks: into
        SFTConfig.model_init_kwargs, or a TODO with the code."""
        sizes = {}
        for name, size in hf.PARALLEL_FIELDS.items():
            value = entries.get(name)
            if value is None or literal(value) == 1:
                continue
            sizes[size] = code_of(value).strip()
        zero_1 = entries.get("zero_1")
        sharded = zero_1 is not None and literal(zero_1) is True
        if zero_1 is not None and literal(zero_1) is UNKNOWN:
            edits.reviews.append(f"zero_1={code_of(zero_1).strip()} dropped: {zero_1_step(sizes.get('tp_size'))}")
        if sharded and "pp_size" in sizes:
            edits.reviews.append(f"zero_1 dropped: {ZERO_1_WITH_PIPELINE}")
            sharded = False
        if not sizes and not sharded:
            return
        if edits.consumed:
            edits.notes.append("parallel sizes moved to the from_pretrained call that builds the model")
            return
        literal_sizes = all(literal(entries[n]) is not UNKNOWN for n in hf.PARALLEL_FIELDS if n in entries)
        init = entries.get("model_init_kwargs")
        if target.sft and literal_sizes and (init is None or literal_entries(init) is not None):
            if sharded:
                sizes["fsdp_size"] = fsdp_size_code(self.ctx, sizes.get("tp_size"))
                edits.reviews.append(ZERO_1_AS_FSDP)
            config = self.ctx.require_from_import("transformers.distributed", "DistributedConfig")
            code = f"{config}({', '.join(f'{k}={v}' for k, v in sizes.items())})"
            if init is None:
                edits.add.append(("model_init_kwargs", f'{{"distributed_config": {code}}}'))
            else:
                edits.init_kwargs["distributed_config"] = code
            edits.reviews.append(
                "model_init_kwargs now holds the parallel sizes: it applies only if SFTTrainer gets a model id"
            )
            return
        if sharded:
            world = 'int(os.environ["WORLD_SIZE"])'
            sizes["fsdp_size"] = f'{world} // {sizes["tp_size"]}' if "tp_size" in sizes else world
        arguments = ", ".join(f"{k}={v}" for k, v in sizes.items())
        edits.manuals.append(
            f"pass distributed_config=DistributedConfig({arguments}) (transformers.distributed) to the model's "
            "from_pretrained and launch with torchrun"
        )


# ZeRO-1 sharded the optimizer state over the data-parallel ranks (world size // tensor-parallel size); FSDP
# over the same ranks shards it too, with the parameters and gradients.
ZERO_1_AS_FSDP = (
    "zero_1 became FSDP over the data-parallel ranks (fsdp_size = WORLD_SIZE // tp_size): it shards the parameters "
    "and gradients too, not only the optimizer state"
)
ZERO_1_WITH_PIPELINE = "DistributedConfig cannot combine FSDP (fsdp_size) with pipeline parallelism yet"


def zero_1_step(tp_size: str | None) -> str:
    """What replaces ZeRO-1 when it is on."""
    world = 'int(os.environ["WORLD_SIZE"])'
    config = f"tp_size={tp_size}, fsdp_size={world} // {tp_size}" if tp_size else f"fsdp_size={world}"
    return f"when it is on, shard with FSDP over the data-parallel ranks: DistributedConfig({config})"


def fsdp_size_code(ctx, tp_size: str | None) -> str:
    """The data-parallel size under torchrun: the world size over the tensor-parallel size (at least 1, so
    the arguments still build in one process, where loading a sharded model fails as it did)."""
    os_name = ctx.require_import("os")
    world = f'int({os_name}.environ.get("WORLD_SIZE", "1"))'
    return f"max(1, {world} // {tp_size})" if tp_size else world


# NeuronAccelerator keyword arguments with no Accelerator counterpart.
