import os

from torch_xla.core import xla_model as _xm


def world_size():
    return _xm.xrt_world_size()


def global_ordinal():
    return _xm.get_ordinal()


def local_ordinal():
    return _xm.get_local_ordinal()


def device_type():
    # As in torch_xla, the PJRT device the job was started for: PJRT_DEVICE=NEURON plays a Trainium run.
    return os.environ.get("PJRT_DEVICE", "CPU")
