"""The LSTM kernels by name: the open registry `LSTM_IMPLEMENTATIONS` that `config.lstm_implementation` chooses
from, as transformers' `AttentionInterface` (`ALL_ATTENTION_FUNCTIONS`) holds the attention kernels that
`attn_implementation` names, and [`run_lstm_stacks`], which runs the stacks by the kernel named.

A kernel computes what the others compute (ELMo's two LSTM stacks); the kernels differ in how. Built in:

- `"layer_by_layer"`, the reference (the others are tested against it): `modeling_elmo.py` (`run_layer_by_layer`,
  `lstm_layer_forward`), beside the model's LSTM layers, as transformers keeps `eager_attention_forward` beside
  BERT's attention; its products run on oneDNN for CPU inference (`lstm_elmo.OneDnnLayerProducts`).
- `"wavefront"`, the fast kernel for GPUs: `lstm_elmo.py` (`run_wavefront`) explains it.
- `"auto"` (the default): layer by layer on CPUs, the wavefront on every other device.

`register_lstm_implementation(name, kernel)` adds a kernel: the config then accepts its name, and a model runs it
once chosen (`from_pretrained(..., lstm_implementation=name)` or `model.set_lstm_implementation(name)`), with no
other change. A kernel is called as [`run_lstm_stacks`] is, but without `implementation` (`dropout` and `options`
by keyword); it reads the stacks through `lstm_elmo.LstmStackWeights` and returns what `run_lstm_stacks` returns,
which is checked at each call (`lstm_elmo.check_kernel_result`: the outputs' and state's shapes, and no NaN or
infinity from finite inputs, one line naming the kernel; the built-in kernels are not checked).
How a model's kernel runs besides its name (oneDNN, the cell step) is its `modeling_elmo.LstmOptions`, one
frozen object (`model.lstm_options`).

This module imports neither torch nor any other module of the package by an import statement, not even inside a
function: configuration_elmo.py checks names against it and must load on its own as remote code. transformers reads
every `from .x import` line of a remote-code file, indented ones too, as a file it needs beside it, and
transformers 5.4 (the floor), loading a config, requires those files without copying them. The built-in kernels
are taken from `modeling_elmo.py` and `lstm_elmo.py` (torch) by `importlib` at their first run; the stacks, state and
options below are `lstm_elmo`'s `LstmStackWeights` and `LstmState` and `modeling_elmo.LstmOptions`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # (torch's types, for the annotations only)
    import torch

__all__ = [
    "LSTM_IMPLEMENTATIONS",
    "LstmImplementation",
    "register_lstm_implementation",
    "run_lstm_stacks",
]

# A kernel of `LSTM_IMPLEMENTATIONS` (see the module's docstring).
LstmImplementation = Callable[..., "tuple[list[torch.Tensor], Any]"]


def run_lstm_stacks(
    stacks: Sequence[Any],
    inputs: torch.Tensor,
    batch_sizes: list[int],
    state: Any,
    num_layers: int,
    *,
    implementation: str = "auto",
    dropout: float = 0.0,
    options: Any = None,
) -> tuple[list[torch.Tensor], Any]:
    """Run D stacks of one shape (ELMo's forward and backward directions), each over its own inputs, all with
    the same `batch_sizes` (each row has the same length read either way), by the kernel
    `LSTM_IMPLEMENTATIONS[implementation]` (a model passes its `config.lstm_implementation`).

    `inputs` (D, batch, time, P) with rows sorted by length, longest first; `batch_sizes[t]` rows still run at
    step t. `state` is `(h, c)` of shapes (D, layers, batch, P) and (D, layers, batch, C). Returns one output
    (D, batch, time, P) per layer, zero past each row's length, for the first `num_layers` layers only, and the
    state after each row's last step laid out as `state` (the layers above are not run and keep theirs).

    `dropout` (LM training) drops the input of every layer, as bilm-tf's `DropoutWrapper` around the
    residual cell did: the skip connection adds the dropped input. `options`: how the kernel runs besides which
    one (`modeling_elmo.LstmOptions`, default `LstmOptions()`).
    """
    kernel = LSTM_IMPLEMENTATIONS[implementation]
    options = _imported("modeling_elmo").LstmOptions() if options is None else options
    result = kernel(stacks, inputs, batch_sizes, state, num_layers, dropout=dropout, options=options)
    if kernel is _BUILT_IN.get(implementation):
        return result  # (the built-in kernels are tested against the original: no check on the default path)
    return _imported("lstm_elmo").check_kernel_result(implementation, result, inputs, state, num_layers)


def _run_auto(stacks: Sequence[Any], inputs: torch.Tensor, *arguments: Any, **options: Any):
    """`"auto"`: the kernel for the device of `inputs` (see the module's docstring), given the same arguments."""
    kernel = LSTM_IMPLEMENTATIONS["layer_by_layer" if inputs.device.type == "cpu" else "wavefront"]
    return kernel(stacks, inputs, *arguments, **options)


def _imported(module: str) -> ModuleType:
    """The package's module `module` (modeling_elmo or lstm_elmo), imported at a kernel's first run, by importlib (see
    the module's docstring)."""
    return importlib.import_module(f".{module}", __package__)


# The built-in kernels, imported at their first run: the reference beside the model, the wavefront in lstm_elmo.py.
def _run_layer_by_layer(*arguments: Any, **options: Any):
    return _imported("modeling_elmo").run_layer_by_layer(*arguments, **options)


def _run_wavefront(*arguments: Any, **options: Any):
    return _imported("lstm_elmo").run_wavefront(*arguments, **options)


# The kernels by the names `config.lstm_implementation` accepts, in the order its message lists them.
LSTM_IMPLEMENTATIONS: dict[str, LstmImplementation] = {
    "auto": _run_auto,
    "layer_by_layer": _run_layer_by_layer,
    "wavefront": _run_wavefront,
}
_BUILT_IN = dict(LSTM_IMPLEMENTATIONS)  # a registered kernel's result is checked (`lstm_elmo.check_kernel_result`)


def register_lstm_implementation(name: str, kernel: LstmImplementation) -> None:
    """Add `kernel` to `LSTM_IMPLEMENTATIONS` as `name` (see the module's docstring for what it is called with).
    A name registered already (a built-in one too) or a kernel that cannot be called is refused."""
    if not isinstance(name, str) or not name:
        raise TypeError(f"an LSTM implementation's name must be a non-empty string, got {name!r}")
    if not callable(kernel):
        raise TypeError(f"LSTM implementation {name!r}: the kernel must be callable, got {kernel!r}")
    if name in LSTM_IMPLEMENTATIONS:
        raise ValueError(f"LSTM implementation {name!r} is registered already")
    LSTM_IMPLEMENTATIONS[name] = kernel
