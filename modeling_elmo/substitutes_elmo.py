"""Lexical substitutes from ELMo's biLM: the words that fit a position of a sentence, by both language models.

At word i the forward LM gives `p_f(w | w_1 .. w_i-1)` (it has read `<S>` and the words to the left) and the
backward LM `p_b(w | w_i+1 .. w_n)` (it has read `</S>` and the words to the right); neither sees word i itself.
A combination turns the two into one distribution over the softmax's words (`SUBSTITUTE_COMBINATIONS`):

- `"product"`: `p_f * p_b`, renormalised: a word must fit both sides.
- `"product_over_prior"`: `p_f * p_b / p(w)`, renormalised. If the left and the right context were independent
  given the word, Bayes' rule gives exactly this: `p(w | left, right) ∝ p(w | left) p(w | right) / p(w)`.
  `p(w)` is the Zipf prior of a vocabulary sorted by frequency (bilm-tf's vocabularies are: its sampler needs
  it), `log((k + 2) / (k + 1)) / log(V + 1)` for the word of rank k, the distribution bilm-tf sampled from.
  It favours rarer words.
- `"mean"`: `(p_f + p_b) / 2` (a mixture: a word that one side rules out can still rank high).
- `"forward"`, `"backward"`: one LM alone.

The default, `"product"`, was chosen by measurement on held-out text of the bundled model (docs/substitutes.md):
the original word is among its top 10 substitutes (and at the top) more often than with any other combination.
The special words `<S>`, `</S>` and `<UNK>` (ids 0, 1, 2 in bilm-tf's vocabularies) are never proposed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from transformers.utils import ModelOutput

from .softmax_elmo import log_uniform_probability
from .text_elmo import BILM_TF_SPECIAL_WORD_IDS

__all__ = [
    "DEFAULT_SUBSTITUTE_COMBINATION",
    "SUBSTITUTE_COMBINATIONS",
    "ElmoSubstitutesOutput",
    "combine_lm_log_probabilities",
    "zipf_log_prior",
]

SUBSTITUTE_COMBINATIONS = ("product", "product_over_prior", "mean", "forward", "backward")
DEFAULT_SUBSTITUTE_COMBINATION = "product"


@dataclass
class ElmoSubstitutesOutput(ModelOutput):
    r"""Output of [`ElmoForBidirectionalLM.substitutes`].

    Args:
        scores (`torch.FloatTensor` of shape `(batch, words, top_k)`): each substitute's probability under the
            combination (over the whole vocabulary, special words excluded), highest first; 0 at padding.
        word_ids (`torch.LongTensor` of shape `(batch, words, top_k)`): the substitutes' rows of the softmax
            (lines of its `vocab.txt`); 0 at padding.
        log_probabilities (`torch.FloatTensor` of shape `(batch, words, vocab_size)`): the combination's
            log-probability of every word, -inf for the special words.
    """

    scores: torch.FloatTensor | None = None
    word_ids: torch.LongTensor | None = None
    log_probabilities: torch.FloatTensor | None = None


def zipf_log_prior(vocab_size: int, *, device: torch.device | str = "cpu") -> torch.Tensor:
    """`(vocab_size,)`: log p(k) of the Zipf (log-uniform) distribution over word ranks, in float32."""
    return log_uniform_probability(torch.arange(vocab_size, device=device), vocab_size).log().float()


def combine_lm_log_probabilities(
    forward: torch.Tensor,
    backward: torch.Tensor,
    combination: str = DEFAULT_SUBSTITUTE_COMBINATION,
    *,
    excluded_ids: Sequence[int] = BILM_TF_SPECIAL_WORD_IDS,
) -> torch.Tensor:
    """One log-distribution `(..., vocab)` over the words from the two LMs' log-probabilities `forward` and
    `backward` `(..., vocab)` (see the module docstring for the `combination`s); the words `excluded_ids` get
    -inf and the rest sum to 1."""
    if combination not in SUBSTITUTE_COMBINATIONS:
        raise ValueError(f"combination must be one of {', '.join(SUBSTITUTE_COMBINATIONS)}, got {combination!r}")
    if combination == "forward":
        scores = forward
    elif combination == "backward":
        scores = backward
    elif combination == "mean":
        scores = torch.logaddexp(forward, backward) - math.log(2.0)
    elif combination == "product":
        scores = forward + backward
    else:
        scores = forward + backward - zipf_log_prior(forward.shape[-1], device=forward.device)
    excluded = torch.zeros(scores.shape[-1], dtype=torch.bool, device=scores.device)
    excluded[list(excluded_ids)] = True
    return torch.log_softmax(scores.masked_fill(excluded, -math.inf), dim=-1)
