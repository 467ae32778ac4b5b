"""The language-model softmax of ELMo's biLM: full, or sampled the way bilm-tf sampled it.

bilm-tf called `tf.nn.sampled_softmax_loss` with its defaults: candidates drawn from a log-uniform (Zipf)
distribution over word ids, `unique=True`, the log of each candidate's expected count subtracted from its
logit (true words too), and accidental hits (a candidate equal to the true word) removed. This module
reproduces that sampler and loss; evaluation always uses the full softmax.
"""

from __future__ import annotations

import math

import torch
from torch import nn

__all__ = [
    "ElmoSoftmax",
    "draw_log_uniform",
    "log_uniform_expected_count",
    "log_uniform_probability",
    "sample_log_uniform_candidates",
]

IGNORE_INDEX = -100


def log_uniform_probability(ids: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """P(k) = log((k + 2) / (k + 1)) / log(V + 1): the chance that one draw of the sampler gives id k."""
    ids = ids.double()
    return torch.log1p(1.0 / (ids + 1.0)) / math.log(vocab_size + 1.0)


def log_uniform_expected_count(ids: torch.Tensor, vocab_size: int, num_tries: int, num_sampled: int) -> torch.Tensor:
    """Expected number of times each id appears among the candidates, as TensorFlow computes it.

    With `unique=True` the sampler draws `num_tries` times until it has `num_sampled` distinct ids, so an id
    is a candidate with probability `1 - (1 - P(k)) ** num_tries`; without repeats (`num_tries ==
    num_sampled`) TensorFlow uses `num_sampled * P(k)` instead. (Like TensorFlow, this ignores that stopping at
    the `num_sampled`-th distinct id favours rare ids a little: it is the correction bilm-tf trained with.)
    """
    probability = log_uniform_probability(ids, vocab_size)
    if num_tries == num_sampled:
        return probability * num_sampled
    return -torch.expm1(num_tries * torch.log1p(-probability))


def draw_log_uniform(count: int, vocab_size: int, *, generator: torch.Generator | None = None) -> torch.Tensor:
    """`count` independent draws (with repeats) of ids with P(k) above, by inverse-CDF sampling:
    floor(exp(u * log(V + 1))) - 1 for u uniform in [0, 1). Drawn on the CPU so that the stream of random
    numbers, and so the candidates, do not depend on the device."""
    uniform = torch.rand(count, dtype=torch.float64, generator=generator)
    return (torch.exp(uniform * math.log(vocab_size + 1.0)).floor().long() - 1).clamp_(0, vocab_size - 1)


def sample_log_uniform_candidates(
    num_sampled: int, vocab_size: int, *, device: torch.device | str = "cpu", generator: torch.Generator | None = None
) -> tuple[torch.Tensor, int]:
    """Draw ids from the log-uniform sampler until `num_sampled` are distinct.

    Returns the distinct ids in the order they were first drawn, shape `(num_sampled,)`, and the number of
    draws it took (`num_tries`, needed for the expected counts).
    """
    if not 0 < num_sampled < vocab_size:
        raise ValueError(f"num_sampled must lie in 1..{vocab_size - 1} (vocab_size - 1), got {num_sampled}")
    draws = torch.empty(0, dtype=torch.long)
    while True:
        draws = torch.cat([draws, draw_log_uniform(2 * num_sampled, vocab_size, generator=generator)])
        first_draw = torch.full((vocab_size,), len(draws), dtype=torch.long)
        first_draw.scatter_reduce_(0, draws, torch.arange(len(draws)), reduce="amin")
        firsts = first_draw[first_draw < len(draws)].sort().values
        if len(firsts) >= num_sampled:
            break
    num_tries = int(firsts[num_sampled - 1]) + 1
    return draws[firsts[:num_sampled]].to(device), num_tries


class ElmoSoftmax(nn.Module):
    """One softmax over the word vocabulary, `logits = h W^T + b`, shared by both directions.

    `weight` is `(vocab_size, projection_dim)` and `bias` `(vocab_size,)`, bilm-tf's `softmax/W` and `softmax/b`.
    """

    def __init__(self, *, vocab_size: int, hidden_size: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(vocab_size, hidden_size))
        self.bias = nn.Parameter(torch.empty(vocab_size))

    @property
    def vocab_size(self) -> int:
        return self.weight.shape[0]

    def reset_parameters(self) -> None:
        """bilm-tf's initialisation: weights normal with std 1/sqrt(hidden size), bias zero."""
        nn.init.normal_(self.weight, std=1.0 / math.sqrt(self.weight.shape[1]))
        nn.init.zeros_(self.bias)

    def log_probabilities(self, hidden: torch.Tensor) -> torch.Tensor:
        """The full softmax's log-probability of every word, shape `(..., vocab_size)` in float32, for `hidden`
        `(..., hidden_size)`."""
        logits = nn.functional.linear(hidden, self.weight, self.bias)
        return torch.log_softmax(logits.float(), dim=-1)

    def forward(
        self,
        hidden: torch.Tensor,
        labels: torch.Tensor,
        *,
        num_sampled: int | None = None,
        generator: torch.Generator | None = None,
    ) -> torch.Tensor:
        """Negative log-likelihood of each label, shape `(tokens,)`, for `hidden` `(tokens, hidden_size)` and
        `labels` `(tokens,)`; tokens labelled `IGNORE_INDEX` (-100) are dropped first.

        With `num_sampled` (training only) the loss is bilm-tf's sampled softmax over that many candidates,
        one draw shared by all tokens of the call; otherwise the exact full softmax.
        """
        keep = labels != IGNORE_INDEX
        hidden, labels = hidden[keep], labels[keep]
        if num_sampled is None or num_sampled >= self.vocab_size:
            logits = nn.functional.linear(hidden, self.weight, self.bias)
            return nn.functional.cross_entropy(logits.float(), labels, reduction="none")
        return self._sampled_loss(hidden, labels, num_sampled, generator)

    def _sampled_loss(
        self, hidden: torch.Tensor, labels: torch.Tensor, num_sampled: int, generator: torch.Generator | None
    ) -> torch.Tensor:
        candidates, num_tries = sample_log_uniform_candidates(
            num_sampled, self.vocab_size, device=hidden.device, generator=generator
        )
        log_true_count = log_uniform_expected_count(labels, self.vocab_size, num_tries, num_sampled).log()
        log_candidate_count = log_uniform_expected_count(candidates, self.vocab_size, num_tries, num_sampled).log()
        true_logits = (hidden * self.weight[labels]).sum(-1) + self.bias[labels]
        candidate_logits = nn.functional.linear(hidden, self.weight[candidates], self.bias[candidates])
        true_logits = true_logits.float() - log_true_count.float()
        candidate_logits = candidate_logits.float() - log_candidate_count.float()
        # A candidate that is the token's own word is not a negative example for it.
        accidental_hits = candidates[None, :] == labels[:, None]
        candidate_logits = candidate_logits.masked_fill(accidental_hits, torch.finfo(candidate_logits.dtype).min)
        logits = torch.cat([true_logits[:, None], candidate_logits], dim=1)
        return -torch.log_softmax(logits, dim=-1)[:, 0]
