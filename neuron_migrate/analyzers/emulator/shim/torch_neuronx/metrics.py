"""``torch_neuronx.metrics`` on the emulator: the API exists, and there is nothing to count."""


def get_metric_data(name):
    return None


def get_counter_data(name):
    return None


def metric_names():
    return []


def counter_names():
    return []


def report():
    return "metrics: none (neuron device emulated on CPU)\n"
