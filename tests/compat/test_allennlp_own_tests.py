"""AllenNLP 0.9.0's own tests of `Elmo`, `_ElmoBiLm`, `_ElmoCharacterEncoder`, `ElmoTokenEmbedder`, `ElmoEmbedder`, its
`elmo` command and `ScalarMix` (the wheel's `allennlp/tests/modules/elmo_test.py`, `allennlp/tests/commands/
elmo_test.py` and `allennlp/tests/modules/scalar_mix_test.py`), run against `elmo_transformers.compat.allennlp`.

Only import lines change, programmatically (`REWRITES`; every other line is the wheel's, which the test checks):
the classes under test come from the compat module, the test base class from `allennlp_test_case.py`. Their
fixtures, expected values and tolerances are the wheel's. The data classes the tests build inputs with (Token,
Vocabulary, the indexers, Batch, BasicIterator) and `remove_sentence_boundaries` stay AllenNLP's own, imported
from the wheel (`allennlp_in_process.py`). They run with pytest in a process of their own.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

HELPERS = Path(__file__).resolve().parents[1] / "helpers"
COMPAT = "elmo_transformers.compat.allennlp"
# wheel path -> (file written, {import line: its replacement})
REWRITES = {
    "allennlp/tests/modules/elmo_test.py": (
        "modules_elmo_test.py",
        {
            "from allennlp.common.testing import AllenNlpTestCase": "from allennlp_test_case import AllenNlpTestCase",
            "from allennlp.modules.elmo import _ElmoBiLm, Elmo, _ElmoCharacterEncoder": (
                f"from {COMPAT} import _ElmoBiLm, Elmo, _ElmoCharacterEncoder"
            ),
            "from allennlp.modules.token_embedders import ElmoTokenEmbedder": f"from {COMPAT} import ElmoTokenEmbedder",
        },
    ),
    "allennlp/tests/commands/elmo_test.py": (
        "commands_elmo_test.py",
        {
            "from allennlp.common.checks import ConfigurationError": f"from {COMPAT} import ConfigurationError",
            "from allennlp.commands import main": f"from {COMPAT} import main",
            "from allennlp.commands.elmo import ElmoEmbedder": f"from {COMPAT} import ElmoEmbedder",
            "from allennlp.tests.modules.elmo_test import ElmoTestCase": "from modules_elmo_test import ElmoTestCase",
        },
    ),
    "allennlp/tests/modules/scalar_mix_test.py": (
        "scalar_mix_test.py",
        {
            "from allennlp.common.testing import AllenNlpTestCase": "from allennlp_test_case import AllenNlpTestCase",
            "from allennlp.common.checks import ConfigurationError": f"from {COMPAT} import ConfigurationError",
            "from allennlp.modules import ScalarMix": f"from {COMPAT} import ScalarMix",
        },
    ),
}
# 12 in modules/elmo_test.py, 8 + 3 in commands/elmo_test.py, 5 in scalar_mix_test.py: all of them run.
EXPECTED_TESTS = 28
CONFTEST = f"""import os, sys
from pathlib import Path
sys.path.insert(0, {str(HELPERS)!r})
from allennlp_in_process import import_allennlp
import_allennlp(Path(os.environ["ALLENNLP_WHEEL"]))
"""


def rewritten(source: str, imports: dict[str, str]) -> str:
    """`source` with each import line of `imports` replaced (each must occur, as a whole line)."""
    lines = source.splitlines()
    for old, new in imports.items():
        assert lines.count(old) == 1, f"the wheel's test has no line {old!r}"
        lines[lines.index(old)] = new
    return "\n".join(lines) + "\n"


def write_rewritten_tests(wheel: Path, folder: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        for member, (name, imports) in REWRITES.items():
            source = archive.read(member).decode("utf-8")
            text = rewritten(source, imports)
            changed = [new for old, new in zip(source.splitlines(), text.splitlines(), strict=True) if old != new]
            assert len(changed) == len(imports) and all(line.startswith("from ") for line in changed)
            (folder / name).write_text(text, encoding="utf-8")
    (folder / "conftest.py").write_text(CONFTEST, encoding="utf-8")
    (folder / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")


@pytest.mark.slow
def test_allennlp_0_9_own_elmo_tests_pass(allennlp_wheel: Path, allennlp_fixtures: Path, tmp_path: Path) -> None:
    folder = tmp_path / "allennlp_tests"
    folder.mkdir()
    write_rewritten_tests(allennlp_wheel, folder)
    environment = {**os.environ, "ALLENNLP_WHEEL": str(allennlp_wheel), "ALLENNLP_FIXTURES": str(allennlp_fixtures)}
    command = [sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", "-c", "pytest.ini", "."]
    completed = subprocess.run(
        command, cwd=folder, env=environment, capture_output=True, text=True, timeout=900, check=False
    )
    print(completed.stdout[-6000:])
    assert completed.returncode == 0, completed.stdout[-6000:] + completed.stderr[-3000:]
    assert f"{EXPECTED_TESTS} passed" in completed.stdout
