"""``torch_xla.amp.syncfree``: optimizers whose ``step(found_inf=...)`` skips the update on the device,
without a host sync, when ``found_inf`` is non-zero. Without ``found_inf`` they are the torch optimizers."""

from .adam import Adam  # noqa: F401
from .adamw import AdamW  # noqa: F401
from .sgd import SGD  # noqa: F401
