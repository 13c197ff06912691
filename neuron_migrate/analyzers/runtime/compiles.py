"""Compilations, recompilations and graph breaks of ``torch.compile``, recorded while they happen.

Sources in torch 2.13, each chosen because it is complete:
- the compile start callback: the call site (a walk of the live stack, skipping the frames that run code dynamo
  generated) and the input signature (the locals of the frame being compiled, read from dynamo's convert_frame);
- the ``recompiles`` log artifact: the guard failure of every cache entry (the metrics keep only the first);
- the compilation metrics: op count of each graph, and the first guard failure when the log said nothing;
- the ``graph_breaks`` log artifact: every break with its reason, hints and user traceback (``explain()`` and the
  counters each miss some kinds of break).
``torch._dynamo.reset()`` clears compile callbacks, so the monitor registers them again after every reset.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field

from neuron_migrate.analyzers.runtime.lines import Attribution, Location, live_frames, traceback_frames
from neuron_migrate.analyzers.runtime.reasons import normal_id

log = logging.getLogger(__name__)

RECOMPILES_LOGGER = "torch._dynamo.guards.__recompiles"
GRAPH_BREAK_LOGGERS = (
    "torch._dynamo.symbolic_convert.__graph_breaks",  # breaks inside a traced frame
    "torch._dynamo.convert_frame.__graph_breaks",  # breaks that make dynamo skip a whole frame
    "torch._dynamo.exc.__graph_breaks",  # backend failures that fall back to eager
)
RESUME_PREFIX = "torch_dynamo_resume_in_"
_RESUME_NAME = re.compile(r"^torch_dynamo_resume_in_(?P<fn>.+)_at_\d+$")
# names under which a module's own forward is compiled (torch.compile(module) wraps it in ``inner``)
_MODULE_ENTRY_POINTS = {"inner", "_call_impl", "_wrapped_call_impl", "__call__", "forward"}

_HEADER = re.compile(
    r"Graph break (?:\(user stack suppressed due to duplicate graph break\) )?in user code at (?P<file>.+):(?P<line>\d+)"
)
_GB_ID = re.compile(r"/gb/(gb\d+)\.html")
# PyTorch hints that do not help on the neuron backend (it compiles static shapes only) or are boilerplate
_SENTENCE_END = re.compile(r"(?<=[\w)`'\"])\.\s+(?=[A-Z])")  # not inside "e.g. clamping"
_UNHELPFUL_HINTS = ("report an issue", "fundamental", "capture_scalar_outputs", "capture_dynamic_output_shape_ops")


@dataclass
class CompileEvent:
    compile_id: str
    key: tuple | None  # the compiled function: file, first line, name, and the module it belongs to
    function: str  # its display name
    resume: bool  # the continuation dynamo made after a graph break
    call: Location | None  # the user line whose call started this compilation
    signature: dict[str, tuple]
    own: bool = False  # code of neuron-migrate itself (the emulator), not the user's
    failures: list[tuple[str, str]] = field(default_factory=list)  # (cache entry id, guard failure)
    graph_ops: int | None = None


@dataclass
class GraphBreak:
    title: str
    explanation: str
    hints: list[str]
    gb_id: str
    reason: str  # the full reason text
    where: Location | None  # the line dynamo could not trace
    user: Location | None  # the user's line it belongs to
    in_user_code: bool
    compile_id: str

    def hint(self) -> str:
        hint = next((h for h in self.hints if not any(word in h for word in _UNHELPFUL_HINTS)), "")
        first = _SENTENCE_END.split(hint, maxsplit=1)[0]  # the first sentence says it
        return first if not first or first.endswith((".", "!", "?")) else first + "."


def _drop_break_warning(record: logging.LogRecord) -> bool:
    if record.levelno != logging.WARNING or not record.name.startswith("torch._dynamo"):
        return True
    return not str(record.msg).lstrip().startswith("Graph break")


class _Handler(logging.Handler):
    def __init__(self, receive) -> None:
        super().__init__(logging.DEBUG)
        self._receive = receive

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._receive(record)
        except Exception:  # an analysis bug must never break the user's compilation
            log.debug("runtime analysis could not read a log record", exc_info=True)


def _is_module(value) -> bool:
    import torch

    return isinstance(value, torch.nn.Module)


def _describe(value) -> tuple:
    import torch

    if isinstance(value, torch.Tensor):
        return ("tensor", tuple(value.shape), str(value.dtype).removeprefix("torch."), bool(value.requires_grad))
    if value is None or isinstance(value, (bool, int, float, str)):
        return ("value", value)
    return ("object", type(value).__name__)


def _add(signature: dict, name: str, value) -> None:
    import torch

    signature[name] = _describe(value)
    # one level into containers: a batch dict or a tuple of tensors passed as one argument
    if isinstance(value, Mapping) and not isinstance(value, torch.Tensor):
        items = [(f"{name}['{k}']", v) for k, v in list(value.items())[:64] if isinstance(k, str)]
    elif isinstance(value, (list, tuple)) and len(value) <= 64:
        items = [(f"{name}[{i}]", v) for i, v in enumerate(value)]
    else:
        items = []
    for inner, v in items:
        if isinstance(v, torch.Tensor):
            signature[inner] = _describe(v)


def signature(local_values: Mapping) -> dict[str, tuple]:
    """Input descriptors of a compiled frame, named as dynamo's guards name them (after ``clean_name``)."""
    import torch

    found: dict[str, tuple] = {}
    for name, value in local_values.items():
        if _is_module(value):
            continue
        if name == "kwargs" and isinstance(value, Mapping):
            for key, item in value.items():
                _add(found, str(key), item)
        elif name == "args" and isinstance(value, tuple):
            for i, item in enumerate(value):
                _add(found, f"args[{i}]", item)
        else:
            _add(found, name, value)
    found["(grad mode)"] = ("value", torch.is_grad_enabled())
    return found


def _owner(local_values: Mapping):
    """The module a compiled frame belongs to: torch.compile(module) calls it ``fn``, a method has ``self``, a
    decorator's wrapper gets it as the first positional argument."""
    args = local_values.get("args")
    for candidate in (local_values.get("fn"), local_values.get("self"),
                      args[0] if isinstance(args, tuple) and args else None):
        if _is_module(candidate):
            return candidate
    return None


def signature_distance(a: dict, b: dict) -> int:
    return sum(1 for name in a.keys() | b.keys() if a.get(name) != b.get(name))


def _frame_being_compiled(start):
    """The frame dynamo is converting: a local of convert_frame's __call__ further up the stack."""
    frame = start
    while frame is not None:
        if frame.f_code.co_filename.endswith("convert_frame.py"):
            candidate = frame.f_locals.get("frame")
            if candidate is not None and hasattr(candidate, "f_code") and hasattr(candidate, "f_locals"):
                return candidate
        frame = frame.f_back
    return None


def _reason_parts(reason: str) -> tuple[str, str, list[str], str]:
    lines = [line.strip() for line in reason.splitlines()]
    explanation_at = next((i for i, line in enumerate(lines) if line.startswith("Explanation:")), None)
    if explanation_at is None:
        title = next((line for line in lines if line), "graph break")
        explanation = ""
    else:
        # the break's type is the line above the explanation (dynamo may insert the higher-order op's name there)
        title = next((line for line in reversed(lines[:explanation_at])
                      if line and not line.startswith("Higher Order Operator:")), "graph break")
        explanation = lines[explanation_at][len("Explanation:"):].strip()
    title = title.removeprefix("Graph Break Reason:").strip()
    hints = [line[len("Hint:"):].strip() for line in lines if line.startswith("Hint:")]
    gb = _GB_ID.search(reason)
    return title, explanation, hints, gb.group(1) if gb else ""


def parse_break(message: str, exception_text: str = ""):
    """(reason, break location (file, line) or None, traceback frames innermost first) of a graph-break record."""
    header = _HEADER.search(message)
    if header:
        body = message[header.end():]
        reason = body.split("\nUser code traceback:")[0].split("\nStack variable source attribution:")[0]
        reason = reason.strip()
        trace = body.split("\nUser code traceback:", 1)[1] if "\nUser code traceback:" in body else ""
        return reason, (header["file"], int(header["line"])), traceback_frames(trace)
    frames = traceback_frames(message)
    reason = exception_text or message
    return reason.strip(), frames[0] if frames else None, frames


class CompileMonitor:
    def __init__(self, attribution: Attribution) -> None:
        self.attribution = attribution
        self.events: dict[str, CompileEvent] = {}
        self.breaks: list[GraphBreak] = []
        self._pending_failures: dict[str, str] = {}  # the recompile log comes before the start callback
        self._metrics_read: list = []  # metrics entries already read (or older than the monitor); kept alive so
        self._metrics_ids: set[int] = set()  # that their ids stay unique
        self._generation = 0  # compile ids start again at 0/0 after torch._dynamo.reset()
        self._full_stacks: dict[tuple, Location | None] = {}  # break site -> user line, from a full record
        self._start = self._on_start
        self._end = self._on_end
        self._handlers: list[tuple[logging.Logger, logging.Handler, int, bool]] = []
        self._artifacts_added: list[str] = []
        self._handler_api = None
        self._filtered: list[logging.Handler] = []

    # ----- install / uninstall -----
    def install(self) -> None:
        from torch._dynamo.callback import callback_handler

        self._handler_api = callback_handler
        self._register()
        self._skip_metrics()
        original_clear = callback_handler.clear

        def clear_then_register() -> None:
            self.drain()
            original_clear()
            self._generation += 1
            self._register()

        callback_handler.clear = clear_then_register  # torch._dynamo.reset() would drop our callbacks
        self._listen(RECOMPILES_LOGGER, "recompiles", self._on_recompile_log)
        for name in GRAPH_BREAK_LOGGERS:
            self._listen(name, "graph_breaks", self._on_break_log)
        if "graph_breaks" in self._artifacts_added:
            self._quiet_break_warnings()

    def _quiet_break_warnings(self) -> None:
        """Dynamo also warns about some breaks (``Tensor.item()``) on stderr, many lines each; the
        report already has them, with the user line. Only when the user did not ask for break logs."""
        for name in ("torch", "torch._dynamo"):
            for handler in logging.getLogger(name).handlers:
                handler.addFilter(_drop_break_warning)
                self._filtered.append(handler)

    def _skip_metrics(self) -> None:
        try:
            from torch._dynamo.utils import get_compilation_metrics

            for entry in get_compilation_metrics():
                self._mark_read(entry)
        except Exception:  # metrics are a PyTorch internal: without them, only graph counts are missing
            log.debug("compilation metrics unavailable", exc_info=True)

    def _mark_read(self, entry) -> None:
        self._metrics_read.append(entry)
        self._metrics_ids.add(id(entry))

    def event_id(self, compile_id: str) -> str:
        compile_id = normal_id(compile_id)
        return compile_id if self._generation == 0 else f"{compile_id}@{self._generation}"

    def _register(self) -> None:
        api = self._handler_api
        if self._start not in api.start_callbacks:
            api.register_start_callback(self._start)
        if self._end not in api.end_callbacks:
            api.register_end_callback(self._end)

    def _listen(self, logger_name: str, artifact: str, receive) -> None:
        from torch._logging._internal import log_state

        if not log_state.is_artifact_enabled(artifact):
            log_state.enable_artifact(artifact)
            self._artifacts_added.append(artifact)
        logger = logging.getLogger(logger_name)
        handler = _Handler(receive)
        self._handlers.append((logger, handler, logger.level, logger.propagate))
        if artifact in self._artifacts_added:
            logger.propagate = False  # the user did not ask for these logs: keep their terminal quiet
        logger.setLevel(logging.DEBUG)
        logger.addHandler(handler)

    def uninstall(self) -> None:
        from torch._logging._internal import log_state

        self.drain()
        api = self._handler_api
        if api is not None:
            api.__dict__.pop("clear", None)
            if self._start in api.start_callbacks:
                api.remove_start_callback(self._start)
            if self._end in api.end_callbacks:
                api.remove_end_callback(self._end)
        for logger, handler, level, propagate in self._handlers:
            logger.removeHandler(handler)
            logger.setLevel(level)
            logger.propagate = propagate
        self._handlers.clear()
        for handler in self._filtered:
            handler.removeFilter(_drop_break_warning)
        self._filtered.clear()
        for artifact in self._artifacts_added:
            log_state.artifact_names.discard(artifact)
        self._artifacts_added.clear()

    # ----- compile events -----
    def _on_start(self, args) -> None:
        try:
            self._record_start(self.event_id(args.compile_id), sys._getframe(1))
        except Exception:  # an analysis bug must never break the user's compilation
            log.debug("runtime analysis could not record a compilation", exc_info=True)
        self.drain()

    def _on_end(self, args) -> None:
        self.drain()

    def _record_start(self, compile_id: str, start) -> None:
        if compile_id in self.events:
            return  # a restarted attempt of the same compilation
        from torch._dynamo.convert_frame import output_codes

        compiled = _frame_being_compiled(start)
        code = getattr(compiled, "f_code", None)
        local_values = dict(compiled.f_locals) if compiled is not None else {}
        owner = _owner(local_values)

        def generated(frame) -> bool:
            return frame.f_code in output_codes or frame.f_code.co_name.startswith(RESUME_PREFIX)

        call, _ = self.attribution.locate(live_frames(start, generated))
        key = None
        name, resume, own = "<unknown>", False, False
        if code is not None:
            key = (code.co_filename, code.co_firstlineno, code.co_name, id(owner) if owner is not None else None)
            match = _RESUME_NAME.match(code.co_name)
            resume = match is not None
            name = match["fn"] if match else code.co_name
            if owner is not None:
                # a method of the module by its name (model.generate); forward and the wrappers around it
                # (torch.compile's, a library's decorators) by the module's class
                method = name not in _MODULE_ENTRY_POINTS and callable(getattr(type(owner), name, None))
                name = f"{type(owner).__name__}.{name}" if method else type(owner).__name__
            own = self.attribution.is_own(code.co_filename)
        event = CompileEvent(compile_id, key, name, resume, call, signature(local_values), own)
        text = self._pending_failures.pop(compile_id, None)
        if text:
            self._set_failures(event, text)
        self.events[compile_id] = event

    def _set_failures(self, event: CompileEvent, text: str) -> None:
        from neuron_migrate.analyzers.runtime.reasons import split_failures

        event.failures = [(self.event_id(entry), failure) for entry, failure in split_failures(text)]

    def _on_recompile_log(self, record: logging.LogRecord) -> None:
        from torch._guards import CompileContext

        compile_id = self.event_id(str(CompileContext.current_compile_id()))
        if compile_id in self.events:
            self._set_failures(self.events[compile_id], record.getMessage())
        else:
            self._pending_failures[compile_id] = record.getMessage()

    def drain(self) -> None:
        """Read the compilation metrics of finished compilations (dynamo keeps only the last 64)."""
        try:
            from torch._dynamo.utils import get_compilation_metrics

            metrics = get_compilation_metrics()
        except Exception:  # noqa: BLE001
            return
        for entry in metrics:
            if id(entry) in self._metrics_ids:
                continue
            event = self.events.get(self.event_id(str(entry.compile_id)))
            if event is None:
                continue
            self._mark_read(entry)
            event.graph_ops = entry.graph_op_count
            if not event.failures and entry.recompile_reason:
                self._set_failures(event, entry.recompile_reason)
            if event.key is None and entry.co_name:
                event.key = (entry.co_filename, entry.co_firstlineno, entry.co_name, None)
                match = _RESUME_NAME.match(entry.co_name)
                event.resume = match is not None
                event.function = match["fn"] if match else entry.co_name
                event.own = self.attribution.is_own(entry.co_filename or "")

    # ----- graph breaks -----
    def _on_break_log(self, record: logging.LogRecord) -> None:
        from torch._dynamo.convert_frame import output_codes
        from torch._guards import CompileContext

        exception = record.exc_info[1] if record.exc_info else None
        reason, site, frames = parse_break(record.getMessage(), str(exception) if exception else "")
        title, explanation, hints, gb_id = _reason_parts(reason)
        where = self.attribution.location(*site) if site else None
        user = None
        memo = (site, title)
        if frames:
            user, _ = self.attribution.locate(frames)
            self._full_stacks[memo] = user
        elif memo in self._full_stacks:
            user = self._full_stacks[memo]
        elif where is not None and self.attribution.is_user(where.filename):
            user = where
        else:
            # a repeated break logged without its traceback: the live stack still holds the call site
            user, _ = self.attribution.locate(
                live_frames(sys._getframe(), lambda f: f.f_code in output_codes
                            or f.f_code.co_name.startswith(RESUME_PREFIX))
            )
        self.breaks.append(GraphBreak(
            title=title, explanation=explanation, hints=hints, gb_id=gb_id, reason=reason, where=where,
            user=user or where, in_user_code=bool(where and self.attribution.is_user(where.filename)),
            compile_id=self.event_id(str(CompileContext.current_compile_id())),
        ))
