"""The fast LSTM kernels beside the reference: `"wavefront"` ([`run_wavefront`]) and the oneDNN products of the
`"layer_by_layer"` kernel ([`OneDnnLayerProducts`]), with what every kernel shares: the weights it reads
(`LstmStackWeights`, `LstmLayerWeights`: those of `modeling_elmo.py`'s `ElmoLstmStack` and `ElmoLstmLayer`; this
module imports no model class) and the check of a registered kernel's result ([`check_kernel_result`]).

`kernels_elmo.LSTM_IMPLEMENTATIONS` names the kernels, and `config.lstm_implementation` chooses one per model. The
reference, `"layer_by_layer"`, is in `modeling_elmo.py` (`run_layer_by_layer`, `lstm_layer_forward`,
`lstm_cell_step`): one layer of one direction after another, over the rows still running. The kernels compute the
same numbers; they differ in how:

- `"wavefront"` ([`run_wavefront`]): every layer of both directions advancing together, as batched products: 35-45
  operator calls per step for all of them, where the calls, not the arithmetic, bound the speed (GPUs).
- oneDNN ([`OneDnnLayerProducts`], option `onednn`): the layer-by-layer kernel's products on oneDNN for CPU
  inference (see `onednn_elmo.py`).

Each takes the element-wise step as the option `cell` (`modeling_elmo.lstm_cell_step`, or a compiled version of it).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Protocol

import torch
from torch import nn

from .onednn_elmo import ElmoDerivedWeights, ElmoOneDnnWeights, onednn_linear

__all__ = [
    "LstmCell",
    "LstmKernelOptions",
    "LstmLayerWeights",
    "LstmStackWeights",
    "LstmState",
    "OneDnnLayerProducts",
    "check_kernel_result",
    "run_wavefront",
]

LstmState = tuple[torch.Tensor, torch.Tensor]
LstmCell = Callable[[torch.Tensor, torch.Tensor, "float | None"], LstmState]


class LstmLayerWeights(Protocol):
    """What a kernel reads of one direction of one layer (`ElmoLstmLayer`): TensorFlow's LSTM cell with a
    projection, its gate blocks in the order `i, j, f, o`."""

    input_projection: nn.Linear  # (input, 4C) with the bias
    state_projection: nn.Linear  # (P, 4C), no bias
    output_projection: nn.Linear  # (C, P), no bias
    cell_size: int
    cell_clip: float | None
    proj_clip: float | None
    positions_per_chunk: int  # positions whose input projections are computed together
    onednn_weights: ElmoOneDnnWeights  # the layer's weights packed for oneDNN

    def gate_bias(self) -> torch.Tensor:
        """The input projection's bias (4C,) with the forget bias added."""


class LstmStackWeights(Protocol):
    """What a kernel reads of the layers of one direction (`ElmoLstmStack`)."""

    layers: Sequence[LstmLayerWeights]
    use_skip_connections: bool
    stacked_weights: ElmoDerivedWeights  # the weights of the stacks run together with this one first (wavefront)


class LstmKernelOptions(Protocol):
    """What a kernel reads of its `options` (`modeling_elmo.LstmOptions`, the model's `lstm_options`)."""

    onednn: bool  # `"layer_by_layer"`: CPU inference runs the products on oneDNN; False: on torch
    cell: LstmCell  # the element-wise step of every kernel


def run_wavefront(
    stacks: Sequence[LstmStackWeights],
    inputs: torch.Tensor,
    batch_sizes: list[int],
    state: LstmState,
    num_layers: int,
    *,
    dropout: float,
    options: LstmKernelOptions,
) -> tuple[list[torch.Tensor], LstmState]:
    """`"wavefront"`: every layer of every direction advancing together (`options.onednn` plays no part).

    Layer l runs its step t at iteration `t + l * lag`, so each iteration makes one batched product for the
    state, one element-wise cell and one batched product for the output of all L * D layers (group `l * D + d`).
    The iterations go in chunks of `lag`: at the start of a chunk layer l takes the outputs that layer l - 1
    made in the chunk before, `lag` steps of them, and projects them in one batched product with the other
    layers' inputs (layer 0's are the `inputs`).

    Every row of every layer is computed at every iteration, and a mask keeps the state of a layer before its
    first step and after a row's last: padding costs arithmetic but no operator calls, and the shapes stay the
    same from step to step. Without gradients the stacked weights are kept by the first stack (see
    [`_StackedLstmProducts`]).
    """
    h0, c0 = state
    directions, batch, steps, width = inputs.shape
    layers = [stack.layers[index] for index in range(num_layers) for stack in stacks]
    if not layers or not steps or not batch:
        projection = h0.shape[-1]
        return [inputs.new_zeros(directions, batch, steps, projection) for _ in range(num_layers)], state
    first_layer, groups, device = layers[0], len(layers), inputs.device  # (all of one shape and clips)
    lag = _wavefront_lag(batch, steps, first_layer.positions_per_chunk)
    iterations = steps + (num_layers - 1) * lag
    chunks = -(-iterations // lag)
    products = _StackedLstmProducts(layers, stacks[0].stacked_weights)

    lengths = (torch.tensor(batch_sizes, device=device)[:, None] > torch.arange(batch, device=device)).sum(dim=0)
    running, everyone_runs = _wavefront_masks(batch_sizes, lengths, num_layers, directions, lag)
    # Layer 0's inputs chunk by chunk, (chunks, 1, D, lag, B, P), zero past the last step.
    tokens = nn.functional.pad(inputs, (0, 0, 0, chunks * lag - steps)).view(directions, batch, chunks, lag, width)
    tokens = tokens.permute(2, 0, 3, 1, 4).unsqueeze(1).contiguous()
    # The skip connection of each layer, as a weight on its input: (L, 1, 1, 1, 1).
    skip = inputs.new_tensor([0.0] + [float(stacks[0].use_skip_connections)] * (num_layers - 1))
    skip = skip.view(num_layers, 1, 1, 1, 1)
    # The clip as tensors: clamp() given numbers makes one operator call more each time.
    clip = first_layer.proj_clip
    proj_clip = None if clip is None else (inputs.new_tensor(-clip), inputs.new_tensor(clip))

    h = h0[:, :num_layers].transpose(0, 1).reshape(groups, batch, -1)
    c = c0[:, :num_layers].transpose(0, 1).reshape(groups, batch, -1)
    chunk_outputs, below = [], inputs.new_zeros(num_layers - 1, directions, lag, batch, width)
    for chunk in range(chunks):
        start = chunk * lag
        chunk_steps = min(lag, iterations - start)
        layer_inputs = torch.cat([tokens[chunk], below])  # (L, D, lag, B, P)
        if dropout:
            layer_inputs = nn.functional.dropout(layer_inputs, p=dropout, training=True)
        input_gates = products.input(layer_inputs.view(groups, lag * batch, width))
        input_gates = input_gates.view(groups, lag, batch, input_gates.shape[-1])
        step_outputs = []
        for offset in range(chunk_steps):
            gates = products.state(h, input_gates[:, offset])
            hidden, new_c = options.cell(gates, c, first_layer.cell_clip)
            new_h = products.output(hidden)
            new_h = new_h if proj_clip is None else new_h.clamp(*proj_clip)
            if everyone_runs[start + offset]:
                h, c = new_h, new_c
            else:
                keep = running[start + offset]
                h, c = torch.where(keep, new_h, h), torch.where(keep, new_c, c)
            step_outputs.append(new_h)
        # (L, D, chunk_steps, B, P): the layers' outputs, plus their (dropped) input where a skip connection adds it
        # (layer 0 adds 0 * its input: exact, the inputs being finite).
        outputs = torch.stack(step_outputs, dim=1).view(num_layers, directions, chunk_steps, batch, width)
        chunk_inputs = layer_inputs if chunk_steps == lag else layer_inputs[:, :, :chunk_steps]
        outputs = torch.addcmul(outputs, chunk_inputs, skip)
        chunk_outputs.append(outputs)
        below = outputs[:-1]
    # Layer l's step t is at iteration t + l * lag; positions past a row's length (computed, masked) are zeroed.
    by_iteration = torch.cat(chunk_outputs, dim=2)  # (L, D, iterations, B, P)
    by_step = torch.stack([by_iteration[index, :, index * lag : index * lag + steps] for index in range(num_layers)])
    valid = (torch.arange(steps, device=device)[:, None] < lengths)[:, :, None]  # (T, B, 1)
    layer_outputs = torch.where(valid, by_step, 0.0).transpose(2, 3).unbind(0)  # L x (D, B, T, P)
    h = torch.cat([h.view(num_layers, directions, batch, h.shape[-1]).transpose(0, 1), h0[:, num_layers:]], dim=1)
    c = torch.cat([c.view(num_layers, directions, batch, c.shape[-1]).transpose(0, 1), c0[:, num_layers:]], dim=1)
    return list(layer_outputs), (h, c)


def _wavefront_masks(
    batch_sizes: list[int], lengths: torch.Tensor, num_layers: int, directions: int, lag: int
) -> tuple[torch.Tensor, list[bool]]:
    """Which rows each layer of each direction runs at each iteration of the wavefront, (S, L * D, B, 1) with
    rows of `lengths` (B,), and for each iteration whether all of them run (then no mask is needed)."""
    steps, batch, device = len(batch_sizes), len(lengths), lengths.device
    iterations = steps + (num_layers - 1) * lag
    layer_of_group = torch.arange(num_layers * directions, device=device) // directions
    step_of_group = torch.arange(iterations, device=device)[:, None] - layer_of_group * lag  # (S, L * D)
    running = ((step_of_group[..., None] >= 0) & (step_of_group[..., None] < lengths))[..., None]
    everyone_runs = [
        all(0 <= s - layer * lag < steps and batch_sizes[s - layer * lag] == batch for layer in range(num_layers))
        for s in range(iterations)
    ]
    return running, everyone_runs


def _wavefront_lag(batch: int, steps: int, positions_per_chunk: int) -> int:
    """Steps per chunk of the wavefront, which each layer also runs behind the one below: at most
    `positions_per_chunk` positions per input product, and about sqrt(steps), which balances the iterations
    that the lag adds ((layers - 1) * lag) against the calls made once per chunk (steps / lag chunks)."""
    return max(1, min(positions_per_chunk // max(batch, 1), math.isqrt(steps)))


class _StackedLstmProducts:
    """The matrix products of G layers of one shape as batched products, one call for all of them (any device;
    gradients flow). Where no gradient is wanted the stacked weights are kept in `kept` until a weight changes:
    they take as much memory again as the layers' weights."""

    def __init__(self, layers: Sequence[LstmLayerWeights], kept: ElmoDerivedWeights) -> None:
        def stacked(name: str, sources: tuple[torch.Tensor, ...], derive) -> torch.Tensor:
            if torch.is_grad_enabled() and any(source.requires_grad for source in sources):
                return derive()
            return kept.get(f"{name} of {len(layers)}", sources, derive)

        def weights(name: str, sources: tuple[torch.Tensor, ...]) -> torch.Tensor:
            """The weights (G, out, in) as bmm's right-hand side (G, in, out)."""
            return stacked(name, sources, lambda: torch.stack(sources)).mT

        self.input_weight = weights("input", tuple(layer.input_projection.weight for layer in layers))
        self.state_weight = weights("state", tuple(layer.state_projection.weight for layer in layers))
        self.output_weight = weights("output", tuple(layer.output_projection.weight for layer in layers))
        biases = tuple(layer.input_projection.bias for layer in layers)
        self.bias = stacked("bias", biases, lambda: torch.stack([layer.gate_bias() for layer in layers]))[:, None]

    def input(self, x: torch.Tensor) -> torch.Tensor:
        """(G, positions, in) -> the input gates with bias (G, positions, 4C)."""
        return torch.baddbmm(self.bias, x, self.input_weight)

    def state(self, h: torch.Tensor, input_gates: torch.Tensor) -> torch.Tensor:
        """(G, rows, P) and (G, rows, 4C) -> all gates (G, rows, 4C)."""
        return torch.baddbmm(input_gates, h, self.state_weight)

    def output(self, hidden: torch.Tensor) -> torch.Tensor:
        """(G, rows, C) -> the output projection (G, rows, P), not clipped."""
        return torch.bmm(hidden, self.output_weight)


class OneDnnLayerProducts:
    """The matrix products of one layer's steps (those of `modeling_elmo.LayerProducts`) on oneDNN, for CPU
    inference (no gradients), the state and output weights packed: the fast products of the `"layer_by_layer"`
    kernel (option `onednn`)."""

    def __init__(self, layer: LstmLayerWeights) -> None:
        self.layer = layer
        self.bias = layer.gate_bias()

    def input(self, x: torch.Tensor) -> torch.Tensor:
        """(positions, in) -> the input gates with bias (positions, 4C)."""
        return onednn_linear(x, self.layer.input_projection.weight, self.bias)

    def state(self, h: torch.Tensor, input_gates: torch.Tensor) -> torch.Tensor:
        """(rows, P) and (rows, 4C) -> all gates (rows, 4C)."""
        # The addition apart: oneDNN's fused one (a binary post-op) took 3% longer here.
        return self.layer.onednn_weights.linear("state", h, self.layer.state_projection.weight).add_(input_gates)

    def output(self, hidden: torch.Tensor) -> torch.Tensor:
        """(rows, C) -> the output projection (rows, P), not clipped."""
        return self.layer.onednn_weights.linear("output", hidden, self.layer.output_projection.weight)


def check_kernel_result(
    name: str, result: object, inputs: torch.Tensor, state: LstmState, num_layers: int
) -> tuple[list[torch.Tensor], LstmState]:
    """`result`, what the registered kernel `name` returned for `inputs` (D, batch, time, P), `state` and
    `num_layers`, once checked to be what `kernels_elmo.run_lstm_stacks` returns: `num_layers` outputs of the shape of
    `inputs`, a state `(h, c)` of the shapes of `state`, and (where `inputs` and `state` are finite) no NaN or
    infinity. A TypeError or ValueError names the kernel and what it must return. The checks cost a few comparisons
    and one sum per tensor (a kernel's own work is some thousand times more)."""
    what = f"LSTM implementation {name!r}"
    must = "a kernel returns (outputs, (h, c)): one output (D, batch, time, P) per layer run, the state as given"
    if not (isinstance(result, (tuple, list)) and len(result) == 2):
        raise TypeError(f"{what} returned {_described(result)}; {must}")
    outputs, final = result
    if not (isinstance(outputs, (tuple, list)) and isinstance(final, (tuple, list)) and len(final) == 2):
        raise TypeError(f"{what} returned ({_described(outputs)}, {_described(final)}); {must}")
    if len(outputs) != num_layers:
        raise ValueError(f"{what} returned {len(outputs)} outputs for {num_layers} layers run; {must}")
    expected = [(f"the output of layer {index}", tuple(inputs.shape)) for index in range(num_layers)]
    expected += [("the state's h", tuple(state[0].shape)), ("the state's c", tuple(state[1].shape))]
    tensors = [*outputs, *final]
    for (part, shape), tensor in zip(expected, tensors, strict=True):
        if not isinstance(tensor, torch.Tensor) or tuple(tensor.shape) != shape:
            raise ValueError(f"{what} returned {part} as {_described(tensor)}, not of shape {shape}; {must}")
    if not _all_finite(tensors) and _all_finite([inputs, *state]):
        part = next(part for (part, _), tensor in zip(expected, tensors, strict=True) if not _all_finite([tensor]))
        raise ValueError(f"{what} returned a NaN or an infinity in {part}, from finite inputs and state")
    return list(outputs), (final[0], final[1])


def _described(value: object) -> str:
    """A value as a message names it: a tensor by its shape, anything else by its type."""
    if isinstance(value, torch.Tensor):
        return f"a tensor of shape {tuple(value.shape)}"
    return "None" if value is None else f"a {type(value).__name__}"


def _all_finite(tensors: Sequence[torch.Tensor]) -> bool:
    """Whether every tensor is free of NaN and infinity: one sum each in float32 (a NaN or an infinity makes the sum
    non-finite; an LSTM's bounded values do not overflow it), one host synchronisation for them all."""
    sums = [tensor.sum(dtype=torch.float32) for tensor in tensors if tensor.is_floating_point() and tensor.numel()]
    return not sums or bool(torch.isfinite(torch.stack([part.to(sums[0].device) for part in sums])).all())
