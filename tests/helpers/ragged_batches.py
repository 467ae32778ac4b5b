"""Two ragged batches that tests run models over: an empty sentence, an empty-string word, a word over 48 bytes,
repeated words, non-ASCII; the second batch continues the first's rows 0-2 from their LSTM state."""

from __future__ import annotations

import torch

from modeling_elmo import ElmoModel, ElmoTokenizer

BATCHES = [
    [["the", "cat", "sat", "on", "the", "mat", "."], [], ["the"], ["Größe", "x" * 60, "", "the", "the", "cat"]],
    [["a"] * 13, ["naïve", "café", "."], ["cat", "the"]],  # continues the first batch's rows 0-2
]


def run_batches(model: ElmoModel, *, grad: bool = False) -> list[torch.Tensor]:
    """Every layer and the final state of both batches, the second continuing the first's state: a flat list.
    Without `grad` no gradient is wanted (the CPU's oneDNN fast path applies)."""
    tokenizer = ElmoTokenizer()
    results, state = [], None
    with torch.set_grad_enabled(grad):
        for batch in BATCHES:
            inputs = tokenizer(batch, is_split_into_words=True, padding=True, return_tensors="pt")
            if state is not None:
                state = tuple(part[:, :, : len(batch)] for part in state)
            output = model(**inputs, output_hidden_states=True, state=state, use_cache=True)
            results += [*output.hidden_states, *output.state]
            state = output.state
    return results
