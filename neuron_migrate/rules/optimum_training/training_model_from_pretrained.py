"""NM211: optimum-neuron training model .from_pretrained -> transformers"""

from __future__ import annotations

from typing import ClassVar

import libcst as cst

from neuron_migrate.rules.base import SAFE, Edit, Example, register, Rule, RuleMeta, StatementReplacement
from neuron_migrate.rules.calls import new_keyword
from neuron_migrate.rules.optimum_inference.export_settings import stock_loading_args
from neuron_migrate.rules.optimum_training.arguments import ZERO_1_AS_FSDP, ZERO_1_WITH_PIPELINE, fsdp_size_code
from neuron_migrate.rules.optimum_training.classes import FROM_PRETRAINED, TRN_CONFIG
from neuron_migrate.rules.optimum_training.common import DOCS_DISTRIBUTED_CONFIG, DOCS_FINE_TUNING, TRIGGERS
from neuron_migrate.rules.optimum_training.script_facts import _trn_config_arg
from neuron_migrate.rules.optimum_training.script_scan import script_facts
from neuron_migrate.rules.xla_step.common import with_args


@register
class TrainingModelFromPretrained(Rule):
    """optimum.neuron.models.training classes -> the transformers classes; ``trn_config``'s parallel sizes
    become ``distributed_config=DistributedConfig(...)``."""

    meta = RuleMeta(
        "NM211",
        "optimum-neuron training model .from_pretrained -> transformers",
        safety=SAFE,
        risks=frozenset({"collectives", "performance"}),
        summary=(
            "NeuronModelForCausalLM becomes AutoModelForCausalLM (Llama/Qwen3/Granite their transformers "
            "classes); trn_config is dropped, its tensor/pipeline sizes (when readable) become "
            'distributed_config=DistributedConfig(...), otherwise device_map="neuron" is added. '
            'attn_implementation="flash_attention_2" (optimum-neuron\'s NKI kernel) becomes "sdpa" with review.'
        ),
        docs=(DOCS_DISTRIBUTED_CONFIG, DOCS_FINE_TUNING),
        triggers=TRIGGERS,
        example=Example(
            before=(
                "from optimum.neuron.models.training import NeuronModelForCausalLM, TrainingNeuronConfig\n\n"
                "trn_config = TrainingNeuronConfig(tensor_parallel_size=8)\n"
                "model = NeuronModelForCausalLM.from_pretrained(model_id, trn_config, dtype=torch.bfloat16)\n"
            ),
            after=(
                "from transformers import AutoModelForCausalLM\n"
                "from transformers.distributed import DistributedConfig\n\n"
                "model = AutoModelForCausalLM.from_pretrained(model_id, dtype=torch.bfloat16, "
                "distributed_config=DistributedConfig(tp_size=8))\n"
            ),
        ),
    )
    follow_up_todos = True
    calls: ClassVar[dict[str, str]] = {
        **dict.fromkeys(FROM_PRETRAINED, "from_pretrained"),
        **dict.fromkeys(TRN_CONFIG, "fold_inline"),
    }

    def fold_inline(self, original: cst.Call, updated: cst.Call, qname: str):
        """``from_pretrained(model_id, TrainingNeuronConfig(...))``: the config call goes with its argument."""
        if id(original) not in script_facts(self.ctx).skip_nodes:
            return updated
        return Edit(updated.with_changes(), message="TrainingNeuronConfig folded into distributed_config")

    def from_pretrained(self, original: cst.Call, updated: cst.Call, qname: str):
        stock = FROM_PRETRAINED[qname]
        facts = script_facts(self.ctx)
        trn = facts.trn.get(id(original))
        legacy_arg = _trn_config_arg(original)
        drop = original.args.index(legacy_arg) if legacy_arg is not None else -1
        args = [arg for position, arg in enumerate(updated.args) if position != drop]
        keywords = {arg.keyword.value: arg for arg in args if arg.keyword}
        args, dropped, attention = stock_loading_args(args)
        reviews = [attention] if attention else []
        if trn is None:
            self.ctx.manual(
                self.meta,
                original,
                "trn_config's parallel sizes are not known here: add distributed_config=DistributedConfig(tp_size=N) "
                '(transformers.distributed) for tensor parallelism, else device_map="neuron"',
            )
        elif trn.sizes or trn.zero_1:
            sizes = dict(trn.sizes)
            if trn.zero_1 and "pp_size" in sizes:
                reviews.append(f"zero_1 dropped: {ZERO_1_WITH_PIPELINE}")
            elif trn.zero_1:
                sizes["fsdp_size"] = fsdp_size_code(self.ctx, sizes.get("tp_size"))
                reviews.append(ZERO_1_AS_FSDP)
            config = self.ctx.require_from_import("transformers.distributed", "DistributedConfig")
            arguments = ", ".join(f"{k}={v}" for k, v in sizes.items())
            args.append(new_keyword("distributed_config", f"{config}({arguments})"))
        elif "device_map" not in keywords:
            args.append(new_keyword("device_map", '"neuron"'))
        if trn is not None and trn.dropped:
            reviews.append(
                f"TrainingNeuronConfig {', '.join(trn.dropped)} dropped: no DistributedConfig counterpart"
                + (
                    " (set gradient_checkpointing in TrainingArguments)"
                    if "gradient_checkpointing" in trn.dropped
                    else ""
                )
            )
        name = self.ctx.require_from_import("transformers", stock)
        note = f"{qname.rsplit('.', 2)[1]}.from_pretrained -> transformers.{stock}.from_pretrained"
        note += f"; dropped {', '.join(dropped)}" if dropped else ""
        func = updated.func.with_changes(value=self.ctx.expr(name))
        return Edit(with_args(updated.with_changes(func=func), args), message=note, review="; ".join(reviews))

    def leave_SimpleStatementLine(self, original: cst.SimpleStatementLine, updated):
        if id(original) not in script_facts(self.ctx).deletable_lines:
            return updated
        removed = "trn_config assignment removed: only the from_pretrained call read it"
        return Edit(StatementReplacement([]), message=removed)
