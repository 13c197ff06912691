import os

from torch_xla.core import xla_model as _xm


def world_size():
    return _xm.xrt_world_size()


def global_ordinal():
    return _xm.get_ordinal()


def local_ordinal():
    return _xm.get_local_ordinal()


def device_type():
    # As torch_xla does: the PJRT device type, "NEURON" on Trainium (PJRT_DEVICE=NEURON).
    pjrt_device = os.environ.get("PJRT_DEVICE", "CPU")
    return pjrt_device.split("_")[0]
