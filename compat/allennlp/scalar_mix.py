"""AllenNLP 0.9's `ScalarMix` (allennlp.modules.scalar_mix): `gamma * sum_k softmax(w)_k * tensor_k`, the tensors
optionally layer-normalised with one mean and variance over the masked batch (`modeling_elmo.masked_layer_norm`,
the same sums). Parameters and state dict as AllenNLP's: `scalar_parameters.K` and `gamma`, each of shape (1,)."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from modeling_elmo.mixing_elmo import masked_layer_norm

from .checks import ConfigurationError

__all__ = ["ScalarMix"]


class ScalarMix(nn.Module):
    """A learned weighted sum of `mixture_size` tensors of one shape (Peters et al., 2018)."""

    def __init__(
        self,
        mixture_size: int,
        do_layer_norm: bool = False,
        initial_scalar_parameters: Sequence[float] | None = None,
        trainable: bool = True,
    ) -> None:
        super().__init__()
        self.mixture_size = mixture_size
        self.do_layer_norm = do_layer_norm
        if initial_scalar_parameters is None:
            initial_scalar_parameters = [0.0] * mixture_size
        elif len(initial_scalar_parameters) != mixture_size:
            raise ConfigurationError(
                f"Length of initial_scalar_parameters {initial_scalar_parameters} differs from mixture_size "
                f"{mixture_size}"
            )
        self.scalar_parameters = nn.ParameterList(
            nn.Parameter(torch.tensor([float(value)]), requires_grad=trainable) for value in initial_scalar_parameters
        )
        self.gamma = nn.Parameter(torch.tensor([1.0]), requires_grad=trainable)

    def forward(self, tensors: Sequence[torch.Tensor], mask: torch.Tensor | None = None) -> torch.Tensor:
        """Mix `tensors` (each (..., dim)); with `do_layer_norm`, `mask` (...) marks the positions normalised over."""
        if len(tensors) != self.mixture_size:
            raise ConfigurationError(
                f"{len(tensors)} tensors were passed, but the module was initialized to mix {self.mixture_size} "
                "tensors."
            )
        if self.do_layer_norm:
            if mask is None:
                raise ConfigurationError("ScalarMix with do_layer_norm needs the mask of the positions to normalise")
            tensors = [masked_layer_norm(tensor, mask) for tensor in tensors]
        weights = torch.softmax(torch.cat(list(self.scalar_parameters)), dim=0).split(1)
        return self.gamma * sum(weight * tensor for weight, tensor in zip(weights, tensors, strict=True))
