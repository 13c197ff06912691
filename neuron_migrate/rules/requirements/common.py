"""What the requirements rules share: helpers, constants and base classes."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from packaging.specifiers import InvalidSpecifier, Specifier
from packaging.version import InvalidVersion, Version

from neuron_migrate.rules.base import MANUAL, REVIEW, SAFE, Example, Rule, provides
from neuron_migrate.rules.requirements.cuda_table import CUDA_PACKAGES, CUDA_PREFIXES

NEURON_DOCS = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest"
DOCS_BEST_PRACTICES = f"{NEURON_DOCS}/torch/reference/best-practices-pytorch-neuron.html"
DOCS_QUICKSTART = f"{NEURON_DOCS}/torch/get-started/quickstart-torch-neuron.html"
DOCS_RESOURCES = f"{NEURON_DOCS}/torch/reference/torchneuron-resources.html"
DOCS_TRANSITION = f"{NEURON_DOCS}/about-neuron/announcements/neuron2.x/announce-transition-pytorch-trainium.html"
DOCS_DISTRIBUTED = f"{NEURON_DOCS}/torch/guides/torch-distributed.html"
DOCS_HASHES = "https://pip.pypa.io/en/stable/topics/secure-installs/"
NEURON_INDEX = "pip.repos.neuron.amazonaws.com"
# What becomes of a requirement on a package.
REMOVE = "remove"  # the package has no place on TorchNeuron
FLOOR = "floor"  # a pin that keeps the package below what TorchNeuron needs becomes ">=floor"
REPLACE = "replace"  # optimum-neuron: the stock libraries its extras stand for
DROP = "drop"  # removed, and the code that used it still has to be ported by hand
UNPIN = "unpin"  # kept; an upper-bounded pin is dropped so torch-neuronx can pick the release
KEEP_MARKED = "keep-marked"  # kept as written, with a TODO naming the counterpart (the code still imports it)


@dataclass(frozen=True)
class Package:
    rule: str
    action: str
    why: str  # the report sentence and, for review / manual rows, the marker
    floor: str = ""
    # Rewritten only in files that also name the Neuron stack: a torch or transformers pin in an
    # unrelated project is none of this tool's business.
    neuron_only: bool = False
    # REMOVE: requirements to add in its place unless the file already requires them.
    instead: tuple[str, ...] = ()
    # "cuda": a row of the --from cuda rules. Such a package says nothing about the Neuron stack.
    source: str = "legacy"


_NXD_PORT = "port the code marked NM42x (NM420 gives the plan) to DeviceMesh / DTensor / FSDP2"
_NXD_INFERENCE = 'load the model with transformers on device_map="neuron", or serve it with vLLM Neuron'
PACKAGES: dict[str, Package] = {
    "torch-xla": Package(
        "NM530", REMOVE, "the PyTorch/XLA bridge: TorchNeuron runs on stock PyTorch", instead=("torch>=2.13",)
    ),
    "libneuronxla": Package("NM530", REMOVE, "the PyTorch/XLA plug-in of the Neuron runtime, unused by TorchNeuron"),
    "torch-neuronx": Package(
        "NM531",
        FLOOR,
        "torch-neuronx 2.14+ is TorchNeuron, the native backend: Trn2/Trn3 only, and the code must be migrated "
        "off torch_xla with it",
        floor="2.14",
    ),
    "optimum-neuron": Package(
        "NM532",
        REPLACE,
        "optimum-neuron pins the XLA stack; the stock libraries run on the neuron device",
    ),
    "neuronx-distributed": Package("NM533", DROP, f"it needs the XLA stack; {_NXD_PORT}"),
    "neuronx-distributed-training": Package(
        "NM533", DROP, "NxD Training needs the XLA stack; train with Trainer / TRL or torchrun + FSDP2 instead"
    ),
    "neuronx-distributed-inference": Package("NM533", DROP, f"it needs the XLA stack; {_NXD_INFERENCE}"),
    "transformers-neuronx": Package("NM533", DROP, f"it needs the XLA stack; {_NXD_INFERENCE}"),
    "neuronx-cc": Package(
        "NM534",
        UNPIN,
        "torch-neuronx 2.14+ brings the compiler release it was built with; pin neuronx-cc only to that one",
    ),
    "torch": Package(
        "NM535",
        FLOOR,
        "TorchNeuron needs PyTorch 2.13 or 2.14: re-pin what was built for the old torch (torchvision, torchaudio)",
        floor="2.13",
        neuron_only=True,
    ),
    "transformers": Package(
        "NM536",
        FLOOR,
        "the neuron device needs Transformers 5: check the code against the v5 breaking changes",
        floor="5.0",
        neuron_only=True,
    ),
    "accelerate": Package(
        "NM536",
        FLOOR,
        "Accelerate 1.13 is the first release that knows the neuron device",
        floor="1.13",
        neuron_only=True,
    ),
}
PACKAGES.update({name: Package(rule, action, why, source="cuda") for name, (rule, action, why) in CUDA_PACKAGES.items()})
# Families of wheels named by a prefix (the CUDA runtime wheels torch pulls itself).
PACKAGE_PREFIXES: dict[str, Package] = {
    prefix: Package(rule, action, why, source="cuda") for prefix, (rule, action, why) in CUDA_PREFIXES.items()
}
# conda names of the same projects
ALIASES = {"pytorch": "torch"}
# optimum-neuron extra -> the stock requirements that stand in for it ("" is the package itself).
# Only what the extra was there for: a project that named no training extra gets no TRL or PEFT.
OPTIMUM_EXTRAS: dict[str, tuple[str, ...]] = {
    "": ("transformers>=5.0",),
    "training": ("trl", "peft", "accelerate>=1.13"),
    "neuronx": ("torch-neuronx>=2.14",),
    "diffusers": ("diffusers",),
    "sentence-transformers": ("sentence-transformers",),
}
# Stock libraries a project may need without having named the extra: the marker mentions them.
OPTIONAL_STOCK = ("trl", "peft", "diffusers")
# Extras that installed optimum-neuron's own test and lint tools.
OPTIMUM_DEV_EXTRAS = frozenset({"tests", "quality", "diffusers-tests", "vllm-tests"})
OPTIMUM_EXTRA_HINTS = {"vllm": "serve with vLLM Neuron (install it from its own instructions)"}
INDEX_MARKER = (
    "TorchNeuron wheels come from this repository too, but its XLA-era releases are not TorchNeuron: "
    "check that every requirement resolves to a 2.14+ build"
)
HASH_MARKER = "hashes of this changed requirement were dropped: re-lock the file (pip-compile --generate-hashes)"
# A VCS URL without #egg= names its project only through its repository: one named like a legacy
# package (a fork too), or one of these.
REPOSITORIES = {"pytorch/xla": "torch-xla"}
# Words that make a file worth reading at all (the prefilter is a byte scan, so both spellings).
TRIGGERS: tuple[bytes, ...] = tuple(
    sorted(
        {
            spelling.encode()
            for name in PACKAGES
            if not PACKAGES[name].neuron_only and PACKAGES[name].source == "legacy"
            for spelling in (name, name.replace("-", "_"))
        }
        | {NEURON_INDEX.encode()}
        | {path.encode() for path in REPOSITORIES}
    )
)
# ----- requirement specifiers -----------------------------------------------------------------

Clause = tuple[str, str]  # (operator, version)
_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")
_EXTRAS = re.compile(r"\s*\[([^\]]*)\]")
_CLAUSE = re.compile(r"\s*(===|==|!=|~=|<=|>=|<|>)\s*([A-Za-z0-9_.*+!-]+)")
_URL = re.compile(r"\s*@\s*(\S+)")
_MARKER = re.compile(r"\s*;(.*)$", re.DOTALL)
_EGG = re.compile(r"#egg=([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)(\[[^\]]*\])?")
_WHEEL = re.compile(r"(?:^|[/\\=])(?P<name>[A-Za-z0-9_.]+)-(?P<version>\d[^-/]*)-[^/]*\.whl$")
_VCS_REPOSITORY = re.compile(
    r"(?:git|hg|svn|bzr)\+[a-z]+://(?:[^@/]+@)?[^/]+/((?:[^/@#?]+/)*([^/@#?]+?))(?:\.git)?/?(?:[@#?].*)?$",
    re.IGNORECASE,
)


def _repository_project(url: str) -> str | None:
    """The legacy project a VCS URL builds, from its repository path."""
    match = _VCS_REPOSITORY.match(url)
    if match is None:
        return None
    path, name = match.group(1).lower(), canonical(match.group(2))
    if path in REPOSITORIES:
        return REPOSITORIES[path]
    package = PACKAGES.get(name)
    return name if package is not None and not package.neuron_only else None


def canonical(name: str) -> str:
    """PEP 503 name: ``Torch_XLA`` and ``torch-xla`` are the same project."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class Requirement:
    """One dependency as written. ``start``/``end`` delimit the part a rewrite replaces (name,
    extras and version, or the URL) in the text it was parsed from; the environment marker after
    it runs to ``marker_end`` and is kept."""

    name: str
    extras: tuple[str, ...] = ()
    extras_text: str = ""
    # OR of ANDs; one alternative for PEP 440, several for Poetry's "||" and conda's "|"
    alternatives: tuple[tuple[Clause, ...], ...] = ((),)
    written: str = ""
    url: str = ""
    start: int = 0
    end: int = 0
    marker_end: int = 0

    @property
    def key(self) -> str:
        key = canonical(self.name)
        return ALIASES.get(key, key)

    @property
    def pinned(self) -> bool:
        return any(alternative for alternative in self.alternatives)


def parse_requirement(text: str, start: int = 0, end: int | None = None) -> Requirement | None:
    """A PEP 508 requirement in ``text[start:end]`` (the whole slice must be one), else None.
    A URL requirement, a wheel file path or a VCS URL counts when its file name or ``#egg=`` tells
    the project."""
    end = len(text) if end is None else end
    body = text[:end]
    pos = start + len(body[start:]) - len(body[start:].lstrip())
    token = body[pos:end].strip()
    named_url = re.match(_NAME.pattern + r"\s*(?:\[[^\]]*\])?\s*@", token)
    if not named_url and (token.endswith(".whl") or token.startswith((".", "/")) or "://" in token):
        return _url_requirement(body, pos, end)
    name = _NAME.match(body, pos)
    if name is None:
        return None
    cursor = name.end()
    extras_text, extras = "", ()
    match = _EXTRAS.match(body, cursor)
    if match:
        extras_text = match.group(0).strip()
        extras = tuple(canonical(e.strip()) for e in match.group(1).split(",") if e.strip())
        cursor = match.end()
    url, clauses = "", []
    spec_end = cursor
    match = _URL.match(body, cursor)
    if match:
        url = match.group(1)
        spec_end = cursor = match.end()
        clauses = _wheel_clauses(url, name.group(0))
    else:
        cursor, clauses = _specifier(body, cursor)
        if cursor is None:
            return None
        spec_end = cursor
    rest = body[cursor:end]
    if rest.strip():
        marker = _MARKER.match(rest)
        # A marker after a URL needs a space before the ";" (pip reads "x.whl;y" as one URL).
        if marker is None or (url and not rest[:1].isspace()):
            return None
    marker_end = len(body[:end].rstrip())
    return Requirement(
        name=name.group(0),
        extras=extras,
        extras_text=extras_text,
        alternatives=(tuple(clauses),),
        written=body[pos:spec_end],
        url=url,
        start=pos,
        end=spec_end,
        marker_end=max(marker_end, spec_end),
    )


def _specifier(text: str, cursor: int) -> tuple[int | None, list[Clause]]:
    """The version clauses from ``cursor`` (optionally in parentheses): (end, clauses)."""
    clauses: list[Clause] = []
    paren = re.compile(r"\s*\(").match(text, cursor)
    if paren:
        cursor = paren.end()
    while True:
        match = _CLAUSE.match(text, cursor)
        if match is None:
            break
        clauses.append((match.group(1), match.group(2)))
        cursor = match.end()
        comma = re.compile(r"\s*,").match(text, cursor)
        if comma is None:
            break
        cursor = comma.end()
    if paren:
        close = re.compile(r"\s*\)").match(text, cursor)
        if close is None:
            return None, []
        cursor = close.end()
    return cursor, clauses


def _wheel_clauses(url: str, name: str) -> list[Clause]:
    wheel = _WHEEL.search(url)
    if wheel and canonical(wheel.group("name")) == canonical(name):
        return [("==", wheel.group("version"))]
    return []


def _url_requirement(text: str, start: int, end: int) -> Requirement | None:
    """A wheel file (its name tells project and version) or a VCS URL with ``#egg=project``."""
    token = text[start:end].strip()
    if any(c.isspace() for c in token):
        return None
    extras_text = ""
    wheel = _WHEEL.search(token)
    egg = _EGG.search(token)
    repository = _repository_project(token)
    if wheel:
        name, alternatives = wheel.group("name"), ((("==", wheel.group("version")),),)
    elif egg:
        name, alternatives = egg.group(1), ((),)
        extras_text = egg.group(2) or ""
    elif repository:
        name, alternatives = repository, ((),)
    else:
        return None
    return Requirement(
        name=canonical(name),
        extras=tuple(canonical(e.strip()) for e in extras_text.strip("[]").split(",") if e.strip()),
        extras_text=extras_text,
        alternatives=alternatives,
        written=token,
        url=token,
        start=start,
        end=start + len(token),
        marker_end=start + len(token),
    )


def poetry_requirement(name: str, constraint: str, extras: tuple[str, ...] = ()) -> Requirement:
    """A Poetry dependency (``torch = "~2.1"``) as a requirement: ``^`` and ``~`` become their
    bounds, a bare version is an exact pin, ``||`` separates alternatives."""
    alternatives = []
    for part in constraint.split("||"):
        clauses: list[Clause] = []
        for op, version in re.findall(r"(\^|~=|~|===|==|!=|<=|>=|<|>|=)?\s*(\d[^\s,|]*)", part):
            release = _release(version.removesuffix(".*"))
            if op in _POETRY_CEILINGS and release:
                clauses += [(">=", version), ("<", _POETRY_CEILINGS[op](release.release))]
            else:
                clauses.append(("==" if op in ("", "=") else op, version))
        alternatives.append(tuple(clauses))
    return Requirement(
        name=name,
        extras=tuple(canonical(e) for e in extras),
        alternatives=tuple(alternatives),
        written=f'{name} = "{constraint}"',
    )


def conda_requirement(text: str, start: int = 0) -> Requirement | None:
    """A conda match spec (``pytorch=2.1.2``, ``conda-forge::pytorch 2.1.*``, ``torch>=2.1,<2.2``)."""
    match = re.compile(r"\s*(?:[\w.-]+::)?(" + _NAME.pattern + r")\s*(.*?)\s*$", re.DOTALL).match(text, start)
    if match is None:
        return None
    version = match.group(2)
    alternatives = []
    for part in version.split("|") if version else [""]:
        part = part.strip()
        if not part:
            alternatives.append(())
            continue
        fuzzy = re.fullmatch(r"=?(\d[\w.*+]*)(?:=\S*)?", part)  # "=2.1", "2.1", "=2.1.2=build"
        exact = re.fullmatch(r"==(\d[\w.*+]*)(?:=\S*)?", part)
        if fuzzy:
            pin = fuzzy.group(1)
            alternatives.append((("==", pin if pin.endswith("*") else pin + ".*"),))
        elif exact:
            alternatives.append((("==", exact.group(1)),))
        elif re.fullmatch(rf"(?:{_CLAUSE.pattern}\s*,?\s*)+", part):
            alternatives.append(tuple(_CLAUSE.findall(part)))
        else:
            return None
    return Requirement(
        name=match.group(1),
        alternatives=tuple(alternatives),
        written=text[match.start(1) : match.end(2)],
        start=match.start(1),
        end=match.end(2),
        marker_end=match.end(2),
    )


# ----- versions -------------------------------------------------------------------------------
# PEP 440 is packaging's: a pin is compared by its release numbers (2.1.2+cpu and 5.0.0rc1 are
# releases 2.1.2 and 5.0.0: a pin on the floor's own release candidate keeps the floor). Poetry's and
# conda's carets and tildes are not PEP 440: they are translated to the range they stand for first.

# The operators that bound a version from above; the others let every newer release through.
_UPPER_BOUNDS = frozenset({"<", "<=", "==", "===", "~="})


def _release(version: str) -> Version | None:
    """The release numbers of ``version`` as a version (no epoch, pre-, post- or local part), or None."""
    try:
        return Version(".".join(map(str, Version(version.strip()).release)))
    except InvalidVersion:
        return None


def _bump(release: tuple[int, ...]) -> str:
    return ".".join(map(str, (*release[:-1], release[-1] + 1)))


def _caret_ceiling(release: tuple[int, ...]) -> str:
    """``^1.2.3`` allows up to the next change of its first non-zero part: <2.0.0 (``^0.2`` <0.3)."""
    first = next((i for i, part in enumerate(release) if part), len(release) - 1)
    return _bump(release[: first + 1])


def _tilde_ceiling(release: tuple[int, ...]) -> str:
    """``~1.2.3`` allows patch releases: <1.3 (``~1`` <2)."""
    return _bump(release[:2]) if len(release) > 1 else _bump(release)


_POETRY_CEILINGS = {"^": _caret_ceiling, "~": _tilde_ceiling}


def _clause_caps(clause: Clause, floor: Version) -> bool:
    """True when the clause lets no version at or above ``floor`` through."""
    op, version = clause
    wildcard = version.endswith(".*")
    release = _release(version.removesuffix(".*"))
    if op not in _UPPER_BOUNDS or release is None:
        return False
    try:
        specifier = Specifier(("==" if op == "===" else op) + str(release) + (".*" if wildcard else ""))
    except InvalidSpecifier:  # ~= of a lone number
        return False
    # Every clause here allows a range that starts at or below ``release`` (``<`` all of it): once the
    # floor is past that release and outside the range, nothing the clause allows reaches it.
    return not specifier.contains(floor, prereleases=True) and (op == "<" or floor > release)


def capped_below(requirement: Requirement, floor: str) -> bool:
    """Every version the requirement allows is older than ``floor``."""
    release = _release(floor)
    return requirement.pinned and all(
        any(_clause_caps(clause, release) for clause in alternative) for alternative in requirement.alternatives
    )


def upper_bounded(requirement: Requirement) -> bool:
    return requirement.pinned and all(
        any(op in ("==", "===", "<", "<=", "~=") for op, _ in alternative) for alternative in requirement.alternatives
    )


# ----- what to do with a requirement ----------------------------------------------------------


@dataclass(frozen=True)
class Change:
    """What becomes of one requirement. ``replacement`` holds the new name-and-version texts
    (empty: the requirement goes); the environment marker of the original is the caller's to keep."""

    rule: str
    safety: str
    message: str
    replacement: tuple[str, ...]
    marker: str = ""  # what a human must check (review) or do (manual); "" for safe edits
    kept: bool = False  # nothing is edited: the requirement stays as written, with its marker


@dataclass
class Stack:
    """What a file requires, so that a replacement never adds a package twice and torch or
    transformers pins are rewritten only in files about the Neuron stack."""

    present: set[str] = field(default_factory=set)
    neuron: bool = True
    selected: frozenset[str] | None = None  # rule ids; None = all

    @classmethod
    def of(cls, requirements, index_urls: bool = False, selected: frozenset[str] | None = None) -> Stack:
        keys = {r.key for r in requirements}
        neuron = index_urls or any(
            k in PACKAGES and not PACKAGES[k].neuron_only and PACKAGES[k].source == "legacy" for k in keys
        )
        return cls(present=keys, neuron=neuron, selected=selected)

    def wants(self, rule_id: str) -> bool:
        return self.selected is None or rule_id in self.selected

    def wants_cuda(self, rule_id: str) -> bool:
        """A --from cuda rule runs only when the run selected it by name (never by "every rule")."""
        return self.selected is not None and rule_id in self.selected


def package_of(requirement: Requirement) -> Package | None:
    """The row of ``requirement``'s project: its own, or that of a family of wheels (``nvidia-*``)."""
    package = PACKAGES.get(requirement.key)
    if package is not None:
        return package
    return next((row for prefix, row in PACKAGE_PREFIXES.items() if requirement.key.startswith(prefix)), None)


def plan_change(requirement: Requirement, stack: Stack) -> Change | None:
    """The change the selected rules make to ``requirement``; None when it stays as it is."""
    local = _cuda_local_version(requirement, stack)
    if local is not None:
        return local
    package = package_of(requirement)
    if package is None or (package.neuron_only and not stack.neuron):
        return None
    if not (stack.wants_cuda(package.rule) if package.source == "cuda" else stack.wants(package.rule)):
        return None
    return _ACTIONS[package.action](requirement, package, stack)


# ----- CUDA builds of torch (--from cuda) -----------------------------------------------------------
CUDA_INDEX_RULE = "NM659"
_CUDA_INDEX = re.compile(r"(download\.pytorch\.org/whl/(?:nightly/|test/)?)cu\d{2,3}(?=/|$|\s)")
_CUDA_LOCAL = re.compile(r"\+cu\d{2,3}$")
CUDA_BUILD_REVIEW = (
    "the CUDA build of PyTorch -> its CPU build: TorchNeuron adds the neuron device to it (torch-neuronx from "
    "the Neuron repository); a GPU host needs the CUDA build back"
)


def cuda_index(url: str) -> str | None:
    """The CPU wheel index in place of a CUDA one (``.../whl/cu121`` -> ``.../whl/cpu``); None for other URLs."""
    new = _CUDA_INDEX.sub(r"\1cpu", url)
    return new if new != url else None


def _cuda_local_version(requirement: Requirement, stack: Stack) -> Change | None:
    """``torch==2.3.1+cu121`` -> ``torch==2.3.1+cpu``."""
    if not stack.wants_cuda(CUDA_INDEX_RULE) or requirement.url or len(requirement.alternatives) != 1:
        return None
    clauses = requirement.alternatives[0]
    if not any(_CUDA_LOCAL.search(version) for _, version in clauses):
        return None
    new = requirement.written
    for op, version in clauses:
        if _CUDA_LOCAL.search(version):
            new = new.replace(version, _CUDA_LOCAL.sub("+cpu", version), 1)
    if new == requirement.written:
        return None
    return Change(CUDA_INDEX_RULE, REVIEW, f"{requirement.written} -> {new}", (new,), CUDA_BUILD_REVIEW)


def _remove(requirement: Requirement, package: Package, stack: Stack) -> Change:
    added = _missing(package.instead, stack)
    what = f"replaced by {', '.join(added)}" if added else "removed"
    return Change(package.rule, SAFE, f"{requirement.name} {what} ({package.why})", added)


def _floor(requirement: Requirement, package: Package, stack: Stack) -> Change | None:
    if not capped_below(requirement, package.floor):
        return None
    new = f"{requirement.name}{requirement.extras_text}>={package.floor}"
    return Change(package.rule, REVIEW, f"{requirement.written} -> {new}", (new,), package.why)


def _unpin(requirement: Requirement, package: Package, stack: Stack) -> Change | None:
    if not upper_bounded(requirement):
        return None
    new = f"{requirement.name}{requirement.extras_text}"
    return Change(package.rule, REVIEW, f"{requirement.written} -> {new}", (new,), f"pin dropped: {package.why}")


def _drop(requirement: Requirement, package: Package, stack: Stack) -> Change:
    what = f"{requirement.name} removed: {package.why}"
    return Change(package.rule, MANUAL, what, (), what)


def _replace(requirement: Requirement, package: Package, stack: Stack) -> Change:
    """optimum-neuron -> the stock libraries its extras stood for, minus those already required."""
    wanted = list(OPTIMUM_EXTRAS[""])
    hints = []
    for extra in requirement.extras:
        if extra in OPTIMUM_EXTRAS:
            wanted += OPTIMUM_EXTRAS[extra]
        elif extra in OPTIMUM_EXTRA_HINTS:
            hints.append(f"[{extra}]: {OPTIMUM_EXTRA_HINTS[extra]}")
        elif extra not in OPTIMUM_DEV_EXTRAS:
            hints.append(f"[{extra}]: no stock counterpart known, check what it installed")
    added = _missing(tuple(dict.fromkeys(wanted)), stack)
    named = requirement.name + requirement.extras_text
    chosen = ", ".join(added) if added else "the libraries already listed"
    extras = ", ".join(f"[{e}]" for e in requirement.extras)
    basis = f"from its extra{'s' if len(requirement.extras) > 1 else ''} {extras}" if extras else "it had no extras"
    marker = f"{named} replaced by {chosen} ({basis})"
    others = [name for name in OPTIONAL_STOCK if name not in stack.present]
    if others:
        marker += f"; add {' / '.join(others)} if the code uses {'them' if len(others) > 1 else 'it'}"
    if hints:
        marker += "; " + "; ".join(hints)
    return Change(package.rule, REVIEW, f"{named} replaced by {chosen} ({package.why})", added, marker)


def _keep_marked(requirement: Requirement, package: Package, stack: Stack) -> Change:
    what = f"{requirement.name} kept: {package.why}"
    return Change(package.rule, MANUAL, what, (requirement.written,), what, kept=True)


def _missing(candidates: tuple[str, ...], stack: Stack) -> tuple[str, ...]:
    added = []
    for text in candidates:
        key = canonical(_NAME.match(text).group(0))
        if key not in stack.present:
            stack.present.add(key)
            added.append(text)
    return tuple(added)


_ACTIONS = {
    REMOVE: _remove,
    FLOOR: _floor,
    REPLACE: _replace,
    DROP: _drop,
    UNPIN: _unpin,
    KEEP_MARKED: _keep_marked,
}


def migrate_requirement(text: str, stack: Stack | None = None) -> Change | None:
    """One specifier as ``pip install`` takes it (``torch-neuronx==2.1.2.*``,
    ``'optimum-neuron[training]; python_version < "3.12"'``): the change, with the environment
    marker carried onto every new specifier in ``replacement``; None when it stays."""
    requirement = parse_requirement(text)
    if requirement is None:
        return None
    change = plan_change(requirement, stack if stack is not None else Stack())
    if change is None:
        return None
    marker = text[requirement.end : requirement.marker_end]
    return Change(
        change.rule,
        change.safety,
        change.message,
        tuple(r + marker for r in change.replacement),
        change.marker,
        change.kept,
    )


def is_neuron_index(url: str) -> bool:
    return NEURON_INDEX in url


@provides("requirements")
class DependencyTable:
    """What the dependency-file adapters call: a dependency read in each format, and what becomes of it."""

    parse_requirement = staticmethod(parse_requirement)
    poetry_requirement = staticmethod(poetry_requirement)
    conda_requirement = staticmethod(conda_requirement)
    stack_of = staticmethod(Stack.of)
    plan_change = staticmethod(plan_change)
    is_neuron_index = staticmethod(is_neuron_index)
    # --from cuda: a CUDA wheel index of PyTorch -> its CPU index, by the rule and with the review named here
    cuda_index = staticmethod(cuda_index)
    cuda_index_rule = CUDA_INDEX_RULE
    cuda_index_review = CUDA_BUILD_REVIEW


# ----- the rules ------------------------------------------------------------------------------


class RequirementRule(Rule):
    """A rule over dependency files. The adapters in ``migrate/requirements.py`` apply it: they
    parse each dependency and ask :func:`plan_change`, which reads the rows of :data:`PACKAGES`
    carrying this rule's id."""

    @classmethod
    def packages(cls) -> dict[str, Package]:
        rows = {**PACKAGES, **{f"{prefix}*": row for prefix, row in PACKAGE_PREFIXES.items()}}
        return {name: row for name, row in rows.items() if row.rule == cls.meta.id}


def _example(before: str, after: str) -> Example:
    return Example(before=before, after=after)


_INDEX_LINE = f"--extra-index-url https://{NEURON_INDEX}\n"
