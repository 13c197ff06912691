"""The padding that collapses many input sizes into few compiled graphs.

On the neuron backend every distinct input shape is its own compilation. Given the sizes one dimension took during
a run, ``suggest_bucket`` picks the smallest power-of-two multiple (at least 8) that leaves at most two distinct
padded sizes; when even that multiple covers every size seen, the suggestion is one fixed length instead.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

SMALLEST_MULTIPLE = 8
MAX_GRAPHS = 2


@dataclass(frozen=True)
class Bucket:
    multiple: int | None  # pad to a multiple of this ...
    max_length: int | None  # ... or pad everything to this one length
    graphs: int  # distinct sizes left after padding
    before: int  # distinct sizes seen

    def pad(self, size: int) -> int:
        if self.max_length is not None:
            return max(size, self.max_length)
        return -(-size // self.multiple) * self.multiple

    def describe(self) -> str:
        if self.max_length is not None:
            return f"pad to a fixed length of {self.max_length}"
        return f"pad to a multiple of {self.multiple}"


def suggest_bucket(sizes: Iterable[int], *, max_graphs: int = MAX_GRAPHS, smallest: int = SMALLEST_MULTIPLE):
    """The bucket for these sizes, or None when there are too few distinct sizes for padding to help."""
    distinct = sorted(set(sizes))
    if len(distinct) <= max_graphs:
        return None
    multiple = smallest
    while True:
        padded = {-(-s // multiple) * multiple for s in distinct}
        if multiple >= distinct[-1]:
            # one bucket holds everything seen: that is plain fixed-length padding
            return Bucket(None, multiple, 1, len(distinct))
        if len(padded) <= max_graphs:
            return Bucket(multiple, None, len(padded), len(distinct))
        multiple *= 2


def graphs_after(signatures: Iterable[tuple[int, ...]], buckets: dict[int, Bucket]) -> int:
    """Distinct signatures left when position i of each is padded with buckets[i] (others unchanged)."""
    return len({tuple(buckets[i].pad(s) if i in buckets else s for i, s in enumerate(sig)) for sig in signatures})
