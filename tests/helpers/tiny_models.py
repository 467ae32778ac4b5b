"""Tiny random models that the model tests share."""

from __future__ import annotations

import torch

from modeling_elmo import ElmoConfig, ElmoModel
from modeling_elmo.modeling_elmo import ElmoCharacterEncoder


def word_embedding_encoder(projection_dim: int) -> tuple[ElmoCharacterEncoder, torch.Tensor, torch.Tensor]:
    """The character encoder of a tiny model with a word embedding (as ELMoForManyLangs' models have), in eval mode,
    and three words for it: the same characters with the word ids 1, 2 and 1 (`char_ids` (3, 50), `word_ids` (3,))."""
    torch.manual_seed(0)
    config = ElmoConfig(
        char_embedding_dim=4,
        char_cnn_filters=[[1, 4]],
        projection_dim=projection_dim,
        word_vocab_size=5,
        word_embedding_dim=3,
        bos_word_id=3,
        eos_word_id=4,
    )
    char_ids, word_ids = torch.tensor([[259, 5, 260] + [261] * 47] * 3), torch.tensor([1, 2, 1])
    return ElmoModel(config).eval().char_encoder, char_ids, word_ids
