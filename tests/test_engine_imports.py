"""Import and start-up edits the engine makes for rules: from-imports merged into the file's own
lines, names that would clash, start-up statements, and legacy APIs inside a non-legacy package."""

from __future__ import annotations

import ast

import libcst as cst
import pytest

from neuron_migrate.migrate.engine import RulePlan, migrate_python
from neuron_migrate.rules.base import SAFE, Example, Rule, RuleIndex, RuleMeta


class RenameTrainer(Rule):
    """A stand-in rule: ``legacy_pkg.Trainer`` -> ``transformers.Trainer`` plus a start-up setting."""

    meta = RuleMeta("NM999", "test rename", safety=SAFE, triggers=(b"legacy_pkg",), example=Example("", ""))
    calls = {"legacy_pkg.NeuronTrainer": "rename", "legacy_pkg.api.run": "rename_run"}

    def rename(self, original: cst.Call, updated: cst.Call, qname: str):
        name = self.ctx.require_from_import("transformers", "Trainer")
        args_name = self.ctx.require_from_import("transformers", "TrainingArguments")
        os_name = self.ctx.require_import("os")
        self.ctx.add_setup(
            self.meta,
            original,
            f'{os_name}.environ.setdefault("HF_DEACTIVATE_ASYNC_LOAD", "1")',
            "weights load synchronously on the neuron device",
            unless="HF_DEACTIVATE_ASYNC_LOAD",
        )
        return updated.with_changes(func=self.ctx.expr(name), args=[cst.Arg(self.ctx.expr(f"{args_name}()"))])

    def rename_run(self, original: cst.Call, updated: cst.Call, qname: str):
        return self.ctx.expr("print()")


@pytest.fixture(scope="module")
def run():
    plan = RulePlan(index=RuleIndex.build([RenameTrainer]), legacy_prefixes=("legacy_pkg.NeuronTrainer", "legacy_pkg.api.run"))

    def rewrite(source: str) -> str:
        code = migrate_python(source, "t.py", plan).code
        ast.parse(code)
        assert migrate_python(code, "t.py", plan).code == code
        return code

    return rewrite


def test_new_names_join_the_files_own_from_import_line(run):
    source = "from transformers import AutoTokenizer\nfrom legacy_pkg import NeuronTrainer\n\nt = NeuronTrainer()\n"
    assert run(source) == (
        "from transformers import AutoTokenizer, Trainer, TrainingArguments\nimport os\n\n"
        "# weights load synchronously on the neuron device\n"
        'os.environ.setdefault("HF_DEACTIVATE_ASYNC_LOAD", "1")\n\n'
        "t = Trainer(TrainingArguments())\n"
    )


def test_new_names_from_one_module_share_one_line(run):
    source = "import os\nfrom legacy_pkg import NeuronTrainer\n\nt = NeuronTrainer()\n"
    code = run(source)
    assert "from transformers import Trainer, TrainingArguments\n" in code
    assert code.count("import os") == 1


def test_a_name_already_bound_in_the_file_is_used_dotted(run):
    source = "from legacy_pkg import NeuronTrainer\n\n\nclass Trainer:\n    pass\n\n\nt = NeuronTrainer()\n"
    code = run(source)
    assert "t = transformers.Trainer(TrainingArguments())" in code
    assert "import transformers\n" in code


def test_a_setting_the_file_already_makes_is_not_added_twice(run):
    source = (
        "import os\nfrom legacy_pkg import NeuronTrainer\n\n"
        'os.environ["HF_DEACTIVATE_ASYNC_LOAD"] = "1"\nt = NeuronTrainer()\n'
    )
    assert run(source).count("HF_DEACTIVATE_ASYNC_LOAD") == 1


def test_a_legacy_api_imported_from_a_living_package_is_removed_alone(run):
    source = "from legacy_pkg.api import run, keep\n\nrun()\nkeep()\n"
    assert run(source) == "from legacy_pkg.api import keep\n\nprint()\nkeep()\n"


def test_a_parenthesized_import_line_is_left_as_it_is(run):
    source = "from transformers import (\n    AutoTokenizer,\n)\nfrom legacy_pkg import NeuronTrainer\n\nt = NeuronTrainer()\n"
    code = run(source)
    assert code.startswith("from transformers import (\n    AutoTokenizer,\n)\n")
    assert "from transformers import Trainer, TrainingArguments\n" in code


def test_a_suppressed_edit_adds_no_import(migrate):
    source = "import torch_xla.core.xla_model as xm\n\ndevice = xm.xla_device()  # neuron-migrate: ignore\n"
    assert migrate(source).code == source


def test_a_name_does_not_join_a_from_import_line_below_its_first_use(run):
    source = "from legacy_pkg import NeuronTrainer\n\nt = NeuronTrainer()\nfrom transformers import AutoTokenizer\n"
    code = run(source)
    assert code.startswith("import os\nfrom transformers import Trainer, TrainingArguments\n")
    assert code.endswith("\nfrom transformers import AutoTokenizer\n")


def test_code_that_imports_lazily_gets_its_new_imports_and_settings_where_it_imports(run):
    source = (
        '"""Cheap to import: the trainer loads only when main runs."""\n\n\n'
        "def main():\n"
        "    from legacy_pkg import NeuronTrainer\n\n"
        "    return NeuronTrainer()\n"
    )
    assert run(source) == (
        '"""Cheap to import: the trainer loads only when main runs."""\n\n'
        "import os\n\n\n"
        "def main():\n"
        "    from transformers import Trainer, TrainingArguments\n"
        "    # weights load synchronously on the neuron device\n"
        '    os.environ.setdefault("HF_DEACTIVATE_ASYNC_LOAD", "1")\n\n'
        "    return Trainer(TrainingArguments())\n"
    )


def test_a_package_the_module_imports_at_the_top_is_imported_at_the_top(run):
    source = "import transformers\n\n\ndef main():\n    from legacy_pkg import NeuronTrainer\n\n    return NeuronTrainer()\n"
    code = run(source)
    assert code.startswith("import transformers\nimport os\nfrom transformers import Trainer, TrainingArguments\n")
    assert code.endswith("def main():\n    # weights load synchronously on the neuron device\n"
                         '    os.environ.setdefault("HF_DEACTIVATE_ASYNC_LOAD", "1")\n\n    return Trainer(TrainingArguments())\n')


def test_a_use_at_module_level_keeps_the_import_at_the_top(run):
    source = (
        "from legacy_pkg import NeuronTrainer\n\n\n"
        "def later():\n    from legacy_pkg import NeuronTrainer\n\n    return NeuronTrainer()\n\n\n"
        "t = NeuronTrainer()\n"
    )
    code = run(source)
    assert code.startswith("import os\nfrom transformers import Trainer, TrainingArguments\n")



class CallsAnUnboundHelper(Rule):
    """A stand-in rule whose replacement reads a name nothing binds (the defect the engine guards against)."""

    meta = RuleMeta("NM998", "test unbound", safety=SAFE, triggers=(b"legacy_pkg",), example=Example("", ""))
    calls = {"legacy_pkg.api.run": "rename_run"}

    def rename_run(self, original: cst.Call, updated: cst.Call, qname: str):
        return self.ctx.expr("helper_of_the_rule()")


def test_a_rewrite_that_would_read_a_name_it_did_not_bind_fails_the_file():
    """The engine checks its own output: a name an edit reads where nothing binds it fails the file."""
    from neuron_migrate.migrate.sources import InternalError

    plan = RulePlan(index=RuleIndex.build([CallsAnUnboundHelper]), legacy_prefixes=("legacy_pkg.api.run",))
    source = "from legacy_pkg.api import run\n\n\ndef f():\n    run()\n"
    with pytest.raises(InternalError, match=r"would read a name nothing binds: `helper_of_the_rule` in `f`"):
        migrate_python(source, "t.py", plan)
    # a name the original already read unbound in that scope (a notebook's `display`) is not the rewrite's doing
    read_before = source.replace("    run()", "    helper_of_the_rule()\n    run()")
    assert migrate_python(read_before, "t.py", plan).code.endswith("    helper_of_the_rule()\n    helper_of_the_rule()\n")


def test_a_legacy_name_in_a_plain_string_does_not_keep_its_import(migrate):
    source = 'import torch_xla\nimport torch_xla.core.xla_model as xm\n\nxm.mark_step()\nprint("torch_xla is gone")\n'
    assert migrate(source).code == 'print("torch_xla is gone")\n'


def test_a_legacy_name_listed_in_all_keeps_its_import(migrate):
    source = 'from torch_xla.runtime import world_size\n\n__all__ = ["world_size"]\n'
    assert migrate(source).code.startswith("from torch_xla.runtime import world_size\n")
