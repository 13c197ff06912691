"""``torch_xla.utils.utils``: the pure-Python helpers legacy scripts import."""

import os


class SampleGenerator:
    """Hands out the same ``data`` ``sample_count`` times, like a loader of synthetic batches."""

    def __init__(self, data, sample_count):
        self._data = data
        self._sample_count = sample_count

    def __iter__(self):
        return (self._data for _ in range(self._sample_count))

    def __len__(self):
        return self._sample_count


def getenv_as(name, type, defval=None):
    value = os.environ.get(name)
    if value is None:
        return defval
    # As torch_xla: a bool flag is an integer ("1", "0"); "true" raises ValueError there too.
    return type(int(value)) if type is bool else type(value)
