"""ELMo's bidirectional language model (Peters et al., 2018) as a transformers model.

The computation follows the original TensorFlow code (bilm-tf) exactly: a character CNN with highway
layers and a projection gives a context-free token vector; two separate LSTM stacks with projection,
clipping and residual connections read the sentence forwards and backwards.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import numbers
import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import torch
from torch import nn
from transformers import PreTrainedModel
from transformers import initialization as init
from transformers.modeling_outputs import SequenceClassifierOutput, TokenClassifierOutput
from transformers.utils import ModelOutput, logging
from transformers.utils.generic import can_return_tuple

from .configuration_elmo import ElmoConfig
from .finite_elmo import chunk_slices, first_non_finite_in_chunks
from .kernels_elmo import run_lstm_stacks
from .lstm_elmo import LstmCell, LstmState, OneDnnLayerProducts
from .mixing_elmo import ElmoLayerMix
from .onednn_elmo import ElmoDerivedWeights, ElmoOneDnnWeights, onednn_applies
from .softmax_elmo import ElmoSoftmax
from .substitutes_elmo import (
    DEFAULT_SUBSTITUTE_COMBINATION,
    ElmoSubstitutesOutput,
    combine_lm_log_probabilities,
    non_finite_score_problem,
)
from .text_elmo import BILM_TF_SPECIAL_WORD_IDS, framed_char_ids
from .token_cache_elmo import TokenVectorCache

__all__ = [
    "FIRST_MIX_WEIGHTS_PREFIX",
    "ElmoBidirectionalLMOutput",
    "ElmoCharacterEncoder",
    "ElmoForBidirectionalLM",
    "ElmoForSequenceClassification",
    "ElmoForTokenClassification",
    "ElmoLstmLayer",
    "ElmoLstmStack",
    "ElmoModel",
    "ElmoModelOutput",
    "ElmoPreTrainedModel",
    "ElmoTaskModel",
    "LayerProducts",
    "LstmOptions",
    "lstm_cell_step",
    "lstm_layer_forward",
    "non_finite_entry",
    "run_layer_by_layer",
]

logger = logging.get_logger(__name__)

# The character CNN computes a multiple of this many rows on a CPU (see `ElmoCharacterEncoder._encode`).
_ENCODED_ROWS_STEP = 16


def non_finite_entry(tensor: torch.Tensor) -> tuple[list[int], float] | None:
    """The index and value of the first NaN or infinity in `tensor` (of any floating dtype), or None: always for
    integer tensors, and for tensors without data (on the meta device)."""
    if not tensor.is_floating_point() or tensor.device.type == "meta":
        return None
    flat = tensor.reshape(-1)
    # A NaN or an infinity makes any sum non-finite, so a finite sum (float16's and bfloat16's in float32, which does
    # not overflow for weights) clears the tensor in one pass without a mask, many times faster than `isfinite`;
    # only a tensor whose sum is not finite is searched element by element (finding nothing if the sum overflowed).
    if torch.isfinite(flat.sum(dtype=torch.float32 if flat.element_size() < 4 else None)):
        return None
    # The search is finite_elmo's (numpy), over the tensor's chunks copied to numpy one at a time (bfloat16, which
    # numpy lacks, as float32: NaN and infinity stay what they are), in its chunks.
    chunks = (
        (chunk.float() if chunk.dtype == torch.bfloat16 else chunk).cpu().numpy()
        for chunk in (flat.detach()[part] for part in chunk_slices(flat.numel()))
    )
    return first_non_finite_in_chunks(chunks, tuple(tensor.shape))


@dataclass
class ElmoModelOutput(ModelOutput):
    r"""Output of [`ElmoModel`].

    Args:
        last_hidden_state (`torch.FloatTensor` of shape `(batch, words, 2 * projection_dim)`):
            The top biLSTM layer, `[forward; backward]`, zero at padding (with `num_layers`: the top layer run).
        hidden_states (`tuple(torch.FloatTensor)`, returned with `output_hidden_states=True`):
            `num_hidden_layers + 1` tensors (`num_layers + 1` with `num_layers`) of shape
            `(batch, words, 2 * projection_dim)`: layer 0 is the token vector twice, `[token; token]`; layer j is
            the j-th biLSTM layer, `[forward_j; backward_j]`.
        state (`tuple(torch.FloatTensor, torch.FloatTensor)`, returned with `use_cache=True`):
            The LSTM state after each row of the batch, `(h, c)` with `h` of shape
            `(2, num_hidden_layers, batch, projection_dim)` and `c` of shape `(2, num_hidden_layers, batch,
            cell_size)`; index 0 of the first axis is the forward stack (after `</S>`), 1 the backward stack
            (after `<S>`). Pass it as `state=` to continue every row in the next call.
        word_mask (`torch.BoolTensor` of shape `(batch, words)`):
            True at each sentence's words, False at padding (from `attention_mask`, or by default the rows with a
            non-zero id): the outputs are zero where it is False. The task heads mix and pool with it.
    """

    last_hidden_state: torch.FloatTensor | None = None
    hidden_states: tuple[torch.FloatTensor, ...] | None = None
    state: tuple[torch.FloatTensor, torch.FloatTensor] | None = None
    word_mask: torch.BoolTensor | None = None


class ElmoHighway(nn.Module):
    """One highway layer in bilm-tf's convention: `t * relu(x W_t + b_t) + (1 - t) * x`, `t = sigmoid(x W_c + b_c)`."""

    def __init__(self, *, dim: int) -> None:
        super().__init__()
        self.carry = nn.Linear(dim, dim)
        self.transform = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate = torch.sigmoid(self.carry(x))
        return gate * torch.relu(self.transform(x)) + (1.0 - gate) * x


def _exact_float32_convolutions(device: torch.device, dtype: torch.dtype) -> contextlib.AbstractContextManager:
    """Within the block, cuDNN's float32 convolutions in IEEE float32 where `dtype` is float32 on a CUDA `device`;
    the user's setting comes back after it (a no-op elsewhere).

    torch lets cuDNN run float32 convolutions in TF32 by default (`torch.backends.cudnn.allow_tf32`, and
    `torch.backends.cudnn.conv.fp32_precision` since torch 2.9): that put the character CNN's token vectors 1e-4
    away from float32 at a batch of 2048 words. float32 must mean float32, without changing the setting for the
    rest of the program.
    """
    if torch.device(device).type != "cuda" or dtype != torch.float32:
        return contextlib.nullcontext()
    per_operator = getattr(torch.backends.cudnn, "conv", None)
    if per_operator is not None and hasattr(per_operator, "fp32_precision"):
        return _attribute_set_within(per_operator, "fp32_precision", "ieee")
    return _attribute_set_within(torch.backends.cudnn, "allow_tf32", False)


@contextlib.contextmanager
def _attribute_set_within(owner: object, name: str, value: object) -> Iterator[None]:
    """`owner.name` set to `value` within the block, and back to what it was after it."""
    previous = getattr(owner, name)
    setattr(owner, name, value)
    try:
        yield
    finally:
        setattr(owner, name, previous)


class ElmoCharacterEncoder(nn.Module):
    """The context-free token layer: character embedding, CNN, highway layers and projection.

    Maps character ids `(words, max_characters_per_token)` (and, for models with a word embedding such as
    ELMoForManyLangs', word ids `(words,)`) to token vectors `(words, projection_dim)`. A word that occurs
    several times is encoded once: a batch of text repeats its frequent words many times.
    """

    # The convolution outputs (words, filters, positions) the CNN holds at once: 64 MB in float32, 655 words of the
    # bundled model or 163 at the original size. All of a batch's distinct words at once took 1 GB more for a line of
    # 10,000 words (the bundled model; 4 GB at the original size). The words' vectors do not depend on it.
    elements_per_chunk = 1 << 24

    def __init__(self, config: ElmoConfig) -> None:
        super().__init__()
        # Id 0 is "no character": its row stays zero (bilm-tf's 261 trained rows start at id 1).
        self.char_embedding = nn.Embedding(config.char_vocab_size, config.char_embedding_dim, padding_idx=0)
        self.convolutions = nn.ModuleList(
            nn.Conv1d(config.char_embedding_dim, count, kernel_size=width) for width, count in config.char_cnn_filters
        )
        self.activation = torch.relu if config.char_cnn_activation == "relu" else torch.tanh
        self.highways = nn.ModuleList(ElmoHighway(dim=config.num_filters) for _ in range(config.num_highway_layers))
        self.word_embedding = (
            nn.Embedding(config.word_vocab_size, config.word_embedding_dim) if config.word_embedding_dim else None
        )
        self.projection = nn.Linear(config.word_embedding_dim + config.num_filters, config.projection_dim)

    def forward(
        self,
        char_ids: torch.Tensor,
        word_ids: torch.Tensor | None = None,
        token_cache: TokenVectorCache | None = None,
    ) -> torch.Tensor:
        """The token vectors `(words, projection_dim)`; with a `token_cache` (in eval mode without gradients), the
        CNN runs only over the words it does not hold yet."""
        if self.word_embedding is not None and word_ids is None:
            raise ValueError("this model has a word embedding: pass input_word_ids from its tokenizer")
        _check_char_ids(char_ids, self.char_embedding.num_embeddings)
        keys = _packed_columns(char_ids, bits=(self.char_embedding.num_embeddings - 1).bit_length())
        if word_ids is not None:
            keys = torch.cat([keys, word_ids[:, None]], dim=1)
        first, inverse = _distinct_rows(keys)
        chars, words = char_ids[first], None if word_ids is None else word_ids[first]
        if token_cache is None or self.training or torch.is_grad_enabled():
            return self._encode_in_chunks(chars, words)[inverse]

        def encode(missing: torch.Tensor) -> torch.Tensor:
            return self._encode_in_chunks(chars[missing], None if words is None else words[missing])

        return token_cache.vectors(keys[first], encode, dtype=self.projection.weight.dtype)[inverse]

    def _encode_in_chunks(self, char_ids: torch.Tensor, word_ids: torch.Tensor | None = None) -> torch.Tensor:
        """[`_encode`] of a bounded number of words at a time (`elements_per_chunk`): memory stays flat for any
        number of words; each word is encoded on its own, so its vector is the same in any chunk."""
        filters = sum(convolution.out_channels for convolution in self.convolutions)
        rows = max(1, self.elements_per_chunk // (filters * char_ids.shape[-1]))
        if char_ids.shape[0] <= rows:
            return self._encode(char_ids, word_ids)
        return torch.cat(
            [
                self._encode(
                    char_ids[start : start + rows], None if word_ids is None else word_ids[start : start + rows]
                )
                for start in range(0, char_ids.shape[0], rows)
            ]
        )

    def _encode(self, char_ids: torch.Tensor, word_ids: torch.Tensor | None = None) -> torch.Tensor:
        words = char_ids.shape[0]
        if char_ids.device.type == "cpu":
            # oneDNN, behind CPU convolutions, builds (and caches) a kernel per input shape: nearly every batch
            # has another number of distinct words. Padding that number up to a bucket makes shapes repeat; the
            # padded rows (no characters) are computed on their own and dropped. The CPU's matrix products round
            # a row otherwise when they have fewer than about 12 rows, or when it falls in a tail of 1 or 2 rows
            # past a multiple of 16: a multiple of `_ENCODED_ROWS_STEP` rows, up to the projection, gives each word
            # the same vector in any batch (tests/model/test_token_cache.py), which a `TokenVectorCache` relies on.
            computed = -(-max(_row_bucket(words), _ENCODED_ROWS_STEP) // _ENCODED_ROWS_STEP) * _ENCODED_ROWS_STEP
            char_ids = nn.functional.pad(char_ids, (0, 0, 0, computed - words))
            word_ids = None if word_ids is None else nn.functional.pad(word_ids, (0, computed - words))
        chars = self.char_embedding(char_ids).transpose(1, 2)  # (words, embedding, characters)
        # Valid convolution over all slots (pad slots included), max over positions, then the activation.
        with _exact_float32_convolutions(chars.device, chars.dtype):
            features = torch.cat([self.activation(conv(chars).amax(dim=-1)) for conv in self.convolutions], dim=-1)
        for highway in self.highways:
            features = highway(features)
        if word_ids is not None:
            features = torch.cat([self.word_embedding(word_ids), features], dim=-1)
        return self.projection(features)[:words]


def _check_char_ids(char_ids: torch.Tensor, rows: int) -> None:
    """Refuse, in one ValueError, character ids outside the embedding's rows 0..rows - 1: a negative id packs into
    the key of another word (`_packed_columns`), whose vector it would take in silence. The exported graph refuses
    the same ids (`serving/graph_builder.py`)."""
    if not char_ids.numel():
        return
    low, high = torch.stack(torch.aminmax(char_ids)).tolist()  # one host synchronisation
    if low < 0 or high >= rows:
        raise ValueError(
            f"input_ids holds the character id {low if low < 0 else high}: character ids lie in 0..{rows - 1} "
            "(0 for no character); encode the words with ElmoTokenizer"
        )


def _packed_columns(ids: torch.Tensor, bits: int) -> torch.Tensor:
    """Integer `ids` (N, K) in [0, 2**bits) packed `63 // bits` to an int64 column: (N, ceil(K / (63 // bits))),
    equal rows for equal rows of `ids` and only for them."""
    per_column = 63 // bits
    padded = nn.functional.pad(ids.long(), (0, -ids.shape[1] % per_column))
    shifts = torch.arange(per_column, device=ids.device) * bits
    return (padded.view(ids.shape[0], padded.shape[1] // per_column, per_column) << shifts).sum(dim=-1)


def _distinct_rows(rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """For integer `rows` (N, K) >= 0: the index of one occurrence of each distinct row (U,) and, for every row,
    which distinct row it is (N,), so that `rows[first][inverse]` equals `rows`.

    Exact, in a few operations per column: the ranks of the rows among the distinct prefixes seen so far are
    combined with each next column's ranks (both < N, so the pair fits int64) and ranked again. `torch.unique(
    dim=0)` gives the same groups, but on CPUs it compares rows pairwise, one operator call each (thousands per
    batch): the operator calls are what hold a GPU back.
    """
    count = rows.shape[0]
    inverse = rows.new_zeros(count)
    for column in rows.long().unbind(dim=1):
        _, column_rank = torch.unique(column, return_inverse=True)
        _, inverse = torch.unique(inverse * count + column_rank, return_inverse=True)
    first = torch.empty(int(inverse.max()) + 1 if count else 0, dtype=torch.long, device=rows.device)
    first.scatter_(0, inverse, torch.arange(count, device=rows.device))
    return first, inverse


def _row_bucket(rows: int) -> int:
    """`rows` rounded up to one of 8 sizes per power of two (..., 64, 72, 80, ..., 120, 128, 144, ...): at most
    12.5% more rows, and few distinct sizes over a corpus."""
    step = 1 << max(rows.bit_length() - 4, 0)
    return -(-rows // step) * step


class ElmoLstmLayer(nn.Module):
    """One direction of one layer: TensorFlow's `LSTMCell(num_units=C, num_proj=P)` without peepholes.

    Gate blocks are in TensorFlow's order `i, j, f, o`. bilm-tf's `W_0` of shape `(input + P, 4C)` is split
    into `input_projection` (one matrix multiply for a chunk of time steps) and `state_projection`
    (per step). The layer holds weights; [`lstm_layer_forward`] below runs it (the reference), and so do the fast
    kernels of `lstm_elmo.py` (see [`run_lstm_stacks`]); it keeps the copies of its weights packed for oneDNN
    (`onednn_weights`).
    """

    # Positions (a row at a step) whose input projections are computed together, as one matrix multiply. Bounds
    # the (positions, 4C) buffer (16 MB at the original size) whatever the batch size and sentence length; at
    # the original size on CPU 256 ran 3-10% faster than 128, 512 or whole batches (the buffer stays in cache).
    positions_per_chunk = 256

    def __init__(
        self,
        *,
        input_size: int,
        cell_size: int,
        projection_size: int,
        cell_clip: float | None,
        proj_clip: float | None,
        forget_bias: float,
    ) -> None:
        super().__init__()
        self.input_projection = nn.Linear(input_size, 4 * cell_size)
        self.state_projection = nn.Linear(projection_size, 4 * cell_size, bias=False)
        self.output_projection = nn.Linear(cell_size, projection_size, bias=False)
        self.cell_size = cell_size
        self.cell_clip = cell_clip
        self.proj_clip = proj_clip
        self.forget_bias = forget_bias
        self.onednn_weights = ElmoOneDnnWeights()

    def gate_bias(self) -> torch.Tensor:
        """The input projection's bias (4C,) with the forget bias added (once, instead of once per step)."""
        bias = self.input_projection.bias.clone()
        bias[2 * self.cell_size : 3 * self.cell_size] += self.forget_bias
        return bias


class ElmoLstmStack(nn.Module):
    """The LSTM layers of one direction; layers after the first add their input to their output when
    `use_skip_connections` (the recurrent state keeps the output without it). The wavefront kernel keeps its
    stacked copies of the weights of the stacks it runs together, this one first, in `stacked_weights`.

    It has no `forward` of its own: the model runs both directions at once by the kernel its config names
    (`kernels_elmo.run_lstm_stacks`, see [`ElmoModel.contextualize`]); the reference, [`run_layer_by_layer`] below,
    runs each stack's layers one after another ([`lstm_layer_forward`]).
    """

    def __init__(self, config: ElmoConfig) -> None:
        super().__init__()
        self.layers = nn.ModuleList(
            ElmoLstmLayer(
                input_size=config.projection_dim,
                cell_size=config.cell_size,
                projection_size=config.projection_dim,
                cell_clip=config.cell_clip,
                proj_clip=config.proj_clip,
                forget_bias=config.lstm_forget_bias,
            )
            for _ in range(config.num_hidden_layers)
        )
        self.use_skip_connections = config.use_skip_connections
        self.stacked_weights = ElmoDerivedWeights()


def lstm_cell_step(gates: torch.Tensor, c: torch.Tensor, cell_clip: float | None) -> LstmState:
    """The element-wise part of one step of TensorFlow's LSTM cell, for any number of sequences.

    `gates` (..., 4C) are the input and state projections plus bias (forget bias included), in blocks `i, j,
    f, o`; `c` (..., C) the cell state. Returns `o * tanh(c')` (..., C), the input of the output projection,
    and the new cell state `c'` (..., C).
    """
    size = c.shape[-1]
    # Slices rather than split(): fewer operator calls. (One sigmoid over all four blocks would save two more, but
    # its wasted quarter cost 1% of a forward on CPU.)
    i, j, f, o = (gates[..., block * size : (block + 1) * size] for block in range(4))
    c = torch.addcmul(torch.sigmoid(f) * c, torch.sigmoid(i), torch.tanh(j))
    if cell_clip is not None:
        c = c.clamp(-cell_clip, cell_clip)
    return torch.sigmoid(o) * torch.tanh(c), c


@dataclass(frozen=True)
class LstmOptions:
    """How a model's kernel runs besides which one (`config.lstm_implementation`): given to every kernel as
    `options`, kept by the model as one object (`model.lstm_options`) that `set_lstm_implementation(onednn=...)` and
    `compile_lstm_cells()` replace."""

    # `"layer_by_layer"`: CPU inference runs the products on oneDNN (see `onednn_elmo.py`); False: on torch.
    onednn: bool = True
    # The element-wise step that every kernel takes: [`lstm_cell_step`], or a compiled version of it.
    cell: LstmCell = lstm_cell_step


def run_layer_by_layer(
    stacks: Sequence[ElmoLstmStack],
    inputs: torch.Tensor,
    batch_sizes: list[int],
    state: LstmState,
    num_layers: int,
    *,
    dropout: float,
    options: LstmOptions,
) -> tuple[list[torch.Tensor], LstmState]:
    """`"layer_by_layer"`, the reference kernel (the others are tested against it): each direction's layers one
    after another, each over its whole input ([`lstm_layer_forward`]), layers after the first adding their (dropped)
    input to their output where the stack uses skip connections. Arguments and result: those of
    `kernels_elmo.run_lstm_stacks`. A layer's weights stay in the CPU's caches from step to step (training at the
    original size took 1.4x the CPU time as a wavefront), so this also runs ELMo on CPUs (`"auto"`)."""
    outputs = [[] for _ in range(num_layers)]  # [layer][direction]
    h, c = ([list(layers.unbind(0)) for layers in part] for part in state)  # [direction][layer]
    for direction, stack in enumerate(stacks):
        layer_input = inputs[direction]
        for index, layer in enumerate(stack.layers[:num_layers]):
            if dropout:
                layer_input = nn.functional.dropout(layer_input, p=dropout, training=True)
            layer_state = (h[direction][index], c[direction][index])
            output, (h[direction][index], c[direction][index]) = lstm_layer_forward(
                layer, layer_input, batch_sizes, layer_state, options=options
            )
            if index > 0 and stack.use_skip_connections:
                output = output + layer_input
            outputs[index].append(output)
            layer_input = output
    final_state = tuple(torch.stack([torch.stack(layers) for layers in part]) for part in (h, c))
    return [torch.stack(directions) for directions in outputs], final_state


def lstm_layer_forward(
    layer: ElmoLstmLayer,
    inputs: torch.Tensor,
    batch_sizes: list[int],
    state: LstmState,
    *,
    options: LstmOptions = LstmOptions(),
) -> tuple[torch.Tensor, LstmState]:
    """One layer of one direction (the `"layer_by_layer"` kernel's step) over `inputs` (batch, time, input_size)
    whose rows are sorted by length, longest first: bilm-tf's cell, TensorFlow's `LSTMCell` with a projection. At
    each step the gates are `input_projection(x) + state_projection(h)` with the forget bias added to block f
    (`gate_bias`), the cell step ([`lstm_cell_step`]: gates i, j, f, o, cell clip) gives the new cell state, and
    `output_projection`, clipped to `proj_clip`, the new h (the output). The input projections of many steps are
    computed together (`positions_per_chunk`); the products run on torch ([`LayerProducts`]) or, for CPU inference,
    on oneDNN (`lstm_elmo.OneDnnLayerProducts`, option `onednn`).

    `batch_sizes[t]` is the number of rows still running at step t; only those are computed. `state` is
    `(h, c)` of shapes (batch, P) and (batch, C). Returns the outputs (batch, time, P), zero past each
    row's length, and the state after each row's last step. `options`: see [`LstmOptions`].
    """
    h, c = state
    batch, steps, width = inputs.shape
    onednn = options.onednn and onednn_applies(inputs, h, c, *layer.parameters())
    products = (OneDnnLayerProducts if onednn else LayerProducts)(layer)
    # The positions to compute, step after step the rows still running (the first batch_sizes[t]), as indices
    # into batch * steps.
    by_position = inputs.reshape(batch * steps, width)
    running = torch.arange(batch, device=inputs.device) < torch.tensor(batch_sizes, device=inputs.device)[:, None]
    step, row = running.nonzero().unbind(1)
    running = row * steps + step
    step_outputs, finished, first_position = [], [], 0
    for chunk in _chunks(batch_sizes, layer.positions_per_chunk):
        positions = sum(batch_sizes[step] for step in chunk)
        chunk_positions = running[first_position : first_position + positions]
        input_gates = products.input(by_position.index_select(0, chunk_positions))
        first_position, offset = first_position + positions, 0
        for step in chunk:
            rows = batch_sizes[step]
            if rows < h.shape[0]:  # the last rows ended at the previous step: their state is final
                finished.append((h[rows:], c[rows:]))
                h, c = h[:rows], c[:rows]
            gates = products.state(h, input_gates[offset : offset + rows])
            offset += rows
            hidden, c = options.cell(gates, c, layer.cell_clip)
            h = _clip(products.output(hidden), layer.proj_clip)
            step_outputs.append(h)
    finished.append((h, c))
    outputs = inputs.new_zeros(batch * steps, layer.output_projection.out_features)
    if step_outputs:
        outputs = outputs.index_copy(0, running, torch.cat(step_outputs))
    h, c = (torch.cat(parts[::-1]) for parts in zip(*finished, strict=True))
    return outputs.view(batch, steps, outputs.shape[-1]), (h, c)


def _chunks(batch_sizes: list[int], positions_per_chunk: int) -> list[range]:
    """Consecutive steps of at most `positions_per_chunk` positions together (at least one step each)."""
    chunks, start, positions = [], 0, 0
    for step, rows in enumerate(batch_sizes):
        if positions and positions + rows > positions_per_chunk:
            chunks.append(range(start, step))
            start, positions = step, 0
        positions += rows
    return [*chunks, range(start, len(batch_sizes))] if batch_sizes else []


def _clip(x: torch.Tensor, clip: float | None) -> torch.Tensor:
    return x if clip is None else x.clamp(-clip, clip)


class LayerProducts:
    """The matrix products of one layer's steps (any device; gradients flow)."""

    def __init__(self, layer: ElmoLstmLayer) -> None:
        self.layer = layer
        self.bias = layer.gate_bias()

    def input(self, x: torch.Tensor) -> torch.Tensor:
        """(positions, in) -> the input gates with bias (positions, 4C)."""
        return nn.functional.linear(x, self.layer.input_projection.weight, self.bias)

    def state(self, h: torch.Tensor, input_gates: torch.Tensor) -> torch.Tensor:
        """(rows, P) and (rows, 4C) -> all gates (rows, 4C)."""
        return torch.addmm(input_gates, h, self.layer.state_projection.weight.T)

    def output(self, hidden: torch.Tensor) -> torch.Tensor:
        """(rows, C) -> the output projection (rows, P), not clipped."""
        return hidden @ self.layer.output_projection.weight.T


def _reversing_index(lengths: torch.Tensor, steps: int) -> torch.Tensor:
    """(batch, steps, 1): where each step of row b comes from when its first `lengths[b]` steps are reversed
    (padding stays put), for [`_reverse_each_row`]."""
    positions = torch.arange(steps, device=lengths.device)
    index = lengths[:, None] - 1 - positions
    return torch.where(index >= 0, index, positions)[..., None]


def _reverse_each_row(x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """Reverse the first `lengths[b]` steps of every row b of `x` (batch, time, width) with the `index` of
    [`_reversing_index`]; padding stays put."""
    return x.gather(1, index.expand_as(x))


@contextlib.contextmanager
def _hooked_weights_loaded(modules: Sequence[nn.Module]) -> Iterator[None]:
    """Within the block, the weights of `modules` and their submodules loaded where accelerate's big-model hooks
    place them (`from_pretrained(device_map=..., offload_folder=...)`), and offloaded again after it.

    Those hooks load a module's offloaded weights for the time of its own `forward` only, and the LSTM kernels read
    the layers' weights in bulk, outside any `forward` (stacked for the wavefront, packed for oneDNN): so the hooks
    run around the kernels instead. A model without hooks (loaded plainly) is left as it is.
    """
    hooked = [module for parent in modules for module in parent.modules() if hasattr(module, "_hf_hook")]
    for module in hooked:
        module._hf_hook.pre_forward(module)
    try:
        yield
    finally:
        for module in reversed(hooked):
            module._hf_hook.post_forward(module, None)


def _device_of(stack: ElmoLstmStack) -> torch.device:
    """The one device that holds `stack`'s weights; a device map that splits a stack is refused (the kernels feed
    each layer's outputs to the next, and stack the layers' weights, on one device), and so is the meta device."""
    devices = {parameter.device for parameter in stack.parameters()}
    if len(devices) != 1:
        names = ", ".join(sorted(str(device) for device in devices))
        raise ValueError(
            f"the weights of one LSTM stack lie on {names}: a device_map must keep each ElmoLstmStack on one"
            ' device (it is in _no_split_modules; device_map="auto" does so)'
        )
    device = devices.pop()
    if device.type == "meta":  # (torch's words: "Cannot copy out of meta tensor; no data!")
        raise ValueError(
            'the LSTM weights lie on the meta device, which holds no data (a model moved with .to("meta")): nothing'
            ' can be computed; put the model on "cpu" or a cuda device'
        )
    return device


def _refuse_unusable_placement(device_map: object, offload_folder: str | os.PathLike | None) -> None:
    """Refuse, before loading, a `device_map` onto the meta device (transformers' "Unsupported device type") and an
    `offload_folder` that is a file or lies under one (accelerate's FileExistsError)."""
    devices = device_map.values() if isinstance(device_map, dict) else [device_map]
    if any(device is not None and str(device).split(":")[0] == "meta" for device in devices):
        raise ValueError(
            f"device_map={device_map!r}: the meta device holds no data, so nothing can be computed on it; map the"
            ' model to "cpu", a cuda device or "disk" (with an offload_folder)'
        )
    if offload_folder is not None:
        folder = Path(offload_folder).absolute()
        existing = next(path for path in (folder, *folder.parents) if path.exists())
        if not existing.is_dir():
            raise ValueError(
                f"offload_folder {offload_folder}: {existing} is a file, not a folder: name a folder for the"
                " offloaded weights (it is made if it does not exist)"
            )


def _refuse_split_modules(model: nn.Module) -> None:
    """Refuse a loaded model whose device map put the parts of a module of `_no_split_modules` on different devices
    (the character encoder's layers read their weights outside their own `forward`: the first batch met "weight is
    on the meta device, we need a `value`"); a map that keeps each whole, as device_map="auto" does, passes."""
    device_map = getattr(model, "hf_device_map", None) or {}
    for name, module in model.named_modules():
        if type(module).__name__ not in model._no_split_modules:
            continue
        inside = {key: device for key, device in device_map.items() if f"{key}.".startswith(f"{name}.")}
        if len({str(device) for device in inside.values()}) > 1:
            places = ", ".join(f"{key}: {device}" for key, device in inside.items())
            raise ValueError(
                f"device_map places the parts of {name} ({type(module).__name__}) apart ({places}): map {name}"
                ' to one device as a whole (it is in _no_split_modules; device_map="auto" keeps it whole)'
            )


def _run_each_stack_on_its_device(
    stacks: Sequence[ElmoLstmStack],
    inputs: torch.Tensor,
    batch_sizes: list[int],
    state: LstmState,
    num_layers: int,
    **options,
) -> tuple[list[torch.Tensor], LstmState]:
    """[`run_lstm_stacks`] for stacks whose weights lie on other devices than `inputs` (a model split over devices
    by a device map): each stack runs alone on its weights' device, and the results come back to the inputs'."""
    outputs, finals = [], []
    for direction, stack in enumerate(stacks):
        device, own = _device_of(stack), slice(direction, direction + 1)
        own_state = tuple(part[own].to(device) for part in state)
        layers, final = run_lstm_stacks([stack], inputs[own].to(device), batch_sizes, own_state, num_layers, **options)
        outputs.append([layer.to(inputs.device) for layer in layers])
        finals.append([part.to(inputs.device) for part in final])
    return [torch.cat(layer) for layer in zip(*outputs, strict=True)], tuple(
        torch.cat(part, dim=0) for part in zip(*finals, strict=True)
    )


# The record of a folder's files that this package writes (`sha256sum`'s format; elmo_transformers.common.checksums
# reads it in full), and the most of it read here: a record holds a line of ~80 bytes per file.
_RECORD_FILE = "SHA256SUMS"
_RECORD_MAX_BYTES = 1 << 20


def unrecorded_files(folder: str) -> list[str]:
    """One line for each of the files of `folder` that `from_pretrained` reads (config.json, *.safetensors) whose
    sha256 its SHA256SUMS does not hold: damaged since it was recorded, or changed by hand; none when the folder has
    no record. A check of those files alone, self-contained (remote code imports nothing of the package): that the
    file's sha256 is among the record's, whatever the line's form. 18 ms of CPU for the bundled model (20 MB)."""
    record = os.path.join(folder, _RECORD_FILE)
    try:
        with _regular_file(record, _RECORD_MAX_BYTES) as file:
            recorded = file.read(_RECORD_MAX_BYTES).decode("utf-8", "replace").lower()
    except OSError:  # no record (save_pretrained writes none), or none readable: the package's commands say why
        return []
    lines = []
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if (name == "config.json" or name.endswith(".safetensors")) and os.path.isfile(path):
            sha256 = _sha256(path)
            if sha256 not in recorded:
                lines.append(
                    f"{path}: its sha256 {sha256[:16]}... is not the one {record} records: the file is damaged or"
                    " was changed; download or convert the model again (or, for a file changed on purpose, write its"
                    " new sha256 into SHA256SUMS: sha256sum FILE)"
                )
    return lines


def _regular_file(path: str, limit: int | None = None) -> BinaryIO:
    """`path` opened for reading, refused (OSError) when it is no regular file (a FIFO or a device, without waiting
    on it) or holds over `limit` bytes."""
    file = os.fdopen(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb")
    status = os.fstat(file.fileno())
    if not stat.S_ISREG(status.st_mode) or (limit is not None and status.st_size > limit):
        file.close()
        raise OSError(f"{path}: not a regular file of at most {limit} bytes")
    return file


def _sha256(path: str) -> str:
    digest = hashlib.sha256()
    with _regular_file(path) as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class ElmoPreTrainedModel(PreTrainedModel):
    """Weight initialisation and loading for the ELMo models."""

    config_class = ElmoConfig
    base_model_prefix = "elmo"
    main_input_name = "input_ids"
    # What a device map must keep on one device: a stack's layers (the kernels stack their weights and feed each
    # layer's outputs to the next where they lie), and the character encoder (its layers run one after another on
    # a batch's distinct words). The two stacks may lie apart: each then runs on its own device.
    _no_split_modules = ["ElmoCharacterEncoder", "ElmoLstmStack"]

    @classmethod
    def from_pretrained(cls, *args, **kwargs):
        """transformers' `from_pretrained`, then warnings (transformers' logging): for a local folder, each of its
        config and weights files that differ from its SHA256SUMS (`unrecorded_files`: transformers never reads the
        record); the first weight that holds a NaN or an infinity: such a weight makes the outputs computed with it
        NaN, with no other word (a pass over the loaded weights; see `non_finite_weight`). A `device_map` or
        `offload_folder` that cannot serve is refused in one line (`_refuse_unusable_placement`,
        `_refuse_split_modules`)."""
        _refuse_unusable_placement(kwargs.get("device_map"), kwargs.get("offload_folder"))
        loaded = super().from_pretrained(*args, **kwargs)
        model = loaded[0] if isinstance(loaded, tuple) else loaded  # output_loading_info=True gives a tuple
        _refuse_split_modules(model)
        source = args[0] if args else kwargs.get("pretrained_model_name_or_path")
        if source is not None and os.path.isdir(os.path.join(source, kwargs.get("subfolder") or "")):
            for unrecorded in unrecorded_files(os.path.join(source, kwargs.get("subfolder") or "")):
                logger.warning(unrecorded)
        problem = model.non_finite_weight()
        if problem:
            logger.warning(
                f"{source}: {problem}: the weights are damaged, and the outputs computed with it will be NaN;"
                " download or convert the model again"
            )
        return loaded

    def non_finite_weight(self) -> str | None:
        """The first weight (parameter or buffer) that holds a NaN or an infinity, named with its index and value, or
        None when every weight is finite."""
        for name, tensor in [*self.named_parameters(), *self.named_buffers()]:
            found = non_finite_entry(tensor.detach())
            if found is not None:
                index, value = found
                return f"the weight {name} holds a non-finite value ({value}) at index {index}"
        return None

    def _initialize_weights(self, module: nn.Module, is_custom_code: bool = False) -> None:
        # Private to transformers, with no public equivalent (every release from 5.4 to 5.24 needs this override).
        # As code outside transformers (this package, or Hub remote code), a module without parameters of its own
        # would be taken as loaded and skipped: the character encoder, highway and LSTM layers, whose
        # initialisation spans their sub-layers. Every init below uses transformers' `init` functions, which leave
        # loaded weights alone, so that guard is not needed. The flag goes by position: 5.4 to 5.12 name it
        # `is_remote_code`, 5.13 on `is_custom_code`.
        super()._initialize_weights(module, False)

    def set_lstm_implementation(self, implementation: str | None = None, *, onednn: bool | None = None) -> None:
        """Choose how this model's LSTM stacks run, as transformers' `set_attn_implementation` chooses attention
        kernels; no other model changes, even of the same class.

        `implementation`, a name of `kernels_elmo.LSTM_IMPLEMENTATIONS` (`"auto"`, `"layer_by_layer"`,
        `"wavefront"` or one registered there), becomes `config.lstm_implementation` (which `from_pretrained(...,
        lstm_implementation=...)` also sets; it is not saved). `onednn` is an option of the layer-by-layer kernel:
        False runs CPU inference's products on torch instead of oneDNN (default True; `lstm_options.onednn`). None
        leaves either as it is.
        """
        for module in self.modules():  # a name not in LSTM_IMPLEMENTATIONS: the config's check refuses it
            if isinstance(module, ElmoModel):
                if implementation is not None:
                    module.config.lstm_implementation = implementation
                if onednn is not None:
                    module.lstm_options = dataclasses.replace(module.lstm_options, onednn=onednn)

    def _init_weights(self, module: nn.Module) -> None:
        """bilm-tf's initialisation for the biLM and the softmax (what training from scratch starts from), and
        Glorot-uniform weights with zero biases for the heads' task encoder."""
        if isinstance(module, nn.LSTM):  # transformers 5.4 to 5.8 leave nn.LSTM uninitialised; 5.9 on do as here
            for name, parameter in module.named_parameters():
                (init.xavier_uniform_ if name.startswith("weight") else init.zeros_)(parameter)
            return
        super()._init_weights(module)
        if isinstance(module, ElmoLayerMix):
            module.reset_parameters()
        elif isinstance(module, ElmoCharacterEncoder):
            _init_character_encoder(module, self.config)
        elif isinstance(module, ElmoHighway):
            dim = module.carry.in_features
            init.normal_(module.carry.weight, std=dim**-0.5)
            init.constant_(module.carry.bias, -2.0)  # gates start mostly closed: the layer passes its input on
            init.normal_(module.transform.weight, std=dim**-0.5)
            init.zeros_(module.transform.bias)
        elif isinstance(module, ElmoLstmLayer):
            # TensorFlow's default (Glorot uniform) over the cell's whole kernel W_0 of shape (input + P, 4C).
            fan_in = module.input_projection.in_features + module.state_projection.in_features
            bound = (6.0 / (fan_in + module.input_projection.out_features)) ** 0.5
            init.uniform_(module.input_projection.weight, -bound, bound)
            init.uniform_(module.state_projection.weight, -bound, bound)
            init.zeros_(module.input_projection.bias)
            init.xavier_uniform_(module.output_projection.weight)
        elif isinstance(module, ElmoSoftmax):
            init.normal_(module.weight, std=module.weight.shape[1] ** -0.5)
            init.zeros_(module.bias)


def _init_character_encoder(module: ElmoCharacterEncoder, config: ElmoConfig) -> None:
    """bilm-tf: characters uniform in [-1, 1], convolutions normal with std sqrt(1 / (width * E)) (relu) or
    uniform in [-0.05, 0.05] (tanh), the projection normal with std sqrt(1 / F), biases zero."""
    embedding = module.char_embedding.weight
    init.uniform_(embedding, -1.0, 1.0)
    init.copy_(embedding, torch.cat([torch.zeros_like(embedding[:1]), embedding[1:]]))  # (row 0 alone: no flag)
    for convolution in module.convolutions:
        if config.char_cnn_activation == "relu":
            width = convolution.kernel_size[0]
            init.normal_(convolution.weight, std=(width * config.char_embedding_dim) ** -0.5)
        else:
            init.uniform_(convolution.weight, -0.05, 0.05)
        init.zeros_(convolution.bias)
    init.normal_(module.projection.weight, std=module.projection.in_features**-0.5)
    init.zeros_(module.projection.bias)


class ElmoModel(ElmoPreTrainedModel):
    r"""The ELMo biLM: every word gets `num_hidden_layers + 1` vectors of width `2 * projection_dim`.

    `<S>` and `</S>` are added around every sentence inside the model and removed from the outputs, so
    the outputs align 1:1 with the input words. The model is stateless by default; pass `use_cache=True`
    to get the LSTM `state` after each row and `state=` to continue from it, the way bilm-tf and AllenNLP
    ran (they always carried the state of batch row k into row k of the next batch).

    `forward` composes two public steps, as BERT's embeddings and encoder: [`ElmoModel.embed`] (the token layer,
    sentence markers added) and [`ElmoModel.contextualize`] (the two LSTM stacks, with state and dropout), which
    [`ElmoForBidirectionalLM`] also runs over its windows of text.

    The model does not check its inputs or weights for NaN or infinity (a check would cost a pass per call): a
    non-finite weight, an initial `state` holding one, or a float16/bfloat16 overflow propagates as NaN or inf to the
    outputs it reaches. `elmo-embed`, the converters and training refuse non-finite weights when they load a folder,
    and `elmo-embed` refuses any non-finite vector.
    """

    # A language-model folder (ElmoForBidirectionalLM) loads as the biLM alone.
    _keys_to_ignore_on_load_unexpected = [r"^softmax\."]

    def __init__(self, config: ElmoConfig) -> None:
        super().__init__(config)
        self.char_encoder = ElmoCharacterEncoder(config)
        self.forward_lstm = ElmoLstmStack(config)
        self.backward_lstm = ElmoLstmStack(config)
        # How the stacks run besides config.lstm_implementation: options of this model alone (see
        # [`ElmoPreTrainedModel.set_lstm_implementation`] and [`compile_lstm_cells`]).
        self.lstm_options = LstmOptions()
        self.post_init()

    @can_return_tuple
    def forward(
        self,
        input_ids: torch.LongTensor,
        attention_mask: torch.Tensor | None = None,
        input_word_ids: torch.LongTensor | None = None,
        state: tuple[torch.Tensor, torch.Tensor] | None = None,
        use_cache: bool | None = None,
        output_hidden_states: bool | None = None,
        num_layers: int | None = None,
        token_cache: TokenVectorCache | None = None,
        **kwargs,
    ) -> ElmoModelOutput:
        r"""
        Args:
            input_ids (`torch.LongTensor` of shape `(batch, words, max_characters_per_token)`):
                Character ids from [`ElmoTokenizer`], padded on the right with all-zero rows.
            attention_mask (`torch.Tensor` of shape `(batch, words)`, *optional*):
                1 for words, 0 for padding; by default a word is any row with a non-zero id.
            input_word_ids (`torch.LongTensor` of shape `(batch, words)`, *optional*):
                Word ids, for models with a word embedding (ELMoForManyLangs'); the tokenizer returns them.
            state (`tuple(torch.Tensor, torch.Tensor)`, *optional*):
                `(h, c)` from a previous call's `state` (see [`ElmoModelOutput`]) to continue every row from.
            use_cache (`bool`, *optional*):
                Return the final LSTM `state`; defaults to True when `state` is given, else False.
            output_hidden_states (`bool`, *optional*):
                Return all `num_hidden_layers + 1` layers in `hidden_states`.
            num_layers (`int`, *optional*):
                Run only the first biLSTM layers (by default all `num_hidden_layers`, whatever the config's mixing
                fields): the outputs stop at layer `num_layers`, and the layers above keep their `state`. The task
                heads pass their `config.mix_depth`, so that no layer above their mix runs.
            token_cache ([`TokenVectorCache`], *optional*):
                The token vectors of the words seen in earlier calls, which the character CNN then skips (in eval
                mode without gradients): the same vectors, bit for bit, on CPUs. It takes this call's new words.
        """
        if num_layers is not None and not 0 <= num_layers <= self.config.num_hidden_layers:
            raise ValueError(f"num_layers must lie in 0..{self.config.num_hidden_layers}, got {num_layers}")
        output_hidden_states = (
            output_hidden_states if output_hidden_states is not None else self.config.output_hidden_states
        )
        use_cache = use_cache if use_cache is not None else state is not None
        word_mask = self._word_mask(input_ids, attention_mask)
        token, directions, final_state = self._read_both_ways(
            input_ids, word_mask, input_word_ids, state, num_layers, token_cache
        )

        layers = [torch.cat([token, token], dim=-1)]
        layers += [torch.cat([forward, backward], dim=-1) for forward, backward in directions]
        # Drop the marker positions: word i sits at position i + 1; positions past a row's words are zeroed.
        layers = tuple(layer[:, 1:-1] * word_mask[..., None] for layer in layers)

        return ElmoModelOutput(
            last_hidden_state=layers[-1],
            hidden_states=layers if output_hidden_states else None,
            state=final_state if use_cache else None,
            word_mask=word_mask,
        )

    def embed(
        self,
        input_ids: torch.Tensor,
        word_mask: torch.Tensor,
        input_word_ids: torch.Tensor | None = None,
        token_cache: TokenVectorCache | None = None,
    ) -> torch.Tensor:
        r"""The token layer (BERT's embeddings step): each word's context-free vector from the character CNN,
        highway layers and projection, with the sentence markers `<S>` and `</S>` around every sentence.

        Args:
            input_ids (`torch.LongTensor` of shape `(batch, words, max_characters_per_token)`): as for `forward`.
            word_mask (`torch.BoolTensor` of shape `(batch, words)`): each sentence's words, then padding
                (`ElmoModelOutput.word_mask`).
            input_word_ids (`torch.LongTensor` of shape `(batch, words)`, *optional*): as for `forward`.
            token_cache ([`TokenVectorCache`], *optional*): as for `forward`.

        Returns:
            `torch.FloatTensor` of shape `(batch, words + 2, projection_dim)`: `<S>` at position 0, word i at
            position i + 1, `</S>` right after each sentence's last word, zero after it.
        """
        batch, words = word_mask.shape
        lengths = word_mask.sum(dim=1)
        marked_ids = input_ids.new_zeros(batch, words + 2, input_ids.shape[-1])
        marked_ids[:, 1:-1] = input_ids * word_mask[..., None]
        rows = torch.arange(batch, device=input_ids.device)
        marked_ids[:, 0] = self._marker_ids(self.config.bos_char_id, input_ids)
        marked_ids[rows, lengths + 1] = self._marker_ids(self.config.eos_char_id, input_ids)
        marked_mask = torch.arange(words + 2, device=word_mask.device)[None, :] < (lengths + 2)[:, None]
        marked_word_ids = None
        if input_word_ids is not None:
            marked_word_ids = input_word_ids.new_zeros(batch, words + 2)
            marked_word_ids[:, 1:-1] = input_word_ids * word_mask
            marked_word_ids[:, 0] = self.config.bos_word_id
            marked_word_ids[rows, lengths + 1] = self.config.eos_word_id
            marked_word_ids = marked_word_ids[marked_mask]

        # The character encoder only sees real words: padding rows stay exactly zero.
        token = torch.zeros(batch, words + 2, self.config.projection_dim, dtype=self.dtype, device=input_ids.device)
        token[marked_mask] = self.char_encoder(marked_ids[marked_mask], marked_word_ids, token_cache)
        return token

    def _read_both_ways(
        self,
        input_ids: torch.Tensor,
        word_mask: torch.Tensor,
        input_word_ids: torch.Tensor | None = None,
        state: tuple[torch.Tensor, torch.Tensor] | None = None,
        num_layers: int | None = None,
        token_cache: TokenVectorCache | None = None,
    ) -> tuple[torch.Tensor, list[tuple[torch.Tensor, torch.Tensor]], LstmState]:
        """The sentences marked ([`embed`]), read forwards by the forward stack and reversed by the backward stack
        ([`contextualize`]): the token vectors (batch, words + 2, P), each layer run's outputs as (forward,
        backward), both (batch, words + 2, P) and in the sentences' order, and the final state."""
        token = self.embed(input_ids, word_mask, input_word_ids, token_cache)
        marked_lengths = word_mask.sum(dim=1) + 2
        reversing = _reversing_index(marked_lengths, token.shape[1])
        lstm_inputs = torch.stack([token, _reverse_each_row(token, reversing)])
        outputs, final_state = self.contextualize(lstm_inputs, marked_lengths, state, num_layers=num_layers)
        directions = [(output[0], _reverse_each_row(output[1], reversing)) for output in outputs]
        return token, directions, final_state

    def contextualize(
        self,
        inputs: torch.Tensor,
        lengths: torch.Tensor | None = None,
        state: tuple[torch.Tensor, torch.Tensor] | None = None,
        *,
        num_layers: int | None = None,
        dropout: float = 0.0,
    ) -> tuple[list[torch.Tensor], LstmState]:
        r"""The biLSTM layers (BERT's encoder step): the forward stack reads `inputs[0]` and the backward stack
        `inputs[1]`, each row from its first position on (a sentence for the backward stack comes reversed).

        Args:
            inputs (`torch.FloatTensor` of shape `(2, batch, time, projection_dim)`): token vectors per direction.
            lengths (`torch.LongTensor` of shape `(batch,)`, *optional*): how many positions of each row to read;
                by default all `time`.
            state (`tuple(torch.Tensor, torch.Tensor)`, *optional*): `(h, c)` to start each row from, laid out as
                `ElmoModelOutput.state`; zeros without it.
            num_layers (`int`, *optional*): run only the first layers (by default all); those above are not
                run and keep their state.
            dropout (`float`): dropout on the input of every layer, as in LM training (see [`run_lstm_stacks`]).

        Returns:
            One output of shape `(2, batch, time, projection_dim)` per layer run, zero past each row's length, and
            the state after each row's last position, laid out as `state`.
        """
        _, batch, steps, _ = inputs.shape
        num_layers = self.config.num_hidden_layers if num_layers is None else num_layers
        if lengths is None:
            # Every row reads every position (the LM's windows): the rows stay where they are, and no host
            # synchronisation is needed for the batch sizes.
            initial = self._initial_states(state, batch, inputs, torch.arange(batch, device=inputs.device))
            return self._run_stacks(inputs, [batch] * steps, initial, num_layers, dropout)
        # The LSTMs run over rows sorted by length, longest first, computing only rows still running.
        sorted_lengths, order = lengths.sort(descending=True)
        batch_sizes = (sorted_lengths[None, :] > torch.arange(steps, device=inputs.device)[:, None]).sum(dim=1)
        initial = self._initial_states(state, batch, inputs, order)
        outputs, (h, c) = self._run_stacks(inputs[:, order], batch_sizes.tolist(), initial, num_layers, dropout)
        restore = order.argsort()
        return [output[:, restore] for output in outputs], (h[:, :, restore], c[:, :, restore])

    def _run_stacks(
        self, inputs: torch.Tensor, batch_sizes: list[int], state: LstmState, num_layers: int, dropout: float
    ) -> tuple[list[torch.Tensor], LstmState]:
        """[`run_lstm_stacks`] over both stacks with this model's options, their weights loaded by accelerate's hooks
        where a device map offloaded them, and each on its own device where one split them over devices."""
        stacks = (self.forward_lstm, self.backward_lstm)
        kernel = dict(implementation=self.config.lstm_implementation, options=self.lstm_options)
        with _hooked_weights_loaded(stacks):
            if all(_device_of(stack) == inputs.device for stack in stacks):
                return run_lstm_stacks(stacks, inputs, batch_sizes, state, num_layers, dropout=dropout, **kernel)
            return _run_each_stack_on_its_device(
                stacks, inputs, batch_sizes, state, num_layers, dropout=dropout, **kernel
            )

    def compile_lstm_cells(self, **compile_options) -> None:
        """Fuse the element-wise gate arithmetic of every LSTM step with `torch.compile` (dynamic shapes: batch
        sizes and sentence lengths do not recompile), for this model only: an option of either implementation
        (`lstm_options.cell`, see [`run_lstm_stacks`]). The first call compiles (tens of seconds); outputs stay within
        1e-6."""
        cell = torch.compile(lstm_cell_step, dynamic=True, **compile_options)
        self.lstm_options = dataclasses.replace(self.lstm_options, cell=cell)

    def _word_mask(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        if input_ids.device.type == "meta":  # (torch's words: "aten::equal: attempted to run this operator ...")
            raise ValueError(
                'input_ids lie on the meta device, which holds no data (a pipeline\'s device="meta"): nothing can be'
                ' computed; put the model and its inputs on "cpu" or a cuda device'
            )
        expected_chars = self.config.max_characters_per_token
        if input_ids.dim() != 3 or input_ids.shape[-1] != expected_chars:
            raise ValueError(
                f"input_ids must have shape (batch, words, {expected_chars}) (character ids from ElmoTokenizer), "
                f"got {tuple(input_ids.shape)}"
            )
        if attention_mask is None:
            mask = (input_ids > 0).any(dim=-1)
        else:
            if attention_mask.shape != input_ids.shape[:2]:
                raise ValueError(
                    f"attention_mask must have shape {tuple(input_ids.shape[:2])} (batch, words), "
                    f"got {tuple(attention_mask.shape)}"
                )
            mask = attention_mask.bool()
        lengths = mask.sum(dim=1)
        if not torch.equal(mask, torch.arange(mask.shape[1], device=mask.device)[None, :] < lengths[:, None]):
            raise ValueError("attention_mask must mark each sentence's words first and padding after (right padding)")
        return mask

    def _marker_ids(self, marker: int, like: torch.Tensor) -> torch.Tensor:
        """Character ids of a sentence-marker word: begin-of-word, the marker, end-of-word, padding."""
        ids = framed_char_ids([marker], self.config.special_char_ids, self.config.max_characters_per_token)
        return torch.tensor(ids, dtype=like.dtype, device=like.device)

    def _initial_states(
        self, state: tuple[torch.Tensor, torch.Tensor] | None, batch: int, like: torch.Tensor, order: torch.Tensor
    ) -> LstmState:
        """`(h, c)` of shapes (2, layers, batch, P) and (2, layers, batch, C) for the rows in `order` (zeros
        without a `state`), as [`run_lstm_stacks`] takes them."""
        layers, cells, projection = self.config.num_hidden_layers, self.config.cell_size, self.config.projection_dim
        if state is None:
            h = like.new_zeros(2, layers, batch, projection)
            c = like.new_zeros(2, layers, batch, cells)
        else:
            h, c = state
            for name, tensor, width in (("h", h, projection), ("c", c, cells)):
                if tuple(tensor.shape) != (2, layers, batch, width):
                    raise ValueError(
                        f"state {name} must have shape (2, num_hidden_layers, batch, {width}) = "
                        f"{(2, layers, batch, width)}, got {tuple(tensor.shape)}"
                    )
            h, c = h[:, :, order], c[:, :, order]
        return h, c


@dataclass
class ElmoBidirectionalLMOutput(ModelOutput):
    r"""Output of [`ElmoForBidirectionalLM`].

    Args:
        loss (`torch.FloatTensor` of shape `()`): `0.5 * (forward_loss + backward_loss)`, bilm-tf's training loss.
        forward_loss, backward_loss (`torch.FloatTensor` of shape `()`): mean negative log-likelihood per
            labelled token of each direction (sampled softmax in training when `num_sampled` is set, else full).
        forward_token_losses, backward_token_losses (`torch.FloatTensor` of shape `(tokens,)`): the same per
            labelled token, in row-major order of the labels (for exact perplexity over many windows).
        state (`tuple(torch.FloatTensor, torch.FloatTensor)`): the LSTM state after the windows, laid out as
            [`ElmoModelOutput`]'s `state`; pass it as `state=` with the next windows of the same streams.
    """

    loss: torch.FloatTensor | None = None
    forward_loss: torch.FloatTensor | None = None
    backward_loss: torch.FloatTensor | None = None
    forward_token_losses: torch.FloatTensor | None = None
    backward_token_losses: torch.FloatTensor | None = None
    state: tuple[torch.FloatTensor, torch.FloatTensor] | None = None


# The softmax's weights in a language model's checkpoint: loaded from a folder without them, the softmax is random.
_SOFTMAX_WEIGHTS = frozenset({"softmax.weight", "softmax.bias"})


class ElmoForBidirectionalLM(ElmoPreTrainedModel):
    r"""The biLM with its language-model softmax, for pretraining and domain fine-tuning (bilm-tf's training graph).

    The forward and backward directions read two independent streams of text, cut into windows of `unroll`
    words with no padding: `<S> w1 ... wn` with targets `w1 ... wn </S>`, then the next sentence (the backward
    stream holds each sentence reversed, `</S> wn ... w1` with targets `wn ... w1 <S>`). The LSTM state is
    carried from one window to the next (truncated backpropagation through time): pass each call's `state`
    to the next. One softmax of `config.vocab_size` words serves both directions; the loss is `0.5 * (forward
    + backward)`. Dropout (`config.dropout`) hits each LSTM layer's input and the top layer's output, as in
    bilm-tf. `num_sampled` (`config.training_options["n_negative_samples_batch"]`, 8192 in bilm-tf) turns on
    the sampled softmax in training; evaluation (`model.eval()`) always uses the full softmax.

    On sentences, [`word_log_probabilities`] gives each LM's prediction at every word (from the words to its left,
    and to its right) and [`substitutes`] the words that fit there by both: lexical substitutes.

    A saved folder also loads as `AutoModel` (the biLM alone, `ElmoModel`). A folder without the softmax (a biLM,
    a task head) loads too, to train one, with a random softmax: `softmax_is_random` is then True until the model
    is put in training mode, and [`substitutes`] refuses to propose words from it.
    """

    def __init__(self, config: ElmoConfig) -> None:
        super().__init__(config)
        if not config.vocab_size:
            raise ValueError("ElmoForBidirectionalLM needs config.vocab_size, the number of words of its softmax")
        if config.word_embedding_dim:
            raise ValueError("LM training of models with a word embedding (ELMoForManyLangs) is not supported")
        self.elmo = ElmoModel(config)
        self.softmax = ElmoSoftmax(vocab_size=config.vocab_size, hidden_size=config.projection_dim)
        self.softmax_is_random = False  # only `from_pretrained` knows that the checkpoint lacked the softmax
        self.post_init()

    @classmethod
    def from_pretrained(cls, *args, output_loading_info: bool = False, **kwargs):
        # transformers reports the weights the checkpoint lacked (every release from 5.4 on): the softmax's tell
        # whether the folder was a language model's or a biLM's or task head's, whose softmax is initialised here.
        model, loading_info = super().from_pretrained(*args, output_loading_info=True, **kwargs)
        model.softmax_is_random = bool(_SOFTMAX_WEIGHTS & set(loading_info["missing_keys"]))
        return (model, loading_info) if output_loading_info else model

    def train(self, mode: bool = True) -> ElmoForBidirectionalLM:
        super().train(mode)
        if mode:
            self.softmax_is_random = False  # a random softmax is being trained
        return self

    def check_softmax_is_trained(self) -> None:
        """Raise one ValueError, naming the folder, where `softmax_is_random`: words proposed by a random softmax
        would be noise that looks like an answer."""
        if self.softmax_is_random:
            architectures = ", ".join(self.config.architectures or []) or "no architecture"
            raise ValueError(
                f"{self.name_or_path} holds no language-model softmax (softmax.weight, softmax.bias; it was saved "
                f"as {architectures}), so this model's softmax is random and its substitutes would be noise: use a "
                "language-model folder (ElmoForBidirectionalLM): modeling_elmo.DEFAULT_MODEL, one written by "
                "`elmo-convert bilm-tf-checkpoint` or by training/pretrain.py"
            )

    @property
    def num_sampled(self) -> int | None:
        """Candidates of the sampled softmax in training (`training_options["n_negative_samples_batch"]`);
        None trains with the full softmax."""
        return self.config.training_options.get("n_negative_samples_batch")

    @can_return_tuple
    def forward(
        self,
        input_ids: torch.LongTensor,
        backward_input_ids: torch.LongTensor,
        labels: torch.LongTensor | None = None,
        backward_labels: torch.LongTensor | None = None,
        state: tuple[torch.Tensor, torch.Tensor] | None = None,
        sampler_generator: torch.Generator | None = None,
        **kwargs,
    ) -> ElmoBidirectionalLMOutput:
        r"""
        Args:
            input_ids, backward_input_ids (`torch.LongTensor` of shape `(batch, unroll, max_characters_per_token)`):
                Character ids of the forward and backward streams' windows (the words `<S>`/`</S>` as the biLM's
                marker characters, see `ElmoModel`); all-zero rows past the end of a finished stream.
            labels, backward_labels (`torch.LongTensor` of shape `(batch, unroll)`, *optional*):
                The next word's vocabulary id at each position, -100 where there is none. Without them only
                `state` is returned.
            state (`tuple(torch.Tensor, torch.Tensor)`, *optional*): the previous windows' final `state`.
            sampler_generator (`torch.Generator`, *optional*): the CPU random generator of the softmax sampler.
        """
        config = self.config
        if input_ids.shape != backward_input_ids.shape:
            raise ValueError(
                f"input_ids and backward_input_ids must have the same shape, got {tuple(input_ids.shape)} and "
                f"{tuple(backward_input_ids.shape)}"
            )
        if input_ids.dim() != 3 or input_ids.shape[-1] != config.max_characters_per_token:
            raise ValueError(
                f"input_ids must have shape (batch, unroll, {config.max_characters_per_token}), "
                f"got {tuple(input_ids.shape)}"
            )
        tokens = self._token_vectors(torch.stack([input_ids, backward_input_ids]))  # (2, batch, unroll, P)
        dropout = config.dropout if self.training else 0.0
        outputs, final_state = self.elmo.contextualize(tokens, state=state, dropout=dropout)
        if labels is None or backward_labels is None:
            return ElmoBidirectionalLMOutput(state=final_state)

        num_sampled = self.num_sampled if self.training else None
        token_losses = []
        top = nn.functional.dropout(outputs[-1], p=dropout, training=self.training)
        for hidden, direction_labels in zip(top, (labels, backward_labels), strict=True):
            token_losses.append(
                self.softmax(
                    hidden.reshape(-1, hidden.shape[-1]),
                    direction_labels.reshape(-1),
                    num_sampled=num_sampled,
                    generator=sampler_generator,
                )
            )
        forward_loss, backward_loss = (losses.mean() for losses in token_losses)
        return ElmoBidirectionalLMOutput(
            loss=0.5 * (forward_loss + backward_loss),
            forward_loss=forward_loss,
            backward_loss=backward_loss,
            forward_token_losses=token_losses[0],
            backward_token_losses=token_losses[1],
            state=final_state,
        )

    def word_log_probabilities(
        self,
        input_ids: torch.LongTensor,
        attention_mask: torch.Tensor | None = None,
        state: tuple[torch.Tensor, torch.Tensor] | None = None,
    ) -> torch.Tensor:
        r"""What each language model predicts at every word of a sentence: the forward LM from the words to its
        left (after `<S>`), the backward LM from the words to its right (after `</S>`); neither sees the word.

        Args:
            input_ids (`torch.LongTensor` of shape `(batch, words, max_characters_per_token)`): sentences from
                [`ElmoTokenizer`], as for [`ElmoModel`].
            attention_mask (`torch.Tensor` of shape `(batch, words)`, *optional*): as for [`ElmoModel`].
            state (`tuple(torch.Tensor, torch.Tensor)`, *optional*): `(h, c)` to start every row from, as
                [`ElmoModel`]'s `state` (e.g. the state after the text before); zeros without it.

        Returns:
            `torch.FloatTensor` of shape `(2, batch, words, vocab_size)`: the full softmax's log-probability of every
            word at every position, forward LM first, then backward; 0 at padding.
        """
        word_mask = self.elmo._word_mask(input_ids, attention_mask)
        _, directions, _ = self.elmo._read_both_ways(input_ids, word_mask, state=state)
        forward_top, backward_top = directions[-1]
        # Word i sits at marked position i + 1: the forward LM predicts it from position i (having read <S> and
        # the words before it), the backward LM from position i + 2 (having read </S> and the words after it).
        hidden = torch.stack([forward_top[:, :-2], backward_top[:, 2:]])
        with _hooked_weights_loaded([self.softmax]):  # read outside the softmax's forward (offloaded by a device map)
            return self.softmax.log_probabilities(hidden) * word_mask[..., None]

    def substitutes(
        self,
        input_ids: torch.LongTensor,
        attention_mask: torch.Tensor | None = None,
        *,
        top_k: int = 10,
        combination: str = DEFAULT_SUBSTITUTE_COMBINATION,
        excluded_ids: Sequence[int] = BILM_TF_SPECIAL_WORD_IDS,
        state: tuple[torch.Tensor, torch.Tensor] | None = None,
    ) -> ElmoSubstitutesOutput:
        r"""The `top_k` lexical substitutes of every word: the softmax's words that fit its position best by both
        language models ([`word_log_probabilities`]), combined as `combination` says (see `substitutes_elmo`:
        `"product"`, the default, `"product_over_prior"`, `"mean"`, `"forward"`, `"backward"`). The word itself
        plays no part. `excluded_ids` (bilm-tf's `<S>`, `</S>`, `<UNK>` by default) are never proposed; the
        softmax's row k is line k of the model's `vocab.txt`. `state`: as for [`word_log_probabilities`]. A model
        loaded from a folder without the softmax is refused (`check_softmax_is_trained`), and so is a NaN or an
        infinity among the scores (a ValueError naming the word, and the damaged weight if there is one).
        """
        self.check_softmax_is_trained()
        proposable = self.config.vocab_size - len(set(excluded_ids))
        if isinstance(top_k, bool) or not isinstance(top_k, numbers.Integral):  # (a bool is an int to torch)
            raise TypeError(f"top_k must be an int (how many substitutes), got {top_k!r}")
        if not 1 <= top_k <= proposable:
            raise ValueError(f"top_k must lie in 1..{proposable} (the words that can be proposed), got {top_k}")
        word_mask = self.elmo._word_mask(input_ids, attention_mask)
        forward, backward = self.word_log_probabilities(input_ids, attention_mask, state)
        log_probabilities = combine_lm_log_probabilities(forward, backward, combination, excluded_ids=excluded_ids)
        top = log_probabilities.topk(top_k, dim=-1)
        if not torch.isfinite(top.values).all():
            # Only then the pass over the weights, to name the damaged one.
            problem = non_finite_score_problem(top.values, word_mask, self.non_finite_weight())
            if problem is not None:
                raise ValueError(problem)
        return ElmoSubstitutesOutput(
            scores=top.values.exp() * word_mask[..., None],
            word_ids=top.indices * word_mask[..., None],
            log_probabilities=log_probabilities,
        )

    def _token_vectors(self, char_ids: torch.Tensor) -> torch.Tensor:
        """Token vectors `(..., P)` for char ids `(..., max_characters_per_token)`; rows of padding (no
        characters) stay zero."""
        flat = char_ids.reshape(-1, char_ids.shape[-1])
        vectors = self.elmo.char_encoder(flat)
        vectors = vectors * (flat > 0).any(dim=-1, keepdim=True).to(vectors.dtype)
        return vectors.reshape(*char_ids.shape[:-1], vectors.shape[-1])


# Where a task head's state dict keeps the weights of its first mix (`ElmoTaskModel.mixes[0]`).
FIRST_MIX_WEIGHTS_PREFIX = "mixes.0."


class ElmoTaskModel(ElmoPreTrainedModel):
    """What the task heads share: the biLM (frozen by default), `num_output_representations` mixes of its
    layers, a task encoder (a BiLSTM by default) over the first mix, and a linear classifier.

    Instead of `input_ids`, a head also takes `bilm_layers` (batch, layers, words, 2P): the biLM's
    `hidden_states` computed once and stored (the frozen-biLM workflow), so that the biLM does not run.
    """

    def __init__(self, config: ElmoConfig) -> None:
        super().__init__(config)
        self.elmo = ElmoModel(config)
        self.mixes = nn.ModuleList(ElmoLayerMix(config) for _ in range(config.num_output_representations))
        width = config.mix_output_size
        self.task_encoder = None
        if config.task_encoder == "bilstm":
            self.task_encoder = nn.LSTM(
                width, config.task_hidden_size, num_layers=config.task_num_layers, batch_first=True, bidirectional=True
            )
            width = 2 * config.task_hidden_size
        self.features_size = width + config.mix_output_size * (config.num_output_representations > 1)
        self.classifier_dropout = nn.Dropout(config.classifier_dropout)
        self.num_labels = config.num_labels
        self.classifier = nn.Linear(self.features_size, config.num_labels)
        self.post_init()
        self._set_requires_grad_as_configured()

    def freeze_bilm(self) -> None:
        """Keep the biLM's weights as they are (the paper's setting; `config.freeze_bilm`)."""
        self.elmo.requires_grad_(False)
        self.elmo.eval()

    @classmethod
    def from_pretrained(cls, *args, **kwargs):
        # transformers 5 calls no public hook of the model once the weights are loaded (only `tie_weights` and
        # `eval`, which have their own jobs), so the public `from_pretrained` is where the freezing is redone (the
        # finite check is `ElmoPreTrainedModel.from_pretrained`'s).
        loaded = super().from_pretrained(*args, **kwargs)
        model = loaded[0] if isinstance(loaded, tuple) else loaded  # output_loading_info=True gives a tuple
        model._set_requires_grad_as_configured()  # loading replaces the parameters, and with them their requires_grad
        return loaded

    def _set_requires_grad_as_configured(self) -> None:
        """No gradient for the biLM (`freeze_bilm`) nor for mixes whose weights stay fixed (`mix_trainable=False`)."""
        if self.config.freeze_bilm:
            self.freeze_bilm()
        for mix in self.mixes:
            mix.apply_trainable()

    def train(self, mode: bool = True) -> ElmoTaskModel:
        super().train(mode)
        if self.config.freeze_bilm:
            self.elmo.eval()  # a frozen biLM never runs in training mode
        return self

    def _features(
        self,
        input_ids: torch.Tensor | None,
        attention_mask: torch.Tensor | None,
        input_word_ids: torch.Tensor | None,
        bilm_layers: torch.Tensor | None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(features (batch, words, features_size), word mask (batch, words))."""
        if bilm_layers is None:
            if input_ids is None:
                raise ValueError("pass input_ids (character ids) or bilm_layers (precomputed biLM layers)")
            with torch.set_grad_enabled(torch.is_grad_enabled() and not self.config.freeze_bilm):
                bilm = self.elmo(
                    input_ids,
                    attention_mask=attention_mask,
                    input_word_ids=input_word_ids,
                    output_hidden_states=True,
                    num_layers=self.config.mix_depth,  # no biLSTM layer above the mix runs
                )
            layers, mask = bilm.hidden_states, bilm.word_mask
        else:
            if attention_mask is None:
                raise ValueError("bilm_layers needs the attention_mask of its words")
            expected = self.config.mix_depth + 1
            if bilm_layers.dim() != 4 or bilm_layers.shape[1] < expected:
                raise ValueError(
                    f"bilm_layers must have shape (batch, layers >= {expected}, words, {self.config.hidden_size}), "
                    f"got {tuple(bilm_layers.shape)}"
                )
            layers = bilm_layers.unbind(dim=1)
            mask = attention_mask.bool()
        mixed_layers = [layers[index] for index in self.config.mixed_layers]
        representations = [mix(mixed_layers, mask) for mix in self.mixes]
        features = representations[0]
        if self.task_encoder is not None and mask.shape[1] == 0:  # only empty sentences: nothing to encode
            features = features.new_zeros(*mask.shape, 2 * self.config.task_hidden_size)
        elif self.task_encoder is not None:
            lengths = mask.sum(dim=1).clamp(min=1).cpu()  # an empty sentence runs over one zero vector
            packed = nn.utils.rnn.pack_padded_sequence(features, lengths, batch_first=True, enforce_sorted=False)
            encoded, _ = self.task_encoder(packed)
            features, _ = nn.utils.rnn.pad_packed_sequence(encoded, batch_first=True, total_length=mask.shape[1])
        if len(representations) > 1:
            features = torch.cat([features, representations[1]], dim=-1)
        return self.classifier_dropout(features) * mask[..., None].to(features.dtype), mask

    def _add_mix_penalty(self, loss: torch.Tensor, items: torch.Tensor, num_items_in_batch: torch.Tensor | None):
        """Add the mixes' L2 penalty once per optimiser step, also under gradient accumulation (where the
        Trainer divides the summed loss by `num_items_in_batch`, the items of all accumulated batches)."""
        penalty = sum(mix.penalty() for mix in self.mixes)
        if num_items_in_batch is not None:
            penalty = penalty * items / num_items_in_batch
        return loss + penalty


class ElmoForTokenClassification(ElmoTaskModel):
    """ELMo, mixed, a task encoder and a linear classifier per word: `logits` (batch, words, num_labels)."""

    @can_return_tuple
    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        input_word_ids: torch.LongTensor | None = None,
        bilm_layers: torch.Tensor | None = None,
        labels: torch.LongTensor | None = None,
        **kwargs,
    ) -> TokenClassifierOutput:
        r"""
        Args:
            input_ids, attention_mask, input_word_ids: as for [`ElmoModel`].
            bilm_layers (`torch.Tensor` of shape `(batch, layers, words, 2 * projection_dim)`, *optional*):
                The biLM's `hidden_states`, precomputed, instead of `input_ids`.
            labels (`torch.LongTensor` of shape `(batch, words)`, *optional*):
                Label ids; -100 for positions to ignore (padding).
        """
        features, _ = self._features(input_ids, attention_mask, input_word_ids, bilm_layers)
        logits = self.classifier(features)
        loss = None
        if labels is not None:
            loss = self.loss_function(logits, labels, self.config, **kwargs)
            loss = self._add_mix_penalty(loss, (labels != -100).sum(), kwargs.get("num_items_in_batch"))
        return TokenClassifierOutput(loss=loss, logits=logits)


class ElmoForSequenceClassification(ElmoTaskModel):
    """ELMo, mixed, a task encoder, max-pooled over the words, and a linear classifier: `logits`
    (batch, num_labels)."""

    @can_return_tuple
    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        input_word_ids: torch.LongTensor | None = None,
        bilm_layers: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        **kwargs,
    ) -> SequenceClassifierOutput:
        r"""
        Args:
            input_ids, attention_mask, input_word_ids, bilm_layers: as for [`ElmoForTokenClassification`].
            labels (`torch.Tensor` of shape `(batch,)`, *optional*): class ids (or values for regression).
        """
        features, mask = self._features(input_ids, attention_mask, input_word_ids, bilm_layers)
        if mask.shape[1] == 0:  # only empty sentences: no word to take the max over
            pooled = features.new_zeros(features.shape[0], features.shape[-1])
        else:
            pooled = features.masked_fill(~mask[..., None], torch.finfo(features.dtype).min).amax(dim=1)
            pooled = torch.where(mask.any(dim=1, keepdim=True), pooled, torch.zeros_like(pooled))  # empty sentences
        logits = self.classifier(pooled)
        loss = None
        if labels is not None:
            loss = self.loss_function(labels=labels, pooled_logits=logits, config=self.config, **kwargs)
            loss = self._add_mix_penalty(loss, labels.new_tensor(labels.shape[0]), kwargs.get("num_items_in_batch"))
        return SequenceClassifierOutput(loss=loss, logits=logits)
