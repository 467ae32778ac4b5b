"""How a task model mixes ELMo's layers: every weighting scheme of Peters et al. (2018) and Reimers &
Gurevych (2019), as one configurable module."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn
from transformers import initialization as init

from .configuration_elmo import ElmoConfig

__all__ = ["MIX_MODES_WITH_WEIGHTS", "ElmoLayerMix", "masked_layer_norm"]

# The modes whose mix has weights to learn and to save; the others mix by a fixed rule.
MIX_MODES_WITH_WEIGHTS = ("scalar_mix", "per_token")


def masked_layer_norm(layer: torch.Tensor, mask: torch.Tensor, eps: float = 1e-12) -> torch.Tensor:
    """Normalise `layer` (batch, words, D) with ONE mean and variance over all words of the batch where `mask`
    (batch, words) is set and all D features, as AllenNLP's and bilm-tf's scalar mix did (no affine)."""
    mask = mask[..., None].to(layer.dtype)
    count = mask.sum() * layer.shape[-1]
    mean = (layer * mask).sum() / count
    variance = (((layer - mean) * mask) ** 2).sum() / count
    return (layer - mean) / torch.sqrt(variance + eps)


class ElmoLayerMix(nn.Module):
    """One task-specific representation from the biLM's layers (`config.mix_mode`):

    - `scalar_mix`: `gamma * sum_j softmax(w)_j h_j` (Peters et al., 2018), optionally over layer-normalised
      layers; `penalty()` is `mix_l2_coefficient * sum(w ** 2)`, pulling the weights toward uniform.
    - `average`: the plain mean of the layers (Reimers & Gurevych's fixed average).
    - `layer`: one layer as it is (their single-layer schemes).
    - `concat`: the layers side by side (their concatenation; width `len(layers) * D`).
    - `per_token`: weights computed per word from the layers themselves, `softmax_j(h_j . v + b)`, then
      `gamma * sum_j`, a generalisation proposed in the ELMo follow-up work.

    Dropout (`mix_dropout`) applies to the result, which is zero at padding.
    """

    def __init__(self, config: ElmoConfig) -> None:
        super().__init__()
        self.mode = config.mix_mode
        self.layer_norm = config.mix_layer_norm
        self.l2_coefficient = config.mix_l2_coefficient
        self.initial_weights = config.mix_initial_weights or [0.0] * len(config.mixed_layers)
        self.trainable = config.mix_trainable
        if self.mode in MIX_MODES_WITH_WEIGHTS:
            self.mix_gamma = nn.Parameter(torch.empty(()))
        if self.mode == "scalar_mix":
            self.mix_weights = nn.Parameter(torch.empty(len(self.initial_weights)))
        if self.mode == "per_token":
            self.mix_scorer = nn.Linear(2 * config.projection_dim, 1)
        self.dropout = nn.Dropout(config.mix_dropout)
        self.reset_parameters()  # a mix built on its own starts as configured, too
        self.apply_trainable()

    def apply_trainable(self) -> None:
        """Learn the weights and scale, or keep them fixed (`config.mix_trainable`). Loading a checkpoint replaces
        the parameters, and with them this setting: the models call this again after loading."""
        self.requires_grad_(self.trainable)

    def reset_parameters(self) -> None:
        """Uniform weights (or `mix_initial_weights`) and a scale of 1; weights loaded from a checkpoint are kept
        (transformers' `init` functions skip them)."""
        if hasattr(self, "mix_gamma"):
            init.constant_(self.mix_gamma, 1.0)
        if hasattr(self, "mix_weights"):
            init.copy_(self.mix_weights, torch.tensor(self.initial_weights))
        if hasattr(self, "mix_scorer"):
            init.zeros_(self.mix_scorer.weight)
            init.zeros_(self.mix_scorer.bias)

    def forward(self, layers: Sequence[torch.Tensor], mask: torch.Tensor) -> torch.Tensor:
        """Mix `layers`, each (batch, words, D), where `mask` (batch, words) marks words -> (batch, words, D')."""
        if self.mode == "concat":
            mixed = torch.cat(list(layers), dim=-1)
        elif self.mode == "layer":
            (mixed,) = layers
        elif self.mode == "average":
            mixed = torch.stack(list(layers)).mean(dim=0)
        elif self.mode == "scalar_mix":
            if self.layer_norm:
                layers = [masked_layer_norm(layer, mask) for layer in layers]
            weights = torch.softmax(self.mix_weights, dim=0)
            mixed = self.mix_gamma * sum(weight * layer for weight, layer in zip(weights, layers, strict=True))
        else:  # per_token
            stacked = torch.stack(list(layers), dim=-2)  # (batch, words, layers, D)
            weights = torch.softmax(self.mix_scorer(stacked), dim=-2)  # (batch, words, layers, 1)
            mixed = self.mix_gamma * (weights * stacked).sum(dim=-2)
        return self.dropout(mixed) * mask[..., None].to(mixed.dtype)

    def penalty(self) -> torch.Tensor | float:
        """The L2 term to add to the task loss: `mix_l2_coefficient * sum(w ** 2)` for scalar_mix, else 0."""
        if self.mode != "scalar_mix" or not self.l2_coefficient:
            return 0.0
        return self.l2_coefficient * (self.mix_weights**2).sum()
