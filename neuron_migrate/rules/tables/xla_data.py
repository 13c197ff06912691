"""xmp.MpSerialExecutor (NM144): no counterpart, the functions it ran are called directly."""

from __future__ import annotations

from neuron_migrate.rules.rows import Manual, Row

XMP = "torch_xla.distributed.xla_multiprocessing"

ROWS = (
    Row(
        f"{XMP}.MpSerialExecutor",
        "NM144",
        Manual("delete the executor and call the functions given to its .run() directly"),
    ),
)
