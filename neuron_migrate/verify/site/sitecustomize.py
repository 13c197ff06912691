"""The recorder of ``neuron-migrate verify``, loaded into both sides' interpreters as ``sitecustomize``.

It records, without touching the user's code, what the program computes: the loss that reaches each
``backward()``, the gradients and parameters around each ``optimizer.step()``, the batches the data loaders
hand out, and the outputs of the outermost model calls and of ``generate``. It fixes the seeds first and
stops the program after the asked number of optimizer steps.

This file is standalone on purpose: the legacy interpreter has torch and torch_xla, not neuron-migrate, so
it imports nothing but the standard library and torch. It does nothing unless
``NEURON_MIGRATE_VERIFY_RECORD`` names the folder to write ``rank<N>-<pid>.jsonl`` into.
"""

import contextlib
import importlib.abc
import importlib.util
import json
import os
import socket
import sys
import threading
import time

RECORD = "NEURON_MIGRATE_VERIFY_RECORD"
STEPS = "NEURON_MIGRATE_VERIFY_STEPS"
SEED = "NEURON_MIGRATE_VERIFY_SEED"
NETWORK = "NEURON_MIGRATE_VERIFY_NETWORK"
NO_DROPOUT = "NEURON_MIGRATE_VERIFY_NO_DROPOUT"
DROPOUTS = ("dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout")
SAMPLES = 4  # values read from each tensor besides its norm
EXACT_INTEGERS = 1024  # a small integer tensor (labels, token ids) is recorded whole: one changed id matters
MAX_OUTPUTS = 256  # outermost model calls recorded; a long generation would otherwise fill the disk
MAX_TENSORS = 8  # tensors kept from one batch or one output
SCALED = "_neuron_migrate_loss_scale"  # set on the tensor a GradScaler's scale() returned: its scale factor
# Where a generate() lives: transformers' for the migrated side, optimum-neuron's own for the legacy one. The
# model calls inside a generation are not recorded one by one; what it returns is.
GENERATORS = (
    ("transformers.generation.utils", "GenerationMixin"),
    ("optimum.neuron.models.inference.modeling_utils", "NeuronModelForCausalLM"),
    ("optimum.neuron.modeling_decoder", "NeuronModelForCausalLM"),
    ("optimum.neuron.generation.utils", "NeuronGenerationMixin"),
)


class _State:
    def __init__(self, folder, steps):
        rank = os.environ.get("RANK", "0")
        # one file per process: xmp.spawn's parent and its worker both have RANK=0
        name = f"rank{rank}-{os.getpid()}.jsonl"
        self.file = open(os.path.join(folder, name), "w", buffering=1, encoding="utf-8")
        self.steps = steps
        self.done = 0  # optimizer steps finished
        self.outputs = 0
        self.depth = 0
        self.generating = 0
        self.dropped = False  # a dropout drew a mask during the current outermost call
        self.names = {}
        self.lock = threading.Lock()
        self.failures = set()  # kinds of record that failed once
        # inside a traced XLA step (torch_xla.compile, torch_xla.step) values cannot be read without cutting the
        # graph, and not at all with full_graph: events wait here, with snapshots of their tensors, for its end
        self.regions = 0
        self.compiled = 0  # of those, the ones torch_xla.compile opened (torch.compile on the migrated side)
        self.pending = []
        self.stopping = False
        self.settings = {}  # the backend switches last written

    def write(self, kind, step=None, **fields):
        fields["kind"] = kind
        fields["step"] = self.done if step is None else step
        line = json.dumps(fields, allow_nan=True) + "\n"
        # torch_xla's device loader reads batches from a thread of its own, which may still run at the end
        with self.lock:
            if not self.file.closed:
                self.file.write(line)

    def close(self):
        with self.lock:
            self.file.close()


class _Safely:
    """Recording must never break the program: a failure is written down once per kind and the program goes on."""

    def __init__(self, state, what):
        self.state, self.what = state, what

    def __enter__(self):
        return self

    def __exit__(self, kind, error, traceback):
        if kind is None or not issubclass(kind, Exception):
            return False
        if self.what not in self.state.failures:
            self.state.failures.add(self.what)
            self.state.write("recorder-error", what=self.what, error=f"{kind.__name__}: {error}")
        return True


def _caller():
    """The user's line that made the call being recorded: the first frame outside torch and the libraries."""
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_code.co_filename
        if not _library(name):
            return f"{os.path.abspath(name)}:{frame.f_lineno}"
        frame = frame.f_back
    return ""


def _library(filename):
    return (filename.startswith("<") or "site-packages" in filename or "dist-packages" in filename
            or filename == __file__ or os.sep + "neuron_migrate" + os.sep in filename)


def _record(torch, state, kind, tensors, names=None, **fields):
    """Write an event with a summary of ``tensors``; inside a traced XLA step, snapshot them (the snapshots are
    computed with the step's graph) and write the event once the step has run."""
    if state.regions:
        state.pending.append((state.done, kind, [t.detach().clone() for t in tensors], names, fields))
        return
    _emit(torch, state, state.done, kind, tensors, names, fields)


def _emit(torch, state, step, kind, tensors, names, fields):
    if kind == "loss":
        fields["value"] = float(tensors[0].detach().float().cpu().reshape(()))
        state.write(kind, step=step, **fields)
        return
    sums = _tensor_sums(torch, tensors)
    for index, entry in enumerate(sums):
        if names is not None:
            entry["name"] = names[index]
    state.write(kind, step=step, tensors=sums, **fields)


def _flush(torch, state):
    """The events of a traced step that has run, in the order it made them; then the stop it asked for."""
    pending, state.pending = state.pending, []
    for step, kind, tensors, names, fields in pending:
        with _Safely(state, _KINDS.get(kind, kind)):
            _emit(torch, state, step, kind, tensors, names, fields)
    if state.stopping:
        _stop(state)


_KINDS = {"grads": "gradients", "params": "parameters", "batch": "batches", "output": "outputs"}


def _tensor_sums(torch, tensors):
    """Norm and a few values of each tensor, read back from the device in one transfer."""
    if not tensors:
        return []
    norms, picks, sizes = [], [], []
    for tensor in tensors:
        flat = _plain(tensor).detach().reshape(-1)
        count = flat.numel()
        exact = not (flat.is_floating_point() or flat.is_complex()) and count <= EXACT_INTEGERS
        index = list(range(count)) if exact else sorted({i * (count - 1) // (SAMPLES - 1) for i in range(SAMPLES)})
        index = index if count else []
        sizes.append(len(index))
        as_float = flat.float() if flat.is_floating_point() or flat.is_complex() else flat.double()
        norms.append(as_float.norm() if count else as_float.new_zeros(()))
        if count:
            picks.append(as_float[torch.tensor(index, device=flat.device)].float())
    values = _to_host(torch, [*_stacked(torch, norms), *picks])
    out, at = [], len(tensors)
    for tensor, size, norm in zip(tensors, sizes, values):
        out.append({"shape": list(tensor.shape), "dtype": str(tensor.dtype).replace("torch.", ""),
                    "device": tensor.device.type, "norm": norm, "values": values[at:at + size]})
        at += size
    return out


def _stacked(torch, norms):
    """The norms in one tensor per device, in order (a batch may mix device and host tensors)."""
    if len({n.device for n in norms}) == 1:
        return [torch.stack([n.float() for n in norms])]
    return [n.float().reshape(1) for n in norms]


def _to_host(torch, parts):
    """The values of ``parts`` as one list: one transfer when they share a device (one graph run under XLA)."""
    if len({part.device for part in parts}) == 1:
        return torch.cat(parts).cpu().tolist()
    return [value for part in parts for value in part.cpu().tolist()]


def _plain(tensor):
    # a DTensor's norm is the norm of the whole tensor only once it is gathered
    full = getattr(tensor, "full_tensor", None)
    return full() if callable(full) else tensor


def _tensors_in(value, found, torch):
    if len(found) >= MAX_TENSORS:
        return found
    if isinstance(value, torch.Tensor):
        found.append(value)
    elif isinstance(value, dict):
        for item in value.values():
            _tensors_in(item, found, torch)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _tensors_in(item, found, torch)
    elif hasattr(value, "to_tuple"):  # transformers' ModelOutput
        _tensors_in(value.to_tuple(), found, torch)
    return found


def _param_names(params):
    """Names of the optimizer's parameters, from the model that holds them all (found once, by scanning)."""
    import gc
    import warnings

    import torch

    wanted = {id(p) for p in params}
    best = {}
    module_type = torch.nn.Module
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a deprecated module stand-in warns when touched
        # type() and not isinstance(): gc also holds weak proxies, and isinstance() on one whose object died
        # raises ReferenceError
        modules = [obj for obj in gc.get_objects() if issubclass(type(obj), module_type)]
    for obj in modules:
        try:
            named = {id(p): name for name, p in obj.named_parameters()}
        except Exception:  # noqa: BLE001 - a half-built module of the program
            continue
        if len(wanted & named.keys()) > len(wanted & best.keys()):
            best = named
    return best


def _install(torch, state):
    _watch_dropout(torch, state, os.environ.get(NO_DROPOUT) == "1")
    _record_losses(torch, state)
    _record_steps(torch, state)
    _record_batches(torch, state)
    _record_outputs(torch, state)
    for module_name, class_name in GENERATORS:
        _after_import(module_name, lambda module, name=class_name: _record_generate(torch, state, module, name))
    _after_import("torch_xla", lambda module: _record_xla_steps(torch, state, module))
    _after_import("torch.amp.grad_scaler", lambda module: _record_scaler(torch, state, module))
    _after_import("torch._dynamo", _untraced)


def _record_losses(torch, state):
    """Each scalar that backward starts from. Tensor.backward goes through torch.autograd.backward, so patching
    that one sees both spellings once."""
    backward = torch.autograd.backward

    @_eager(torch)
    def record(tensors):
        with _Safely(state, "loss"):
            for tensor in [tensors] if isinstance(tensors, torch.Tensor) else list(tensors):
                if isinstance(tensor, torch.Tensor) and tensor.numel() == 1:
                    _note_settings(torch, state, tensor)
                    autocast = _autocast_dtype(torch, tensor)
                    scale = getattr(tensor, SCALED, None)
                    fields = {"scaled_by": scale} if scale else {}
                    _record(torch, state, "loss", [tensor / scale if scale else tensor],
                            dtype=str(tensor.dtype).replace("torch.", ""), device=tensor.device.type,
                            autocast=bool(autocast), autocast_dtype=autocast, at=_caller(), **fields)

    def recording_backward(tensors, *args, **kwargs):
        record(tensors)
        return backward(tensors, *args, **kwargs)

    torch.autograd.backward = recording_backward


def _autocast_dtype(torch, tensor):
    """The dtype autocast casts to where ``tensor`` lives, or "" when autocast is off there."""
    for kind in _autocast_kinds(torch, tensor):
        if torch.is_autocast_enabled(kind):
            getter = getattr(torch, "get_autocast_dtype", None)
            return str(getter(kind)).replace("torch.", "") if getter else "on"
    return ""


def _note_settings(torch, state, tensor):
    """The switches that change a CUDA program's float32 numerics (TF32, cuDNN's algorithm choice), written
    when they first differ from what was written last: a program sets them after the recorder starts."""
    import warnings

    backends = torch.backends
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # newer torch steers these flags towards fp32_precision
        settings = {
            "tf32_matmul": bool(backends.cuda.matmul.allow_tf32),
            "tf32_cudnn": bool(backends.cudnn.allow_tf32),
            "matmul_precision": torch.get_float32_matmul_precision(),
            "cudnn_benchmark": bool(backends.cudnn.benchmark),
            "cudnn_deterministic": bool(backends.cudnn.deterministic),
            "device": tensor.device.type,
        }
    if tensor.device.type == "cuda" and "gpu" not in state.settings:
        settings["gpu"] = torch.cuda.get_device_name(tensor.device)
    elif "gpu" in state.settings:
        settings["gpu"] = state.settings["gpu"]
    if settings != state.settings:
        state.settings = settings
        state.write("settings", **settings)


def _autocast_kinds(torch, tensor):
    kinds = {tensor.device.type, "cpu"}
    out = []
    for kind in kinds:
        try:
            torch.is_autocast_enabled(kind)
            out.append(kind)
        except (RuntimeError, TypeError):  # a device type this torch has no autocast for
            continue
    return out


def _record_steps(torch, state):
    from torch.optim import optimizer as optim

    @_eager(torch)
    def before(opt, args, kwargs):
        with _Safely(state, "gradients"):
            params = [p for group in opt.param_groups for p in group["params"]]
            if not state.names:
                state.names = _param_names(params)
            at = _caller()
            if state.done == 0:
                _record(torch, state, "params", params, _names(state, params), when="before", at=at)
            with_grads = [p for p in params if p.grad is not None]
            _record(torch, state, "grads", [p.grad for p in with_grads], _names(state, with_grads),
                    lr=[_number(group.get("lr")) for group in opt.param_groups], at=at)

    @_eager(torch)
    def after(opt, args, kwargs):
        with _Safely(state, "parameters"):
            params = [p for group in opt.param_groups for p in group["params"]]
            _record(torch, state, "params", params, _names(state, params), when="after", at=_caller())
        state.done += 1
        if state.steps and state.done >= state.steps:
            if state.regions:
                state.stopping = True  # once the traced step has run and its events are written
            else:
                _stop(state)

    optim.register_optimizer_step_pre_hook(before)
    optim.register_optimizer_step_post_hook(after)


def _record_scaler(torch, state, module):
    """A GradScaler multiplies the loss before backward and skips the optimizer step whose gradients overflowed.
    The scaled loss is marked with its factor (the loss event then holds the loss before scaling, the factor
    beside it), and a step the scaler skipped is written as such: the other side made that update."""
    owner = getattr(module, "GradScaler", None)
    if owner is None or getattr(owner.scale, "_recorded", False):
        return
    scale, step = owner.scale, owner.step

    def recording_scale(self, outputs):
        scaled = scale(self, outputs)
        with _Safely(state, "loss scale"):
            if self.is_enabled() and isinstance(scaled, torch.Tensor) and scaled.numel() == 1:
                setattr(scaled, SCALED, float(self.get_scale()))
        return scaled

    def recording_step(self, optimizer, *args, **kwargs):
        done = state.done
        result = step(self, optimizer, *args, **kwargs)
        if self.is_enabled() and state.done == done:
            with _Safely(state, "loss scale"):
                state.write("skipped", scale=float(self.get_scale()), at=_caller())
        return result

    recording_scale._recorded = True
    owner.scale, owner.step = recording_scale, recording_step


def _number(value):
    # a learning rate may be a tensor (a compiled optimizer's)
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _names(state, params):
    return [state.names.get(id(param), f"param{index}") for index, param in enumerate(params)]


_UNTRACED = {}  # a recording hook -> the same hook that dynamo does not trace, once torch._dynamo is imported


def _eager(torch):
    """Run a recording hook outside of any graph torch.compile traces: it reads values back to the host, which
    would break the graph where it is, and it scans the interpreter's objects, which dynamo cannot trace.
    Importing dynamo costs seconds, so the hook is wrapped only when the program imports it."""
    def wrap(fn):
        def hook(*args, **kwargs):
            return _UNTRACED.get(fn, fn)(*args, **kwargs)

        _UNTRACED[fn] = fn
        return hook

    return wrap


def _untraced(dynamo):
    disable = getattr(dynamo, "disable", None)
    if disable is not None:
        for fn in list(_UNTRACED):
            _UNTRACED[fn] = disable(fn)


def _stop(state):
    """Enough steps: end the program here, as a success. Every rank stops at the same step, so no collective
    is left waiting; the interpreter's teardown is skipped because process groups can hang in it."""
    state.write("stop", reason=f"{state.steps} optimizer steps recorded", time=time.time())
    state.close()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _record_batches(torch, state):
    from torch.utils.data import dataloader

    next_batch = dataloader._BaseDataLoaderIter.__next__

    def recording_next(self):
        batch = next_batch(self)
        if state.steps == 0 or state.done < state.steps:
            with _Safely(state, "batches"):
                _record(torch, state, "batch", _tensors_in(batch, [], torch))
        return batch

    dataloader._BaseDataLoaderIter.__next__ = recording_next


def _record_outputs(torch, state):
    from torch.nn.modules import module

    def enter(mod, args):
        if not _compiling(torch):
            if state.depth == 0:
                state.dropped = False
            state.depth += 1

    def leave(mod, args, output):
        if _compiling(torch):
            return None
        state.depth -= 1
        # a model called inside a compiled step is not recorded on either side (torch.compile keeps no hook's
        # effect): its loss, gradients and parameters are
        if state.depth == 0 and not state.generating and not state.compiled and state.outputs < MAX_OUTPUTS:
            state.outputs += 1
            with _Safely(state, "outputs"):
                found = _tensors_in(output, [], torch)
                autocast = _autocast_dtype(torch, found[0]) if found else ""
                if found:
                    _note_settings(torch, state, found[0])
                _record(torch, state, "output", found, what=type(mod).__name__, training=mod.training,
                        autocast=bool(autocast), autocast_dtype=autocast, dropout=state.dropped, at=_caller())
        return None

    module.register_module_forward_pre_hook(enter)
    module.register_module_forward_hook(leave)


def _watch_dropout(torch, state, off):
    """Note each dropout that draws a mask; with ``off``, draw none. torch_xla draws masks from the device's own
    generator, not torch's, so a model in training mode parts from its rewrite at the first such draw."""
    functional = torch.nn.functional

    def drew():
        if not _compiling(torch):  # a compiled graph keeps no Python side effect
            state.dropped = True

    def wrap(name, dropout):
        def watched(input, p=0.5, training=True, inplace=False):
            if training and p > 0:
                drew()
                if off:
                    return input
            return dropout(input, p, training, inplace)

        watched.__name__ = name
        return watched

    for name in DROPOUTS:
        if hasattr(functional, name):
            setattr(functional, name, wrap(name, getattr(functional, name)))
    attention = functional.scaled_dot_product_attention

    def watched_attention(*args, **kwargs):
        positional = len(args) > 4
        if (args[4] if positional else kwargs.get("dropout_p", 0.0)):
            drew()
            if off and positional:
                args = (*args[:4], 0.0, *args[5:])
            elif off:
                kwargs["dropout_p"] = 0.0
        return attention(*args, **kwargs)

    functional.scaled_dot_product_attention = watched_attention


def _compiling(torch):
    compiler = getattr(torch, "compiler", None)
    return bool(compiler and compiler.is_compiling())


def _record_generate(torch, state, module, class_name):
    owner = getattr(module, class_name, None)
    generate = getattr(owner, "generate", None)
    if generate is None or getattr(generate, "_recorded", False):
        return

    def recording_generate(self, *args, **kwargs):
        state.generating += 1
        try:
            result = generate(self, *args, **kwargs)
        finally:
            state.generating -= 1
        if not state.generating:
            with _Safely(state, "outputs"):
                state.write("output", what="generate", training=False,
                            tensors=_tensor_sums(torch, _tensors_in(result, [], torch)), at=_caller())
        return result

    recording_generate._recorded = True
    owner.generate = recording_generate


def _record_xla_steps(torch, state, module):
    """Track torch_xla.compile (a decorator, a call, or a ``with`` block, which torch_xla.step() is) so that the
    events of a traced step are written after it has run. Both the package's name and the one its own step()
    calls are replaced."""
    owners = [owner for owner in (module, sys.modules.get("torch_xla.torch_xla")) if owner is not None]
    original = getattr(owners[-1], "compile", None)
    if original is None or getattr(original, "_recorded", False):
        return

    def traced(enter, compiled):
        @contextlib.contextmanager
        def traced_step():
            state.regions += 1
            state.compiled += compiled
            try:
                region = enter()
                with region if hasattr(region, "__enter__") else contextlib.nullcontext():
                    yield
            finally:
                state.regions -= 1
                state.compiled -= compiled
                if not state.regions:
                    _flush(torch, state)

        return traced_step

    def recording_compile(f=None, *args, **kwargs):
        step = traced(lambda: original(None, *args, **kwargs), 1)
        return step()(f) if f is not None else step()

    def recording_step():
        # a graph boundary only: the rewrite leaves its body as plain code, whose model calls are recorded
        return traced(lambda: original(None), 0)()

    recording_compile._recorded = True
    for owner in owners:
        if getattr(owner, "compile", None) is original:
            owner.compile = recording_compile
        if callable(getattr(owner, "step", None)):
            owner.step = recording_step


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs a callback on a module right after it is first imported (the patched library is imported late,
    and maybe never)."""

    def __init__(self, name, callback):
        self.name, self.callback = name, callback

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        run, callback = spec.loader.exec_module, self.callback

        def exec_module(module):
            run(module)
            callback(module)

        spec.loader.exec_module = exec_module
        return spec


def _after_import(name, callback):
    if name in sys.modules:
        callback(sys.modules[name])
    else:
        sys.meta_path.insert(0, _AfterImport(name, callback))


def _fix_seeds(torch, seed):
    import random

    random.seed(seed)
    torch.manual_seed(seed)
    if importlib.util.find_spec("numpy") is not None:
        import numpy

        numpy.random.seed(seed)


def _refuse_network(state):
    """Both sides must read the same data: a connection off this machine is refused and recorded."""
    connect = socket.socket.connect

    def local_only(self, address):
        host = address[0] if isinstance(address, tuple) else address
        if self.family in (socket.AF_INET, socket.AF_INET6) and not _loopback(host):
            state.write("network", host=str(host), port=address[1] if isinstance(address, tuple) else None,
                        at=_caller())
            raise OSError(f"neuron-migrate verify: network access refused ({host}); both sides must read "
                          "local data (see --allow-network)")
        return connect(self, address)

    resolve = socket.getaddrinfo
    own = {socket.gethostname(), "localhost"}

    def resolve_local_only(host, *args, **kwargs):
        # a name is resolved before it is connected to: with no network here, resolving is where it fails
        if host is not None and not _loopback(host) and str(host) not in own and not _numeric(host):
            state.write("network", host=str(host), port=args[0] if args else None, at=_caller())
            raise OSError(f"neuron-migrate verify: network access refused ({host}); both sides must read "
                          "local data (see --allow-network)")
        return resolve(host, *args, **kwargs)

    socket.socket.connect = local_only
    socket.getaddrinfo = resolve_local_only


def _numeric(host):
    try:
        socket.inet_pton(socket.AF_INET6 if ":" in str(host) else socket.AF_INET, str(host))
    except (OSError, ValueError):
        return False
    return True


def _loopback(host):
    host = str(host)
    return host in ("localhost", "::1", "") or host.startswith("127.") or host == "0.0.0.0"


def _start():
    folder = os.environ.get(RECORD)
    if not folder:
        return
    state = _State(folder, int(os.environ.get(STEPS, "0") or 0))
    if os.environ.get(NETWORK) != "1":
        _refuse_network(state)
    import torch

    # cuda: whether this interpreter sees a GPU (asked without initializing CUDA in this process); steps, seed
    # and time: records kept on another machine are compared here later (--original-records)
    state.write("start", torch=torch.__version__, argv=sys.argv, pid=os.getpid(),
                world=int(os.environ.get("WORLD_SIZE", "1")),
                torch_xla=importlib.util.find_spec("torch_xla") is not None, cuda=_cuda_available(torch),
                steps=state.steps, seed=int(os.environ.get(SEED, "0") or 0), time=time.time())
    _fix_seeds(torch, int(os.environ.get(SEED, "0") or 0))
    _install(torch, state)


def _cuda_available(torch):
    try:
        return bool(torch.cuda.is_available())
    except Exception:  # noqa: BLE001 - a broken driver is no GPU
        return False


def _chain():
    """Run the ``sitecustomize`` this one hides, if the environment has one further down the path."""
    here = os.path.dirname(os.path.abspath(__file__))
    for entry in sys.path:
        if not entry or os.path.abspath(entry) == here:
            continue
        candidate = os.path.join(entry, "sitecustomize.py")
        if os.path.isfile(candidate):
            spec = importlib.util.spec_from_file_location("_sitecustomize_next", candidate)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return


_chain()
_start()
