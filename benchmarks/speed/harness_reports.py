"""How the speed benchmarks report: Markdown tables, the ratio to the baseline measured in the same run, the machine
and the run (commit, command, CPU, load averages, the threads and native libraries' settings a Python runs torch
with), and a report file written whole.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from harness_corpora import REPOSITORY

__all__ = [
    "RunRecord",
    "cpu_and_load",
    "cpu_flags",
    "cpu_model",
    "git_description",
    "load_averages",
    "markdown_table",
    "ratio",
    "torch_settings",
    "write_through_rename",
]


def markdown_table(rows: list[list[str]], header: list[str]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def ratio(value: float, baseline: float, digits: int = 2) -> str:
    """``value`` over the baseline's, as the tables print it: ``1.23x``."""
    return f"{value / baseline:.{digits}f}x"


def git_description() -> str:
    """The repository's commit, and whether the package's code differs from it in the working tree."""

    def git(*command: str) -> str:
        result = subprocess.run(["git", "-C", str(REPOSITORY), *command], capture_output=True, text=True, check=False)
        return result.stdout.strip()

    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    dirty = git("status", "--porcelain", "--", "modeling_elmo", "conversion")
    return f"{commit}" + (" (modeling_elmo/ or conversion/ modified in the working tree)" if dirty else "")


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


# The CPU features that decide the products' speed and exactness: AVX2's int8 pair sums saturate in int16, VNNI's
# do not; AVX512-BF16 and AMX compute bfloat16 products natively.
_PRODUCT_FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_bf16", "amx_int8")


def cpu_flags() -> str:
    """Which of the flags that decide the products' kernels this CPU has (from /proc/cpuinfo), as `avx2 avx512_vnni`;
    "unknown" where /proc/cpuinfo cannot be read."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "unknown"
    flags = next((line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("flags")), [])
    return " ".join(flag for flag in _PRODUCT_FLAGS if flag in flags) or "none of " + " ".join(_PRODUCT_FLAGS)


def load_averages(values: tuple[float, ...]) -> str:
    """``os.getloadavg()`` as the reports print it: ``0.52, 0.61, 0.70``."""
    return ", ".join(f"{value:.2f}" for value in values)


def cpu_and_load(threads: int, load_before: tuple[float, ...], versions: str) -> str:
    """Two lines: the CPU and the threads of each backend, the load average before the run and now, and the
    ``versions`` that ran."""
    return (
        f"CPU: {cpu_model()}, {threads} thread(s); load average before {load_averages(load_before)},\n"
        f"after {load_averages(os.getloadavg())}; {versions}"
    )


# The environment variables that set torch's CPU threads and its native libraries (`modeling_elmo.native_elmo`).
THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "OMP_WAIT_POLICY",
    "GOMP_SPINCOUNT",
    "MKL_NUM_THREADS",
    "MKL_CBWR",
    "ONEDNN_PRIMITIVE_CACHE_CAPACITY",
)
# Run by `torch_settings` in the Python measured: its torch as that Python's commands start it.
_TORCH_SETTINGS_PROBE = """
import json, os, sys
if sys.argv[1] == "elmo":
    from modeling_elmo.native_elmo import set_native_libraries
    set_native_libraries()  # as elmo-embed does, before torch is imported
import torch
settings = {"torch": torch.__version__, "threads": torch.get_num_threads()}
settings["backend"] = next(
    (line.split(":", 1)[1].strip() for line in torch.__config__.parallel_info().splitlines()
     if line.startswith("ATen parallel backend")), "?")
if sys.argv[1] == "elmo":
    from modeling_elmo.onednn_elmo import onednn_available
    settings["oneDNN LSTM products"] = onednn_available()
settings.update({name: os.environ.get(name, "unset") for name in json.loads(sys.argv[2])})
print(json.dumps(settings))
"""


def torch_settings(python: str, *, elmo: bool) -> str:
    """How `python` (a venv's interpreter) runs torch on this machine, in a process started as the benchmarks start
    their commands: torch's version, threads and parallel backend, and `THREAD_VARIABLES` as its process sees them
    (with `elmo`, after `set_native_libraries`, as elmo-embed sets them; and whether the LSTMs' products run on
    oneDNN). What a command's speed depends on besides its code: say it beside the figures."""
    arguments = [python, "-c", _TORCH_SETTINGS_PROBE, "elmo" if elmo else "plain", json.dumps(THREAD_VARIABLES)]
    completed = subprocess.run(arguments, capture_output=True, text=True, check=False, cwd=REPOSITORY)
    if completed.returncode:
        return f"(the settings could not be read: {completed.stderr.strip().splitlines()[-1:]})"
    return ", ".join(f"{name} {value}" for name, value in json.loads(completed.stdout).items())


@dataclass(frozen=True)
class RunRecord:
    """How a run began (its command line, the time, the load average), for the lines of its report's "Run:"
    section that say so."""

    command: str
    started_at: str
    started: float  # time.perf_counter()
    load_start: tuple[float, ...]

    @classmethod
    def start(cls) -> RunRecord:
        return cls(
            command=shlex.join([sys.executable, *sys.argv]),
            started_at=datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
            started=time.perf_counter(),
            load_start=os.getloadavg(),
        )

    def minutes(self) -> float:
        """Minutes since the start."""
        return (time.perf_counter() - self.started) / 60

    def command_line(self, minutes: float) -> str:
        """The report's line of the command, the commit, the start and how long the run took."""
        return f"- command: `{self.command}` (repository {git_description()}), {self.started_at}, {minutes:.1f} minutes"

    def machine_line(self, threads: str, load_end: tuple[float, ...], own_load: str) -> str:
        """The report's line of the machine: its CPU and cores, ``threads`` (how the run used them), and the load
        average at the start and at ``load_end``, with ``own_load`` (what the run adds to it)."""
        return (
            f"- machine: {cpu_model()}, {os.cpu_count()} cores, {threads}; load average (1, 5, 15 min) "
            f"{load_averages(self.load_start)} at the start, {load_averages(load_end)} at the end ({own_load})"
        )


def write_through_rename(path: Path, text: str) -> None:
    """Write to a temporary file next to ``path``, then rename it: a reader never sees half a report."""
    with tempfile.NamedTemporaryFile(
        "w", encoding="utf-8", dir=path.parent, prefix=f".{path.name}.", delete=False
    ) as file:
        file.write(text)
    os.replace(file.name, path)
