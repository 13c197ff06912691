"""A language model of our own whose forward reads its hidden state's values to pick a shape: the readiness
card must name the data-dependent op at its line, in this file."""

import torch
from torch import nn
from transformers import GenerationMixin, PretrainedConfig, PreTrainedModel
from transformers.modeling_outputs import CausalLMOutput


class PlantedConfig(PretrainedConfig):
    model_type = "planted"

    def __init__(self, vocab_size=1000, hidden_size=256, num_hidden_layers=4, **kwargs):
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.num_hidden_layers = num_hidden_layers
        super().__init__(**kwargs)


class PlantedForCausalLM(PreTrainedModel, GenerationMixin):
    config_class = PlantedConfig

    def __init__(self, config):
        super().__init__(config)
        self.embed = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(nn.Linear(config.hidden_size, config.hidden_size)
                                    for _ in range(config.num_hidden_layers))
        self.head = nn.Linear(config.hidden_size, config.vocab_size)
        self.post_init()

    def forward(self, input_ids, labels=None, **kwargs):
        hidden = self.embed(input_ids)
        for layer in self.layers:
            hidden = torch.relu(layer(hidden))
        active = hidden.abs().sum(-1).nonzero()  # PLANTED: its shape is the number of nonzero rows
        hidden = hidden * (active.shape[0] > 0)
        logits = self.head(hidden)
        loss = None
        if labels is not None:
            loss = nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten())
        return CausalLMOutput(loss=loss, logits=logits)
