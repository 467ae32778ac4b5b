"""benchmarks/speed/bench_gpu.py: it says so and exits 0 without a GPU, and every section runs (on the CPU, with the
bilm-tf fixture model and AllenNLP imported from its wheel) with exact float32 numbers against float64."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[2]
SCRIPT = REPOSITORY / "benchmarks" / "speed" / "bench_gpu.py"


def _run(*arguments: str, **environment: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *arguments],
        capture_output=True,
        text=True,
        env={**os.environ, **environment},
        check=False,
        timeout=600,
    )


@pytest.mark.slow
def test_without_a_gpu_it_says_so_and_exits_0() -> None:
    completed = _run(CUDA_VISIBLE_DEVICES="")
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert "no CUDA GPU on this machine" in completed.stdout


@pytest.mark.slow
def test_smoke_run_on_the_cpu(elmo_fixture: Path, allennlp_wheel: Path, tmp_path: Path) -> None:
    output = tmp_path / "gpu.md"
    completed = _run(
        "--device", "cpu", "--options-file", str(elmo_fixture / "options.json"),
        "--weights-file", str(elmo_fixture / "lm_weights.hdf5"), "--allennlp-wheel", str(allennlp_wheel),
        "--batches", "3,5", "--batches-per-size", "2", "--seconds", "0.05", "--embed-lines", "12",
        "--training-streams", "", "--output", str(output), "--work-dir", str(tmp_path),
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr[-3000:]
    text = output.read_text()
    assert "AllenNLP left out" not in text
    section = text.split("### Largest difference")[1].split("###")[0]
    differences = {}
    for row in re.findall(r"^\| ([^|]+) \| (\d\.\de[+-]\d+) \| (\d\.\de[+-]\d+) \|$", section, re.MULTILINE):
        differences[row[0].strip()] = [float(value) for value in row[1:]]
    assert set(differences) == {
        "AllenNLP 0.9.0 `_ElmoBiLm` float32", "ElmoModel float32", "ElmoModel bfloat16", "ElmoModel float16",
        "ElmoModel, mix_layers=[0, 1] float32",
    }  # fmt: skip
    for name in ("AllenNLP 0.9.0 `_ElmoBiLm` float32", "ElmoModel float32", "ElmoModel, mix_layers=[0, 1] float32"):
        assert 0 < max(differences[name]) <= 1e-5, (name, differences[name])
    assert 1e-4 < max(differences["ElmoModel bfloat16"]) < 0.5  # the half precisions are measured, not float32
    for heading in ("### Forward", "### End to end", "### `elmo-embed --device cpu"):
        assert heading in text
    assert re.search(r"^\| bfloat16 \| [0-9,]+ \| [0-9,]+ \|$", text, re.MULTILINE), text
