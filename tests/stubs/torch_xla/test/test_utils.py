"""``torch_xla.test.test_utils``: the log-line and TensorBoard helpers of the legacy examples."""

from datetime import datetime

import torch_xla.runtime as xr


def now(format="%H:%M:%S"):
    return datetime.now().strftime(format)


def _device_spec(device):
    return f"{device}/{xr.global_ordinal()}"


def _print(fields):
    print("|", " ".join(field for field in fields if field), flush=True)


def print_training_update(device, step, loss, rate, global_rate, epoch=None, summary_writer=None):
    _print([
        "Training", f"Device={_device_spec(device)}", f"Epoch={epoch}" if epoch is not None else None,
        f"Step={step}", f"Loss={loss:.5f}", f"Rate={rate:.2f}", f"GlobalRate={global_rate:.2f}", f"Time={now()}",
    ])
    write_to_summary(summary_writer, dict_to_write={"examples/sec": rate, "average_examples/sec": global_rate})


def print_test_update(device, accuracy, epoch=None, step=None):
    _print([
        "Test", f"Device={_device_spec(device)}", f"Step={step}" if step is not None else None,
        f"Epoch={epoch}" if epoch is not None else None,
        f"Accuracy={accuracy:.2f}" if accuracy is not None else None, f"Time={now()}",
    ])


def get_summary_writer(logdir):
    if not logdir:
        return None
    from torch.utils.tensorboard import SummaryWriter

    return SummaryWriter(log_dir=logdir)


def write_to_summary(summary_writer, global_step=None, dict_to_write={}, write_xla_metrics=False):
    if summary_writer is None:
        return
    for key, value in dict_to_write.items():
        summary_writer.add_scalar(key, value, global_step)


def close_summary_writer(summary_writer):
    if summary_writer is not None:
        summary_writer.flush()
        summary_writer.close()
