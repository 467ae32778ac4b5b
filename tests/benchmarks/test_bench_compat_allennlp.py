"""benchmarks/speed/bench_compat_allennlp.py runs to completion on a tiny model (the bilm-tf fixture) with AllenNLP
imported from its wheel: every row timed, and compat.allennlp's vectors within 1e-6 of AllenNLP's, call for call."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "speed" / "bench_compat_allennlp.py"
ROWS = (
    "load: AllenNLP", "load: compat", "batches of 64: AllenNLP", "batches of 64: compat",
    "protein, batch 1: AllenNLP", "protein, batch 1: compat", "protein, batch 1: ElmoModel",
)  # fmt: skip


@pytest.mark.slow
def test_smoke_run_on_the_fixture_model(elmo_fixture: Path, allennlp_wheel: Path, tmp_path: Path) -> None:
    output = tmp_path / "compat.md"
    command = [
        sys.executable, str(SCRIPT), "--allennlp-wheel", str(allennlp_wheel),
        "--options-file", str(elmo_fixture / "options.json"), "--weights-file", str(elmo_fixture / "lm_weights.hdf5"),
        "--batches", "2", "--protein-length", "50", "--rounds", "1", "--threads", "1", "--output", str(output),
    ]  # fmt: skip
    completed = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    assert completed.returncode == 0, completed.stderr[-3000:]
    text = output.read_text()
    for row in ROWS:
        assert re.search(rf"^\| {re.escape(row)} \| \d+\.\d{{3}} \| \d+\.\d{{3}} \| \d+\.\d\dx \|", text, re.M), row
    difference = float(re.search(r"state carried: (\S+)$", text, re.MULTILINE).group(1))
    assert 0 < difference <= 1e-6
