"""torch_xla's sync-free optimizers (NM151): the stock torch.optim class of the same name."""

from __future__ import annotations

from neuron_migrate.rules.rows import Rename, Row

ROWS = tuple(
    Row(f"torch_xla.amp.syncfree.{module}{name}", "NM151", Rename(f"torch.optim.{name}"))
    for name, home in (("Adam", "adam"), ("AdamW", "adamw"), ("SGD", "sgd"))
    for module in ("", f"{home}.")
)
