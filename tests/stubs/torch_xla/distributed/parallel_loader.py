"""Device loaders that hand out the host loader's batches as they are (the device is the CPU)."""


class MpDeviceLoader:
    def __init__(self, loader, device, **kwargs):
        self._loader = loader
        self._device = device

    def __iter__(self):
        for batch in self._loader:
            yield _move(batch, self._device)

    def __len__(self):
        return len(self._loader)


class ParallelLoader:
    def __init__(self, loader, devices, **kwargs):
        self._loader = loader

    def per_device_loader(self, device):
        return MpDeviceLoader(self._loader, device)


def _move(batch, device):
    if hasattr(batch, "to"):
        return batch.to(device)
    if isinstance(batch, dict):
        return {k: _move(v, device) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return type(batch)(_move(v, device) for v in batch)
    return batch
