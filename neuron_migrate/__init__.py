"""neuron-migrate: move legacy AWS Neuron code (PyTorch/XLA, torch-neuronx, optimum-neuron) to TorchNeuron."""

__version__ = "0.1.0"
