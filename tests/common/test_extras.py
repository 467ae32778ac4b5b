"""The core install runs the model, `elmo-convert` and `elmo-embed` without any extra; a command that needs one says
which in one line (the training scripts: tests/training/test_script_launch.py)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from without_the_package import run_without_the_package

from elmo_transformers.common.extras import EXTRAS

REPOSITORY = Path(__file__).resolve().parents[2]
EXAMPLE = REPOSITORY / "examples" / "sentences.txt"
EVERY_EXTRA_MODULE = sorted({module for modules in EXTRAS.values() for module in modules})


def _requirement_name(requirement: str) -> str:
    return re.split(r"[\[<>=!~; ]", requirement, maxsplit=1)[0].lower()


def test_no_extras_package_is_a_core_dependency() -> None:
    with open(REPOSITORY / "pyproject.toml", "rb") as file:
        project = tomllib.load(file)["project"]
    core = {_requirement_name(requirement) for requirement in project["dependencies"]}
    assert core.isdisjoint(EVERY_EXTRA_MODULE)
    for extra, modules in EXTRAS.items():
        declared = {_requirement_name(requirement) for requirement in project["optional-dependencies"][extra]}
        assert set(modules) <= declared, extra


@pytest.mark.slow
def test_the_core_commands_run_without_any_extra(tmp_path: Path) -> None:
    script = """
        import sys
        from elmo_transformers.conversion.cli import main as convert
        from elmo_transformers.inference.embed import main as embed
        assert embed([sys.argv[1], "vectors.hdf5"]) == 0
        try:
            convert(["--help"])
        except SystemExit as done:
            assert done.code == 0
    """
    completed = run_without_the_package(script, str(EXAMPLE), work=tmp_path, refuse=EVERY_EXTRA_MODULE)
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert (tmp_path / "vectors.hdf5").stat().st_size > 0


@pytest.mark.slow
def test_elmo_embed_names_the_datasets_extra_in_one_line(tmp_path: Path) -> None:
    script = """
        import sys
        from elmo_transformers.inference.embed import main
        sys.exit(main([sys.argv[1], "vectors", "--format", "datasets"]))
    """
    completed = run_without_the_package(script, str(EXAMPLE), work=tmp_path, refuse=["datasets"])
    expected = (
        "elmo-embed: error: --format datasets needs datasets, which comes with an extra: "
        "pip install 'elmo-transformers[datasets]'\n"
    )
    assert (completed.returncode, completed.stderr) == (2, expected)
    assert not (tmp_path / "vectors").exists()
