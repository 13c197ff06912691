"""The emulated ``neuron`` device in this process: every result must equal the same computation on ``cpu``."""

from __future__ import annotations

import copy
import io

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional


@pytest.fixture(autouse=True)
def _device(neuron_emulator):
    yield


def _mlp(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.GELU(), torch.nn.Linear(32, 4))


def _data():
    g = torch.Generator().manual_seed(1)
    return torch.randn(16, 8, generator=g), torch.randint(0, 4, (16,), generator=g)


def _train(model, device, optimizer_cls=torch.optim.AdamW, steps=4, compile_backend=None, **opt_kwargs):
    model = model.to(device)
    run = torch.compile(model, backend=compile_backend) if compile_backend else model
    optimizer = optimizer_cls(model.parameters(), lr=1e-2, **opt_kwargs)
    x, y = _data()
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = F.cross_entropy(run(x.to(device)), y.to(device))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(loss.item())
    return losses, [p.detach().cpu() for p in model.parameters()]


def test_device_basics():
    x = torch.ones(2, 3, device="neuron")
    assert x.device == torch.device("neuron", 0) and x.is_neuron and not torch.ones(1).is_neuron
    assert torch.device("neuron").type == "neuron"
    assert (x * 2).sum().item() == 12.0
    assert torch.tensor([[1, 2], [3, 4]], device="neuron").tolist() == [[1, 2], [3, 4]]
    assert x.cpu().numpy().sum() == 6.0
    with pytest.raises(TypeError, match="Use Tensor.cpu"):
        x.numpy()
    view = x[0]
    view.add_(1)
    assert x.cpu()[0].tolist() == [2.0, 2.0, 2.0]
    assert torch.arange(4).to("neuron").neuron().device.type == "neuron"
    assert "device='neuron:0'" in repr(x)


@pytest.mark.parametrize("spec", ["", ".4f", ">12.3e", "g"])
def test_formatting_a_scalar_tensor_reads_as_on_a_device(spec):
    weight = torch.full((2,), 1.25, requires_grad=True)
    on_cpu = (weight * 3).sum()
    on_neuron = (weight.detach().to("neuron").requires_grad_() * 3).sum()
    assert format(on_neuron, spec) == format(on_cpu, spec) == format(7.5, spec)
    vector = torch.ones(2)
    assert f"{vector.to('neuron')}" == str(vector.to("neuron")) and "device='neuron:0'" in f"{vector.to('neuron')}"


def test_seeded_factories_equal_cpu():
    torch.manual_seed(3)
    on_cpu = [torch.randn(4, 4), torch.rand(3), torch.randint(0, 9, (5,))]
    torch.manual_seed(3)
    on_neuron = [torch.randn(4, 4, device="neuron"), torch.rand(3, device="neuron"),
                 torch.randint(0, 9, (5,), device="neuron")]
    for a, b in zip(on_cpu, on_neuron):
        assert torch.equal(a, b.cpu())
    g_cpu, g_neuron = torch.Generator().manual_seed(5), torch.Generator(device="neuron").manual_seed(5)
    assert torch.equal(torch.randn(3, generator=g_cpu), torch.randn(3, device="neuron", generator=g_neuron).cpu())
    assert isinstance(torch.default_generator, torch.Generator)


@pytest.mark.parametrize(
    "make",
    [
        lambda device: torch.arange(5, device=device),
        lambda device: torch.arange(3.0, device=device),
        lambda device: torch.arange(2, 11, 3, device=device),
        lambda device: torch.eye(3, 2, device=device),
        lambda device: torch.linspace(0, 1, 4, device=device),
        lambda device: torch.zeros(2, device=device).resize_(2, 3).fill_(1),
        lambda device: torch.add(torch.ones(3, device=device), 1, out=torch.empty(0, device=device)),
    ],
    ids=["arange", "arange_float", "arange_step", "eye", "linspace", "resize_", "out_resized"],
)
def test_ops_that_resize_their_output_report_the_new_shape(make):
    """Factories with a device run as an empty tensor filled by the op's ``out=`` form, which resizes it."""
    on_cpu, on_neuron = make("cpu"), make("neuron")
    assert on_neuron.shape == on_cpu.shape and on_neuron.stride() == on_cpu.stride()
    assert torch.equal(on_neuron.cpu(), on_cpu) and torch.equal((on_neuron * 2).cpu(), on_cpu * 2)


def test_a_resized_tensor_keeps_its_identity_and_autograd():
    weight = torch.ones(3, device="neuron", requires_grad=True)
    (weight * torch.arange(3, device="neuron")).sum().backward()
    assert weight.grad.cpu().tolist() == [0.0, 1.0, 2.0]
    compiled = torch.compile(lambda n: torch.arange(n, device="neuron") * 2, backend="neuron")
    assert compiled(4).shape == (4,) and compiled(4).cpu().tolist() == [0, 2, 4, 6]


def test_mixing_devices_raises_like_hardware():
    x = torch.ones(3, device="neuron")
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        x + torch.ones(3)
    assert (x + torch.tensor(1.0)).cpu().tolist() == [2.0, 2.0, 2.0]  # 0-dim host scalars are allowed
    model = torch.nn.Linear(3, 1).to("neuron")
    with pytest.raises(RuntimeError, match="same device"):
        model(torch.ones(2, 3))


def test_device_module_and_accelerator():
    n = torch.neuron
    assert n.is_available() and n.device_count() >= 1 and n.current_device() == 0
    n.set_device(0)
    n.synchronize()
    assert "emulated" in n.get_device_name()
    assert n.is_bf16_supported()
    assert n.memory_allocated() == 0 and n.mem_get_info()[1] > 0
    n.manual_seed(7)
    state = n.get_rng_state()
    first = torch.randn(2, device="neuron").cpu()
    n.set_rng_state(state)
    assert torch.equal(first, torch.randn(2, device="neuron").cpu())
    n.manual_seed_all(1)
    assert torch.accelerator.current_accelerator().type == "neuron"
    assert torch.accelerator.is_available() and torch.accelerator.device_count() >= 1
    torch.accelerator.synchronize()


@pytest.mark.parametrize(
    "optimizer_cls, kwargs",
    [
        (torch.optim.AdamW, {"foreach": True}),
        (torch.optim.AdamW, {"foreach": False}),
        (torch.optim.SGD, {"momentum": 0.9, "foreach": True}),
        (torch.optim.Adam, {}),
    ],
)
def test_training_equals_cpu(optimizer_cls, kwargs):
    cpu_losses, cpu_params = _train(_mlp(), "cpu", optimizer_cls, **kwargs)
    neuron_losses, neuron_params = _train(_mlp(), "neuron", optimizer_cls, **kwargs)
    assert neuron_losses == cpu_losses
    assert all(torch.equal(a, b) for a, b in zip(cpu_params, neuron_params))


def test_compiled_training_equals_cpu_and_records_graphs():
    from neuron_migrate.analyzers.emulator import compiled_graphs

    before = len(compiled_graphs())
    cpu_losses, cpu_params = _train(_mlp(), "cpu", compile_backend="eager")
    neuron_losses, neuron_params = _train(_mlp(), "neuron", compile_backend="neuron")
    assert neuron_losses == cpu_losses
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(cpu_params, neuron_params))
    recorded = compiled_graphs()[before:]
    assert recorded and recorded[0].kind == "dynamo" and recorded[0].op_count > 0


def test_compile_fullgraph_and_dynamic_refused():
    model = _mlp().to("neuron")
    x = torch.randn(4, 8, device="neuron")
    full = torch.compile(model, backend="neuron", fullgraph=True)
    assert torch.allclose(full(x).cpu(), model(x).cpu())
    dynamic = torch.compile(_mlp().to("neuron"), backend="neuron", dynamic=True)
    with pytest.raises(Exception, match="static shapes only"):
        dynamic(x)


def test_code_resumed_after_a_graph_break_never_hands_the_emulator_to_dynamo():
    """Ops run eagerly at a graph break (here `.item()`) go through the wrapper's dispatch, the device guard and
    the kernels while dynamo's frame hook is on: none of those frames may reach dynamo (it would try to compile
    the emulator itself), and the results stay those of the CPU."""
    import os

    from torch._dynamo.convert_frame import input_codes

    import neuron_migrate.analyzers.emulator as emulator

    def step(x):
        y = (x * 2).sum()
        scale = y.item()  # a graph break: runs eagerly under the frame hook
        return torch.zeros(3, device=x.device) + x * scale

    expected = torch.compile(step, backend="eager")(torch.arange(3.0))
    got = torch.compile(step, backend="neuron")(torch.arange(3.0).to("neuron"))
    assert torch.equal(got.cpu(), expected)
    package = os.path.dirname(emulator.__file__)
    seen = [ref() for ref in input_codes.seen]
    assert not [code.co_name for code in seen if code is not None and code.co_filename.startswith(package)]


def test_bf16_autocast_equals_cpu_autocast():
    model_cpu = _mlp()
    model_neuron = copy.deepcopy(model_cpu).to("neuron")
    x, _ = _data()
    with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        expected = model_cpu(x)
    with torch.autocast(device_type="neuron", dtype=torch.bfloat16):
        got = model_neuron(x.to("neuron"))
    assert got.dtype == expected.dtype == torch.bfloat16
    assert torch.equal(got.cpu(), expected)
    with torch.autocast(device_type="neuron", dtype=torch.bfloat16):
        loss = F.cross_entropy(got, torch.zeros(16, dtype=torch.long, device="neuron"))
    assert loss.dtype == torch.float32


def test_state_dict_and_save_load_round_trip(tmp_path):
    model = _mlp().to("neuron")
    optimizer = torch.optim.AdamW(model.parameters())
    model(torch.randn(2, 8, device="neuron")).sum().backward()
    optimizer.step()
    path = tmp_path / "ckpt.pt"
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, path)
    on_cpu = torch.load(path, weights_only=True)
    assert all(t.device.type == "cpu" for t in on_cpu["model"].values())
    on_neuron = torch.load(path, map_location="neuron", weights_only=True)
    assert all(t.device.type == "neuron" for t in on_neuron["model"].values())
    fresh = _mlp(seed=9).to("neuron")
    fresh.load_state_dict(on_neuron["model"])
    for a, b in zip(fresh.parameters(), model.parameters()):
        assert torch.equal(a.cpu(), b.cpu())
    buffer = io.BytesIO()
    torch.save(torch.arange(3, device="neuron"), buffer)
    buffer.seek(0)
    assert torch.load(buffer).tolist() == [0, 1, 2]


def test_param_data_assignment_and_deepcopy():
    model = torch.nn.Linear(2, 1, bias=False).to("neuron")
    model.weight.data = torch.full((1, 2), 3.0, device="neuron")
    assert model(torch.ones(1, 2, device="neuron")).item() == 6.0
    clone = copy.deepcopy(model)
    assert isinstance(clone.weight, torch.nn.Parameter) and clone.weight.device.type == "neuron"
    assert torch.equal(clone.weight.cpu(), model.weight.cpu())


def test_safetensors_round_trip(tmp_path):
    from safetensors.torch import load_file, save_file

    weights = {"w": torch.randn(3, 3, device="neuron")}
    save_file({k: v.cpu() for k, v in weights.items()}, tmp_path / "w.safetensors")
    assert torch.equal(load_file(tmp_path / "w.safetensors")["w"], weights["w"].cpu())
