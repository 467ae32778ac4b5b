"""The core install runs the model, `elmo-convert` and `elmo-embed` without any extra; a command that needs one says
which in one line (the training scripts: tests/training/test_script_launch.py)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from ctrl_c_on_import import run_with_ctrl_c_on_importing
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


CONSOLE_SCRIPTS = {
    "elmo-convert": ("elmo_transformers.common.console:elmo_convert", "elmo_transformers.conversion.command"),
    "elmo-embed": ("elmo_transformers.common.console:elmo_embed", "elmo_transformers.inference.options"),
}


def test_the_console_scripts_are_the_launchers() -> None:
    with open(REPOSITORY / "pyproject.toml", "rb") as file:
        scripts = tomllib.load(file)["project"]["scripts"]
    assert {name: scripts[name] for name in CONSOLE_SCRIPTS} == {
        name: route for name, (route, _) in CONSOLE_SCRIPTS.items()
    }


@pytest.mark.parametrize("program", sorted(CONSOLE_SCRIPTS))
def test_a_ctrl_c_while_the_commands_module_is_imported_is_one_line(program: str, tmp_path: Path) -> None:
    """The console script imported the command's module before its main could catch anything: a Ctrl-C then (while
    its options' module was imported, say) was a KeyboardInterrupt traceback."""
    route, imported = CONSOLE_SCRIPTS[program]
    completed = run_with_ctrl_c_on_importing(imported, route, str(EXAMPLE), str(tmp_path / "out"))
    assert (completed.returncode, completed.stderr) == (
        130,
        f"{program}: interrupted: nothing was started, nothing was written: run the command again\n",
    )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("missing", "command"),
    [
        (
            "tqdm",
            ["elmo_transformers.conversion.cli", "token-embeddings", "--vocab", "vocab.txt", "--output", "t.hdf5"],
        ),
        ("h5py", ["elmo_transformers.inference.embed", "IN", "vectors.hdf5"]),
        ("torch", ["elmo_transformers.inference.embed", "IN", "vectors.hdf5"]),
    ],
)
def test_a_core_dependency_left_out_by_no_deps_is_one_line(missing: str, command: list[str], tmp_path: Path) -> None:
    """`pip install --no-deps` leaves tqdm, h5py and torch out: the commands gave an import traceback."""
    script = """
        import importlib, sys
        sys.exit(importlib.import_module(sys.argv[1]).main(sys.argv[2:]))
    """
    (tmp_path / "vocab.txt").write_text("a\nb\n", encoding="utf-8")
    model = ["--model", str(REPOSITORY / "modeling_elmo" / "default_model")]
    arguments = [str(EXAMPLE) if argument == "IN" else argument for argument in command] + model
    completed = run_without_the_package(script, *arguments, work=tmp_path, refuse=[missing])
    requirement = {"tqdm": "tqdm>=4.66", "h5py": "h5py>=3.11", "torch": "torch>=2.6"}[missing]
    program = "elmo-convert" if "conversion" in command[0] else "elmo-embed"
    assert (completed.returncode, completed.stderr[-2000:]) == (
        2,
        f"{program}: error: {missing} is not installed, a dependency of elmo-transformers (an install with --no-deps"
        f" leaves it out): pip install '{requirement}'\n",
    )
    assert sorted(path.name for path in tmp_path.iterdir()) == ["refuse-the-package", "vocab.txt"]
