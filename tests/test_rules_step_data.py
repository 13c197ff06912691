"""Stepping, compile, data-loading and launch rules: the cases the fixture files do not pin down."""

from __future__ import annotations

import libcst as cst
import pytest

from neuron_migrate.rules.calls import UNKNOWN, bind_args, literal, new_keyword
from neuron_migrate.rules.xla_step import inline_lambda, with_args


def _call(code: str) -> cst.Call:
    node = cst.parse_expression(code)
    assert isinstance(node, cst.Call)
    return node


def _code(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("f(a, b=1, c=2)", "f(a, b=1, fullgraph=True)"),
        ("f(\n    a,\n    b=1,\n    c=2,\n)", "f(\n    a,\n    b=1,\n    fullgraph=True,\n)"),
        ("f(\n    a,\n    b=1,\n    c=2\n)", "f(\n    a,\n    b=1,\n    fullgraph=True\n)"),
    ],
)
def test_with_args_keeps_the_call_layout(before, after):
    call = _call(before)
    args = [*call.args[:2], new_keyword("fullgraph", "True")]
    assert _code(with_args(call, args)) == after


def test_bind_args_follows_the_legacy_signature():
    call = _call("xm.optimizer_step(opt, True, optimizer_args=kw)")
    args = bind_args(call, ("optimizer", "barrier", "optimizer_args"))
    assert args is not None
    assert {name: _code(arg.value) for name, arg in args.items()} == {
        "optimizer": "opt",
        "barrier": "True",
        "optimizer_args": "kw",
    }
    assert bind_args(_call("f(*args)"), ("a",)) is None
    assert bind_args(_call("f(a, unknown=1)"), ("a",)) is None
    assert bind_args(_call("f(a, unknown=1)"), ("a",), other_keywords=True) is not None
    assert bind_args(_call("f(a, a=1)"), ("a",)) is None


def _literal(code: str, **options) -> object:
    value = literal(cst.parse_expression(code), **options)
    return "<unknown>" if value is UNKNOWN else value


@pytest.mark.parametrize(
    ("code", "value", "token_value"),
    [
        ("True", True, True),
        ("(None)", None, None),
        ("0x10", 16, 16),
        ("'openxla'", "openxla", "openxla"),
        ("-1", -1, "<unknown>"),
        ("'open' 'xla'", "openxla", "<unknown>"),
        ("(1, 2)", (1, 2), "<unknown>"),
        ("x", "<unknown>", "<unknown>"),
    ],
)
def test_literal_reads_whole_literals_or_single_tokens(code, value, token_value):
    assert _literal(code) == value
    assert _literal(code, single_token=True) == token_value


@pytest.mark.parametrize(
    ("closure", "args", "expected"),
    [
        ("lambda: print(x)", None, "print(x)"),
        ("lambda l, s: log(l, step=s.value)", "(loss, step)", "log(loss, step=step.value)"),
        ("lambda s=step: print(s)", None, "print(step)"),
        # keyword names and attribute names are not parameters
        ("lambda l: log(l=l.l)", "(x,)", "log(l=x.l)"),
        # a nested scope could rebind the name: keep the call
        ("lambda l: [l for l in range(3)]", "(x,)", None),
        # an argument that is not a plain name could be evaluated twice
        ("lambda l: log(l, l)", "(f(),)", None),
    ],
)
def test_inline_lambda(closure, args, expected):
    node = cst.parse_expression(closure)
    arg = cst.Arg(value=cst.parse_expression(args)) if args else None
    body = inline_lambda(node, arg)
    assert (None if body is None else _code(body)) == expected


def test_optimizer_step_is_safe_when_the_model_is_wrapped(migrate):
    source = (
        "import torch_xla.core.xla_model as xm\n"
        "from torch.nn.parallel import DistributedDataParallel\n\n"
        "model = DistributedDataParallel(net)\n"
        "xm.optimizer_step(optimizer)\n"
    )
    result = migrate(source)
    assert result.code.endswith("model = DistributedDataParallel(net)\noptimizer.step()\n")
    [finding] = [f for f in result.findings if f.rule == "NM113"]
    assert finding.safety == "safe"
    assert "collectives" in finding.risks


@pytest.mark.parametrize(
    "wrapping",
    [
        # under a branch of its own: the step on the other branch sees no DDP
        "    if args.ddp:\n        model = DDP(model)\n",
        # in another function: nothing says this model went through it
        "    model = wrap(model)\n",
        # after the step
        "",
    ],
)
def test_optimizer_step_averages_when_ddp_is_not_on_its_path(migrate, wrapping):
    source = (
        "import torch_xla.core.xla_model as xm\n"
        "from torch.nn.parallel import DistributedDataParallel as DDP\n\n\n"
        "def wrap(model):\n"
        "    return DDP(model)\n\n\n"
        "def train(args, model, optimizer):\n"
        f"{wrapping}"
        "    model(1).backward()\n"
        "    xm.optimizer_step(optimizer)\n"
        "    late = DDP(model)\n"
    )
    result = migrate(source)
    assert "    _average_gradients(optimizer)\n    optimizer.step()\n" in result.code
    assert result.code.count("def _average_gradients(optimizer):") == 1
    [step] = [f for f in result.findings if f.rule == "NM113" and f.safety != "safe"]
    assert step.safety == "review" and "averaged by hand" in step.fix


def test_optimizer_step_after_ddp_in_an_enclosing_block_is_plain(migrate):
    source = (
        "import torch_xla.core.xla_model as xm\n"
        "from torch.nn.parallel import DistributedDataParallel as DDP\n\n\n"
        "def train(model, loader, optimizer):\n"
        "    model = DDP(model)\n"
        "    for batch in loader:\n"
        "        model(batch).backward()\n"
        "        xm.reduce_gradients(optimizer)\n"
        "        xm.optimizer_step(optimizer)\n"
    )
    result = migrate(source)
    assert "_average_gradients" not in result.code and "reduce_gradients" not in result.code
    assert result.code.endswith("        model(batch).backward()\n        optimizer.step()\n")
    assert {f.safety for f in result.findings if f.rule == "NM113"} == {"safe"}


def test_averaging_helper_follows_the_file_indent_and_runs(migrate):
    source = (
        "import torch_xla.core.xla_model as xm\n\n\n"
        "def step(optimizer):\n"
        "  xm.optimizer_step(optimizer)\n"
    )
    code = migrate(source).code
    assert "\n  if not dist.is_initialized() or dist.get_world_size() == 1:\n    return\n" in code
    # Without a process group (one rank) the helper leaves the gradients alone, as xm did.
    torch = pytest.importorskip("torch")
    namespace: dict = {}
    exec(compile(code, "migrated.py", "exec"), namespace)
    param = torch.nn.Parameter(torch.ones(2))
    param.grad = torch.full((2,), 3.0)
    optimizer = torch.optim.SGD([param], lr=1.0)
    namespace["step"](optimizer)
    assert torch.equal(param.grad, torch.full((2,), 3.0)) and torch.equal(param.detach(), torch.full((2,), -2.0))


def test_suppressed_optimizer_step_adds_no_helper(migrate):
    source = (
        "import torch_xla.core.xla_model as xm\n\n"
        "xm.optimizer_step(optimizer)  # neuron-migrate: ignore[NM113]\n"
        "xm.reduce_gradients(optimizer)  # neuron-migrate: ignore[NM113]\n"
    )
    result = migrate(source)
    assert result.code == source
    assert all(f.suppressed for f in result.findings if f.rule == "NM113")


def test_suppressed_loader_keeps_its_loops_untouched(migrate):
    source = (
        "import torch_xla.distributed.parallel_loader as pl\n\n\n"
        "def run(model, loader, device):\n"
        "    device_loader = pl.MpDeviceLoader(loader, device)  # neuron-migrate: ignore[NM140]\n"
        "    for x, y in device_loader:\n"
        "        model(x, y)\n"
    )
    result = migrate(source)
    assert result.code == source
    assert all(f.suppressed for f in result.findings if f.rule == "NM140")


def test_loader_device_out_of_scope_asks_for_a_hand(migrate):
    source = (
        "import torch_xla.distributed.parallel_loader as pl\n\n\n"
        "def consume(loader):\n"
        "    for x, y in loader:\n"
        "        print(x, y)\n\n\n"
        "def feed(loader):\n"
        "    device = 'cpu'\n"
        "    consume(pl.MpDeviceLoader(loader, device))\n"
    )
    result = migrate(source)
    assert "\n        x, y = x.to(device)" not in result.code
    assert "# TODO(neuron-migrate NM140): move the batch to the device at the top of this loop" in result.code
    assert "consume(loader)" in result.code


def test_loader_followed_through_a_variable_and_a_parameter(migrate):
    source = (
        "import torch_xla.distributed.parallel_loader as pl\n\n\n"
        "def train(model, loader, device):\n"
        "    def epoch(batches):\n"
        "        for step, batch in enumerate(batches):\n"
        "            model(**batch)\n\n"
        "    device_loader = pl.MpDeviceLoader(loader, device)\n"
        "    epoch(batches=device_loader)\n"
    )
    result = migrate(source)
    moved = "            batch = {k: v.to(device) for k, v in batch.items()}\n            model(**batch)\n"
    assert moved in result.code


def test_spawn_names_the_launch_command(migrate):
    source = (
        "import torch_xla.distributed.xla_multiprocessing as xmp\n\n"
        "xmp.spawn(main, args=(cfg,), nprocs=4)\n"
    )
    result = migrate(source, path="scripts/train.py")
    assert "`torchrun --nproc_per_node=4 train.py`" in result.code
    assert result.code.endswith('main(int(os.environ.get("RANK", "0")), cfg)\n')
    assert result.code.startswith("import os\n")


def test_openxla_backend_needs_no_torch_xla_import(migrate):
    source = "import torch\n\nm = torch.compile(model, backend='openxla_eval')\n"
    result = migrate(source)
    assert "m = torch.compile(model, backend='neuron', fullgraph=True)\n" in result.code


@pytest.mark.parametrize("device, moved", [("xm.xla_device()", True), ("xm.xla_device(1)", False)])
def test_a_loop_out_of_the_devices_scope_uses_the_neuron_device_when_it_was_the_default(migrate, device, moved):
    source = (
        "import torch_xla.core.xla_model as xm\n"
        "import torch_xla.distributed.parallel_loader as pl\n\n\n"
        "def consume(loader):\n"
        "    for x, y in loader:\n"
        "        print(x, y)\n\n\n"
        "def feed(loader):\n"
        f"    device = {device}\n"
        "    consume(pl.MpDeviceLoader(loader, device))\n"
    )
    code = migrate(source).code
    assert ('\n        x, y = x.to("neuron"), y.to("neuron")\n' in code) == moved
    assert ("# TODO(neuron-migrate NM140): move the batch" in code) != moved
