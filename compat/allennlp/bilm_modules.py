"""AllenNLP 0.9's `_ElmoCharacterEncoder`, `ElmoLstm` and `_ElmoBiLm` (allennlp.modules.elmo), computed by
`ElmoModel`: the same inputs, outputs (the sentence markers `<S>`, `</S>` kept), carried LSTM state and state-dict
names.

Each module registers the parts of one `ElmoModel` that AllenNLP's module of the same name held (the character
encoder; the two LSTM stacks), so that `parameters()`, `.to()`, `requires_grad` and state dicts cover exactly them;
the model itself, which runs both steps, is held unregistered (`_model`). Differences from AllenNLP: the token
vectors of padding positions are zero (AllenNLP's `_ElmoCharacterEncoder` gave the padding row's CNN vector there),
and parameters are named as `ElmoModel`'s (state dicts use AllenNLP's names).
"""

from __future__ import annotations

import functools
import logging
import os

import torch
from torch import nn

from modeling_elmo import ElmoModel
from modeling_elmo.modeling_elmo import _reverse_each_row, _reversing_index

from .bilm_files import load_bilm
from .carried_state import CarriedState
from .checks import ConfigurationError
from .state_dict_names import character_encoder_renamings, lstm_renamings, to_allennlp_names, to_our_names
from .token_ids import batch_to_ids

__all__ = ["_ElmoBiLm", "_ElmoCharacterEncoder", "_ElmoLstm"]

logger = logging.getLogger(__name__)


class _RenamedStateDict(nn.Module):
    """A module whose state dict holds AllenNLP's names (`renamings`, see `state_dict_names`)."""

    def _use_allennlp_names(self, renamings: list) -> None:
        # partials, not bound methods: torch marks its hooks with an attribute, which a method cannot take
        self.register_state_dict_post_hook(functools.partial(_save_allennlp_names, renamings))
        self.register_load_state_dict_pre_hook(functools.partial(_read_allennlp_names, renamings))


def _save_allennlp_names(renamings: list, module: nn.Module, state_dict: dict, prefix: str, metadata: dict) -> None:
    to_allennlp_names(state_dict, prefix, renamings)


def _read_allennlp_names(renamings, module, state_dict, prefix, metadata, strict, missing, unexpected, errors) -> None:
    to_our_names(state_dict, prefix, renamings, errors)


def _check_character_ids(inputs: torch.Tensor) -> None:
    """AllenNLP crashed deep inside on these (a batch of empty sentences has no positions at all)."""
    if inputs.dim() != 3:
        raise ConfigurationError(
            f"inputs must be character ids of shape (batch, timesteps, 50) from batch_to_ids, got {tuple(inputs.shape)}"
        )
    if inputs.shape[1] == 0:
        raise ConfigurationError(
            f"the batch's {inputs.shape[0]} sentences are all empty (inputs of shape {tuple(inputs.shape)}):"
            " give at least one word"
        )


def _marked_mask(lengths: torch.Tensor, positions: int) -> torch.Tensor:
    """(batch, positions) long: 1 at `<S>`, each word and `</S>` (the first `lengths + 2` positions of a row)."""
    return (torch.arange(positions, device=lengths.device)[None, :] < (lengths + 2)[:, None]).long()


class _ElmoCharacterEncoder(_RenamedStateDict):
    """AllenNLP's `_ElmoCharacterEncoder`: character ids (batch, timesteps, 50) -> `{'token_embedding': (batch,
    timesteps + 2, P), 'mask': (batch, timesteps + 2)}`, with `<S>` and `</S>` added around each sentence.

    `model`: an `ElmoModel` already loaded (what `_ElmoBiLm` passes) instead of the two files.
    """

    def __init__(
        self,
        options_file: str | os.PathLike | None,
        weight_file: str | os.PathLike | None,
        requires_grad: bool = False,
        *,
        model: ElmoModel | None = None,
    ) -> None:
        super().__init__()
        model = load_bilm(options_file, weight_file) if model is None else model
        self.__dict__["_model"] = model  # runs the step; unregistered: this module holds its character encoder only
        self._encoder = model.char_encoder
        self.output_dim = model.config.projection_dim
        self.requires_grad = requires_grad
        self._encoder.requires_grad_(requires_grad)
        config = model.config
        self._use_allennlp_names(
            character_encoder_renamings(len(config.char_cnn_filters), config.num_highway_layers, "_encoder.")
        )

    def get_output_dim(self) -> int:
        return self.output_dim

    def forward(self, inputs: torch.Tensor) -> dict[str, torch.Tensor]:
        _check_character_ids(inputs)
        word_mask = self._model._word_mask(inputs, None)
        token = self._model.embed(inputs, word_mask)
        return {"mask": _marked_mask(word_mask.sum(dim=1), token.shape[1]), "token_embedding": token}


class _ElmoLstm(_RenamedStateDict):
    """AllenNLP's `ElmoLstm` (`_ElmoBiLm._elmo_lstm`): both LSTM stacks over the marked token vectors, the state
    carried from call to call (`carried_state.CarriedState`; `stateful=False`: from zeros every call)."""

    def __init__(self, model: ElmoModel, requires_grad: bool = False, *, stateful: bool = True) -> None:
        super().__init__()
        self.__dict__["_model"] = model
        self.forward_stack = model.forward_lstm
        self.backward_stack = model.backward_lstm
        self.requires_grad = requires_grad
        self.forward_stack.requires_grad_(requires_grad)
        self.backward_stack.requires_grad_(requires_grad)
        self.num_layers = model.config.num_hidden_layers
        self.input_size = self.hidden_size = model.config.projection_dim
        self.cell_size = model.config.cell_size
        self.carried = CarriedState(stateful=stateful)
        self._use_allennlp_names(lstm_renamings(self.num_layers))

    @property
    def stateful(self) -> bool:
        return self.carried.stateful

    def reset_states(self, mask: torch.Tensor | None = None) -> None:
        """Forget the carried state: all of it, or the rows where `mask` (rows,) is 1 (AllenNLP's)."""
        self.carried.reset_states(mask)

    def forward(self, token: torch.Tensor, marked_lengths: torch.Tensor) -> list[torch.Tensor]:
        """Token vectors (batch, positions, P) with the markers, each row's marked length (batch,) -> each layer's
        `[forward; backward]` (batch, positions, 2P), zero past each row's length."""
        reversing = _reversing_index(marked_lengths, token.shape[1])
        inputs = torch.stack([token, _reverse_each_row(token, reversing)])
        initial = self.carried.initial(token.shape[0])
        outputs, final = self._model.contextualize(inputs, marked_lengths, initial)
        self.carried.update(final)
        return [torch.cat([output[0], _reverse_each_row(output[1], reversing)], dim=-1) for output in outputs]


class _ElmoBiLm(nn.Module):
    """AllenNLP's `_ElmoBiLm`: character ids (batch, timesteps, 50) -> `{'activations': [layer 0, ..., layer L],
    each (batch, timesteps + 2, 2P), 'mask': (batch, timesteps + 2)}`, the sentence markers kept.

    As in AllenNLP the LSTM state is carried from call to call (`stateful=True`, the default): a sentence's vectors
    depend on the batches run before; `stateful=False` starts every call from zeros. `vocab_to_cache`: words whose
    token vectors are computed once, then looked up by word id (`word_inputs`) instead of run through the CNN.
    """

    def __init__(
        self,
        options_file: str | os.PathLike | None,
        weight_file: str | os.PathLike | None,
        requires_grad: bool = False,
        vocab_to_cache: list[str] | None = None,
        *,
        stateful: bool = True,
    ) -> None:
        super().__init__()
        model = load_bilm(options_file, weight_file)
        self.__dict__["_model"] = model
        self._token_embedder = _ElmoCharacterEncoder(None, None, requires_grad, model=model)
        self._requires_grad = requires_grad
        if requires_grad and vocab_to_cache:
            logging.warning(
                "You are fine tuning ELMo and caching char CNN word vectors. This behaviour is not guaranteed to be "
                "well defined, particularly. if not all of your inputs will occur in the vocabulary cache."
            )
        self._word_embedding: nn.Embedding | None = None
        self._bos_embedding: torch.Tensor | None = None
        self._eos_embedding: torch.Tensor | None = None
        if vocab_to_cache:
            self.create_cached_cnn_embeddings(vocab_to_cache)
        self._elmo_lstm = _ElmoLstm(model, requires_grad, stateful=stateful)
        self.num_layers = model.config.num_hidden_layers + 1

    def get_output_dim(self) -> int:
        return 2 * self._token_embedder.get_output_dim()

    def forward(self, inputs: torch.Tensor, word_inputs: torch.Tensor | None = None) -> dict:
        _check_character_ids(inputs)
        marked = None
        if self._word_embedding is not None and word_inputs is not None:
            try:
                marked = self._cached_token_vectors(word_inputs)
            except (RuntimeError, IndexError):  # a word id outside the cache: the CNN computes it (AllenNLP's)
                marked = None
        if marked is None:
            word_mask = self._model._word_mask(inputs, None)
            marked = self._model.embed(inputs, word_mask), word_mask.sum(dim=1)
        token, lengths = marked
        mask = _marked_mask(lengths, token.shape[1])
        layers = self._elmo_lstm(token, lengths + 2)
        token_layer = torch.cat([token, token], dim=-1) * mask[..., None].to(token.dtype)
        return {"activations": [token_layer, *layers], "mask": mask}

    def layers_without_markers(self, inputs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """What `ElmoEmbedder.batch_to_embeddings` returns, through `ElmoModel.forward` (the package's own path):
        every layer (batch, L + 1, timesteps, 2P) with the markers removed, and the words' mask (batch, timesteps)
        long. The state is carried as by `forward`."""
        _check_character_ids(inputs)
        initial = self._elmo_lstm.carried.initial(inputs.shape[0])
        output = self._model(inputs, state=initial, use_cache=self._elmo_lstm.stateful, output_hidden_states=True)
        if output.state is not None:
            self._elmo_lstm.carried.update(output.state)
        return torch.stack(output.hidden_states, dim=1), output.word_mask.long()

    def _cached_token_vectors(self, word_inputs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The marked token vectors (batch, timesteps + 2, P) of cached words, and each sentence's length."""
        lengths = (word_inputs > 0).sum(dim=1)
        embedded = self._word_embedding(word_inputs)
        batch, timesteps, width = embedded.shape
        token = embedded.new_zeros(batch, timesteps + 2, width)
        token[:, 1:-1] = embedded
        token[:, 0] = self._bos_embedding
        token[torch.arange(batch, device=token.device), lengths + 1] = self._eos_embedding
        return token, lengths

    @torch.no_grad()
    def create_cached_cnn_embeddings(self, tokens: list[str]) -> None:
        """Compute the token vectors of `tokens` once (AllenNLP's): `_word_embedding` (word id i: `tokens[i]`, id 0
        all zero: padding), `_bos_embedding` and `_eos_embedding`."""
        device = next(self._token_embedder.parameters()).device
        char_ids = batch_to_ids([["<S>", "</S>", *tokens]])[0].to(device)
        vectors = self._model.char_encoder(char_ids)
        self._bos_embedding, self._eos_embedding = vectors[0], vectors[1]
        embedding = nn.Embedding(len(tokens), vectors.shape[1], padding_idx=0, device=device, dtype=vectors.dtype)
        embedding.weight.copy_(vectors[2:])
        embedding.weight[0] = 0.0
        embedding.weight.requires_grad = self._requires_grad
        self._word_embedding = embedding
