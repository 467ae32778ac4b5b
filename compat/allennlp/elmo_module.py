"""AllenNLP 0.9's `Elmo` (allennlp.modules.elmo) and `ElmoTokenEmbedder` (allennlp.modules.token_embedders): the
biLM's layers mixed into `num_output_representations` representations, each with its own `ScalarMix`, then
dropout; computed by `_ElmoBiLm` (this package's model), with AllenNLP's state-dict names.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence

import torch
from torch import nn

from .bilm_modules import _ElmoBiLm
from .checks import ConfigurationError
from .scalar_mix import ScalarMix

__all__ = ["Elmo", "ElmoTokenEmbedder", "remove_sentence_boundaries"]

logger = logging.getLogger(__name__)


def remove_sentence_boundaries(tensor: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """AllenNLP's `allennlp.nn.util.remove_sentence_boundaries`: (batch, timesteps + 2, dim) with `<S>` and `</S>`
    and their mask -> (batch, timesteps, dim) of the words alone, zero past each sentence, and its mask (long)."""
    words = (mask.sum(dim=1) - 2).clamp(min=0)
    new_mask = torch.arange(tensor.shape[1] - 2, device=tensor.device)[None, :] < words[:, None]
    inner = tensor[:, 1:-1]
    return torch.where(new_mask[..., None], inner, torch.zeros((), dtype=inner.dtype, device=inner.device)), (
        new_mask.long()
    )


class Elmo(nn.Module):
    """ELMo representations from character ids (batch, timesteps, 50) or (..., timesteps, 50), as AllenNLP 0.9's
    `Elmo`: `forward` returns `{'elmo_representations': num_output_representations tensors (..., timesteps, 2P),
    'mask': (..., timesteps) long}`.

    `stateful` (this package's, keyword only): True (default) carries the biLM's LSTM state from call to call as
    AllenNLP did, so the same input gives other vectors after other batches; False starts every call from zeros.
    """

    def __init__(
        self,
        options_file: str | os.PathLike | None,
        weight_file: str | os.PathLike | None,
        num_output_representations: int,
        requires_grad: bool = False,
        do_layer_norm: bool = False,
        dropout: float = 0.5,
        vocab_to_cache: list[str] | None = None,
        keep_sentence_boundaries: bool = False,
        scalar_mix_parameters: Sequence[float] | None = None,
        module: nn.Module | None = None,
        *,
        stateful: bool = True,
    ) -> None:
        super().__init__()
        logger.info("Initializing ELMo")
        if module is not None:
            if options_file is not None or weight_file is not None:
                raise ConfigurationError("Don't provide options_file or weight_file with module")
            self._elmo_lstm = module
        else:
            self._elmo_lstm = _ElmoBiLm(
                options_file, weight_file, requires_grad=requires_grad, vocab_to_cache=vocab_to_cache, stateful=stateful
            )
        self._has_cached_vocab = vocab_to_cache is not None
        self._keep_sentence_boundaries = keep_sentence_boundaries
        self._dropout = nn.Dropout(p=dropout)
        self._scalar_mixes: list[ScalarMix] = []
        for index in range(num_output_representations):
            scalar_mix = ScalarMix(
                self._elmo_lstm.num_layers,
                do_layer_norm=do_layer_norm,
                initial_scalar_parameters=scalar_mix_parameters,
                trainable=scalar_mix_parameters is None,
            )
            self.add_module(f"scalar_mix_{index}", scalar_mix)
            self._scalar_mixes.append(scalar_mix)

    def get_output_dim(self) -> int:
        return self._elmo_lstm.get_output_dim()

    def forward(self, inputs: torch.Tensor, word_inputs: torch.Tensor | None = None) -> dict:
        """`inputs` (..., timesteps, 50) character ids; `word_inputs` (..., timesteps) word ids of the cached
        vocabulary (with `vocab_to_cache`)."""
        original_shape = inputs.shape
        reshaped_inputs = inputs.reshape(-1, *original_shape[-2:]) if inputs.dim() > 3 else inputs
        reshaped_word_inputs = word_inputs
        if word_inputs is not None:
            if not self._has_cached_vocab:
                logger.warning("Word inputs were passed to ELMo but it does not have a cached vocab.")
                reshaped_word_inputs = None
            elif word_inputs.dim() > 2:
                reshaped_word_inputs = word_inputs.reshape(-1, word_inputs.shape[-1])
        bilm_output = self._elmo_lstm(reshaped_inputs, reshaped_word_inputs)
        representations, mask = self._mixed(bilm_output["activations"], bilm_output["mask"])
        if word_inputs is not None and word_inputs.dim() > 2:
            leading = word_inputs.shape
        elif inputs.dim() > 3:
            leading = original_shape[:-1]
        else:
            return {"elmo_representations": representations, "mask": mask}
        # (AllenNLP viewed to the input's timesteps, which crashed with the boundaries kept: 2 more positions)
        leading = (*leading[:-1], mask.shape[-1])
        return {
            "elmo_representations": [representation.view(*leading, -1) for representation in representations],
            "mask": mask.view(leading),
        }

    def _mixed(self, layers: list[torch.Tensor], mask_with_markers: torch.Tensor) -> tuple[list, torch.Tensor]:
        """Each scalar mix of the layers (with the markers, as AllenNLP normalised over them), markers removed unless
        kept, then dropout; and the mask."""
        representations, mask = [], mask_with_markers
        for scalar_mix in self._scalar_mixes:
            mixed = scalar_mix(layers, mask_with_markers)
            if not self._keep_sentence_boundaries:
                mixed, mask = remove_sentence_boundaries(mixed, mask_with_markers)
            representations.append(self._dropout(mixed))
        if not self._scalar_mixes and not self._keep_sentence_boundaries:
            mask = remove_sentence_boundaries(layers[0], mask_with_markers)[1]
        return representations, mask


class ElmoTokenEmbedder(nn.Module):
    """AllenNLP 0.9's `ElmoTokenEmbedder`: one ELMo representation (`Elmo` with `num_output_representations=1`),
    optionally projected to `projection_dim`; `forward` returns the tensor (..., timesteps, output dim)."""

    def __init__(
        self,
        options_file: str | os.PathLike | None,
        weight_file: str | os.PathLike | None,
        do_layer_norm: bool = False,
        dropout: float = 0.5,
        requires_grad: bool = False,
        projection_dim: int | None = None,
        vocab_to_cache: list[str] | None = None,
        scalar_mix_parameters: Sequence[float] | None = None,
        *,
        stateful: bool = True,
    ) -> None:
        super().__init__()
        self._elmo = Elmo(
            options_file,
            weight_file,
            1,
            do_layer_norm=do_layer_norm,
            dropout=dropout,
            requires_grad=requires_grad,
            vocab_to_cache=vocab_to_cache,
            scalar_mix_parameters=scalar_mix_parameters,
            stateful=stateful,
        )
        self._projection = nn.Linear(self._elmo.get_output_dim(), projection_dim) if projection_dim else None
        self.output_dim = projection_dim or self._elmo.get_output_dim()

    def get_output_dim(self) -> int:
        return self.output_dim

    def forward(self, inputs: torch.Tensor, word_inputs: torch.Tensor | None = None) -> torch.Tensor:
        representation = self._elmo(inputs, word_inputs)["elmo_representations"][0]
        return self._projection(representation) if self._projection is not None else representation
