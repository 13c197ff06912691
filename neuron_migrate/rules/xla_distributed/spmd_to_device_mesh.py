"""NM137: SPMD mesh and Linear weight sharding -> DeviceMesh and a tensor-parallel plan"""

from __future__ import annotations

import os

import libcst as cst

from neuron_migrate.migrate.context import code_of
from neuron_migrate.rules.base import REVIEW, Edit, Example, RuleMeta, register
from neuron_migrate.rules.calls import bind_args
from neuron_migrate.rules.tables.xla_distributed import SPMD_MODULES
from neuron_migrate.rules.xla_distributed.common import DOCS_DISTRIBUTED, DOCS_DTENSOR, DOCS_TUTORIAL, DistributedRule
from neuron_migrate.rules.xla_distributed.spmd_plan import MESH_PARAMS, USE_SPMD, spmd_plan

DOCS_TP = "https://pytorch.org/docs/stable/distributed.tensor.parallel.html"
DEVICE_MESH = "torch.distributed.device_mesh"
TENSOR_PARALLEL = "torch.distributed.tensor.parallel"


@register
class SpmdToDeviceMesh(DistributedRule):
    """``xs.Mesh`` -> ``init_device_mesh("neuron", ...)``, ``xs.mark_sharding(layer.weight, mesh, spec)``
    -> ``parallelize_module(layer, mesh, ColwiseParallel | RowwiseParallel)``, ``xr.use_spmd()`` -> the
    process group of torchrun's ranks (see spmd_plan for which sites qualify)."""

    meta = RuleMeta(
        "NM137",
        "SPMD mesh and Linear weight sharding -> DeviceMesh and a tensor-parallel plan",
        safety=REVIEW,
        risks=frozenset({"collectives", "launch", "performance"}),
        summary=(
            "SPMD ran one process over every device; TorchNeuron runs one torchrun process per NeuronCore. "
            "A mesh of devices in rank order becomes `init_device_mesh(\"neuron\", shape, mesh_dim_names=...)`, "
            "a Linear weight split along one mesh axis becomes ColwiseParallel (dim 0) or RowwiseParallel "
            "(dim 1) with the layer's output gathered whole, as the rest of an SPMD program saw it, and "
            "`xr.use_spmd()` becomes the start of the process group with each rank on its own core. A mesh "
            "is migrated only together with all its uses, `xr.use_spmd()` only when nothing else of SPMD is "
            "left in the file. Pairing a ColwiseParallel layer with the RowwiseParallel one after it, without "
            "the Replicate layouts, saves the gather between them (the Megatron plan)."
        ),
        docs=(DOCS_DTENSOR, DOCS_TP, DOCS_DISTRIBUTED, DOCS_TUTORIAL),
        triggers=(b"spmd", b"xla_sharding"),
        example=Example(
            before=(
                "import numpy as np\n"
                "import torch_xla.distributed.spmd as xs\n"
                "import torch_xla.runtime as xr\n\n"
                "xr.use_spmd()\n\n\n"
                "def shard(model, n):\n"
                '    mesh = xs.Mesh(np.arange(n), (n,), ("model",))\n'
                '    xs.mark_sharding(model.fc1.weight, mesh, ("model", None))\n'
                '    xs.mark_sharding(model.fc2.weight, mesh, (None, "model"))\n'
            ),
            after=(
                "import numpy as np\n"
                "import os\n"
                "import torch\n"
                "import torch.distributed as dist\n"
                "from torch.distributed.device_mesh import init_device_mesh\n"
                "from torch.distributed.tensor import Replicate\n"
                "from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module\n\n"
                "# neuron-migrate(NM137): SPMD ran one process over every NeuronCore: launch with "
                "`torchrun --nproc_per_node=<NeuronCores> example.py`, one rank per core\n"
                'if "WORLD_SIZE" in os.environ and not dist.is_initialized():\n'
                '    dist.init_process_group("neuron")\n'
                '    torch.neuron.set_device(int(os.environ.get("LOCAL_RANK", "0")))\n\n\n'
                "def shard(model, n):\n"
                "    # neuron-migrate(NM137): the mesh spans the torchrun ranks in the order of the device ids, so "
                "its shape must multiply to WORLD_SIZE; a single process, too, runs under torchrun\n"
                '    mesh = init_device_mesh("neuron", (n,), mesh_dim_names=("model",))\n'
                "    # neuron-migrate(NM137): `model.fc1` must be an nn.Linear: its weight is split by output "
                "features (dim 0) over the mesh and its output gathered whole, as SPMD kept it; build the optimizer "
                "after this (the parameters become DTensors)\n"
                "    parallelize_module(model.fc1, mesh, ColwiseParallel(output_layouts=Replicate()))\n"
                "    # neuron-migrate(NM137): `model.fc2` must be an nn.Linear: its weight is split by input "
                "features (dim 1) over the mesh and its partial outputs summed whole, as SPMD kept it; build the "
                "optimizer after this (the parameters become DTensors)\n"
                "    parallelize_module(model.fc2, mesh, RowwiseParallel(input_layouts=Replicate()))\n"
            ),
        ),
    )
    calls = {
        **{f"{module}.{name}": "to_native" for module in SPMD_MODULES for name in ("Mesh", "get_1d_mesh")},
        **{f"{module}.mark_sharding": "to_native" for module in SPMD_MODULES},
        USE_SPMD: "to_native",
    }

    def to_native(self, original: cst.Call, updated: cst.Call, qname: str):
        plan = spmd_plan(self.ctx)
        if id(original) in plan.meshes:
            return self._mesh(plan.meshes[id(original)], updated, bool(plan.use_spmd))
        if id(original) in plan.shardings:
            return self._sharding(plan.shardings[id(original)])
        if id(original) in plan.use_spmd:
            return self._process_group(original)
        return updated  # NM135 says what to do instead

    def _mesh(self, site, updated: cst.Call, group_started: bool) -> Edit:
        init = self.ctx.require_from_import(DEVICE_MESH, "init_device_mesh")
        if site.shape:
            shape = site.shape
            bound = bind_args(updated, MESH_PARAMS)
            names = bound.get("axis_names") if bound else None
            names_code = code_of(names.value) if names is not None and site.names is not None else ""
        else:  # get_1d_mesh: every device, on one axis
            shape = f"({self.env_int('WORLD_SIZE')},)"
            names_code = f'("{site.names[0]}",)' if site.names else ""
        keyword = f", mesh_dim_names={names_code}" if names_code else ""
        review = (
            "the mesh spans the torchrun ranks in the order of the device ids, so its shape must multiply to "
            "WORLD_SIZE; a single process, too, runs under torchrun"
        )
        if not group_started:
            review += (
                '; it starts the process group itself: call `dist.init_process_group("neuron")` and '
                "`torch.neuron.set_device(local_rank)` first, before the first tensor reaches the device"
            )
        message = "SPMD mesh -> init_device_mesh(\"neuron\", ...)"
        return Edit(self.ctx.expr(f'{init}("neuron", {shape}{keyword})'), message=message, review=review)

    def _sharding(self, sharding) -> Edit:
        parallelize = self.ctx.require_from_import(TENSOR_PARALLEL, "parallelize_module")
        style_name = "ColwiseParallel" if sharding.dim == 0 else "RowwiseParallel"
        style = self.ctx.require_from_import(TENSOR_PARALLEL, style_name)
        replicate = self.ctx.require_from_import("torch.distributed.tensor", "Replicate")
        # The layer's output stays whole (replicated on every rank), as GSPMD kept it for the code around it.
        layout = "output_layouts" if sharding.dim == 0 else "input_layouts"
        mesh = sharding.mesh.target.value
        if (sharding.mesh.ndim or 1) > 1:
            mesh = f'{mesh}["{sharding.mesh.names[sharding.axis]}"]'
        code = f"{parallelize}({sharding.layer}, {mesh}, {style}({layout}={replicate}()))"
        if sharding.dim == 0:
            split, result = "output features (dim 0)", "output gathered whole"
        else:
            split, result = "input features (dim 1)", "partial outputs summed whole"
        if sharding.parameter_name:
            subject = f"`{sharding.parameter_name}` must name an nn.Linear's weight: the weight"
            sharded, layer = f"`{sharding.parameter_name}`", "the layer's"
        else:
            subject = f"`{sharding.layer}` must be an nn.Linear: its weight"
            sharded, layer = f"`{sharding.layer}.weight`", "its"
        review = (
            f"{subject} is split by {split} over the mesh and {layer} {result}, as SPMD kept it; build the "
            "optimizer after this (the parameters become DTensors)"
        )
        message = f"mark_sharding of {sharded} -> {style} on the mesh"
        return Edit(self.ctx.expr(code), message=message, review=review)

    def _process_group(self, original: cst.Call) -> Edit:
        os_module = self.ctx.require_import("os")
        dist = self.dist
        lines = [
            f'if "WORLD_SIZE" in {os_module}.environ and not {dist}.is_initialized():',
            f'\t{dist}.init_process_group("neuron")',
            f"\t{self.bind_core()}",
        ]
        review = (
            f"SPMD ran one process over every NeuronCore: launch with `torchrun --nproc_per_node=<NeuronCores> "
            f"{self._script()}`, one rank per core"
        )
        message = 'xr.use_spmd() -> the "neuron" process group, each rank on its own NeuronCore'
        return Edit(self.replace_with(original, lines), message=message, review=review)

    def _script(self) -> str:
        name = os.path.basename(self.ctx.path)
        return name if name.endswith(".py") and self.ctx.cell is None else "<script>.py"
