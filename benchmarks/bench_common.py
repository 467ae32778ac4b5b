"""Helpers shared by ``bench_inference.py`` and ``allennlp_worker.py`` (which run in different virtual environments).

Standard library only. Memory figures are the process's resident set size from ``/proc/self/status`` (Linux):
``VmRSS`` now and ``VmHWM``, its high-water mark. Writing ``5`` to ``/proc/self/clear_refs`` resets the
high-water mark to the current RSS, so the peak of one group of batches can be measured inside a long-lived
process. Elsewhere the peak falls back to ``resource.getrusage`` (never reset: the peak since the process started).
"""

from __future__ import annotations

import gc
import re
import resource
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

STATUS = Path("/proc/self/status")
CLEAR_REFS = Path("/proc/self/clear_refs")


def _status_kib(field: str) -> int | None:
    try:
        match = re.search(rf"^{field}:\s+(\d+) kB", STATUS.read_text(), re.MULTILINE)
    except OSError:
        return None
    return int(match.group(1)) if match else None


def rss_mib() -> float:
    """The resident set size now, in MiB (0 where /proc is not available)."""
    kib = _status_kib("VmRSS")
    return (kib or 0) / 1024


def peak_rss_mib() -> float:
    """The resident set size's high-water mark in MiB (since the last ``reset_peak_rss``, or the process start)."""
    kib = _status_kib("VmHWM")
    if kib is None:
        maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux, bytes on macOS
        kib = maxrss // 1024 if sys.platform == "darwin" else maxrss
    return kib / 1024


def reset_peak_rss() -> bool:
    """Reset the high-water mark to the current RSS; False where the kernel does not allow it."""
    try:
        CLEAR_REFS.write_text("5")
    except OSError:
        return False
    return True


def time_group(
    run: Callable[[Any], Any], batches: Sequence[Any], warmup: Any, *, budget_s: float
) -> tuple[dict[str, Any], list[Any]]:
    """Run ``warmup`` once untimed, then time ``run(batch)`` for each batch with ``time.perf_counter``.

    Stops early once the timed batches took more than ``budget_s`` in total (at least one batch always runs).
    Returns the timing record (seconds per batch; the RSS before the warm-up and its peak during the warm-up and
    the timed batches, in MiB) and the outputs of the timed batches (kept, so they count towards the peak).
    Memory that the warm-up frees mostly stays resident and is reused, so the peak is that of the largest call.
    """
    gc.collect()
    peak_reset = reset_peak_rss()
    rss_before = rss_mib()
    run(warmup)
    seconds, outputs = [], []
    for batch in batches:
        start = time.perf_counter()
        outputs.append(run(batch))
        seconds.append(time.perf_counter() - start)
        if sum(seconds) > budget_s:
            break
    record = {
        "seconds": seconds,
        "rss_before_mib": rss_before,
        "peak_rss_mib": peak_rss_mib(),
        "peak_reset": peak_reset,
    }
    return record, outputs
