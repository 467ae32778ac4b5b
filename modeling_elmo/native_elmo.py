"""The settings of the native libraries behind torch's CPU kernels that make ELMo's products bit-stable and fast
(`set_native_libraries`), applied by every command of this package that computes: `elmo-embed`, `elmo-convert`
(its parity measurements) and the training scripts.

oneDNN and MKL read their setting from the environment once, when their first kernel runs, and OpenMP when torch is
imported, so it must be set before anything computes or imports torch: at the start of a command, which owns its
process. `from_pretrained` does not set them: it cannot know whether the process has computed already (then the
setting is read too late, in silence), and a library should not change its caller's environment, which every
subprocess inherits.
- oneDNN, behind torch's CPU convolutions and the LSTMs' products, builds a kernel for each input shape and keeps
  the most recently used ones in a cache. The LSTMs reuse theirs at every step: building them anew each time (a
  cache of 0) made the default model 1.5x slower on ordinary text and 4-4.6x with --batch-size 1 or a 3,000-word
  line. The character CNN pads its batches to few shapes (ElmoCharacterEncoder), so that the cache stays small:
  over 20,000 lines the peak memory was 1.15 GB, against 1.06 GB without a cache and 1.45 GB unpadded.
- MKL, behind the products that oneDNN does not serve (the highway layers' among them), picks its code path by
  the memory alignment of the operands: the same product of a misaligned copy differed by up to 3e-5, so two runs
  of one command differed whenever the allocator placed a tensor elsewhere (seen: 2.9e-5 in the biLSTM layers on
  a loaded machine). STRICT makes every product independent of alignment, so that repeated runs are equal bit
  for bit (at one thread count).
- OpenMP (GNU libgomp, behind torch's CPU threads) lets a thread that has finished its share of a parallel region
  spin, busy, for the next one (300,000 turns by default) before it sleeps. The LSTMs run tens of thousands of short
  regions (a product, a gate), so by default the threads spin through much of the run: on a machine shared with
  other work they take the cores from that work and from each other (issue 55: 150 lines of the original shape at 2
  threads on 2 loaded cores took 41-51 s of CPU time, against 24-25 s at 1 thread). PASSIVE lets a waiting thread
  sleep at once: the same run at 2 threads took 24.5-27.5 s of CPU time. It moves no bit (each thread computes the
  same share). libgomp reads it as torch loads it: it takes effect where a command sets it before importing torch
  (elmo-embed, elmo-convert; tests/common/test_native_libraries.py holds elmo-embed to it) and in every process
  that the command starts; the training scripts that import torch first keep the default.
"""

from __future__ import annotations

import os

__all__ = ["NATIVE_LIBRARY_SETTINGS", "set_native_libraries"]

NATIVE_LIBRARY_SETTINGS = {
    "ONEDNN_PRIMITIVE_CACHE_CAPACITY": "1024",
    "MKL_CBWR": "AUTO,STRICT",
    "OMP_WAIT_POLICY": "PASSIVE",
}


def set_native_libraries() -> None:
    """Put `NATIVE_LIBRARY_SETTINGS` into the environment, keeping any the user set; call it before the first
    kernel runs, and before torch is imported for OpenMP's (see the module's docstring)."""
    for name, value in NATIVE_LIBRARY_SETTINGS.items():
        os.environ.setdefault(name, value)
