"""The ``neuron-migrate`` command line: ``rewrite``, ``audit``, ``rules``, ``emulate`` and ``verify``.

Exit codes are the same for every command: 0 nothing to change (or nothing found), 1 files changed
or would change (or findings at or above ``--fail-on``), 2 a usage error or a file that could not
be processed.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from neuron_migrate import __version__
from neuron_migrate.rules import catalog

app = typer.Typer(
    name="neuron-migrate",
    help="Migrate PyTorch/XLA, torch-neuronx and optimum-neuron code to TorchNeuron.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

USAGE_ERROR = 2
INTERRUPTED = 130  # 128 + SIGINT, as shells report a command stopped by Ctrl-C
TERMINATED = 143  # 128 + SIGTERM: a CI timeout or a job runner stopped the run


def _version(value: bool) -> None:
    if value:
        typer.echo(f"neuron-migrate {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", "-V", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Migrate PyTorch/XLA, torch-neuronx and optimum-neuron code to TorchNeuron."""


def rule_ids(values: list[str] | None, flag: str) -> tuple[str, ...] | None:
    """``--select NM1,NM130 --select NM2`` -> ("NM1", "NM130", "NM2"); ids that match no rule are a usage error."""
    if not values:
        return None
    ids = tuple(part.strip().upper() for value in values for part in value.split(",") if part.strip())
    unknown = catalog.unknown_selectors(ids)
    if unknown:
        raise typer.BadParameter("; ".join(_unknown_message(i) for i in unknown), param_hint=flag)
    return ids


def _unknown_message(rule_id: str) -> str:
    close = catalog.close_ids(rule_id)
    hint = f" (did you mean {', '.join(close)}?)" if close else " (see `neuron-migrate rules`)"
    return f"unknown rule id {rule_id!r}{hint}"


def _report_formats(paths: list[Path] | None) -> list[tuple[Path, str]]:
    """(path, format) of every --report given: the option may be repeated (--report a.sarif --report b.html)."""
    from neuron_migrate.report.render import format_for_path

    try:
        return [(path, format_for_path(path)) for path in paths or ()]
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--report") from None


# The report formats that carry each file's diff; a run writing none of them (and without --diff) computes none.
DIFF_FORMATS = frozenset({"json", "md", "html"})


def _reports_show_diffs(reports: list[tuple[Path, str]]) -> bool:
    return any(report_format in DIFF_FORMATS for _, report_format in reports)


def _check_configured_ids(config) -> None:
    """Rule ids from pyproject.toml get the same check as the flags, naming the file they came from."""
    for key in ("select", "ignore"):
        unknown = catalog.unknown_selectors(getattr(config, key))
        if unknown:
            where = f"{config.source}: [tool.neuron-migrate] {key}" if config.source else f"--{key}"
            raise _fail(f"{where}: " + "; ".join(_unknown_message(i) for i in unknown))


def _require_torch(command: str) -> None:
    """The runtime commands need PyTorch, which the rewrite never does: say which extra brings it."""
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        raise _fail(
            f"{command} needs PyTorch: pip install 'neuron-migrate[runtime]' torch==2.13.0 "
            "(pin the torch you use; an unpinned torch may pull a CUDA build of several GB)"
        )


# Whether a SIGTERM now should unwind (see _stoppable) rather than end the process at once.
_unwind_on_sigterm = False


@contextlib.contextmanager
def _stoppable():
    """Inside the block SIGTERM raises Terminated, so that what the block started (a process pool, a child
    program) is stopped as on Ctrl-C; elsewhere it ends the process at once, as it would by default."""
    global _unwind_on_sigterm
    before, _unwind_on_sigterm = _unwind_on_sigterm, True
    try:
        yield
    finally:
        _unwind_on_sigterm = before


@contextlib.contextmanager
def _interruptible():
    try:
        with _stoppable():
            yield
    except KeyboardInterrupt as exc:
        from neuron_migrate.migrate.write import Terminated

        stopped = isinstance(exc, Terminated)
        typer.echo(f"neuron-migrate: {'terminated' if stopped else 'interrupted'}; every file is either untouched "
                   "or fully written", err=True)
        sys.stdout.flush()
        sys.stderr.flush()
        # Every write is done or undone (atomic) and the workers are stopped; leaving now skips the
        # interpreter's clean-up, which has nothing left to do.
        os._exit(TERMINATED if stopped else INTERRUPTED)


def _fail(message: str) -> typer.Exit:
    typer.echo(f"neuron-migrate: error: {message}", err=True)
    return typer.Exit(USAGE_ERROR)


DIFF_COLOURS = (("+++", "\x1b[1m"), ("---", "\x1b[1m"), ("@@", "\x1b[36m"), ("+", "\x1b[32m"), ("-", "\x1b[31m"))


def coloured_diff(patch: str) -> str:
    """A unified diff with ANSI colours, as git shows it on a terminal (a pipe gets the plain patch)."""
    out = []
    for line in patch.splitlines(keepends=True):
        colour = next((code for prefix, code in DIFF_COLOURS if line.startswith(prefix)), None)
        body, newline = (line[:-1], "\n") if line.endswith("\n") else (line, "")
        out.append(f"{colour}{body}\x1b[0m{newline}" if colour else line)
    return "".join(out)


# The per-file limits, shared by rewrite and audit (whose legacy pass is the rewrite engine).
MaxFileSize = Annotated[
    Optional[str], typer.Option("--max-file-size", metavar="SIZE",
                                help="Skip files with more code than this: 1MB (default), 500KB, 0 for no limit."),
]
MaxFileSeconds = Annotated[
    Optional[float], typer.Option("--max-file-seconds", metavar="SECONDS", min=0.0,
                                  help="Skip a file whose rewrite takes longer (default 60, 0 for no limit)."),
]


class MigrateFrom(str, Enum):
    legacy = "legacy"
    cuda = "cuda"


class OutputFormat(str, Enum):
    text = "text"
    github = "github"


@app.command()
def rewrite(
    paths: Annotated[
        Optional[list[Path]],
        typer.Argument(help="Files or folders to migrate (default: the current folder); - reads stdin.",
                       show_default=False),
    ] = None,
    diff: Annotated[bool, typer.Option("--diff", help="Print the unified diff; write nothing.")] = False,
    check: Annotated[
        bool, typer.Option("--check", help="Write nothing; exit 1 if anything would change.")
    ] = False,
    report: Annotated[
        Optional[list[Path]],
        typer.Option("--report", help="Write a report; the format follows the extension: .json .sarif .md .html. "
                                      "Repeat it for several."),
    ] = None,
    select: Annotated[
        Optional[list[str]], typer.Option("--select", help="Only these rule ids or prefixes (NM1,NM130).")
    ] = None,
    ignore: Annotated[
        Optional[list[str]], typer.Option("--ignore", help="Skip these rule ids or prefixes.")
    ] = None,
    no_comments: Annotated[
        bool, typer.Option("--no-comments", help="No marker comments in the code; the guidance stays in the report.")
    ] = False,
    keep_dual_stack: Annotated[
        bool,
        typer.Option("--keep-dual-stack", help="Keep code's torch_xla branches and add a neuron one beside each "
                                               "(for libraries that must still run on the XLA stack)."),
    ] = False,
    migrate_from: Annotated[
        Optional[MigrateFrom],
        typer.Option("--from", help="What to migrate: legacy Neuron code (default), or cuda: CUDA code too "
                                    "(devices, precision, process group; see the NM6 rules)."),
    ] = None,
    jobs: Annotated[Optional[int], typer.Option("--jobs", min=1, help="Worker processes (default: CPU count).")] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not read or write the result cache.")] = False,
    max_file_size: MaxFileSize = None,
    max_file_seconds: MaxFileSeconds = None,
    write_read_only: Annotated[
        bool, typer.Option("--write-read-only", help="Rewrite files without write permission too (default: skip).")
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only errors and a one-line summary.")] = False,
    stdin_filename: Annotated[
        Optional[str],
        typer.Option("--stdin-filename", help="With -: the name of the file read from stdin (picks its kind)."),
    ] = None,
    output_format: Annotated[
        OutputFormat,
        typer.Option("--output-format", help="How findings are printed: text, or github (Actions annotations)."),
    ] = OutputFormat.text,
    statistics: Annotated[
        bool, typer.Option("--statistics", help="Print how often each rule fired instead of every finding.")
    ] = False,
) -> None:
    """Rewrite legacy Neuron code in place (or show / check what would change)."""
    from neuron_migrate.config import ConfigError, load_config
    from neuron_migrate.migrate.runner import run
    from neuron_migrate.report.render import render
    from neuron_migrate.report.terminal import Terminal

    if diff and check:
        raise typer.BadParameter("use either --diff or --check, not both", param_hint="--diff/--check")
    selected = rule_ids(select, "--select")
    ignored = rule_ids(ignore, "--ignore")
    paths = paths or [Path(".")]
    if Path("-") in paths:
        if len(paths) > 1:
            raise _fail("- (stdin) cannot be combined with other paths")
        raise typer.Exit(
            _rewrite_stdin(stdin_filename or "stdin.py", selected, ignored, no_comments, keep_dual_stack, diff, check,
                           migrate_from is MigrateFrom.cuda)
        )
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        raise _fail(f"no such file or folder: {', '.join(missing)}")
    reports = _report_formats(report)
    mode = "diff" if diff else "check" if check else "write"
    size_limit = _size(max_file_size, "--max-file-size")

    try:
        config = load_config(
            paths,
            select=selected,
            ignore=ignored,
            no_comments=True if no_comments else None,
            keep_dual_stack=True if keep_dual_stack else None,
            jobs=jobs,
            cache=False if no_cache else None,
            max_file_size=size_limit,
            max_file_seconds=max_file_seconds,
            write_read_only=True if write_read_only else None,
            migrate_from=None if migrate_from is None else migrate_from.value,
        )
    except ConfigError as exc:
        raise _fail(str(exc)) from None
    _check_configured_ids(config)

    # With --diff, stdout carries the patch alone so that `rewrite --diff > change.patch` works.
    terminal = Terminal(out=sys.stderr if diff else sys.stdout, quiet=quiet)
    with terminal.progress() as progress, _interruptible():
        result = run(paths, config, mode=mode, progress=progress, diffs=diff or _reports_show_diffs(reports))

    if diff:
        colour = sys.stdout.isatty() and "NO_COLOR" not in os.environ
        for file_result in result.files:
            patch = file_result.patch or file_result.diff
            if patch:
                patch = patch if patch.endswith("\n") else patch + "\n"
                sys.stdout.write(coloured_diff(patch) if colour else patch)
        sys.stdout.flush()

    rules = catalog.catalog() if reports or statistics or output_format is OutputFormat.github else {}
    for path, report_format in reports:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render(result, report_format, rules=rules), encoding="utf-8")

    shown = ", ".join(str(path) for path, _ in reports) or None
    if statistics or output_format is OutputFormat.github:
        _print_findings_as(result, "statistics" if statistics else "github", rules, terminal,
                           sys.stderr if diff else sys.stdout, full_report=shown)
    else:
        terminal.show(result, shown)
    raise typer.Exit(result.exit_code())


def _size(value: str | None, flag: str) -> int | None:
    from neuron_migrate.config import parse_size

    if value is None:
        return None
    size = parse_size(value)
    if size is None:
        raise typer.BadParameter(f"{value!r} is not a size: bytes, or a number with KB, MB or GB (0: no limit)",
                                 param_hint=flag)
    return size


class AuditFormat(str, Enum):
    table = "table"
    json = "json"
    sarif = "sarif"
    md = "md"
    html = "html"
    github = "github"
    statistics = "statistics"


class FailOn(str, Enum):
    info = "info"
    warning = "warning"
    error = "error"
    never = "never"


def _print_findings_as(report, fmt: str, rules, terminal, stream, full_report: str | None = None) -> None:
    from neuron_migrate.report.render import render
    from neuron_migrate.report.terminal import summary_line

    terminal.errors(report)
    stream.write(render(report, fmt, rules=rules, **({"full_report": full_report} if fmt == "github" else {})))
    print(summary_line(report), file=sys.stderr if fmt == "github" else stream)
    stream.flush()


def _rewrite_stdin(
    name: str, select, ignore, no_comments: bool, keep_dual_stack: bool, diff: bool, check: bool, from_cuda: bool = False
) -> int:
    """``rewrite -``: the file read from stdin, rewritten on stdout (or its diff with --diff, nothing with
    --check); findings go to stderr. Exit codes as for files."""
    from neuron_migrate.migrate.discover import kind_of
    from neuron_migrate.migrate.runner import rule_plan
    from neuron_migrate.migrate.sources import ADAPTERS
    from neuron_migrate.report.model import CHANGED, FAILED

    data = sys.stdin.buffer.read()
    kind = kind_of(name) or "python"
    plan = rule_plan(tuple(select or ()), tuple(ignore or ()), keep_dual_stack, from_cuda)
    outcome = ADAPTERS[kind](data, name, plan, no_comments)
    for finding in outcome.findings:
        typer.echo(f"{name}:{finding.span.line}:{finding.span.column}: {finding.rule} [{finding.safety}] "
                   f"{finding.message}", err=True)
    if outcome.status == FAILED:
        from neuron_migrate.report.terminal import error_line

        typer.echo(error_line(name, outcome.error), err=True)
        sys.stdout.buffer.write(data if not (diff or check) else b"")
        return USAGE_ERROR
    changed = outcome.status == CHANGED
    if diff:
        sys.stdout.write(outcome.diff)
    elif not check:
        sys.stdout.buffer.write(outcome.output if changed else data)
    sys.stdout.flush()
    return 1 if changed else 0


@app.command(context_settings={"allow_interspersed_args": True})
def audit(
    paths: Annotated[
        Optional[list[str]],
        typer.Argument(
            help="Files or folders to audit (default: the current folder); with --run, the arguments for the "
                 "script (put them after --).",
            show_default=False,
        ),
    ] = None,
    output_format: Annotated[
        AuditFormat,
        typer.Option("--format", "--output-format",
                     help="Output format (github: Actions annotations; statistics: counts per id)."),
    ] = AuditFormat.table,
    statistics: Annotated[
        bool, typer.Option("--statistics", help="Print how often each id was found (same as --format statistics).")
    ] = False,
    output: Annotated[
        Optional[Path], typer.Option("--output", "-o", help="Write the report here instead of stdout.")
    ] = None,
    fail_on: Annotated[
        FailOn, typer.Option("--fail-on", help="Exit 1 when a finding has this severity or worse.")
    ] = FailOn.warning,
    baseline: Annotated[
        Optional[Path],
        typer.Option("--baseline", help="Findings recorded here are not reported; the file is written if missing."),
    ] = None,
    update_baseline: Annotated[
        bool, typer.Option("--update-baseline", help="Rewrite the baseline file with today's findings.")
    ] = False,
    run_script: Annotated[
        Optional[Path], typer.Option("--run", help="Run this script under instrumentation (runtime analysis).")
    ] = None,
    run_module: Annotated[
        Optional[str], typer.Option("-m", help="With runtime analysis: run a module as `python -m` does.")
    ] = None,
    steps: Annotated[int, typer.Option("--steps", min=0, help="Record every op during the first N steps.")] = 1,
    emulate_device: Annotated[
        Optional[bool],
        typer.Option("--emulate/--no-emulate", help="Force the CPU emulator of the neuron device on or off."),
    ] = None,
    select: Annotated[Optional[list[str]], typer.Option("--select", help="Only these ids or prefixes.")] = None,
    ignore: Annotated[Optional[list[str]], typer.Option("--ignore", help="Skip these ids or prefixes.")] = None,
    jobs: Annotated[Optional[int], typer.Option("--jobs", min=1, help="Worker processes (default: CPU count).")] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not read or write the result cache.")] = False,
    max_file_size: MaxFileSize = None,
    max_file_seconds: MaxFileSeconds = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only errors and a one-line summary.")] = False,
    model: Annotated[
        Optional[list[str]],
        typer.Option("--model", help="The readiness card of an architecture: a transformers model_type, a "
                                     "config.json or a model folder (a tiny random model runs on neuron)."),
    ] = None,
    model_timeout: Annotated[
        float, typer.Option("--model-timeout", min=1, help="Seconds a card may take before it is stopped.")
    ] = 600,
) -> None:
    """Find what will recompile, break graphs or fall back on the native backend, and leftover legacy APIs.

    Static by default: nothing is executed. With --run SCRIPT (or --run -m MODULE) the program runs in this
    process under instrumentation, on the CPU emulator of the neuron device when there is no Trainium.
    """
    from neuron_migrate import audit as auditing
    from neuron_migrate.config import ConfigError, load_config
    from neuron_migrate.report.terminal import Terminal

    if model:
        if paths or run_script is not None or run_module is not None:
            raise _fail("--model makes a card of its own: give no paths and no --run")
        _audit_models(model, output_format, output, model_timeout, jobs)
    if update_baseline and baseline is None:
        raise _fail("--update-baseline needs --baseline FILE")
    runtime = run_script is not None or run_module is not None
    output_format = AuditFormat.statistics if statistics else output_format
    args = list(paths or [])
    if run_script is not None and str(run_script) == "-m":  # `--run -m MODULE`: the option took "-m" as its value
        if not args:
            raise _fail("--run -m needs a module name")
        run_script, run_module = None, args.pop(0)
    if run_script is not None and not run_script.is_file():
        raise _fail(f"--run: no such script: {run_script}")
    targets = [run_script] if run_script is not None else []
    if not runtime:
        args = args or ["."]  # as rewrite: no path means the current folder
        missing = [a for a in args if not Path(a).exists()]
        if missing:
            raise _fail(f"no such file or folder: {', '.join(missing)}")
        targets = [Path(a) for a in args]
    try:
        config = load_config(
            targets or [Path.cwd()],
            select=rule_ids(select, "--select"),
            ignore=rule_ids(ignore, "--ignore"),
            jobs=jobs,
            cache=False if no_cache else None,
            max_file_size=_size(max_file_size, "--max-file-size"),
            max_file_seconds=max_file_seconds,
        )
    except ConfigError as exc:
        raise _fail(str(exc)) from None
    _check_configured_ids(config)

    terminal = Terminal(out=sys.stderr if output is None and output_format is not AuditFormat.table else sys.stdout,
                        quiet=quiet)
    with terminal.progress() as progress, _interruptible():
        result = auditing.audit(targets, config, progress=progress) if targets else auditing.empty_report()
    notes: list[str] = []
    program_failed = False
    if runtime:
        result, notes, program_failed = _run_analysis(result, run_script, run_module, args, steps, emulate_device,
                                                      config)

    if baseline is not None:
        notes.append(_use_baseline(auditing, result, baseline, update_baseline))
    _emit_audit(result, output_format, output, terminal, notes, fail_on.value)
    # A program that does not run fails the gate whatever --fail-on says: nothing after the failure was audited.
    raise typer.Exit(max(auditing.exit_code(result, fail_on.value), int(program_failed)))


def _run_analysis(report, script, module, args, steps, emulate_device, config):
    from neuron_migrate import audit as auditing

    _require_torch("audit --run")
    from neuron_migrate.analyzers.runtime import analyze_script
    target = module if module is not None else str(script)
    if module is not None and not _module_exists(module):
        raise _fail(f"-m: no module named {module!r}")
    outcome = analyze_script(target, args, module=module is not None, steps=steps, emulate=emulate_device)
    runtime = [f for f in outcome.findings if auditing.selected(f.rule, config.select, config.ignore)]
    report = auditing.merge_runtime(report, runtime)
    report.mode = "runtime"
    notes = list(outcome.notes)
    if outcome.exit_code:
        notes.append(f"the script exited with code {outcome.exit_code}")
    return report, notes, outcome.exit_code != 0


MODEL_FORMATS = (AuditFormat.table, AuditFormat.json, AuditFormat.md, AuditFormat.html)


def _audit_models(specs, output_format, output, seconds, jobs) -> None:
    """``audit --model``: one readiness card per architecture, each made in a process of its own."""
    import json

    from neuron_migrate.analyzers.models import NOT_READY_VERDICTS, cards_in_processes, check_spec, text

    if output_format not in MODEL_FORMATS:
        raise _fail("--model prints a card: --format table, json, md or html")
    for spec in specs:
        problem = check_spec(spec)
        if problem:
            raise _fail(problem)
    _require_torch("audit --model")
    if output is None and output_format is AuditFormat.table:
        typer.echo(f"making the card of {', '.join(specs)}: a tiny model of each runs forward, generate and a "
                   "compiled training step", err=True)
    cards = cards_in_processes(specs, jobs or 1, seconds)
    if output_format is AuditFormat.json:
        body = json.dumps([c.to_dict() for c in cards] if len(cards) > 1 else cards[0].to_dict(), indent=2)
    elif output_format is AuditFormat.md:
        body = "\n".join(text.card_markdown(c) for c in cards)
    elif output_format is AuditFormat.html:
        # an existing rewrite or audit report gets the cards as a section of its own; any other path a page
        existing = output.read_text(encoding="utf-8", errors="replace") if output and output.is_file() else ""
        body = text.embed(existing, cards) or text.cards_html(cards)
    else:
        body = "\n\n".join(text.card_text(c) for c in cards)
    if output is not None:
        output.write_text(body.rstrip("\n") + "\n", encoding="utf-8")
    else:
        typer.echo(body.rstrip("\n"))
    raise typer.Exit(1 if any(c.verdict in NOT_READY_VERDICTS for c in cards) else 0)


def _module_exists(name: str) -> bool:
    import importlib.util

    sys.path.insert(0, os.getcwd())
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False
    finally:
        sys.path.pop(0)


def _use_baseline(auditing, report, path: Path, update: bool) -> str:
    try:
        if update or not path.exists():
            count = auditing.write_baseline(report, path)
            auditing.apply_baseline(report, path)
            return f"baseline {path} written: {count} findings recorded; later runs report only new ones"
        hidden = auditing.apply_baseline(report, path)
    except (auditing.BaselineError, OSError) as exc:
        raise _fail(str(exc)) from None
    return f"baseline {path}: {hidden} known findings not reported"


def _emit_audit(report, output_format, output, terminal, notes, fail_on) -> None:
    from neuron_migrate.analyzers.hazards import catalog as hazard_catalog
    from neuron_migrate.report.render import render

    if output_format is AuditFormat.table:  # no rule metadata: loading every rule costs a warm run half its time
        if output is not None:
            from neuron_migrate.report.terminal import audit_text

            output.parent.mkdir(parents=True, exist_ok=True)
            output.write_text(audit_text(report, notes), encoding="utf-8")
        terminal.show_audit(report, notes, fail_on, summary_only=output is not None)
        return
    rules = {**catalog.catalog(), **hazard_catalog()}
    text = render(report, output_format.value, rules=rules)
    if output is None:
        sys.stdout.write(text)
    else:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text, encoding="utf-8")
    terminal.show_audit(report, notes, fail_on, summary_only=True)


class RulesFormat(str, Enum):
    text = "text"
    markdown = "markdown"
    json = "json"


@app.command()
def rules(
    rule_id: Annotated[
        Optional[str], typer.Argument(help="Explain one rule (e.g. NM110); without it, list them all.")
    ] = None,
    output_format: Annotated[
        RulesFormat, typer.Option("--format", help="text (a table on a terminal), markdown or json.")
    ] = RulesFormat.text,
) -> None:
    """List the rules, or explain one with its before/after example."""
    rule = None
    if rule_id is not None:
        hazard = catalog.hazard_text(rule_id)
        if hazard is not None:
            _print_hazard(rule_id, hazard, output_format)
            return
        rule = catalog.find_rule(rule_id)
        if rule is None:
            raise _fail(_unknown_message(rule_id))

    if output_format is RulesFormat.markdown:
        typer.echo(catalog.markdown() if rule is None else catalog.rule_markdown(rule) + "\n", nl=False)
    elif output_format is RulesFormat.json:
        data = catalog.catalog() if rule is None else catalog.rule_dict(rule)
        typer.echo(json.dumps(data, indent=2))
    elif rule is None:
        _print_rule_table()
    else:
        _print_rule(rule)


def _print_hazard(hazard_id: str, text: str, output_format: RulesFormat) -> None:
    from neuron_migrate.analyzers.hazards import catalog as hazard_catalog

    if output_format is RulesFormat.json:
        typer.echo(json.dumps(hazard_catalog()[hazard_id.strip().upper()], indent=2))
    else:
        typer.echo(text, nl=False)


def _print_rule_table() -> None:
    from neuron_migrate.report.terminal import is_plain

    if is_plain(sys.stdout):
        typer.echo(catalog.table_text(), nl=False)
        return
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from neuron_migrate.report.terminal import SAFETY_STYLE

    table = Table("id", "safety", "title", "risks")
    for rid, safety, title, risks in catalog.table_rows():
        style = SAFETY_STYLE.get(safety)
        table.add_row(rid, f"[{style}]{safety}[/]" if style else escape(safety), escape(title), risks)
    Console(highlight=False).print(table)


def _print_rule(rule) -> None:
    from neuron_migrate.report.terminal import is_plain

    if is_plain(sys.stdout):
        typer.echo(catalog.rule_text(rule), nl=False)
        return
    from rich.console import Console
    from rich.markup import escape
    from rich.syntax import Syntax

    console = Console(highlight=False, soft_wrap=True)
    text = catalog.rule_text(rule)
    head, _, _ = text.partition("\nexample")
    console.print(escape(head.rstrip("\n")))
    example = rule.meta.example
    if example is None:
        return
    console.print()
    if example.before == example.after:
        console.print("example (left as it is; the finding goes to the report):")
        console.print(Syntax(example.before, catalog.FENCE_LANGUAGES.get(rule.meta.kind, "text")))
    else:
        console.print("example:")
        console.print(Syntax(catalog.example_diff(example, rule.meta.kind), "diff"))


@app.command(
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True, "allow_interspersed_args": False},
    options_metavar="[OPTIONS] (SCRIPT | -m MODULE) [ARGS]...",
)
def emulate(
    ctx: typer.Context,
    module: Annotated[
        Optional[str], typer.Option("-m", help="Run a module as `python -m` does, instead of a script.")
    ] = None,
    nproc: Annotated[
        Optional[int], typer.Option("--nproc", min=1, help="Start this many ranks with torchrun.")
    ] = None,
) -> None:
    """Run SCRIPT [ARGS...] with the "neuron" device emulated on the CPU (needs the runtime extra).

    Every argument after SCRIPT (or -m MODULE) goes to the program untouched; its exit code is passed through.
    """
    import os
    import subprocess

    program = ["-m", module, *ctx.args] if module else list(ctx.args)
    if not program:
        raise _fail("emulate needs a SCRIPT or -m MODULE to run")
    _require_torch("emulate")
    runner = ["-m", "neuron_migrate.analyzers.emulator", *program]
    if nproc:
        command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(nproc), *runner]
    else:
        command = [sys.executable, *runner]
    env = dict(os.environ)
    # the child imports neuron_migrate from wherever this process found it
    package_root = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
    from neuron_migrate.migrate.write import Terminated

    try:
        with _stoppable():
            code = subprocess.call(command, env=env)  # on an interrupt it kills the program before raising
    except Terminated:
        code = TERMINATED
    except KeyboardInterrupt:
        code = INTERRUPTED
    raise typer.Exit(code if code >= 0 else 128 - code)


class VerifyFormat(str, Enum):
    table = "table"
    json = "json"


@app.command(
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    options_metavar="[OPTIONS]",
)
def verify(
    ctx: typer.Context,
    legacy: Annotated[
        Path, typer.Argument(help="The legacy script or project folder, or git:REV (MIGRATED at a revision).",
                             show_default=False)
    ],
    migrated: Annotated[Path, typer.Argument(help="The migrated script, or its project folder.", show_default=False)],
    legacy_python: Annotated[
        Optional[str], typer.Option("--legacy-python", "--original-python",
                                    help="The original's interpreter: the legacy environment's (has torch_xla), or "
                                         "one with CUDA torch for a CUDA original.")
    ] = None,
    original: Annotated[
        Optional[str], typer.Option("--original", help="What LEGACY is: legacy (torch_xla) or cuda "
                                                       "(default: read from its source).")
    ] = None,
    original_records: Annotated[
        Optional[Path], typer.Option("--original-records", help="Compare the original's records kept by "
                                                                "--keep-records elsewhere instead of running it.")
    ] = None,
    script: Annotated[
        Optional[str], typer.Option("--script", help="The entry script inside both folders.")
    ] = None,
    steps: Annotated[int, typer.Option("--steps", help="Optimizer steps to run and compare (1 or more).")] = 10,
    rtol: Annotated[float, typer.Option("--rtol", help="Largest relative difference called equal (0 or more).")] = 1e-5,
    nproc: Annotated[int, typer.Option("--nproc", help="Ranks per side, as torchrun --nproc_per_node.")] = 1,
    legacy_nproc: Annotated[
        Optional[int], typer.Option("--legacy-nproc", help="Ranks of the legacy side, when not --nproc.")
    ] = None,
    legacy_args: Annotated[
        Optional[str], typer.Option("--legacy-args", help="More arguments for the legacy program (one string).")
    ] = None,
    no_launcher: Annotated[
        bool, typer.Option("--no-launcher", help="Run one rank as `python SCRIPT`, without torchrun's RANK and "
                                                 "WORLD_SIZE (for a script that goes distributed when they are set).")
    ] = False,
    seed: Annotated[int, typer.Option("--seed", help="Seed of torch, Python and NumPy on both sides.")] = 0,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds each side may take.")] = 600.0,
    legacy_env: Annotated[
        Optional[list[str]], typer.Option("--legacy-env", help="NAME=VALUE for the legacy side only (repeatable).")
    ] = None,
    env: Annotated[Optional[list[str]], typer.Option("--env", help="NAME=VALUE for both sides (repeatable).")] = None,
    allow_network: Annotated[
        bool, typer.Option("--allow-network", help="Let both sides reach the network (off: same local data).")
    ] = False,
    no_dropout: Annotated[
        bool, typer.Option("--no-dropout", help="Turn dropout off on both sides (XLA draws its masks elsewhere).")
    ] = False,
    output_format: Annotated[VerifyFormat, typer.Option("--format", help="What stdout shows.")] = VerifyFormat.table,
    report: Annotated[
        Optional[list[Path]], typer.Option("--report", help="Also write out.json, out.md or out.html (repeatable).")
    ] = None,
    keep_records: Annotated[
        Optional[Path], typer.Option("--keep-records", help="Keep both sides' records and output in this folder.")
    ] = None,
) -> None:
    """Run the legacy program and its rewrite on the same inputs and compare them step by step.

    Arguments after -- go to both programs. The first step, tensor and likely cause of a divergence are shown.

    Exit 0 when they agree within --rtol, 1 when they part, 2 when a side could not run (with its error).
    """
    import shlex

    from neuron_migrate.verify import Options, VerifyError
    from neuron_migrate.verify import verify as run_verification

    problem = _verify_usage(steps=steps, rtol=rtol, nproc=nproc, legacy_nproc=legacy_nproc, timeout=timeout,
                            report=report or [], keep_records=keep_records, original=original,
                            original_records=original_records, no_launcher=no_launcher)
    if problem:
        raise _fail(problem)
    try:
        split_args = shlex.split(legacy_args or "")
    except ValueError as exc:  # an unbalanced quote
        raise _fail(f"--legacy-args {legacy_args!r}: {exc}") from None
    options = Options(steps=steps, rtol=rtol, nproc=nproc, legacy_nproc=legacy_nproc, legacy_args=split_args,
                      seed=seed, timeout=timeout, allow_network=allow_network, no_dropout=no_dropout,
                      legacy_env=_assignments(legacy_env, "--legacy-env"),
                      env=_assignments(env, "--env"), original=original, original_records=original_records,
                      launcher=not no_launcher)
    targets = [(path, path.suffix.lstrip(".").lower()) for path in report or []]
    _require_torch("verify")
    if keep_records is not None:
        keep_records.mkdir(parents=True, exist_ok=True)
    try:
        with _interruptible():
            result = run_verification(legacy, migrated, list(ctx.args), legacy_python=legacy_python, script=script,
                                      options=options, keep=keep_records)
    except VerifyError as exc:
        raise _fail(str(exc)) from None
    renderers = _verification_renderers()
    for path, kind in targets:
        path.write_text(_verification_page(path, result) if kind == "html" else renderers[kind](result),
                        encoding="utf-8")
    sys.stdout.write(renderers["json" if output_format is VerifyFormat.json else "text"](result))
    raise typer.Exit({"equal": 0, "different": 1}.get(result.outcome, USAGE_ERROR))


VERIFY_REPORTS = ("json", "md", "html")


def _verification_renderers() -> dict:
    from neuron_migrate.report import verification_html, verification_md, verification_text

    def as_json(result) -> str:
        return json.dumps(result.to_dict(), indent=2) + "\n"

    return {"json": as_json, "md": verification_md.render, "html": verification_html.render,
            "text": verification_text.render}


def _verification_page(path: Path, result) -> str:
    """An existing rewrite report gets the verification as a section of its own; any other path a page."""
    from neuron_migrate.report import verification_html

    existing = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""
    return verification_html.embed(existing, result) or verification_html.render(result)


def _verify_usage(*, steps: int, rtol: float, nproc: int, legacy_nproc: int | None, timeout: float,
                  report: list[Path], keep_records: Path | None, original: str | None = None,
                  original_records: Path | None = None, no_launcher: bool = False) -> str:
    """What is wrong with verify's options, in one line (empty when nothing is): found before either side
    starts, since a run takes minutes and a report it cannot write would be lost at its end."""
    checks = [
        (steps >= 1, f"--steps {steps}: run at least 1 step"),
        (math.isfinite(rtol) and rtol >= 0, f"--rtol {rtol:g}: a tolerance is a finite number, 0 or more"),
        (nproc >= 1, f"--nproc {nproc}: run at least 1 rank"),
        (legacy_nproc is None or legacy_nproc >= 1, f"--legacy-nproc {legacy_nproc}: run at least 1 rank"),
        (math.isfinite(timeout) and timeout > 0, f"--timeout {timeout:g}: give a number of seconds above 0"),
        (original in (None, "legacy", "cuda"), f"--original {original}: legacy or cuda"),
        (original_records is None or original_records.is_dir(),
         f"--original-records {original_records}: no such folder"),
        (not no_launcher or (nproc == 1 and legacy_nproc in (None, 1)),
         "--no-launcher runs one rank per side: drop --nproc / --legacy-nproc"),
    ]
    for path in report:
        kind = path.suffix.lstrip(".").lower()
        checks.append((kind in VERIFY_REPORTS, f"--report {path}: the report is .json, .md or .html"))
        checks.append((not path.is_dir(), f"--report {path}: is a folder, name a file in it"))
        checks.append((path.parent.is_dir(), f"--report {path}: no such folder: {path.parent}"))
    if keep_records is not None:
        checks.append((not keep_records.exists() or keep_records.is_dir(),
                       f"--keep-records {keep_records}: is a file, name a folder"))
    return next((message for fine, message in checks if not fine), "")


def _assignments(values: list[str] | None, flag: str) -> dict[str, str]:
    out = {}
    for value in values or []:
        name, equals, text = value.partition("=")
        if not equals or not name:
            raise _fail(f"{flag} {value!r}: expected NAME=VALUE")
        out[name] = text
    return out


def main() -> None:
    _arm_interrupts()
    app(prog_name="neuron-migrate")


def _arm_interrupts() -> None:
    """Ctrl-C stops a run at once (the commands say so and exit 130); a second Ctrl-C while the first one is
    being handled ends the process immediately. SIGTERM takes the same path and exits 143."""
    import signal

    def first(signum, frame):
        signal.signal(signal.SIGINT, lambda *_: os._exit(INTERRUPTED))
        raise KeyboardInterrupt

    def terminate(signum, frame):
        if not _unwind_on_sigterm:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(TERMINATED)
        from neuron_migrate.migrate.write import Terminated

        signal.signal(signal.SIGTERM, lambda *_: os._exit(TERMINATED))
        raise Terminated

    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, first)
    if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, terminate)


if __name__ == "__main__":
    main()
