"""The optimum-neuron training rules (NM201-NM229) beyond their fixtures.

Migrated training scripts are executed against the installed transformers, TRL, PEFT and Accelerate
with a tiny Llama built in the test (nothing comes from the Hub), so a wrong class or argument name
fails here. The field tables are checked against the installed dataclasses, read both the way the
rewrite reads them (``ast``, no import) and through ``dataclasses.fields()``.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import subprocess
import sys
import textwrap
from types import SimpleNamespace

import pytest
from conftest import ROOT

from neuron_migrate.rules import hf_fields as hf

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
trl = pytest.importorskip("trl")
datasets = pytest.importorskip("datasets")

# optimum-neuron modules whose public names the training rules answer for
# Process-wide settings the migrated scripts (or the classes they build) make.
SETTINGS = (
    "HF_DEACTIVATE_ASYNC_LOAD",
    "TENSORBOARD_LOGGING_DIR",
    "ACCELERATE_DYNAMO_BACKEND",
    "ACCELERATE_MIXED_PRECISION",
)


def _migrate(migrate, source: str, *, complete: bool = True) -> str:
    result = migrate(textwrap.dedent(source), path="train.py")
    if complete:
        assert not re.search(r"^\s*(from|import)\s+optimum", result.code, re.MULTILINE), result.code
        assert "TODO(neuron-migrate" not in result.code, result.code
    return result.code


def _run(code: str, **names) -> dict:
    namespace = dict(names)
    exec(compile(code, "train.py", "exec"), namespace)  # noqa: S102 - running the migrated script is the test
    return namespace


@pytest.fixture
def settings(monkeypatch):
    """Undo what migrated code sets for the whole process."""
    # Saved and restored by hand: monkeypatch (pytest >= 9.2) restores a module attribute it did not
    # find in the module's __dict__ by deleting it, and deleting a torch config entry hides it for good.
    dynamic_shapes = torch._dynamo.config.automatic_dynamic_shapes
    # This machine has no accelerator: train on the CPU, without writing use_cpu into the migrated code.
    post_init = transformers.TrainingArguments.__post_init__

    def on_cpu(args):
        args.use_cpu = True
        post_init(args)

    monkeypatch.setattr(transformers.TrainingArguments, "__post_init__", on_cpu)
    for name in SETTINGS:
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    yield
    torch._dynamo.config.automatic_dynamic_shapes = dynamic_shapes
    from accelerate.state import AcceleratorState

    AcceleratorState._reset_state(True)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A two-layer Llama, a word-level tokenizer over its vocabulary, and small datasets."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    words = ["the", "a", "cat", "dog", "sat", "on", "mat", "hello", "world", "good", "bad", "answer", "question"]
    vocab = {"[PAD]": 0, "[UNK]": 1, "[EOS]": 2, **{w: i + 3 for i, w in enumerate(words)}}
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=backend, pad_token="[PAD]", unk_token="[UNK]", eos_token="[EOS]"
    )
    config = transformers.LlamaConfig(
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=128,
        pad_token_id=0,
        eos_token_id=2,
    )
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config)
    path = tmp_path_factory.mktemp("tiny-llama")
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    text = datasets.Dataset.from_dict({"text": ["the cat sat on the mat", "hello world", "a dog sat"]})
    pairs = datasets.Dataset.from_dict(
        {
            "prompt": ["question the cat", "question a dog"],
            "chosen": ["good answer", "good"],
            "rejected": ["bad", "bad answer"],
        }
    )
    return SimpleNamespace(model=model, tokenizer=tokenizer, path=str(path), text=text, pairs=pairs)


# ----- migrated scripts construct the stock objects ------------------------------------------------


def test_trainer_and_arguments_are_built_by_transformers(migrate, settings, tiny, tmp_path):
    code = _migrate(
        migrate,
        """
        from optimum.neuron import NeuronTrainer, NeuronTrainingArguments

        args = NeuronTrainingArguments(
            output_dir=OUT,
            overwrite_output_dir=True,
            per_device_train_batch_size=1,
            gradient_checkpointing=True,
            warmup_ratio=0.1,
            logging_dir="runs/tiny",
            max_steps=1,
            report_to="none",
            tensor_parallel_size=1,
            zero_1=False,
            skip_cache_push=True,
            async_save=True,
            use_autocast=True,
            enable_mfu_metrics=False,
        )
        trainer = NeuronTrainer(model=model, args=args, train_dataset=dataset, tokenizer=tokenizer)
        """,
    )
    names = _run(code, OUT=str(tmp_path), model=tiny.model, dataset=tiny.text, tokenizer=tiny.tokenizer)

    args, trainer = names["args"], names["trainer"]
    assert type(args) is transformers.TrainingArguments
    assert type(trainer) is transformers.Trainer
    assert args.warmup_steps == 0.1 and args.activation_checkpointing is True
    assert (args.torch_compile, args.torch_compile_backend) == (True, "neuron")
    assert trainer.processing_class is tiny.tokenizer
    import os

    assert os.environ["TENSORBOARD_LOGGING_DIR"] == "runs/tiny"
    assert os.environ["HF_DEACTIVATE_ASYNC_LOAD"] == "1"
    assert torch._dynamo.config.automatic_dynamic_shapes is False


def test_sft_trainer_and_config_are_built_by_trl(migrate, settings, tiny, tmp_path):
    code = _migrate(
        migrate,
        """
        from optimum.neuron import NeuronSFTConfig, NeuronSFTTrainer

        config = NeuronSFTConfig(
            output_dir=OUT,
            max_seq_length=16,
            pad_to_multiple_of=16,
            padding_free=True,
            packing=False,
            max_steps=1,
            report_to="none",
            zero_1=False,
        )
        trainer = NeuronSFTTrainer(tiny_model, args=config, train_dataset=dataset, tokenizer=tokenizer)
        """,
    )
    names = _run(code, OUT=str(tmp_path), tiny_model=tiny.model, dataset=tiny.text, tokenizer=tiny.tokenizer)

    config, trainer = names["config"], names["trainer"]
    assert type(config) is trl.SFTConfig and type(trainer) is trl.SFTTrainer
    assert (config.max_length, config.padding_free, config.pad_to_multiple_of) == (16, False, 16)
    assert config.torch_compile_backend == "neuron"


def test_sft_tensor_parallel_size_becomes_a_distributed_config(migrate, settings, tmp_path):
    code = _migrate(
        migrate,
        """
        from optimum.neuron import NeuronSFTConfig

        config = NeuronSFTConfig(output_dir=OUT, tensor_parallel_size=2, pad_to_multiple_of=64, report_to="none")
        """,
    )
    config = _run(code, OUT=str(tmp_path))["config"]

    from transformers.distributed import DistributedConfig

    distributed = config.model_init_kwargs["distributed_config"]
    assert isinstance(distributed, DistributedConfig) and distributed.tp_size == 2


def test_zero_1_becomes_fsdp_over_the_data_parallel_ranks_of_the_launch(migrate, settings, tmp_path):
    code = _migrate(
        migrate,
        """
        from optimum.neuron import NeuronSFTConfig

        config = NeuronSFTConfig(output_dir=OUT, tensor_parallel_size=2, zero_1=True, report_to="none")
        """,
    )
    assert _run(code, OUT=str(tmp_path))["config"].model_init_kwargs["distributed_config"].tp_size == 2
    # The sizes under torchrun --nproc_per_node 8 (a process group is not started here to see them).
    from transformers.distributed import DistributedConfig

    written = re.search(r"DistributedConfig\(.*\)(?=\})", code).group(0)
    launched = SimpleNamespace(environ={"WORLD_SIZE": "8"})
    distributed = eval(written, {"DistributedConfig": DistributedConfig, "os": launched})  # noqa: S307
    assert (distributed.tp_size, distributed.fsdp_size) == (2, 4)


def test_spread_dict_is_edited_into_valid_arguments(migrate, settings, tmp_path):
    code = _migrate(
        migrate,
        """
        from optimum.neuron import NeuronTrainingArguments


        def build(out):
            options = {"output_dir": out, "zero_1": True, "warmup_ratio": 0.2, "report_to": "none"}
            return NeuronTrainingArguments(**options)


        args = build(OUT)
        """,
        complete=False,
    )
    # the one thing left: ZeRO-1 is FSDP now, given where the model is built
    assert code.count("TODO(neuron-migrate") == 1 and "DistributedConfig(fsdp_size=" in code
    args = _run(code, OUT=str(tmp_path))["args"]
    assert args.warmup_steps == 0.2 and args.torch_compile_backend == "neuron"


def test_training_model_loads_with_transformers_on_the_device(migrate, neuron_emulator, settings, tiny):
    code = _migrate(
        migrate,
        """
        import torch
        from optimum.neuron.models.training import NeuronModelForCausalLM, TrainingNeuronConfig

        trn_config = TrainingNeuronConfig(tensor_parallel_size=1)
        model = NeuronModelForCausalLM.from_pretrained(
            PATH, trn_config, torch_dtype=torch.bfloat16, attn_implementation="flash_attention_2"
        )
        """,
    )
    model = _run(code, PATH=tiny.path)["model"]

    assert type(model) is transformers.LlamaForCausalLM
    assert model.device.type == "neuron" and model.dtype == torch.bfloat16
    assert model.config._attn_implementation == "sdpa"


def test_tensor_parallel_model_gets_a_distributed_config(migrate, settings, monkeypatch):
    calls = []
    monkeypatch.setattr(
        transformers.AutoModelForCausalLM,
        "from_pretrained",
        classmethod(lambda cls, *args, **kwargs: calls.append((args, kwargs))),
    )
    code = _migrate(
        migrate,
        """
        from optimum.neuron.models.training import NeuronModelForCausalLM, TrainingNeuronConfig

        model = NeuronModelForCausalLM.from_pretrained("some/model", TrainingNeuronConfig(tensor_parallel_size=8))
        """,
    )
    _run(code)

    from transformers.distributed import DistributedConfig

    ((args, kwargs),) = calls
    assert args == ("some/model",)
    assert isinstance(kwargs["distributed_config"], DistributedConfig) and kwargs["distributed_config"].tp_size == 8


def test_accelerate_peft_and_parser_are_the_stock_ones(migrate, settings, tiny, tmp_path):
    peft = pytest.importorskip("peft")
    code = _migrate(
        migrate,
        """
        from optimum.neuron import NeuronAccelerator, NeuronHfArgumentParser, NeuronPartialState, NeuronSFTConfig
        from optimum.neuron.accelerate import NeuronAcceleratorState
        from optimum.neuron.peft import NeuronPeftModel, get_peft_model
        from optimum.neuron.utils import is_main_worker, is_precompilation

        state = NeuronPartialState()
        accelerator = NeuronAccelerator(gradient_accumulation_steps=2, mixed_precision_config="NO", zero_1=False)
        peft_model = get_peft_model(model, lora)
        wrapped = isinstance(peft_model, NeuronPeftModel)
        parser = NeuronHfArgumentParser((NeuronSFTConfig,))
        (parsed,) = parser.parse_args_into_dataclasses(
            args=["--output_dir", OUT, "--torch_compile", "true", "--torch_compile_backend", "neuron", "--report_to", "none"]
        )
        main = is_main_worker()
        warming_up = is_precompilation()
        NeuronAcceleratorState._reset_state(True)
        """,
        complete=False,
    )
    lora = peft.LoraConfig(r=2, target_modules=["q_proj"], task_type="CAUSAL_LM")
    names = _run(code, OUT=str(tmp_path), model=transformers.LlamaForCausalLM(tiny.model.config), lora=lora)

    import accelerate

    assert type(names["accelerator"]) is accelerate.Accelerator
    assert names["accelerator"].gradient_accumulation_steps == 2
    assert type(names["state"]) is accelerate.PartialState
    assert names["wrapped"] is True
    assert type(names["parsed"]) is trl.SFTConfig and names["parsed"].torch_compile_backend == "neuron"
    assert names["main"] is True and names["warming_up"] is False


def test_orpo_trainer_and_config_are_built_by_trl(migrate, settings, tiny, tmp_path):
    code = _migrate(
        migrate,
        """
        from optimum.neuron import NeuronORPOConfig, NeuronORPOTrainer

        config = NeuronORPOConfig(output_dir=OUT, beta=0.1, max_length=32, report_to="none", zero_1=False)
        trainer = NeuronORPOTrainer(model=model, args=config, train_dataset=pairs, tokenizer=tokenizer)
        """,
    )
    names = _run(code, OUT=str(tmp_path), model=tiny.model, pairs=tiny.pairs, tokenizer=tiny.tokenizer)

    from trl.experimental.orpo import ORPOConfig, ORPOTrainer

    assert type(names["config"]) is ORPOConfig and type(names["trainer"]) is ORPOTrainer


# ----- the field tables against the installed releases ----------------------------------------------


def test_every_neuron_training_argument_is_accounted_for():
    accounted = (
        hf.SHARED_FIELDS
        | hf.VERSIONED_FIELDS
        | set(hf.DROPPED_FIELDS)
        | set(hf.REVIEWED_FIELDS)
        | set(hf.PARALLEL_FIELDS)
    )
    assert set(hf.NEURON_ARGUMENT_ORDER) <= accounted


def test_neuron_argument_order_is_the_released_dataclass():
    reference = pytest.importorskip("reference.optimum_neuron")
    try:
        released = reference.dataclass_fields("trainers.training_args", "NeuronTrainingArguments")
    except FileNotFoundError as exc:
        pytest.skip(str(exc))
    assert released == hf.NEURON_ARGUMENT_ORDER
    config_fields = reference.dataclass_fields("models.training.config", "TrainingNeuronConfig")
    assert config_fields == hf.TRN_CONFIG_ORDER


@pytest.mark.parametrize(
    ("owner", "cls"),
    [
        ("TrainingArguments", "transformers.TrainingArguments"),
        ("Seq2SeqTrainingArguments", "transformers.Seq2SeqTrainingArguments"),
        ("SFTConfig", "trl.SFTConfig"),
        ("ORPOConfig", "trl.experimental.orpo.ORPOConfig"),
    ],
)
def test_fields_read_with_ast_are_the_dataclass_fields(owner, cls):
    module, _, name = cls.rpartition(".")
    imported = getattr(pytest.importorskip(module), name)
    assert hf.installed_fields(owner) == {f.name for f in dataclasses.fields(imported)}


def test_trainer_parameters_read_with_ast_are_its_signature():
    parameters = set(inspect.signature(transformers.Trainer.__init__).parameters) - {"self"}
    assert hf.installed_fields("Trainer") == parameters


def test_the_version_table_agrees_with_the_installed_releases():
    for row in hf.VERSIONED:
        if row.owner in hf.CLASS_SOURCES:
            assert hf.table_says(row.owner, row.name) == (row.name in hf.installed_fields(row.owner)), row
    assert hf.table_says("trl", "experimental.orpo") == (hf.installed_fields("ORPOConfig") is not None)


def test_shared_fields_exist_and_neuron_only_fields_do_not():
    fields = hf.installed_fields("TrainingArguments")
    assert hf.SHARED_FIELDS <= fields
    assert not (hf.NEURON_ONLY_FIELDS & fields)
    assert {"tp_size", "pp_size", "fsdp_size"} <= {
        f.name for f in dataclasses.fields(pytest.importorskip("transformers.distributed").DistributedConfig)
    }


# ----- which release the rewrite targets -------------------------------------------------------------


@pytest.fixture
def pinned(monkeypatch):
    """Pretend another transformers release (or none) is installed."""

    def pin(version, fields=...):
        real_version, real_fields = hf.installed_version, hf.installed_fields
        monkeypatch.setattr(hf, "installed_version", lambda p: version if p == "transformers" else real_version(p))
        if fields is not ...:
            monkeypatch.setattr(
                hf, "installed_fields", lambda o: fields if o == "TrainingArguments" else real_fields(o)
            )

    return pin


LEGACY_WARMUP = "from optimum.neuron import NeuronTrainingArguments\n\nargs = NeuronTrainingArguments(output_dir='o', warmup_ratio=0.1)\n"


def test_installed_fields_win_over_the_table_with_an_info_finding(migrate, pinned):
    pinned((5, 1))  # the table says warmup_ratio still exists there; the installed source has none

    result = migrate(LEGACY_WARMUP)

    assert "warmup_steps=0.1" in result.code
    infos = [f for f in result.findings if f.rule == "NM202" and f.severity == "info" and not f.applied]
    assert len(infos) == 1 and "disagrees" in infos[0].message and "warmup_ratio" in infos[0].message


def test_the_table_decides_when_the_fields_cannot_be_read(migrate, pinned):
    pinned((5, 1), fields=None)
    assert "warmup_ratio=0.1" in migrate(LEGACY_WARMUP).code
    pinned(None, fields=None)  # nothing installed: the newest release
    assert "warmup_steps=0.1" in migrate(LEGACY_WARMUP).code


def test_rewriting_imports_neither_torch_nor_transformers():
    script = textwrap.dedent(
        """
        import sys
        from neuron_migrate.migrate.engine import RulePlan, migrate_python

        source = open(sys.argv[1]).read()
        migrate_python(source, "train.py", RulePlan.build())
        loaded = sorted(m for m in ("torch", "transformers", "trl", "peft", "accelerate") if m in sys.modules)
        print(",".join(loaded))
        """
    )
    example = ROOT / "fixtures" / "rules" / "NM204" / "sft_config.before.py"
    proc = subprocess.run(
        [sys.executable, "-c", script, str(example)], check=False, cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ""


def test_migrated_test_decorators_skip_without_a_neuron_device_and_keep_their_mark(migrate):
    import unittest

    code = migrate(
        textwrap.dedent(
            """
            from optimum.neuron.utils.testing_utils import is_trainium_test, requires_neuronx

            @is_trainium_test
            def test_train():
                return "ran"

            @requires_neuronx
            class TestExport(unittest.TestCase):
                def test_export(self):
                    pass
            """
        ),
        path="test_train.py",
    ).code
    assert "optimum.neuron" not in code and "TODO(neuron-migrate" not in code, code
    scope: dict = {"unittest": unittest}
    exec(compile(code, "test_train.py", "exec"), scope)
    test_train = scope["test_train"]
    assert [mark.name for mark in test_train.pytestmark] == ["is_trainium_test"]
    has_device = hasattr(torch, "neuron") and torch.neuron.is_available()
    if has_device:
        assert test_train() == "ran"
    else:
        with pytest.raises(unittest.SkipTest, match="Neuron device"):
            test_train()
        assert scope["TestExport"].__unittest_skip__


def test_training_helpers_have_the_same_signature_in_transformers():
    from transformers.trainer_pt_utils import get_model_param_count

    assert list(inspect.signature(get_model_param_count).parameters) == ["model", "trainable_only"]
    model = torch.nn.Linear(3, 2)
    model.bias.requires_grad_(False)
    assert get_model_param_count(model) == 8 and get_model_param_count(model, trainable_only=True) == 6
