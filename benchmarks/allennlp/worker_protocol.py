"""What the speed benchmarks that compare with AllenNLP 0.9.0 (``benchmarks/speed/bench_inference.py``,
``bench_tokenizer.py``) share with their workers in this folder (``inference_worker.py``, ``tokenizer_worker.py``),
which run in different virtual environments: timing a group of batches (``time_group``, the same on both sides)
and the worker protocol (``WorkerProcess``, the benchmark's end).

Standard library only. Memory figures are the process's resident set size from ``/proc/self/status`` (Linux):
``VmRSS`` now and ``VmHWM``, its high-water mark. Writing ``5`` to ``/proc/self/clear_refs`` resets the
high-water mark to the current RSS, so the peak of one group of batches can be measured inside a long-lived
process. Elsewhere the peak falls back to ``resource.getrusage`` (never reset: the peak since the process started).
"""

from __future__ import annotations

import gc
import json
import re
import resource
import shlex
import subprocess
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


def protocol_writer() -> Callable[[dict[str, Any]], None]:
    """For a worker: from now on stdout carries the protocol's JSON lines only (whatever else the worker, torch or
    AllenNLP prints goes to stderr); returns the function that writes one line and flushes it."""
    protocol, sys.stdout = sys.stdout, sys.stderr

    def answer(message: dict[str, Any]) -> None:
        protocol.write(json.dumps(message) + "\n")
        protocol.flush()

    return answer


class WorkerProcess:
    """A worker script of this folder in the AllenNLP venv (made by ``make_venv.sh``), started with a JSON request
    file: it writes one JSON line describing itself (``info``), then answers each group index written to its stdin
    with one JSON line (``request``)."""

    def __init__(
        self, venv: str | Path, script: str, request: dict[str, Any], request_path: Path, what: str, **popen: Any
    ) -> None:
        here = Path(__file__).resolve().parent
        subprocess.run(["bash", str(here / "make_venv.sh"), str(venv)], check=True)
        request_path.write_text(json.dumps(request, ensure_ascii=False), encoding="utf-8")
        command = [str(Path(venv) / "bin" / "python"), str(here / script), str(request_path)]
        print(f"starting {what}: {shlex.join(command)}", flush=True)
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, **popen)
        self.info = self._receive()

    def _receive(self) -> dict[str, Any]:
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the AllenNLP worker stopped (exit code {self.process.wait()}); see its stderr above")
        return json.loads(line)

    def request(self, index: int) -> dict[str, Any]:
        """Have the worker run group `index`; its record."""
        self.process.stdin.write(f"{index}\n")
        self.process.stdin.flush()
        return self._receive()

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait()
