"""Jupyter notebooks: code cells through the Python rules, ``!``/``%`` lines and ``%%bash`` cells through
the shell rules, and every byte that is not a migrated cell source kept as it was.

The fixtures (``fixtures/notebook/<case>.*.ipynb``, and ``fixtures/notebook/<ID>/`` for the rules of
one folder) are run by ``test_rule_fixtures.py``; the tests here read some of them.
"""

from __future__ import annotations

import ast
import copy
import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import FIXTURES, ROOT
from neuron_migrate.migrate import notebook
from neuron_migrate.migrate.notebook import (
    Placeholders,
    find_regions,
    mask_cell,
    python_cells,
    rewrite_notebook,
)
from neuron_migrate.migrate.write import split_lines
from neuron_migrate.report.model import CHANGED, FAILED, UNCHANGED
from neuron_migrate.report.terminal import location
from test_corpus import unmarked_legacy_references

NOTEBOOKS = FIXTURES / "notebook"
EXAMPLE = ROOT / "examples" / "xla-training" / "explore.ipynb"


def rewrite(data: bytes, plan, path: str = "nb.ipynb", no_comments: bool = False):
    return rewrite_notebook(data, path, plan, no_comments)


def without_sources(data: bytes):
    """The notebook's JSON with every cell source blanked: what must not change."""
    nb = json.loads(data.decode("utf-8-sig"))
    for cell in nb["cells"]:
        cell["source"] = None
    return nb


def sources(data: bytes) -> list[str]:
    nb = json.loads(data.decode("utf-8-sig"))
    return [s if isinstance(s, str) else "".join(s) for s in (c["source"] for c in nb["cells"])]


def notebook_json(*cells, **top):
    nb = {
        "cells": [
            {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": split_lines(c)}
            for c in cells
        ],
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    nb.update(top)
    return nb


def nbformat_text(nb) -> bytes:
    """What nbformat (Jupyter, JupyterLab) writes."""
    return (json.dumps(nb, sort_keys=True, indent=1, ensure_ascii=False) + "\n").encode()


# ----- what a rewrite touches ------------------------------------------------------------------------


def test_findings_name_the_cell_and_count_inside_it(plan):
    data = (NOTEBOOKS / "training.before.ipynb").read_bytes()
    findings = rewrite(data, plan, "training.ipynb").findings
    step = next(f for f in findings if f.rule == "NM113")
    # cells count from 1 over all cells, markdown included: cells[4] holds the training loop
    assert step.cell == 5
    assert (step.span.line, step.span.column) == (6, 5)
    assert location(step) == "training.ipynb:cell 5:6:5"
    assert split_lines(sources(data)[4])[5].startswith("    xm.optimizer_step(")
    # a shell finding points into its own line: "%env PJRT_DEVICE" -> the name at column 6
    pjrt = next(f for f in findings if f.rule == "NM501" and f.cell == 2)
    assert (pjrt.span.line, pjrt.span.column) == (2, 6)


def test_outputs_ids_metadata_and_json_layout_stay(plan):
    before = (NOTEBOOKS / "training.before.ipynb").read_bytes()
    outcome = rewrite(before, plan)
    old, new = json.loads(before), json.loads(outcome.output)
    for a, b in zip(old["cells"], new["cells"]):
        assert {k: v for k, v in a.items() if k != "source"} == {k: v for k, v in b.items() if k != "source"}
    # the file is still exactly what nbformat writes for its content
    assert outcome.output == nbformat_text(new)


def test_diff_shows_cell_sources_not_json(plan):
    outcome = rewrite((NOTEBOOKS / "training.before.ipynb").read_bytes(), plan, "nb.ipynb")
    assert "--- a/nb.ipynb:cell 4\n+++ b/nb.ipynb:cell 4\n" in outcome.diff
    assert "\n-device = xm.xla_device()\n" in outcome.diff
    assert '\n+device = torch.device("neuron")\n' in outcome.diff
    assert '"source"' not in outcome.diff and "\\n" not in outcome.diff


def test_names_imported_in_one_cell_are_migrated_in_another(plan):
    data = nbformat_text(
        notebook_json("import torch_xla.core.xla_model as xm", "for s in range(2):\n    xm.mark_step()\n    print(s)")
    )
    outcome = rewrite(data, plan)
    # the last use went, so the import went too; the loop lost its mark_step
    assert sources(outcome.output) == ["", "for s in range(2):\n    print(s)"]


def test_added_imports_go_to_the_cell_that_holds_the_imports(plan):
    data = nbformat_text(
        notebook_json(
            "!pip install torch-xla",
            "import torch\nimport torch_xla.core.xla_model as xm",
            "print(xm.get_ordinal())",
        )
    )
    new = sources(rewrite(data, plan).output)
    assert new[1] == "import torch\nimport os"
    assert new[2] == 'print(int(os.environ.get("RANK", "0")))'


def test_imports_a_set_aside_cell_uses_are_kept(plan):
    data = (NOTEBOOKS / "NM550" / "unparsed_cell.before.ipynb").read_bytes()
    new = sources(rewrite(data, plan).output)
    assert new[0] == "import torch_xla.core.xla_model as xm"
    assert new[1] == sources(data)[1]
    assert "mark_step" not in new[2]


def test_writefile_cells_are_files_of_their_own(plan):
    outcome = rewrite((NOTEBOOKS / "writefile.before.ipynb").read_bytes(), plan)
    new = sources(outcome.output)
    # %%writefile train.py: a script migrated as that file, its import block kept apart
    assert new[0].startswith('%%writefile train.py\nimport torch\n\ndevice = torch.device("neuron")')
    assert new[1] == "%%writefile launch.sh\ntorchrun --nproc_per_node=2 train.py\n"
    # %%html is not Python, whatever it mentions
    assert new[4] == sources((NOTEBOOKS / "writefile.before.ipynb").read_bytes())[4]
    device = next(f for f in outcome.findings if f.rule == "NM101")
    assert (device.cell, device.span.line) == (1, 5)  # line 5 of the cell, under the %%writefile line


# ----- IPython syntax ---------------------------------------------------------------------------------


def _masked(text: str) -> tuple[str, list]:
    lines = split_lines(text)
    names = Placeholders(text)
    regions = find_regions(lines, 0, iter(range(1, 100)))
    masked, kept = mask_cell(lines, regions, names)
    return "".join(masked), kept


@pytest.mark.parametrize(
    "text",
    [
        "!ls -l\nx = 1\n",
        "for i in range(3):\n    !echo {i}\n",
        "%matplotlib inline\nimport torch\n",
        "%env XLA_USE_BF16=1\n",
        "files = !ls\nprint(files)\n",
        "torch.ones?\n",
        "?torch.ones\n",
        "!pip install a \\\n    b\nimport torch\n",
        "if True:\n    %time f()\nelse:\n    pass\n",
    ],
)
def test_ipython_lines_become_python_of_the_same_shape(text):
    masked, kept = _masked(text)
    assert kept, "no IPython line was found"
    ast.parse(masked)
    assert len(split_lines(masked)) == len(split_lines(text))


@pytest.mark.parametrize(
    "text",
    [
        'HELP = """\n!pip install x\n%env A=1\n"""\n',
        "value = (10\n    % 3)\n",
        "total = 1 + \\\n    2\n",
        "s = 'not\\\n!shell'\n",
    ],
)
def test_bang_and_percent_inside_python_are_python(text):
    masked, kept = _masked(text)
    assert kept == []
    assert masked == text


def test_a_cell_that_does_not_parse_is_reported_and_kept(plan):
    data = (NOTEBOOKS / "NM550" / "unparsed_cell.before.ipynb").read_bytes()
    outcome = rewrite(data, plan, "nb.ipynb")
    report = [f for f in outcome.findings if f.rule == "NM550"]
    assert len(report) == 1
    finding = report[0]
    assert finding.cell == 2 and (finding.span.line, finding.span.column) == (1, 23)
    assert "was never closed" in finding.message and not finding.applied
    assert location(finding) == "nb.ipynb:cell 2:1:23"


def test_nm550_follows_select_ignore_and_suppression(plan):
    from neuron_migrate.migrate.engine import RulePlan

    cells = ("import torch_xla.core.xla_model as xm", "xm.mark_step(", "xm.mark_step()")
    data = nbformat_text(notebook_json(*cells))
    ignored = rewrite(data, RulePlan.build(ignore=("NM550",)))
    assert not [f for f in ignored.findings if f.rule == "NM550"]
    assert sources(ignored.output)[2] == ""
    quiet = nbformat_text(notebook_json(cells[0], "xm.mark_step(  # neuron-migrate: ignore[NM550]", cells[2]))
    finding = next(f for f in rewrite(quiet, plan).findings if f.rule == "NM550")
    assert finding.suppressed


def test_non_python_kernels_are_left_alone(plan):
    nb = notebook_json("library(torch_xla)")
    nb["metadata"] = {"kernelspec": {"display_name": "R", "language": "R", "name": "ir"}}
    assert rewrite(nbformat_text(nb), plan).status == UNCHANGED


# ----- markers, suppression, --no-comments --------------------------------------------------------


def test_markers_are_not_added_twice(plan):
    data = nbformat_text(notebook_json("%env XLA_USE_32BIT_LONG=1", "!XLA_USE_32BIT_LONG=1 python train.py"))
    first = rewrite(data, plan)
    new = sources(first.output)
    assert new[0].startswith("# TODO(neuron-migrate NM505): ") and new[0].endswith("\n%env XLA_USE_32BIT_LONG=1")
    assert new[1].startswith("# TODO(neuron-migrate NM505): ")
    again = rewrite(first.output, plan)
    assert again.status == UNCHANGED
    assert [f.rule for f in again.findings] == ["NM505", "NM505"]


def test_no_comments_keeps_the_guidance_in_the_report(plan):
    data = nbformat_text(
        notebook_json("import torch_xla.core.xla_model as xm\nd = xm.xla_device()", "%env XLA_USE_BF16=1")
    )
    outcome = rewrite(data, plan, no_comments=True)
    new = sources(outcome.output)
    assert "neuron-migrate" not in "".join(new)
    assert new[1] == ""  # the setting is deleted; what to do instead is only in the report
    assert {"NM101", "NM502"} <= {f.rule for f in outcome.findings}
    assert [f.fix for f in outcome.findings if f.rule == "NM502"][0].startswith("deleted XLA_USE_BF16: ")


def test_suppression_comment_keeps_the_line(plan):
    cells = ("import torch_xla.core.xla_model as xm", "xm.mark_step()  # neuron-migrate: ignore\nprint(1)")
    outcome = rewrite(nbformat_text(notebook_json(*cells)), plan)
    assert outcome.status == UNCHANGED
    assert [(f.rule, f.cell, f.suppressed) for f in outcome.findings] == [("NM110", 2, True)]


def test_env_magics_and_shell_lines(plan):
    cells = (
        "%env PJRT_DEVICE=NEURON\n%env NEURON_CC_FLAGS --model-type=generic --cache_dir=./cache",
        "!export PJRT_DEVICE=NEURON && echo ok",
        "%%sh\nexport XLA_FLAGS=--xla_dump_to=./dump\necho done",
    )
    outcome = rewrite(nbformat_text(notebook_json(*cells)), plan)
    new = sources(outcome.output)
    # %env in either form: deleted, or kept in its own form minus the XLA-era flag, with its marker
    assert new[0].startswith("# neuron-migrate(NM504): ")
    assert new[0].endswith("\n%env NEURON_CC_FLAGS --model-type=generic")
    assert "PJRT_DEVICE" not in new[0]
    # a setting joined to another command is left to a human, marked above the ! line
    assert new[1].startswith("# TODO(neuron-migrate NM501): ") and new[1].endswith(
        "\n!export PJRT_DEVICE=NEURON && echo ok"
    )
    assert new[2] == "%%sh\necho done"
    where = sorted((f.cell, f.span.line, f.span.column) for f in outcome.findings)
    assert where == [(1, 1, 6), (1, 2, 6), (2, 1, 9), (3, 2, 8)]


# ----- bad input ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data, words",
    [
        (b'{"cells": [', "1:12: not valid JSON"),
        (b"[1, 2]", "not a notebook"),
        (b'{"nbformat": 3, "worksheets": []}', "nbformat 3"),
        (b'{"nbformat": 4, "nbformat_minor": 5, "metadata": {}}', "not an nbformat 4 notebook"),
        (b'{"nbformat": 4, "cells": [{"cell_type": "code", "source": 7}]}', "cell 1: `source`"),
        (b'{"nbformat": 4, "cells": ["x"]}', "cell 1 is not a JSON object"),
        (b'{"nbformat": 4, "cells": [], "x": "\xff"}', "not valid UTF-8"),
    ],
)
def test_malformed_notebooks_fail_and_stay(plan, data, words):
    outcome = rewrite(data, plan, "bad.ipynb")
    assert outcome.status == FAILED
    assert outcome.output is None
    assert "bad.ipynb" not in outcome.error and words in outcome.error


def test_an_internal_error_fails_the_notebook(plan, monkeypatch):
    def broken(*args, **kwargs):
        raise ValueError("boom")

    monkeypatch.setattr(notebook, "_shell_pass", broken)
    outcome = rewrite((NOTEBOOKS / "training.before.ipynb").read_bytes(), plan)
    assert outcome.status == FAILED and outcome.output is None
    assert "internal error" in outcome.error and "boom" in outcome.error


# ----- the file's own JSON style ------------------------------------------------------------------------

LEGACY_CELLS = (
    "import torch_xla.core.xla_model as xm",
    "d = xm.xla_device()  # é ✓",
    "x = 1\nxm.mark_step()\ny = 2\n",
)


def _dumps(nb, **kwargs):
    return json.dumps(nb, **kwargs)


STYLES = {
    "nbformat": lambda nb: _dumps(nb, sort_keys=True, indent=1, ensure_ascii=False) + "\n",
    "two spaces, ascii, key order kept": lambda nb: _dumps(nb, indent=2, ensure_ascii=True),
    "tabs": lambda nb: _dumps(nb, indent="\t", ensure_ascii=False) + "\n",
    "one line": lambda nb: _dumps(nb, separators=(",", ":"), ensure_ascii=False),
    "python default": lambda nb: _dumps(nb, ensure_ascii=False),
    "crlf": lambda nb: _dumps(nb, indent=1, ensure_ascii=False).replace("\n", "\r\n") + "\r\n",
    "bom": lambda nb: "\ufeff" + _dumps(nb, indent=1, ensure_ascii=False) + "\n",
}


@pytest.mark.parametrize("style", STYLES, ids=str)
@pytest.mark.parametrize("as_string", [False, True], ids=["lines", "string"])
def test_json_style_is_kept(plan, style, as_string):
    dump = STYLES[style]
    nb = notebook_json(*LEGACY_CELLS, nbformat_minor=4)
    for cell in nb["cells"]:
        cell.pop("id", None)
        if as_string:
            cell["source"] = "".join(cell["source"])
    data = dump(nb).encode("utf-8")

    outcome = rewrite(data, plan)

    assert outcome.status == CHANGED, outcome.error
    migrated = copy.deepcopy(nb)
    for cell, source in zip(migrated["cells"], sources(outcome.output)):
        cell["source"] = source if as_string else split_lines(source)
    assert outcome.output == dump(migrated).encode("utf-8")
    assert sources(outcome.output)[1:] == ['d = torch.device("neuron")  # é ✓', "x = 1\ny = 2\n"]


# ----- the command line -----------------------------------------------------------------------------


def _cli(*args, cwd):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NEURON_MIGRATE_CACHE_DIR": str(cwd / ".cache")}
    return subprocess.run(
        [sys.executable, "-m", "neuron_migrate", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


@pytest.mark.slow
def test_cli_on_a_folder_with_a_notebook(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(NOTEBOOKS / "training.before.ipynb", project / "explore.ipynb")
    (project / "bad.ipynb").write_text('{"cells": ["torch_xla"', encoding="utf-8")
    (project / "ok.py").write_text("import torch\n", encoding="utf-8")
    original = (project / "explore.ipynb").read_bytes()

    diff = _cli("rewrite", "--diff", "project", cwd=tmp_path)
    assert diff.returncode == 2, diff.stderr  # bad.ipynb could not be processed
    # on stdout, a patch of the JSON text that git apply takes; the per-cell view is the report's
    assert "--- a/project/explore.ipynb\n+++ b/project/explore.ipynb\n" in diff.stdout
    assert ":cell " not in diff.stdout
    assert "project/bad.ipynb:1:23: error: not valid JSON" in diff.stderr
    assert (project / "explore.ipynb").read_bytes() == original

    (project / "bad.ipynb").unlink()
    check = _cli("rewrite", "--check", "project", cwd=tmp_path)
    assert check.returncode == 1, check.stdout + check.stderr
    assert "project/explore.ipynb:cell 5:6:5: NM113 [review]" in check.stdout
    assert (project / "explore.ipynb").read_bytes() == original

    write = _cli("rewrite", "--report", "report.json", "project", cwd=tmp_path)
    assert write.returncode == 1, write.stdout + write.stderr
    assert (project / "explore.ipynb").read_bytes() == (NOTEBOOKS / "training.after.ipynb").read_bytes()
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    cells = {f["cell"] for file in report["files"] for f in file["findings"]}
    assert {2, 3, 4, 5, 8, 9} <= cells

    again = _cli("rewrite", "project", cwd=tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr


def test_audit_scans_notebook_cells(tmp_path):
    shutil.copy(EXAMPLE, tmp_path / "explore.ipynb")
    result = _cli("audit", "--format", "json", "explore.ipynb", cwd=tmp_path)
    findings = [f for file in json.loads(result.stdout)["files"] for f in file["findings"]]
    # a hazard of the static checks, found in the training-loop cell
    assert any(f["rule"].startswith("NA") and f["cell"] == 5 for f in findings), result.stdout
    # and the legacy APIs the rewrite would migrate
    assert any(f["rule"] == "NM110" and f["cell"] == 5 for f in findings)


# ----- the bundled example ----------------------------------------------------------------------------


def test_the_example_notebook_migrates_cleanly(plan):
    data = EXAMPLE.read_bytes()
    outcome = rewrite(data, plan, "explore.ipynb")
    assert outcome.status == CHANGED, outcome.error
    assert without_sources(outcome.output) == without_sources(data)
    code = "\n".join(text for _, text in python_cells(outcome.output))
    assert unmarked_legacy_references(code) == []
    new = sources(outcome.output)
    assert "xm.mark_step()" not in new[4] and 'torch.device("neuron")' in new[3]
    # %env XLA_USE_BF16 has no effect any more: it is marked with what replaces it
    assert "# TODO(neuron-migrate NM502)" in new[2]
    assert new[2].endswith("\n%env NEURON_CC_FLAGS=--model-type=generic")
    assert not [f for f in outcome.findings if f.rule == "NM550"]
    assert rewrite(outcome.output, plan, "explore.ipynb").status == UNCHANGED


def test_example_notebook_is_in_the_readme():
    readme = (EXAMPLE.parent / "README.md").read_text(encoding="utf-8")
    assert "`explore.ipynb`" in readme


# ----- the same engine as for modules ------------------------------------------------------------------


def _one_cell(text: str) -> bytes:
    return nbformat_text(
        {"cells": [notebook_json(text)["cells"][0]], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    )


def _statement_cells(text: str) -> list[str]:
    """The module cut into one cell per top-level statement (decorators stay with their def)."""
    lines = split_lines(text)
    starts = [min([s.lineno, *(d.lineno for d in getattr(s, "decorator_list", ()))]) - 1 for s in ast.parse(text).body]
    bounds = [0, *starts[1:], len(lines)]
    return ["".join(lines[a:b]) for a, b in zip(bounds, bounds[1:])]


@pytest.mark.slow
def test_a_module_in_one_cell_migrates_as_the_module(plan, migrate):
    from test_corpus import corpus_files

    for path in corpus_files():
        text = path.read_text(encoding="utf-8")
        # a notebook has no file name to put in a launch hint
        expected = migrate(text, path=path.name).code.replace(f"N {path.name}`", "N <script>.py`")
        outcome = rewrite(_one_cell(text), plan, path.name.replace(".py", ".ipynb"))
        got = text if outcome.output is None else sources(outcome.output)[0]
        assert got == expected, path.name


@pytest.mark.slow
def test_a_module_cut_into_cells_migrates_the_same_way(plan, migrate):
    from test_corpus import corpus_files

    for path in corpus_files():
        text = path.read_text(encoding="utf-8")
        data = nbformat_text(notebook_json(*_statement_cells(text)))
        outcome = rewrite(data, plan)
        assert outcome.status in (CHANGED, UNCHANGED), outcome.error
        module = migrate(text, path="nb.ipynb")
        assert sorted(f.rule for f in outcome.findings) == sorted(f.rule for f in module.findings), path.name
        result = outcome.output or data
        assert unmarked_legacy_references("\n".join(t for _, t in python_cells(result))) == [], path.name
        assert rewrite(result, plan).status == UNCHANGED, path.name


def test_cells_written_with_crlf_keep_it(plan):
    cells = (
        "import torch_xla.core.xla_model as xm\r\nd = xm.xla_device()\r\n!echo hi",
        "%%bash\r\nexport PJRT_DEVICE=NEURON\r\necho 1\r\n",
    )
    outcome = rewrite(nbformat_text(notebook_json(*cells)), plan)
    assert sources(outcome.output) == [
        'import torch\r\n\r\nd = torch.device("neuron")\r\n!echo hi',
        "%%bash\r\necho 1\r\n",
    ]


def test_a_variable_the_shell_rules_add_is_set_with_env(tmp_path, plan):
    """``!export X=1`` would set X for that one command only; ``%env`` sets it for the kernel."""
    (tmp_path / "train.py").write_text("from transformers import Trainer\n", encoding="utf-8")
    data = nbformat_text(notebook_json("import torch", "!torchrun --nproc_per_node=2 train.py --output_dir out"))
    outcome = rewrite(data, plan, str(tmp_path / "nb.ipynb"))
    new = sources(outcome.output)
    assert "%env HF_DEACTIVATE_ASYNC_LOAD=1" in "\n".join(new)
    assert "export" not in "\n".join(new)
    assert rewrite(outcome.output, plan, str(tmp_path / "nb.ipynb")).status == UNCHANGED


def test_a_new_name_is_imported_in_or_before_the_cell_that_first_uses_it(plan):
    data = (NOTEBOOKS / "import_order.before.ipynb").read_bytes()
    new = sources(rewrite(data, plan).output)
    assert "from transformers import AutoModelForCausalLM" in new[1]
    assert new[3].startswith("from transformers import AutoTokenizer\n")


def test_a_todo_whose_code_was_edited_away_goes_on_the_next_run(plan):
    data = nbformat_text(
        notebook_json("import torch_xla.core.xla_model as xm", "shard = xm.reduce_scatter(xm.REDUCE_SUM, g, 1.0, 0, 2)")
    )
    first = sources(rewrite(data, plan).output)
    assert first[1].startswith("# TODO(neuron-migrate NM129): ")
    edited = nbformat_text(notebook_json(first[0], first[1].replace("xm.reduce_scatter(xm.REDUCE_SUM, g, 1.0, 0, 2)", "g")))
    second = sources(rewrite(edited, plan).output)
    assert second == ["", "shard = g"]
