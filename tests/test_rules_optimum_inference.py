"""The optimum-neuron inference and diffusion rules (NM301-NM321) beyond their fixtures.

The rule tables must cover every public inference name of the released optimum-neuron, and name
classes and arguments that exist in the installed transformers / diffusers. Migrated scripts are
executed against those libraries on the emulated ``neuron`` device, with tiny models built in the
test and saved to a temporary folder (nothing comes from the Hub), so a wrong class, argument or
value fails here.
"""

from __future__ import annotations

import inspect
import textwrap

import pytest
from tiny import save_tiny_llama, word_tokenizer

from neuron_migrate.rules.base import all_rules
from neuron_migrate.rules.optimum_diffusers import PIPELINES, TENSOR_PARALLEL_DENOISER
from neuron_migrate.rules.optimum_inference import TASK_MODELS
from neuron_migrate.rules.optimum_inference.precompiled_hub_model import next_step, source_model
from neuron_migrate.rules.tables.optimum_diffusers import MIXIN_TARGETS, MIXINS

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

# optimum-neuron modules whose public names the inference and diffusion rules answer for


def _handled_names() -> set[str]:
    names: set[str] = set()
    for rule in all_rules():
        if rule.meta.id.startswith("NM3"):
            names.update(rule.calls, rule.references)
    return names


def _migrate(migrate, source: str) -> str:
    result = migrate(textwrap.dedent(source), path="script.py")
    assert "optimum" not in result.code, result.code
    assert "TODO(neuron-migrate" not in result.code, result.code
    return result.code


# ----- the tables -----------------------------------------------------------------------------


def test_the_pipeline_mixins_of_optimum_neuron_have_a_rule():
    reference = pytest.importorskip("reference.optimum_neuron")
    try:
        root = reference.source_root()
    except FileNotFoundError as exc:
        pytest.skip(str(exc))
    exported = reference._import_structure(root / "pipelines" / "__init__.py", "pipelines")
    mixins = {n.name for n in exported if n.name.endswith("Mixin")}
    assert mixins == set(MIXINS)
    handled = _handled_names()
    for name in mixins:
        assert f"optimum.neuron.pipelines.{name}" in handled
        assert any(q.endswith(f".{name}") and q in handled for q in MIXIN_TARGETS)


def test_transformers_replacements_exist():
    for target, _ in TASK_MODELS.values():
        assert hasattr(transformers, target), target
    for name in ("AutoModelForCausalLM", "PreTrainedModel", "pipeline"):
        assert hasattr(transformers, name)
    from transformers.distributed import DistributedConfig

    assert DistributedConfig(tp_size=2).tp_size == 2
    # from_pretrained reads the keyword the rules emit for tensor parallelism
    source = inspect.getsource(transformers.PreTrainedModel.from_pretrained)
    assert 'kwargs.pop("distributed_config"' in source
    assert {"device", "dtype", "model_kwargs"} <= set(inspect.signature(transformers.pipeline).parameters)


def test_diffusers_replacements_exist():
    diffusers = pytest.importorskip("diffusers")
    for target in PIPELINES.values():
        assert hasattr(diffusers, target), target
    for target in MIXINS.values():
        assert hasattr(diffusers, target) or hasattr(diffusers.loaders, target), target
    config = diffusers.ParallelConfig(tensor_parallel_config=diffusers.TensorParallelConfig(tp_degree=2))
    assert config.tensor_parallel_config.tp_degree == 2
    # a model loads sharded: its from_pretrained reads parallel_config; a pipeline's does not
    assert 'kwargs.pop(\n            "parallel_config"' in inspect.getsource(diffusers.ModelMixin.from_pretrained)
    assert "parallel_config" not in inspect.getsource(diffusers.DiffusionPipeline.from_pretrained)
    for name in ("load_lora_weights", "set_adapters", "load_ip_adapter", "set_ip_adapter_scale"):
        assert hasattr(diffusers.StableDiffusionXLPipeline, name), name


def _denoiser(pipeline_class, component):
    """The model class a pipeline's constructor expects for ``component``."""
    return inspect.signature(pipeline_class.__init__, eval_str=True).parameters[component].annotation


def test_only_denoisers_with_a_tensor_parallel_plan_are_sharded():
    diffusers = pytest.importorskip("diffusers")
    for pipeline, (component, model_class) in TENSOR_PARALLEL_DENOISER.items():
        model = _denoiser(getattr(diffusers, pipeline), component)
        assert model is getattr(diffusers, model_class), f"{pipeline}.{component} is a {model.__name__}"
        assert getattr(model, "_tp_plan", None), f"{pipeline}.{component} has no tensor-parallel plan"
    for pipeline, component in (("StableDiffusionPipeline", "unet"), ("PixArtSigmaPipeline", "transformer")):
        assert pipeline not in TENSOR_PARALLEL_DENOISER
        assert not getattr(_denoiser(getattr(diffusers, pipeline), component), "_tp_plan", None)


def test_sentence_transformer_takes_the_emitted_arguments():
    sentence_transformers = pytest.importorskip("sentence_transformers")
    params = inspect.signature(sentence_transformers.SentenceTransformer.__init__).parameters
    assert {"device", "model_kwargs", "cache_folder", "revision", "token", "trust_remote_code"} <= set(params)


@pytest.mark.parametrize(
    ("repository", "source"),
    [
        ("aws-neuron/Llama-2-7b-chat-hf-seqlen-2048-bs-2", "meta-llama/Llama-2-7b-chat-hf"),
        ("aws-neuron/Llama-2-13b-chat-hf-neuron-latency", "meta-llama/Llama-2-13b-chat-hf"),
        ("aws-neuron/CodeLlama-7b-hf-neuron-8xlarge", "codellama/CodeLlama-7b-hf"),
        ("aws-neuron/Mistral-7B-Instruct-v0.2-seqlen-2048-bs-1-cores-2", "mistralai/Mistral-7B-Instruct-v0.2"),
        ("aws-neuron/bge-base-en-v1-5-seqlen-384-bs-1", "BAAI/bge-base-en-v1.5"),
        ("aws-neuron/stable-diffusion-xl-base-1-0-1024x1024", "stabilityai/stable-diffusion-xl-base-1.0"),
        ("aws-neuron/Qwen3-8BSharded", "Qwen/Qwen3-8B"),
        # the name does not say which model: a fine-tune, a family without its size, an unknown family
        ("aws-neuron/hermes-mixtral-instruct-seqlen-4096-bs-4-optimum-0-0-23", None),
        ("aws-neuron/mixtral-instruct-seqlen-4096-bs-4", None),
        ("aws-neuron/support-bot-v3-neuron", None),
    ],
)
def test_a_precompiled_repository_names_its_source_model_when_its_name_says_it(repository, source):
    assert source_model(repository) == source
    step = next_step(repository)
    assert (f"`{source}` going by its name" in step) if source else step.endswith("(its model card names it)")


# ----- migrated scripts, executed -------------------------------------------------------------


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory):
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("bert")
    config = BertConfig(
        vocab_size=64, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
        max_position_embeddings=64, num_labels=2,
    )
    BertForSequenceClassification(config).save_pretrained(folder)
    word_tokenizer(["hello", "world", "neuron"], model_max_length=32).save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="module")
def llama_dir(tmp_path_factory):
    return save_tiny_llama(tmp_path_factory.mktemp("llama"), with_tokenizer=False)


@pytest.fixture(scope="module")
def stable_diffusion_dir(tmp_path_factory):
    diffusers = pytest.importorskip("diffusers")
    from transformers import CLIPTextConfig, CLIPTextModel

    torch.manual_seed(0)
    unet = diffusers.UNet2DConditionModel(
        block_out_channels=(4, 8), layers_per_block=1, sample_size=8, in_channels=4, out_channels=4,
        down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"), up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
        cross_attention_dim=8, norm_num_groups=2, attention_head_dim=2,
    )
    vae = diffusers.AutoencoderKL(
        block_out_channels=[4, 8], in_channels=3, out_channels=3, down_block_types=["DownEncoderBlock2D"] * 2,
        up_block_types=["UpDecoderBlock2D"] * 2, latent_channels=4, norm_num_groups=2, sample_size=16,
    )
    text_encoder = CLIPTextModel(
        CLIPTextConfig(
            bos_token_id=0, eos_token_id=2, pad_token_id=1, hidden_size=8, intermediate_size=16,
            num_attention_heads=2, num_hidden_layers=1, vocab_size=16, max_position_embeddings=32,
        )
    )
    pipe = diffusers.StableDiffusionPipeline(
        vae=vae, text_encoder=text_encoder, tokenizer=word_tokenizer(["a", "photo", "of", "cat"], model_max_length=32), unet=unet,
        scheduler=diffusers.DDIMScheduler(steps_offset=1, clip_sample=False), safety_checker=None,
        feature_extractor=None, requires_safety_checker=False,
    )
    folder = tmp_path_factory.mktemp("sd")
    pipe.save_pretrained(folder)
    return str(folder)


def test_migrated_encoders_load_on_the_device_in_the_cast_dtype(migrate, neuron_emulator, bert_dir):
    code = _migrate(
        migrate,
        """
        import torch
        import optimum.neuron as on
        from optimum.neuron import NeuronModelForSequenceClassification
        from optimum.neuron.models.inference.bert import NeuronBertForSequenceClassification

        compiler_args = {"auto_cast": "matmul", "auto_cast_type": "bf16", "optlevel": "1"}
        input_shapes = dict(batch_size=1, sequence_length=16)

        classifier = NeuronModelForSequenceClassification.from_pretrained(
            MODEL_DIR, export=True, disable_neuron_cache=True, **compiler_args, **input_shapes
        )
        bert = NeuronBertForSequenceClassification.from_pretrained(
            MODEL_DIR, export=True, batch_size=1, sequence_length=16, torch_dtype=torch.float32, num_cores=1
        )
        features = on.NeuronModelForFeatureExtraction.from_pretrained(MODEL_DIR, export=True, use_auth_token=False)
        """,
    )
    scope = {"MODEL_DIR": bert_dir}
    exec(compile(code, "script.py", "exec"), scope)
    classifier, bert, features = scope["classifier"], scope["bert"], scope["features"]
    assert type(classifier).__name__ == "BertForSequenceClassification"
    assert type(bert).__name__ == "BertForSequenceClassification"
    assert type(features).__name__ == "BertModel"
    assert {p.device.type for p in classifier.parameters()} == {"neuron"}
    assert next(classifier.parameters()).dtype == torch.bfloat16
    assert next(bert.parameters()).dtype == torch.float32
    ids = torch.randint(4, 7, (1, 16)).to("neuron")
    assert classifier(input_ids=ids).logits.shape == (1, 2)


@pytest.mark.slow
def test_migrated_causal_lm_generates_with_a_static_cache(migrate, neuron_emulator, llama_dir):
    code = _migrate(
        migrate,
        """
        from optimum.neuron import NeuronModelForCausalLM


        class Generator:
            def __init__(self, model_id):
                self.model = NeuronModelForCausalLM.from_pretrained(
                    model_id, export=True, batch_size=1, sequence_length=64, auto_cast_type="bf16"
                )

            def __call__(self, input_ids):
                return self.model.generate(input_ids, max_new_tokens=3, do_sample=False)


        loaded = NeuronModelForCausalLM.from_pretrained(MODEL_DIR, export=True, tensor_parallel_size=1)
        """,
    )
    assert 'cache_implementation="static"' in code
    assert 'loaded.generation_config.cache_implementation = "static"' in code
    scope = {"MODEL_DIR": llama_dir}
    exec(compile(code, "script.py", "exec"), scope)
    generator = scope["Generator"](llama_dir)
    prompt = torch.tensor([[1, 5, 9]]).to("neuron")
    tokens = generator(prompt)
    assert tokens.shape == (1, 6) and tokens[0, :3].tolist() == [1, 5, 9]
    assert next(generator.model.parameters()).dtype == torch.bfloat16
    loaded = scope["loaded"]
    assert loaded.generation_config.cache_implementation == "static"
    assert loaded.generate(prompt, max_new_tokens=2, do_sample=False).shape == (1, 5)


def test_migrated_pipeline_runs_on_the_device(migrate, neuron_emulator, bert_dir):
    code = _migrate(
        migrate,
        """
        from optimum.neuron import pipeline

        classifier = pipeline(
            "text-classification",
            MODEL_DIR,
            export=True,
            input_shapes={"batch_size": 1, "sequence_length": 16},
            compiler_args={"auto_cast": "all", "auto_cast_type": "bf16"},
        )
        """,
    )
    scope = {"MODEL_DIR": bert_dir}
    exec(compile(code, "script.py", "exec"), scope)
    classifier = scope["classifier"]
    assert classifier.device.type == "neuron"
    assert next(classifier.model.parameters()).dtype == torch.bfloat16
    (prediction,) = classifier("hello world", padding="max_length", max_length=16)
    assert prediction["label"] in ("LABEL_0", "LABEL_1")


def test_migrated_diffusion_pipeline_loads_and_runs_on_the_device(
    migrate, neuron_emulator, stable_diffusion_dir, recwarn
):
    code = _migrate(
        migrate,
        """
        from optimum.neuron import NeuronStableDiffusionPipeline

        input_shapes = {"batch_size": 1, "height": 16, "width": 16}
        pipe = NeuronStableDiffusionPipeline.from_pretrained(PIPE_DIR, export=True, num_cores=1, **input_shapes)
        """,
    )
    scope = {"PIPE_DIR": stable_diffusion_dir}
    exec(compile(code, "script.py", "exec"), scope)
    pipe = scope["pipe"]
    assert type(pipe).__name__ == "StableDiffusionPipeline"
    assert pipe.unet.device.type == "neuron" and pipe.unet.dtype == torch.bfloat16
    assert not [w for w in recwarn if "torch_dtype" in str(w.message)], "the emitted dtype keyword is deprecated"
    images = pipe("a photo of a cat", height=16, width=16, num_inference_steps=1, output_type="np").images
    assert images.shape == (1, 16, 16, 3)


def test_flux_tensor_parallel_loads_the_transformer_sharded_once_the_ranks_joined(migrate):
    pytest.importorskip("diffusers")
    result = migrate(
        textwrap.dedent(
            """
            from optimum.neuron import NeuronFluxPipeline

            pipe = NeuronFluxPipeline.from_pretrained("flux", export=True, tensor_parallel_size=4)
            """
        )
    )
    code = result.code
    init = code.index('dist.init_process_group("neuron")')
    bind = code.index('torch.accelerator.set_device_index(int(os.environ["LOCAL_RANK"]))')
    shard = code.index("pipe_transformer = FluxTransformer2DModel.from_pretrained(")
    load = code.index("pipe = FluxPipeline.from_pretrained(")
    assert bind < init < shard < load
    assert "parallel_config=ParallelConfig(tensor_parallel_config=TensorParallelConfig(tp_degree=4))" in code
    assert 'subfolder="transformer"' in code[shard:load] and "transformer=pipe_transformer" in code[load:]
    assert "enable_parallelism" not in code
    assert "torchrun --nproc-per-node 4" in code


# ----- tensor parallelism, run on two emulated ranks --------------------------------------------

EXPORT_SCRIPT = """
import sys

import torch
from optimum.neuron import NeuronModelForCausalLM

checkpoint = sys.argv[1]
neuron_config = NeuronModelForCausalLM.get_neuron_config(
    checkpoint, batch_size=1, sequence_length=64, tensor_parallel_size=2
)
model = NeuronModelForCausalLM.export(checkpoint, neuron_config=neuron_config, load_weights=True)
prompt = torch.tensor([[1, 5, 9, 12]])
tokens = model.generate(prompt.to("neuron"), max_new_tokens=4, do_sample=False)
weight = model.model.layers[0].self_attn.q_proj.weight
# one write per line: the two ranks share one output pipe
sys.stdout.write(f"RESULT {tokens.tolist()} {type(weight).__name__} {weight.device.type}\\n")
sys.stdout.flush()
"""
FLUX_SCRIPT = """
import sys

import torch
from optimum.neuron import NeuronFluxPipeline

pipe = NeuronFluxPipeline.from_pretrained(
    sys.argv[1], export=True, tensor_parallel_size=2, torch_dtype=torch.float32, batch_size=1, height=16, width=16
)
images = pipe(
    "a photo of a cat", height=16, width=16, num_inference_steps=2, max_sequence_length=16, output_type="np",
    generator=torch.Generator().manual_seed(0),
).images
weight = pipe.transformer.transformer_blocks[0].attn.to_q.weight
# one write per line: the two ranks share one output pipe
sys.stdout.write(f"RESULT {round(float(images.sum()), 4)} {type(weight).__name__} {pipe.vae.device.type}\\n")
sys.stdout.flush()
"""


def _rewritten(tmp_path, source: str):
    from test_emulator_programs import _env

    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(source))
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "neuron_migrate", "rewrite", "-q", str(script)], env=_env(),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    code = script.read_text()
    assert "optimum" not in code and "TODO(neuron-migrate" not in code, code
    return script, code


def _results(proc) -> list[str]:
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return [line.split(" ", 1)[1] for line in proc.stdout.splitlines() if line.startswith("RESULT ")]


@pytest.mark.slow
def test_migrated_export_shards_over_two_ranks_and_generates_what_the_cpu_generates(tmp_path, llama_dir):
    from test_emulator_programs import _emulate

    script, code = _rewritten(tmp_path, EXPORT_SCRIPT)
    assert "distributed_config=DistributedConfig(tp_size=2)" in code and "get_neuron_config" not in code
    ranks = _results(_emulate(["--nproc", "2", str(script), llama_dir], cwd=tmp_path, timeout=300))
    model = transformers.AutoModelForCausalLM.from_pretrained(llama_dir)
    expected = model.generate(torch.tensor([[1, 5, 9, 12]]), max_new_tokens=4, do_sample=False).tolist()
    assert ranks == [f"{expected} DTensor neuron"] * 2


@pytest.fixture(scope="module")
def flux_dir(tmp_path_factory):
    diffusers = pytest.importorskip("diffusers")
    from transformers import CLIPTextConfig, CLIPTextModel, T5Config, T5EncoderModel

    torch.manual_seed(0)
    transformer = diffusers.FluxTransformer2DModel(
        patch_size=1, in_channels=4, num_layers=1, num_single_layers=1, attention_head_dim=16, num_attention_heads=2,
        joint_attention_dim=32, pooled_projection_dim=32, axes_dims_rope=[4, 4, 8],
    )
    vae = diffusers.AutoencoderKL(
        sample_size=32, in_channels=3, out_channels=3, block_out_channels=(4,), layers_per_block=1, latent_channels=1,
        norm_num_groups=1, use_quant_conv=False, use_post_quant_conv=False, shift_factor=0.0609, scaling_factor=1.5035,
    )
    clip = CLIPTextModel(
        CLIPTextConfig(
            bos_token_id=0, eos_token_id=2, pad_token_id=1, hidden_size=32, intermediate_size=37, num_attention_heads=4,
            num_hidden_layers=1, vocab_size=16, max_position_embeddings=77, projection_dim=32,
        )
    )
    t5 = T5EncoderModel(T5Config(vocab_size=16, d_model=32, d_kv=8, d_ff=37, num_layers=1, num_heads=4))
    words = ["a", "photo", "of", "cat"]
    pipe = diffusers.FluxPipeline(
        scheduler=diffusers.FlowMatchEulerDiscreteScheduler(), vae=vae, text_encoder=clip,
        tokenizer=word_tokenizer(words, model_max_length=77), text_encoder_2=t5,
        tokenizer_2=word_tokenizer(words, model_max_length=77), transformer=transformer,
    )
    folder = tmp_path_factory.mktemp("flux")
    pipe.save_pretrained(folder)
    return str(folder)


@pytest.mark.slow
def test_migrated_flux_pipeline_shards_its_transformer_over_two_ranks(tmp_path, flux_dir):
    from test_emulator_programs import _emulate

    diffusers = pytest.importorskip("diffusers")
    script, code = _rewritten(tmp_path, FLUX_SCRIPT)
    assert "parallel_config=ParallelConfig(tensor_parallel_config=TensorParallelConfig(tp_degree=2))" in code
    ranks = _results(_emulate(["--nproc", "2", str(script), flux_dir], cwd=tmp_path, timeout=300))
    pipe = diffusers.FluxPipeline.from_pretrained(flux_dir, dtype=torch.float32)
    images = pipe(
        "a photo of a cat", height=16, width=16, num_inference_steps=2, max_sequence_length=16, output_type="np",
        generator=torch.Generator().manual_seed(0),
    ).images
    assert ranks == [f"{round(float(images.sum()), 4)} DTensor neuron"] * 2
