"""Model readiness cards: the tiny config of an architecture, the card of a few real architectures and of a
model of our own with a planted data-dependent op, the table's page, and the static audit that reads it."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import ROOT
from neuron_migrate.analyzers.models import lookup
from neuron_migrate.analyzers.models.model import (
    NOT_READY,
    READY,
    UNCHECKED,
    WARNINGS,
    Card,
    Problem,
    verdict,
)
from neuron_migrate.analyzers.models.table import headline, markdown, row
from neuron_migrate.analyzers.models.text import card_markdown, card_text, cards_html
from neuron_migrate.cli import app

PLANTED = ROOT / "tests" / "models" / "planted"
PLANTED_LINE = next(n for n, line in enumerate((PLANTED / "modeling_planted.py").read_text().splitlines(), 1)
                    if "PLANTED" in line)


def _shrunk(model_type: str, **fields):
    pytest.importorskip("transformers")
    from neuron_migrate.analyzers.models.tiny import Spec, tiny_config

    return tiny_config(Spec(model_type, {"model_type": model_type, **fields}, model_type))


def test_a_tiny_config_shrinks_sizes_and_keeps_the_rest():
    config = _shrunk("llama", rope_theta=12345.0, vocab_size=32000, pad_token_id=31999)

    assert (config.num_hidden_layers, config.hidden_size, config.num_attention_heads) == (2, 64, 4)
    assert config.num_key_value_heads in (2, 4) and config.intermediate_size == 128
    assert config.vocab_size == 512 and config.pad_token_id < 512, "a token id must stay inside the vocabulary"
    assert config.rope_parameters["rope_theta"] == 12345.0, "a field that is not a size is kept"


def test_a_hybrid_keeps_a_layer_of_each_kind():
    periodic = _shrunk("jamba")  # one attention layer in eight, at offset 4
    listed = _shrunk("qwen3_next")  # layer_types: three linear-attention layers, then a full one

    assert periodic.num_hidden_layers == 2 and periodic.attn_layer_offset < periodic.attn_layer_period <= 2
    assert len(set(listed.layer_types)) == 2 and listed.num_hidden_layers == len(listed.layer_types)


def test_a_vision_config_gets_a_small_picture_and_narrow_stages():
    vit, swin, convnext = _shrunk("vit"), _shrunk("swin"), _shrunk("convnext")

    assert (vit.image_size, vit.patch_size, vit.hidden_size) == (64, 8, 64)
    # the last stage of a windowed model is one window, as in a real checkpoint
    assert swin.window_size == 2 and swin.image_size == swin.patch_size * 2 * 2 ** (len(swin.depths) - 1)
    assert all(d <= 2 for d in swin.depths) and all(h <= 2 for h in swin.num_heads)
    assert convnext.num_stages == len(convnext.depths) == 4, "a stage count that reads as the depth follows the list"
    assert list(convnext.hidden_sizes) == [32, 64, 128, 256]


def test_a_diffusers_config_names_its_class(tmp_path):
    from neuron_migrate.analyzers.models import check_spec
    from neuron_migrate.analyzers.models.tiny import read_spec

    known, unknown = tmp_path / "known.json", tmp_path / "unknown.json"
    known.write_text(json.dumps({"_class_name": "FluxTransformer2DModel", "guidance_embeds": True}))
    unknown.write_text(json.dumps({"_class_name": "MyTransformerModel"}))

    spec = read_spec(str(known))
    assert (spec.model_type, spec.config["guidance_embeds"]) == ("FluxTransformer2DModel", True)
    assert check_spec(str(known)) == "" and check_spec("UNet2DConditionModel") == ""
    pipeline = tmp_path / "pipeline"
    (pipeline / "transformer").mkdir(parents=True)
    (pipeline / "model_index.json").write_text("{}")
    (pipeline / "transformer" / "config.json").write_text(json.dumps({"_class_name": "FluxTransformer2DModel"}))
    assert check_spec(str(pipeline)).endswith(f"a diffusers pipeline: give one of its models' folders "
                                              f"({pipeline}/transformer)")
    assert check_spec(str(pipeline / "transformer")) == ""
    assert check_spec(str(unknown)).startswith("--model: no tiny recipe for the diffusers class 'MyTransformerModel'")


def test_the_cards_are_a_section_of_a_rewrite_or_audit_report():
    from neuron_migrate.analyzers.models.text import embed
    from neuron_migrate.report.html import REPORT_HEADING

    page = f"<html><body><header>{REPORT_HEADING}</header><main><section id=\"files\">x</section></main></body></html>"
    once = embed(page, [_card(source="llama", verdict=READY)])
    twice = embed(once, [_card(source="vit", verdict=WARNINGS)])

    assert once.index('<section id="model-readiness">') < once.index("</main>")
    assert twice.count('<section id="model-readiness">') == 1 and "vit: ready with warnings" in twice
    assert "llama" not in twice, "a later card replaces the section"
    assert embed("<html>another page</html>", [_card()]) is None


def test_audit_model_html_into_an_existing_report_adds_a_section(audit, tmp_path, monkeypatch):
    pytest.importorskip("transformers")
    from neuron_migrate import analyzers
    from neuron_migrate.report.html import REPORT_HEADING

    made = _card(source="llama", verdict=READY)
    monkeypatch.setattr(analyzers.models, "cards_in_processes", lambda specs, jobs, seconds: [made])
    report, page = tmp_path / "report.html", tmp_path / "card.html"
    report.write_text(f"<html><body><header>{REPORT_HEADING}</header><main><p>findings</p></main></body></html>")

    into = audit("--model", "llama", "--format", "html", "-o", report)
    alone = audit("--model", "llama", "--format", "html", "-o", page)

    assert into.exit_code == alone.exit_code == 0
    text = report.read_text()
    assert "<p>findings</p>" in text and text.index('<section id="model-readiness">') < text.index("</main>")
    assert page.read_text().startswith("<!doctype html>") and "model-readiness" not in page.read_text()


def test_an_encoder_decoder_gets_a_decoder_start_token():
    assert _shrunk("t5").decoder_start_token_id == 0


def test_a_mixture_of_experts_keeps_few_experts():
    config = _shrunk("mixtral")

    assert (config.num_local_experts, config.num_experts_per_tok) == (4, 2)


def _card(**fields) -> Card:
    card = Card(architecture="x", source="x", model_class="XForCausalLM", generates=True, decode_graphs=1,
                generate_recompiles=0, train_graphs=1, train_graph_breaks=0, train_recompiles=0)
    for name, value in fields.items():
        setattr(card, name, value)
    return card


@pytest.mark.parametrize("fields, expected", [
    ({}, READY),
    ({"train_graph_breaks": 2}, WARNINGS),
    ({"generate_recompiles": 1}, WARNINGS),
    ({"generates": False, "decode_graphs": None, "generate_recompiles": None}, READY),
    ({"problems": [Problem("forward", "unchecked", "histc")]}, UNCHECKED),
    ({"problems": [Problem("forward", "unchecked", "histc"), Problem("train", "error", "boom")]}, NOT_READY),
    ({"model_class": ""}, "not built"),
])
def test_the_verdict_follows_the_phases(fields, expected):
    assert verdict(_card(**fields)) == expected


def test_a_card_reads_back_what_it_wrote_and_renders():
    card = _card(problems=[Problem("train", "warning", "graph break: x", where="transformers/a.py:3", fix="do y")],
                 verdict=WARNINGS, parameters=1234)

    again = Card.from_dict(json.loads(json.dumps(card.to_dict())))
    text = card_text(again)

    assert again == card
    assert text.splitlines()[0] == "x (XForCausalLM, 1,234 parameters): ready with warnings"
    assert "  warning [train] transformers/a.py:3: graph break: x" in text and "      fix: do y" in text
    assert "| warning | train | `transformers/a.py:3` | graph break: x | do y |" in card_markdown(again)
    page = cards_html([again, _card(source="<b>", verdict=READY)])
    assert '<td class="warning">warning</td><td>train</td><td><code>transformers/a.py:3</code></td>' in page
    assert "&lt;b&gt;: ready" in page and "<b>" not in page, "what the user named is escaped"


def test_the_table_page_has_its_headline_and_one_row_per_architecture():
    cards = [_card(architecture="good", verdict=READY),
             _card(architecture="bad", verdict=NOT_READY, problems=[Problem("forward", "error", "a | b")])]
    table = {"versions": {"transformers": "1"}, "seconds": 120, "jobs": 2,
             "rows": {c.architecture: row(c, "causal LM") for c in cards}}

    page = markdown(table)

    assert headline(table).startswith("1 of 2 causal LM architectures generate with a static cache")
    assert "| `bad` | causal LM | not ready | a \\| b |  |" in page
    assert "89%" in page, "the page puts the published number beside its own"


@pytest.fixture
def audit(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    table = tmp_path / "cards.json"
    rows = {"mixtral": {"verdict": UNCHECKED, "problem": "histc on integers", "where": "transformers/moe.py:449",
                        "fix": "make the card on a Trainium host", "model_class": "MixtralForCausalLM"},
            "llama": {"verdict": READY, "problem": "", "where": "", "fix": "", "model_class": "LlamaForCausalLM"},
            "bamba": {"verdict": NOT_READY, "problem": "the forward pass failed", "where": "", "fix": ""},
            "FluxTransformer2DModel": {"verdict": NOT_READY, "problem": "the denoising loop failed", "where": "",
                                       "fix": "", "model_class": "FluxTransformer2DModel"}}
    table.write_text(json.dumps({"versions": {"transformers": "9.9"}, "rows": rows}), encoding="utf-8")
    monkeypatch.setattr(lookup, "TABLE", table)
    lookup.table.cache_clear()
    yield lambda *args: CliRunner().invoke(app, ["audit", *map(str, args)], catch_exceptions=False)
    lookup.table.cache_clear()


def test_the_static_audit_reports_the_architectures_a_project_loads(audit, tmp_path):
    for name, model_type in (("moe", "mixtral"), ("dense", "llama"), ("hybrid", "bamba")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(json.dumps({"model_type": model_type}), encoding="utf-8")
    (tmp_path / "load.py").write_text(
        "from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer\n\n"
        'tokenizer = AutoTokenizer.from_pretrained("moe")\n'
        'moe = AutoModelForCausalLM.from_pretrained("moe")\n'
        'dense = AutoModelForCausalLM.from_pretrained("dense")\n'
        'hybrid = AutoConfig.for_model("bamba")\n'
        'hub = AutoModelForCausalLM.from_pretrained("someone/some-model")\n', encoding="utf-8")

    result = audit("load.py", "--format", "json", "--no-cache")

    findings = {(f["span"]["line"], f["rule"]): f for r in json.loads(result.stdout)["files"] for f in r["findings"]}
    assert sorted(findings) == [(4, "NA602"), (6, "NA601"), (7, "NA603")], "no finding for a tokenizer or a ready one"
    assert "mixtral is not checked without the device on neuron: histc on integers (transformers/moe.py:449)" \
        in findings[(4, "NA602")]["message"]
    assert findings[(4, "NA602")]["fix"] == "make the card on a Trainium host"
    assert "transformers 9.9" in findings[(4, "NA602")]["message"], "the table's versions are named"
    assert "unknown offline" in findings[(7, "NA603")]["message"]


def test_a_concrete_class_or_a_diffusers_subfolder_names_the_architecture_offline(audit, tmp_path):
    (tmp_path / "pipe" / "transformer").mkdir(parents=True)
    (tmp_path / "pipe" / "transformer" / "config.json").write_text(
        json.dumps({"_class_name": "FluxTransformer2DModel"}), encoding="utf-8")
    (tmp_path / "load.py").write_text(
        "from diffusers import DiffusionPipeline, FluxTransformer2DModel\n"
        "from transformers import LlamaForCausalLM, MixtralConfig, MixtralModel\n\n"
        'llama = LlamaForCausalLM.from_pretrained("meta-llama/some-llama")\n'
        'moe = MixtralModel.from_pretrained("mistralai/some-mixtral")\n'
        'config = MixtralConfig.from_pretrained("mistralai/some-mixtral")\n'
        'flux = FluxTransformer2DModel.from_pretrained("pipe", subfolder="transformer")\n'
        'pipe = DiffusionPipeline.from_pretrained("someone/some-pipeline")\n', encoding="utf-8")

    result = audit("load.py", "--format", "json", "--no-cache")

    findings = {(f["span"]["line"], f["rule"]): f for r in json.loads(result.stdout)["files"] for f in r["findings"]}
    assert sorted(findings) == [(5, "NA602"), (6, "NA602"), (7, "NA601"), (8, "NA603")]
    assert "mixtral is not checked without the device" in findings[(5, "NA602")]["message"]
    assert "FluxTransformer2DModel is not ready on neuron" in findings[(7, "NA601")]["message"]


@pytest.mark.parametrize("args, error", [
    (["--model", "no_such_architecture"], "'no_such_architecture' is not a model_type of transformers"),
    (["--model", "missing/config.json"], "cannot read the config"),
    (["--model", "llama", "--format", "sarif"], "--model prints a card: --format table, json, md or html"),
    (["--model", "llama", "src"], "--model makes a card of its own: give no paths and no --run"),
])
def test_audit_model_usage_errors_exit_2(audit, args, error):
    pytest.importorskip("transformers")
    result = CliRunner().invoke(app, ["audit", *args])

    assert result.exit_code == 2
    assert error in result.output


def test_each_family_and_a_planted_model_get_their_cards(tmp_path, monkeypatch):
    # one worker makes the cards one after the other: torch and transformers are imported once
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from neuron_migrate.analyzers.models.runs import cards_in_processes

    monkeypatch.setenv("HF_MODULES_CACHE", str(tmp_path / "modules"))  # where the planted model's code is copied
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))

    specs = ["llama", "mixtral", "distilbert", str(PLANTED), "vit", "DiTTransformer2DModel"]
    dense, moe, encoder, planted, vision, diffusion = cards_in_processes(specs, 1, 300)

    assert dense.verdict == READY, card_text(dense)
    assert (dense.decode_graphs, dense.generate_recompiles, dense.train_graph_breaks) == (1, 0, 0)
    assert moe.verdict == UNCHECKED, card_text(moe)
    assert moe.problems[0].what.startswith("torch.histc on integers") and moe.problems[0].where.startswith(
        "transformers/integrations/moe.py:")
    assert moe.train_graphs and moe.train_graph_breaks == 0, "the run went on past the op only the device can judge"
    assert encoder.verdict == READY and encoder.generates is False, card_text(encoder)
    assert planted.verdict == WARNINGS, card_text(planted)
    nonzero = [p for p in planted.problems if "nonzero" in p.what]
    assert {p.phase for p in nonzero} >= {"forward", "train"}
    assert {p.where for p in nonzero} == {f"planted/modeling_planted.py:{PLANTED_LINE}"}
    assert any("nonzero_static" in p.fix for p in nonzero)
    # an image classifier: no generation; transformers sets config.problem_type at its first loss: one recompile
    assert vision.verdict == WARNINGS and vision.generates is False, card_text(vision)
    assert (vision.train_graph_breaks, vision.train_recompiles) == (0, 1)
    assert "problem_type" in vision.problems[0].what and "before compiling" in vision.problems[0].fix
    # a diffusion transformer: a compiled denoising loop over several timesteps, one graph
    assert diffusion.verdict == READY and diffusion.kind == "diffusers", card_text(diffusion)
    assert (diffusion.decode_graphs, diffusion.generate_recompiles, diffusion.train_graph_breaks) == (1, 0, 0)
    assert "denoise   compiled: 1 graph, 0 recompiles over 4 timesteps" in card_text(diffusion)


@pytest.mark.slow  # a card made end to end through the command line
def test_audit_model_prints_the_card_and_exits_by_its_verdict(tmp_path):
    import subprocess

    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    run = subprocess.run([sys.executable, "-m", "neuron_migrate", "audit", "--model", "llama", "--format", "json"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)

    assert run.returncode == 0, run.stdout + run.stderr
    card = json.loads(run.stdout)
    assert card["verdict"] == READY and card["device"] == "neuron (emulated on CPU)"
    assert card["notes"] == ["op coverage not checked without the device: the emulator runs every op on the CPU"]


def test_the_shipped_table_covers_every_family():
    table = json.loads(lookup.TABLE.read_text(encoding="utf-8"))
    families = {r["family"] for r in table["rows"].values()}

    assert families == {"causal LM", "seq2seq LM", "masked LM", "image classification", "diffusion (diffusers)"}
    assert set(table["versions"]) == {"transformers", "torch", "diffusers"}
    assert (Path(ROOT) / "docs" / "models.md").read_text(encoding="utf-8").startswith(
        "# Model readiness on the neuron device")


def test_every_data_file_of_the_package_ships_with_it():
    import fnmatch
    import tomllib

    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"][
        "package-data"]["neuron_migrate"]
    package = ROOT / "neuron_migrate"
    data = [p.relative_to(package).as_posix() for p in package.rglob("*.json")]

    assert "analyzers/models/cards.json" in data
    assert [d for d in data if not any(fnmatch.fnmatch(d, p) for p in patterns)] == []


def test_a_missing_cpu_kernel_under_a_wrapper_is_the_devices_to_judge():
    pytest.importorskip("torch")
    from neuron_migrate.analyzers.models.card import UNCHECKED_SEVERITY, failure

    try:
        try:
            raise NotImplementedError('"histogram_cpu" not implemented for \'Int\'')
        except NotImplementedError as inner:
            raise RuntimeError("RuntimeError when making fake tensor call") from inner
    except RuntimeError as wrapped:
        unchecked = failure("train", "the compiled training step failed", wrapped)
    error = failure("forward", "the forward pass failed", ValueError("shapes differ"))

    assert unchecked.severity == UNCHECKED_SEVERITY
    assert unchecked.what.endswith("""NotImplementedError: "histogram_cpu" not implemented for 'Int'""")
    assert (error.severity, error.what) == ("error", "the forward pass failed: ValueError: shapes differ")
