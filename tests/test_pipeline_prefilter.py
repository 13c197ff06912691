"""The byte prefilter: exactly "does any trigger word occur", however the words are grouped; each file kind is
scanned for the words of the rules that can change it, and those let every fixture through."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import pytest

from neuron_migrate.config import load_config
from neuron_migrate.migrate import runner, sources
from neuron_migrate.migrate.discover import kind_of
from neuron_migrate.migrate.prefilter import ANY_KIND, KindPrefilter, Prefilter, words_by_file_kind
from neuron_migrate.rules.base import all_rules, get_rule
from neuron_migrate.rules.catalog import EXAMPLE_FILES

WORDS = (b"torch_xla", b"xla", b"XLA_", b"XLA_FLAGS", b"NEURON_CC_FLAGS", b"NEURON_RT_X", b"init_process_group")


def test_redundant_words_are_dropped():
    assert Prefilter(WORDS).triggers == (b"NEURON_CC_FLAGS", b"NEURON_RT_X", b"XLA_", b"init_process_group", b"xla")


def test_same_answer_as_checking_every_word():
    prefilter = Prefilter(WORDS)
    pieces = [b"import os\n", b"NEURON_", b"NEURON_RT", b"NEURON_RT_X", b"XLA", b"XLA_", b"xl", b"a", b"torch_xla"]
    rng = random.Random(0)
    for _ in range(2000):
        data = b"".join(rng.choice(pieces) for _ in range(rng.randrange(0, 6)))
        assert prefilter(data) == any(word in data for word in WORDS), data


def test_every_word_alone_is_found_and_clean_code_is_not():
    prefilter = Prefilter(WORDS)
    for word, (before, after) in itertools.product(WORDS, [(b"", b""), (b"x = '", b"'\n")]):
        assert prefilter(before + word + after)
    assert not prefilter(b"import torch\nmodel.to('cuda')\n")
    assert not Prefilter([])(b"torch_xla")


# ----- one word list per file kind ------------------------------------------------------------------------

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
# A fixture's extension -> the name of a file of the kind it is run as.
FIXTURE_NAMES = {
    "py": "m.py", "sh": "run.sh", "ipynb": "nb.ipynb", "Dockerfile": "Dockerfile", "txt": "requirements.txt",
    "toml": "pyproject.toml", "cfg": "setup.cfg", "yml": "environment.yml",
}


def test_each_file_kind_gets_the_words_of_the_rules_that_read_it():
    words = words_by_file_kind(
        [
            (("python",), [b"torch_xla"]),
            (("shell",), [b"--output_dir"]),
            (("python", "shell"), [b"XLA_USE_BF16"]),  # a Python rule that also edits shell text
            (("requirements",), [b"neuronx-cc"]),
            (("dockerfile",), [b"neuron"]),
        ],
        always=[b"TODO(neuron-migrate NM"],
    )
    todo = b"TODO(neuron-migrate NM"
    assert words["python"] == (todo, b"XLA_USE_BF16", b"torch_xla")
    assert words["shell"] == (b"--output_dir", todo, b"XLA_USE_BF16", b"neuronx-cc")
    assert words["dockerfile"] == (b"--output_dir", todo, b"XLA_USE_BF16", b"neuron", b"neuronx-cc")
    assert words["notebook"] == (b"--output_dir", todo, b"XLA_USE_BF16", b"neuronx-cc", b"torch_xla")
    assert words["pyproject"] == words["requirements"] == (todo, b"neuronx-cc")
    assert set(words[ANY_KIND]) == set().union(*words.values())
    prefilter = KindPrefilter(words)
    assert not prefilter("python", b"# launched with torchrun --output_dir out\n")
    assert prefilter("shell", b"torchrun train.py --output_dir out\n")
    assert prefilter("a kind no table knows", b"neuron")


@pytest.fixture
def engine_calls(monkeypatch):
    """The files handed to each kind's adapter (runs are inline: jobs=1)."""
    calls: list[str] = []
    for kind in ("python", "shell"):
        real = sources.ADAPTERS[kind]

        def counting(data, path, plan, no_comments, real=real):
            calls.append(path)
            return real(data, path, plan, no_comments)

        monkeypatch.setitem(sources.ADAPTERS, kind, counting)
    return calls


def test_a_python_file_holding_only_shell_and_dockerfile_words_is_not_parsed(tmp_path, monkeypatch, engine_calls):
    monkeypatch.chdir(tmp_path)
    # Words of launch-script and Dockerfile rules only; the file does not even parse, and is still reported
    # clean since no Python rule could change it.
    (tmp_path / "notes.py").write_text("# torchrun train.py --output_dir out  (on a neuron instance)\nx = (\n")
    (tmp_path / "run.sh").write_text("export XLA_USE_BF16=1\ntorchrun train.py --output_dir out\n")
    report = runner.run([tmp_path], load_config([tmp_path], jobs=1, cache=False), mode="check")
    assert engine_calls == ["run.sh"]
    assert {f.path: f.status for f in report.files} == {"notes.py": "unchanged", "run.sh": "changed"}


def _plan_words(migrate_from: str = "legacy"):
    return runner.plan_summary(load_config([FIXTURES], cache=False, migrate_from=migrate_from)).triggers


def _words_for(rule_id: str):
    """The words of the run a rule's fixtures are rewritten in: with --from cuda for a CUDA rule."""
    rule = get_rule(rule_id)
    return _CUDA_WORDS if rule is not None and rule.source == "cuda" else _WORDS


def _before_fixtures():
    for path in sorted(FIXTURES.glob("rules/*/*.before.py")):
        yield path, "python"
    for folder in ("shell", "notebook", "dockerfile", "requirements"):
        for path in sorted(FIXTURES.glob(f"{folder}/*/*.before.*")):
            yield path, kind_of(FIXTURE_NAMES[path.name.rsplit(".", 1)[1]])


@pytest.mark.parametrize(("path", "kind"), list(_before_fixtures()), ids=lambda v: getattr(v, "name", v))
def test_every_before_fixture_passes_the_prefilter_of_its_file_kind(path, kind):
    words = _words_for(path.parent.name)
    assert KindPrefilter(words)(kind, path.read_bytes()), f"{path.name}: no trigger word of a {kind} file"


@pytest.mark.parametrize("rule", [r for r in all_rules() if r.meta.example], ids=lambda r: r.meta.id)
def test_every_rule_example_passes_the_prefilter_of_its_file_kind(rule):
    example = rule.meta.example
    if example.before == example.after:
        return
    kind = kind_of(EXAMPLE_FILES[rule.meta.kind])
    words = _words_for(rule.meta.id)
    assert KindPrefilter(words)(kind, example.before.encode()), f"{rule.meta.id}: no trigger word of a {kind} file"


_WORDS = _plan_words()
_CUDA_WORDS = _plan_words("cuda")


@pytest.mark.parametrize("rule_id", ["NM190", "NM193"])
def test_the_rules_about_any_legacy_import_read_every_legacy_package(rule_id):
    # With only that rule selected, a guard (or a hasattr check) of any legacy package is still read.
    from neuron_migrate.rules import LEGACY_MODULES

    words = get_rule(rule_id).meta.triggers
    for module in LEGACY_MODULES:
        source = f'try:\n    import {module}\nexcept ImportError:\n    pass\nok = hasattr({module}, "x")\n'
        assert Prefilter(words)(source.encode()), module
