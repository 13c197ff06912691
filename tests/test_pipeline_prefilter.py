"""The byte prefilter: exactly "does any trigger word occur", however the words are grouped."""

from __future__ import annotations

import itertools
import random

from neuron_migrate.migrate.prefilter import Prefilter

WORDS = (b"torch_xla", b"xla", b"XLA_", b"XLA_FLAGS", b"NEURON_CC_FLAGS", b"NEURON_RT_X", b"init_process_group")


def test_redundant_words_are_dropped():
    assert Prefilter(WORDS).triggers == (b"NEURON_CC_FLAGS", b"NEURON_RT_X", b"XLA_", b"init_process_group", b"xla")


def test_same_answer_as_checking_every_word():
    prefilter = Prefilter(WORDS)
    pieces = [b"import os\n", b"NEURON_", b"NEURON_RT", b"NEURON_RT_X", b"XLA", b"XLA_", b"xl", b"a", b"torch_xla"]
    rng = random.Random(0)
    for _ in range(2000):
        data = b"".join(rng.choice(pieces) for _ in range(rng.randrange(0, 6)))
        assert prefilter(data) == any(word in data for word in WORDS), data


def test_every_word_alone_is_found_and_clean_code_is_not():
    prefilter = Prefilter(WORDS)
    for word, (before, after) in itertools.product(WORDS, [(b"", b""), (b"x = '", b"'\n")]):
        assert prefilter(before + word + after)
    assert not prefilter(b"import torch\nmodel.to('cuda')\n")
    assert not Prefilter([])(b"torch_xla")
