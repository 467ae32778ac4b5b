"""AllenNLP 0.9's parameter names and layouts <-> `ElmoModel`'s, for state dicts: a checkpoint that a model holding
AllenNLP's `Elmo` saved loads into one holding this package's, and this package's saves under AllenNLP's names.

Each `Renaming` maps some of a module's own entries (names relative to it) to AllenNLP's, both ways, exactly:
- the character encoder: AllenNLP's highway layer is one `Linear(F, 2F)` computing `[transform; -carry]` (its gate
  is bilm-tf's `1 - t`), the other weights are the same tensors under other names;
- each LSTM layer: AllenNLP orders the gate blocks `i, f, j, o`, bilm-tf `i, j, f, o`; its `state_linearity.bias`
  is bilm-tf's bias with the forget bias added, as the compat model holds it (`bilm_files`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

__all__ = [
    "Renaming",
    "character_encoder_renamings",
    "lstm_renamings",
    "to_allennlp_names",
    "to_our_names",
]


@dataclass(frozen=True)
class Renaming:
    """Entries `ours` of the module's state dict <-> entries `theirs` of AllenNLP's, converted by the two functions
    (each takes the tensors of one side in order and returns the other side's)."""

    ours: tuple[str, ...]
    theirs: tuple[str, ...]
    to_theirs: Callable[..., tuple[torch.Tensor, ...]]
    to_ours: Callable[..., tuple[torch.Tensor, ...]]


def _same(ours: str, theirs: str) -> Renaming:
    return Renaming((ours,), (theirs,), lambda tensor: (tensor,), lambda tensor: (tensor,))


def _highway(ours: str, theirs: str) -> Renaming:
    """`ours.transform.X`, `ours.carry.X` <-> `theirs` = `[transform; -carry]` along the first axis."""
    return Renaming(
        (f"{ours}.transform", f"{ours}.carry"),
        (theirs,),
        lambda transform, carry: (torch.cat([transform, -carry]),),
        lambda both: (both.chunk(2)[0], -both.chunk(2)[1]),
    )


def _swap_gate_blocks(tensor: torch.Tensor) -> torch.Tensor:
    """Blocks `a, b, c, d` of the first axis -> `a, c, b, d` (bilm-tf's `i, j, f, o` <-> AllenNLP's `i, f, j, o`)."""
    first, second, third, fourth = tensor.chunk(4)
    return torch.cat([first, third, second, fourth])


def _gates(ours: str, theirs: str) -> Renaming:
    return Renaming(
        (ours,), (theirs,), lambda tensor: (_swap_gate_blocks(tensor),), lambda tensor: (_swap_gate_blocks(tensor),)
    )


def character_encoder_renamings(num_filters: int, num_highways: int, prefix: str) -> list[Renaming]:
    """The entries of `ElmoCharacterEncoder` (held as `prefix`) <-> AllenNLP's `_ElmoCharacterEncoder`'s."""
    renamings = [_same(f"{prefix}char_embedding.weight", "_char_embedding_weights")]
    for index in range(num_filters):
        for name in ("weight", "bias"):
            renamings.append(_same(f"{prefix}convolutions.{index}.{name}", f"char_conv_{index}.{name}"))
    for index in range(num_highways):
        for name in ("weight", "bias"):
            highway = _highway(f"{prefix}highways.{index}", f"_highways._layers.{index}.{name}")
            renamings.append(
                Renaming(
                    tuple(f"{part}.{name}" for part in highway.ours),
                    highway.theirs,
                    highway.to_theirs,
                    highway.to_ours,
                )
            )
    for name in ("weight", "bias"):
        renamings.append(_same(f"{prefix}projection.{name}", f"_projection.{name}"))
    return renamings


def lstm_renamings(num_layers: int) -> list[Renaming]:
    """The entries of the two `ElmoLstmStack`s (held as `forward_stack`, `backward_stack`) <-> AllenNLP's
    `ElmoLstm`'s."""
    renamings = []
    for direction in ("forward", "backward"):
        for index in range(num_layers):
            ours, theirs = f"{direction}_stack.layers.{index}", f"{direction}_layer_{index}"
            renamings += [
                _gates(f"{ours}.input_projection.weight", f"{theirs}.input_linearity.weight"),
                _gates(f"{ours}.state_projection.weight", f"{theirs}.state_linearity.weight"),
                _gates(f"{ours}.input_projection.bias", f"{theirs}.state_linearity.bias"),
                _same(f"{ours}.output_projection.weight", f"{theirs}.state_projection.weight"),
            ]
    return renamings


@torch.no_grad()
def to_allennlp_names(state_dict: dict, prefix: str, renamings: list[Renaming]) -> None:
    """Replace, in place, the module's entries (under `prefix`) of a state dict being saved by AllenNLP's."""
    for renaming in renamings:
        keys = [prefix + name for name in renaming.ours]
        if all(key in state_dict for key in keys):
            values = renaming.to_theirs(*(state_dict.pop(key) for key in keys))
            state_dict.update(zip((prefix + name for name in renaming.theirs), values, strict=True))


@torch.no_grad()
def to_our_names(state_dict: dict, prefix: str, renamings: list[Renaming], error_msgs: list[str]) -> None:
    """Replace, in place, AllenNLP's entries (under `prefix`) of a state dict being loaded by the module's own; a
    tensor of the wrong shape is named in `error_msgs` (load_state_dict raises them together)."""
    for renaming in renamings:
        keys = [prefix + name for name in renaming.theirs]
        if not all(key in state_dict for key in keys):
            continue
        tensors = [state_dict.pop(key) for key in keys]
        try:
            values = renaming.to_ours(*tensors)
        except (RuntimeError, ValueError) as error:
            shapes = ", ".join(f"{key} {tuple(tensor.shape)}" for key, tensor in zip(keys, tensors, strict=True))
            error_msgs.append(f"cannot read {shapes} as this model's weights ({error})")
            continue
        state_dict.update(zip((prefix + name for name in renaming.ours), values, strict=True))
