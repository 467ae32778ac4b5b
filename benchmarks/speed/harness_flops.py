"""The arithmetic of the biLM and of the machine: the FLOPs of one position (a word or a sentence marker), the
matmul peak that the speed benchmarks give their share of, and the wait for a device's queued work before a clock
is read.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

from modeling_elmo import ElmoConfig

__all__ = ["flops_per_position", "measure_matmul_peak", "synchronizer"]


def synchronizer(device: torch.device) -> Callable[[], None]:
    """What waits for ``device``'s queued work (a CUDA GPU's), so that a clock read after it counts that work."""
    return torch.cuda.synchronize if device.type == "cuda" else lambda: None


def flops_per_position(config: ElmoConfig, lstm_layers: int | None = None) -> dict[str, int]:
    """FLOPs of the biLM for one position (a word, or the <S>/</S> added around each sentence): 2 x multiply-adds.

    With E = char_embedding_dim, K = max_characters_per_token, F = sum of the filter counts, P = projection_dim,
    C = cell_size, L = the LSTM layers computed (default num_hidden_layers; 1 for mix_layers=[0, 1]):
      CNN         sum over filters (w, n) of (K - w + 1) * w * E * n     (valid convolution over all K slots)
      highway     n_highway * 2 * F * F                                  (carry and transform)
      projection  (F + word_embedding_dim) * P
      LSTMs       2 directions * L * (P * 4C  +  P * 4C  +  C * P)        (input, recurrent, output projection)
    Element-wise work (embedding look-up, max-pool, gates, clipping) is not counted. The original model:
    8.81M + 16.78M + 1.05M + 75.50M = 102.1M multiply-adds, 204.3 MFLOP per position.
    """
    E, K, P, C, L = (
        config.char_embedding_dim,
        config.max_characters_per_token,
        config.projection_dim,
        config.cell_size,
        config.num_hidden_layers if lstm_layers is None else lstm_layers,
    )
    F_ = config.num_filters
    macs = {
        "cnn": sum((K - width + 1) * width * E * count for width, count in config.char_cnn_filters),
        "highway": config.num_highway_layers * 2 * F_ * F_,
        "projection": (F_ + (config.word_embedding_dim or 0)) * P,
        "lstm": 2 * L * (P * 4 * C + P * 4 * C + C * P),
    }
    return {name: 2 * value for name, value in macs.items()}


def measure_matmul_peak(
    dtype: torch.dtype, *, min_seconds: float = 1.5, device: torch.device | str = "cpu"
) -> dict[str, Any]:
    """GFLOP/s (2 n^3 per product) of square products, in the two layouts a model uses; the better one is the peak.

    ``torch.mm(a, b)`` and ``F.linear(a, w)`` (``a @ w.T``, the layout of ``nn.Linear``) can take different
    kernels (for bfloat16 on CPUs without native bfloat16 they differ by 10x). n doubles from 256 until one
    product takes 0.3 s (at most 4096 on a CPU, 16384 on a GPU), then the best of >= 3 repetitions over >=
    ``min_seconds`` counts.
    """
    device = torch.device(device)
    sync = synchronizer(device)
    largest = 16384 if device.type == "cuda" else 4096

    def timed(operation, a, b) -> float:
        sync()
        start = time.perf_counter()
        operation(a, b)
        sync()
        return time.perf_counter() - start

    operations = {"torch.mm(a, b)": torch.mm, "F.linear(a, w)": F.linear}
    results = {}
    for name, operation in operations.items():
        n = 256
        while True:
            generator = torch.Generator().manual_seed(0)
            a = torch.randn(n, n, generator=generator).to(device, dtype)
            b = torch.randn(n, n, generator=generator).to(device, dtype)
            operation(a, b)
            elapsed = timed(operation, a, b)
            if elapsed >= 0.3 or n >= largest:
                break
            n *= 2
        times = [elapsed]
        while len(times) < 3 or sum(times) < min_seconds:
            times.append(timed(operation, a, b))
        results[name] = {"n": n, "gflops": 2 * n**3 / min(times) / 1e9}
    best = max(results, key=lambda name: results[name]["gflops"])
    return {"gflops": results[best]["gflops"], "best": best, "layouts": results}
