"""The LSTM's matrix products for inference on CPU, through oneDNN with weights packed once.

Why: one LSTM step multiplies a few rows (one per sentence still running) by the (4C, P) = (16384, 512)
state weight, and that product is most of ELMo's time. For such shapes torch's default kernel (MKL) is slow;
oneDNN with the weight reordered once into its blocked layout is not. Measured on a 2-core AMD EPYC (AVX2),
2 threads, milliseconds per product of the full-size weight, `F.linear` / oneDNN packed: 1 row 5.3 / 3.2,
5 rows 10.9 / 3.9, 32 rows 16 / 6.8. For the input projection of many positions at once oneDNN needs no
packing (and gives steady speed where MKL's varies 1.5x with the row count).

The ops (`torch.ops.mkldnn._reorder_linear_weight`, `_linear_pointwise`) are the ones torch.compile's CPU
backend uses for frozen weights. They are private to torch, so [`onednn_available`] checks once that they
exist and agree with `F.linear`; without them everything runs on `F.linear`.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable

import torch
from torch import nn

__all__ = ["ElmoDerivedWeights", "ElmoOneDnnWeights", "onednn_applies", "onednn_available", "onednn_linear"]


@functools.cache
def onednn_available(dtype: torch.dtype = torch.float32) -> bool:
    """Whether this torch build and CPU run oneDNN's linear ops in `dtype`, packed and not, and they match
    `F.linear`. bfloat16 and float16 need CPU support (e.g. AVX512-BF16, AMX); float32 needs AVX2 or so."""
    if not torch.backends.mkldnn.is_available():
        return False
    generator = torch.Generator().manual_seed(0)
    x, weight, bias = (torch.randn(*shape, generator=generator) for shape in ((3, 16), (8, 16), (8,)))
    expected = nn.functional.linear(x, weight, bias)
    x, weight, bias = x.to(dtype), weight.to(dtype), bias.to(dtype)
    try:
        packed = torch.ops.mkldnn._reorder_linear_weight(weight)
        results = (
            torch.ops.mkldnn._linear_pointwise(x, weight, bias, "none", [], ""),
            torch.ops.mkldnn._linear_pointwise(x, packed, None, "none", [], "") + bias,
        )
    except (AttributeError, NotImplementedError, RuntimeError):
        return False
    tolerance = 1e-5 if dtype == torch.float32 else 0.1
    return all(torch.allclose(result.float(), expected, atol=tolerance) for result in results)


def onednn_applies(*tensors: torch.Tensor) -> bool:
    """oneDNN may serve the products among `tensors` (the inputs and weights of a computation): all on CPU, in
    one dtype that its ops run here, and no gradient wanted for any (its ops have no backward)."""
    dtype = tensors[0].dtype
    return (
        all(tensor.device.type == "cpu" and tensor.dtype == dtype for tensor in tensors)
        and dtype in (torch.float32, torch.bfloat16, torch.float16)
        and not (torch.is_grad_enabled() and any(tensor.requires_grad for tensor in tensors))
        and onednn_available(dtype)
    )


def onednn_linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """`x @ weight.T + bias` for `x` (rows, in) and a dense or packed `weight` (out, in)."""
    return torch.ops.mkldnn._linear_pointwise(x.contiguous(), weight, bias, "none", [], "")


class ElmoDerivedWeights:
    """Tensors derived from a module's weights (packed for oneDNN, stacked for batched products), made on first
    use and made again when a source weight changes (another tensor or storage, or the same one modified in
    place: its version counter moves). Not part of the state dict; each copy takes as much memory as its
    sources, and is dropped when a source is freed (weights that accelerate's hooks load for one forward and
    offload after it keep no copy in memory). Only for computations that want no gradient: the copies are
    detached."""

    def __init__(self) -> None:
        # name -> (the sources, weakly; their storages and versions when derived; the derived tensor)
        self._packed: dict[str, tuple[tuple[weakref.ref, ...], tuple[tuple[int, int], ...], torch.Tensor]] = {}

    def __getstate__(self) -> dict:
        # oneDNN tensors have no storage to copy or pickle: a copy of the model derives its weights again.
        return {"_packed": {}}

    def get(self, name: str, sources: tuple[torch.Tensor, ...], derive: Callable[[], torch.Tensor]) -> torch.Tensor:
        """The tensor derived under `name` from `sources` by `derive()`, from the cache while they are unchanged."""
        versions = tuple((source.data_ptr(), source._version) for source in sources)
        entry = self._packed.get(name)
        if (
            entry is None
            or entry[1] != versions
            or any(ref() is not source for ref, source in zip(entry[0], sources, strict=True))
        ):
            with torch.no_grad():
                forget = functools.partial(self._forget_if_freed, name)
                entry = self._packed[name] = (tuple(weakref.ref(s, forget) for s in sources), versions, derive())
        return entry[2]

    def _forget_if_freed(self, name: str, _freed: weakref.ref) -> None:
        """Drop the copy under `name` if one of its sources is gone (not one derived since from live sources)."""
        entry = self._packed.get(name)
        if entry is not None and any(ref() is None for ref in entry[0]):
            del self._packed[name]


class ElmoOneDnnWeights(ElmoDerivedWeights):
    """oneDNN-packed copies of a module's weights (see [`ElmoDerivedWeights`])."""

    def linear(self, name: str, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        """`x @ weight.T` for `x` (rows, in), with `weight` (out, in) packed under `name`."""
        packed = self.get(name, (weight,), lambda: torch.ops.mkldnn._reorder_linear_weight(weight.detach()))
        return onednn_linear(x, packed)
