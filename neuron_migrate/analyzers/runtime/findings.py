"""Runtime records -> report findings: one finding per (hazard, user line), its message the list of what was seen
there, its fingerprint the one the static audit gives the same line."""

from __future__ import annotations

from dataclasses import dataclass, field

from neuron_migrate.analyzers.hazards import HAZARDS, audit_fingerprint
from neuron_migrate.analyzers.runtime.buckets import Bucket, graphs_after, suggest_bucket
from neuron_migrate.analyzers.runtime.compiles import CompileEvent, CompileMonitor, signature_distance
from neuron_migrate.analyzers.runtime.lines import Location
from neuron_migrate.analyzers.runtime.reasons import CARRIED, HOOKS, IDENTITY, OTHER, Change, plain
from neuron_migrate.analyzers.runtime.recorder import OpHit
from neuron_migrate.analyzers.runtime.twins import break_twin
from neuron_migrate.report.model import MANUAL, Finding, Span

MAX_CLAUSES = 6
MAX_DETAILS = 6


@dataclass
class _Item:
    rule: str
    location: Location
    clauses: dict[str, int] = field(default_factory=dict)
    fix: str = ""


class FindingSet:
    """Collects clauses per (rule, file, line); ``build`` turns each group into one Finding."""

    def __init__(self) -> None:
        self._items: dict[tuple[str, str, int], _Item] = {}

    def add(self, rule: str, location: Location | None, clause: str, *, count: int = 1, fix: str = "") -> None:
        if location is None:
            return
        key = (rule, location.path, location.line)
        item = self._items.get(key)
        if item is None:
            item = self._items[key] = _Item(rule, location, fix=fix)
        item.clauses[clause] = item.clauses.get(clause, 0) + count
        item.fix = item.fix or fix

    def build(self) -> list[Finding]:
        out = []
        for item in self._items.values():
            hazard = HAZARDS[item.rule]
            parts = [f"{text} (x{n})" if n > 1 else text for text, n in item.clauses.items()]
            if len(parts) > MAX_CLAUSES:
                parts = parts[:MAX_CLAUSES] + [f"and {len(parts) - MAX_CLAUSES} more"]
            loc = item.location
            out.append(Finding(
                rule=item.rule,
                message="; ".join(parts),
                path=loc.path,
                span=Span(loc.line, loc.column, loc.line, loc.end_column),
                safety=MANUAL,
                applied=False,
                severity=hazard.severity,
                risks=("performance",),
                before=loc.text,
                fix=item.fix or hazard.fix,
                evidence="runtime",
                fingerprint=audit_fingerprint(item.rule, loc.path, loc.text),
            ))
        out.sort(key=lambda f: (f.path, f.span.line, f.rule))
        return out


# ----- recompilations (NA501) -----
def recompile_change(event: CompileEvent, events: dict[str, CompileEvent]) -> Change:
    """The guard failure that explains this recompilation: dynamo reports the first failing guard of every cache
    entry; the entry compiled for the inputs most like this call's fails on the guard that matters."""
    new_values = {name: d[1] for name, d in event.signature.items() if d[0] == "value"}
    best: tuple[int, Change] | None = None
    for entry_id, text in event.failures:
        change = plain(text, new_values)
        if change.kind == HOOKS:
            return change
        prior = events.get(entry_id)
        distance = signature_distance(prior.signature, event.signature) if prior is not None else 50
        if change.kind in (IDENTITY, OTHER):
            distance += 100
        if best is None or distance < best[0]:
            best = (distance, change)
    return best[1] if best else Change("guard failed", "", OTHER)


@dataclass
class _Recompiles:
    function: str
    location: Location
    count: int = 0
    continuations: int = 0  # recompilations of the code dynamo resumes after a graph break
    changes: dict[str, list[str]] = field(default_factory=dict)
    kinds: dict[str, str] = field(default_factory=dict)


def recompilations(monitor: CompileMonitor, default: Location | None) -> tuple[list[_Recompiles], int, int]:
    """(recompilations grouped by call line and function, how many, how many the analysis itself caused)."""
    groups: dict[tuple, _Recompiles] = {}
    seen_keys: set = set()
    total = caused_by_us = 0
    for event in monitor.events.values():
        if event.own:
            continue
        first_time = event.key not in seen_keys
        seen_keys.add(event.key)
        if not event.failures:
            continue
        change = recompile_change(event, monitor.events)
        if change.kind == HOOKS:
            caused_by_us += 1
            continue
        if first_time and change.kind == IDENTITY:
            continue  # the first compilation of another module sharing the compiled wrapper's code
        total += 1
        location = event.call or default
        if location is None:
            continue
        group = groups.setdefault((location.path, location.line, event.function),
                                  _Recompiles(event.function, location))
        if event.resume:
            group.continuations += 1
        else:
            group.count += 1
        details = group.changes.setdefault(change.subject, [])
        group.kinds[change.subject] = change.kind
        if change.detail and change.detail not in details:
            details.append(change.detail)
    return list(groups.values()), total, caused_by_us


def recompile_clause(group: _Recompiles) -> str:
    subjects = [s for s in group.changes if group.kinds[s] != CARRIED] or list(group.changes)
    parts = []
    for subject in subjects:
        details = group.changes[subject]
        shown = ", ".join(details[:MAX_DETAILS]) + (", ..." if len(details) > MAX_DETAILS else "")
        parts.append(f"{subject} ({shown})" if shown else subject)
    times = group.count or group.continuations
    return f"`{group.function}` was recompiled {times} time{'s' if times != 1 else ''}: " + "; ".join(parts)


# ----- input shapes (NA503) -----
def _what(dim: int) -> str:
    return {0: "batch sizes", 1: "sequence lengths"}.get(dim, f"sizes of dim {dim}")


@dataclass
class ShapeAdvice:
    function: str
    location: Location
    shapes: int
    graphs: int
    text: str
    fix: str


def shape_advice(monitor: CompileMonitor, default: Location | None) -> list[ShapeAdvice]:
    """Per compiled function and calling line: the dimensions whose size varied, and the padding that collapses
    them. Calls from another line (training vs generate) have shapes of their own and are advised apart."""
    by_function: dict[tuple, list[CompileEvent]] = {}
    for event in monitor.events.values():
        if not event.own and not event.resume and event.key is not None:
            where = (event.call.path, event.call.line) if event.call is not None else None
            by_function.setdefault((event.key, where), []).append(event)
    advice = []
    for events in by_function.values():
        tensors = [{n: d for n, d in e.signature.items() if d[0] == "tensor"} for e in events]
        names = set(tensors[0]).intersection(*tensors[1:]) if tensors else set()
        # (name, dim) -> the size seen at each compilation; dims that took one size only do not matter
        varying: dict[tuple[str, int], tuple[int, ...]] = {}
        for name in sorted(names):
            ranks = {len(t[name][1]) for t in tensors}
            if len(ranks) != 1:
                continue
            for dim in range(ranks.pop()):
                sizes = tuple(t[name][1][dim] for t in tensors)
                if len(set(sizes)) > 1:
                    varying[(name, dim)] = sizes
        # inputs that vary together (input_ids, attention_mask, labels) are one dimension of the problem
        together: dict[tuple[int, tuple[int, ...]], list[str]] = {}
        for (name, dim), sizes in varying.items():
            together.setdefault((dim, sizes), []).append(name)
        axes = list(together.items())
        buckets: dict[int, Bucket] = {}
        for i, ((dim, sizes), _names) in enumerate(axes):
            bucket = suggest_bucket(sizes)
            if bucket is not None:
                buckets[i] = bucket
        if not buckets:
            continue
        signatures = [tuple(sizes[j] for (_, sizes), _ in axes) for j in range(len(events))]
        before = len(set(signatures))
        after = graphs_after(signatures, buckets)
        if before < 3 or after >= before:
            continue
        parts, fixes = [], []
        for i, ((dim, sizes), group_names) in enumerate(axes):
            if i not in buckets:
                continue
            shown = ", ".join(f"`{n}`" for n in group_names[:3]) + (", ..." if len(group_names) > 3 else "")
            distinct = sorted(set(sizes))
            parts.append(f"{len(distinct)} {_what(dim)} of {shown} between {distinct[0]} and {distinct[-1]} -> "
                         f"{buckets[i].describe()}")
            b = buckets[i]
            fixes.append(f'padding="max_length", max_length={b.max_length}' if b.max_length
                         else f"pad_to_multiple_of={b.multiple}")
        location = events[0].call or default
        if location is None:
            continue
        function = events[0].function
        text = (f"`{function}` was compiled for {before} input shapes: " + "; ".join(parts)
                + f": {after} graph{'s' if after != 1 else ''} instead of {before}")
        fix = "pad in the tokenizer or data collator: " + ", ".join(dict.fromkeys(fixes))
        advice.append(ShapeAdvice(function, location, before, after, text, fix))
    return advice


# ----- graph breaks (NA502 and their static twins) -----
def break_clause(item) -> str:
    clause = f"graph break: {item.title}" + (f": {item.explanation}" if item.explanation else "")
    if item.gb_id:
        clause += f" [{item.gb_id}]"
    if item.where is not None and item.user is not None and item.where != item.user:
        clause += f" at {item.where.short()}"
    hint = item.hint()
    if hint:
        clause += f"; hint: {hint}"
    return clause


def add_breaks(found: FindingSet, monitor: CompileMonitor) -> tuple[int, int]:
    """(breaks in the user's program, breaks inside neuron-migrate's own code)."""
    counted = own = 0
    for item in monitor.breaks:
        if item.where is not None and monitor.attribution.is_own(item.where.filename):
            own += 1
            continue
        counted += 1
        found.add("NA502", item.user, break_clause(item))
        if item.in_user_code and item.where is not None:
            twin = break_twin(item.reason, item.where.text)
            if twin:
                found.add(twin, item.where, f"confirmed at runtime: graph break on {item.title}"
                                            + (f" [{item.gb_id}]" if item.gb_id else ""))
    return counted, own


# ----- ops (NA201.., NA504, NA505) -----
def add_ops(found: FindingSet, hits: list[OpHit], window: str) -> None:
    for hit in hits:
        if hit.rule == "NA505":
            clause = f"custom op `{hit.op}` ran {hit.count} time{'s' if hit.count != 1 else ''} {window}"
        else:
            clause = f"`{hit.op}` ran {hit.count} time{'s' if hit.count != 1 else ''} {window}"
        if hit.origin is not None:
            clause += f", called from {hit.origin.short()}"
        found.add(hit.rule, hit.user, clause)


def add_fallbacks(found: FindingSet, fallbacks: list[tuple[str, int | None]], first_seen: dict[str, Location],
                  default: Location | None) -> None:
    for op, count in fallbacks:
        location = first_seen.get(op) or first_seen.get(op.split(".")[0]) or default
        times = f" {count} time{'s' if count != 1 else ''}" if count else ""
        found.add("NA506", location, f"`{op}` ran on the CPU{times} (no Neuron kernel)")
