"""The training scripts start the ways users start them: as files from a checkout where the package is installed,
as Hugging Face's example scripts are (`python training/pretrain.py`; `accelerate launch training/pretrain.py` in
test_pretrain.py), from the repository root or elsewhere; as the installed package's console scripts; and as modules
(`python -m`), in every form a page, docstring or message of the repository advises and as the commands' own modules.

Where the package cannot be imported, a file launch stops with one line that says to install it. That is checked
where Python can find every dependency but not this package: `python -S` skips the site module, which would run
the `.pth` file of its editable install (the README's, CI's), and PYTHONPATH names the site-packages folders
themselves.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import site
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from without_the_package import run_without_the_package

from elmo_transformers.common.errors import DataFileError
from elmo_transformers.common.extras import EXTRAS
from elmo_transformers.training.pretraining.lm_vocabulary import LmVocabulary
from modeling_elmo import DEFAULT_MODEL

REPOSITORY = Path(__file__).resolve().parents[2]
SCRIPTS = [
    "training/pretrain.py",
    "training/build_vocab.py",
    "training/evaluate_perplexity.py",
    "training/model_card.py",
    "training/run_token_classification.py",
    "training/run_classification.py",
    "training/recipes/prepare_default_corpus.py",
]
# Each script once (a launch costs seconds of imports), from the repository root as the README shows, or from
# another folder by its full path.
ELSEWHERE = {"training/model_card.py", "training/recipes/prepare_default_corpus.py"}
LAUNCHES = [(script, "another folder" if script in ELSEWHERE else "repository root") for script in SCRIPTS]


NOT_INSTALLED = "error: the elmo-transformers package is not installed: run `pip install -e .` in the repository"


def _environment_without_this_package() -> dict[str, str]:
    folders = site.getsitepackages() + ([site.getusersitepackages()] if site.ENABLE_USER_SITE else [])
    return {**os.environ, "PYTHONPATH": os.pathsep.join(folders)}


def _start_all(tmp_path_factory: pytest.TempPathFactory, python: list[str], environment: dict[str, str]):
    """`PYTHON SCRIPT --help` for every launch, all started at once (each spends seconds importing torch)."""
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    launches = {}
    for script, start in LAUNCHES:
        path, folder = (script, REPOSITORY) if start == "repository root" else (str(REPOSITORY / script), elsewhere)
        launches[script, start] = subprocess.Popen(
            [*python, path, "--help"],
            cwd=folder,
            env=environment,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    return launches


def _stop_all(launches: dict[tuple[str, str], subprocess.Popen]) -> None:
    for process in launches.values():
        process.kill()
        process.wait()


@pytest.fixture(scope="module")
def help_launches(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[tuple[str, str], subprocess.Popen]]:
    """With the package installed, as the README has it (`pip install -e .`)."""
    launches = _start_all(tmp_path_factory, [sys.executable], dict(os.environ))
    yield launches
    _stop_all(launches)


@pytest.fixture(scope="module")
def launches_without_the_package(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[dict[tuple[str, str], subprocess.Popen]]:
    environment = _environment_without_this_package()
    check = [sys.executable, "-S", "-c", "import elmo_transformers.training"]
    if subprocess.run(check, cwd=tmp_path_factory.mktemp("check"), env=environment).returncode == 0:
        pytest.skip("this package is installed into site-packages: it cannot be made unimportable here")
    launches = _start_all(tmp_path_factory, [sys.executable, "-S"], environment)
    yield launches
    _stop_all(launches)


@pytest.mark.parametrize(("script", "start"), LAUNCHES)
@pytest.mark.slow
def test_a_script_runs_as_a_file_with_the_package_installed(help_launches, script: str, start: str) -> None:
    stdout, stderr = help_launches[script, start].communicate(timeout=600)
    assert help_launches[script, start].returncode == 0, stderr[-3000:]
    assert stdout.startswith(f"usage: {Path(script).name} ")


@pytest.mark.parametrize(("script", "start"), LAUNCHES)
def test_a_script_without_the_package_says_to_install_it_in_one_line(
    launches_without_the_package, script: str, start: str
) -> None:
    stdout, stderr = launches_without_the_package[script, start].communicate(timeout=600)
    assert launches_without_the_package[script, start].returncode == 1
    assert (stdout, stderr) == ("", NOT_INSTALLED + "\n")


@pytest.mark.slow
@pytest.mark.parametrize("script", [script for script in SCRIPTS if "recipes" not in script])
def test_a_script_without_the_train_extra_names_it_in_one_line(script: str, tmp_path: Path) -> None:
    run_as_file = "import runpy, sys; sys.argv[0] = sys.argv[1]; runpy.run_path(sys.argv[1], run_name='__main__')"
    completed = run_without_the_package(
        run_as_file, str(REPOSITORY / script), "--help", work=tmp_path, refuse=EXTRAS["train"]
    )
    name = "elmo-" + Path(script).stem.replace("_", "-")
    missing = ", ".join(EXTRAS["train"])
    expected = f"error: {name} needs {missing}, which comes with an extra: pip install 'elmo-transformers[train]'"
    assert (completed.returncode, completed.stdout, completed.stderr) == (1, "", expected + "\n")


# `python -m MODULE` and `accelerate launch -m MODULE` as written in the repository's pages, docstrings and messages
# (a name that ends in a placeholder, `elmo_transformers.training.X`, is none).
ADVISED_MODULE = re.compile(r"-m\s+(elmo_transformers(?:\.[a-z_]+)+)(?![.\w])")
# The module of a command that a training script starts (`module = "elmo_transformers.training.pretraining.pretrain"`).
COMMAND_MODULE = re.compile(r'^module = "(elmo_transformers\.[a-z_.]+)"$', re.MULTILINE)
TEXT_SUFFIXES = {".py", ".md", ".sh", ".toml", ".txt"}


def _repository_texts() -> Iterator[str]:
    """The text files of the checkout: not its hidden folders (.git, CI's virtual environments) nor build output."""
    for folder, subfolders, files in os.walk(REPOSITORY):
        subfolders[:] = [name for name in subfolders if not name.startswith(".") and not name.endswith(".egg-info")]
        for name in files:
            if Path(name).suffix in TEXT_SUFFIXES:
                yield (Path(folder) / name).read_text(
                    encoding="utf-8", errors="replace"
                )  # (test data in other encodings)


def _module_forms() -> list[str]:
    advised = {module for text in _repository_texts() for module in ADVISED_MODULE.findall(text)}
    commands = {
        COMMAND_MODULE.search((REPOSITORY / script).read_text()).group(1)
        for script in SCRIPTS
        if "recipes" not in script
    }
    return sorted(advised | commands)


MODULE_FORMS = _module_forms()


# What `python -m MODULE --help` does (runpy, the module run as `__main__`), for each module of `sys.argv[1:]` in turn
# in one Python: a Python per module would spend seconds each importing torch.
_RUN_AS_MAIN = """
import contextlib, io, json, runpy, sys, warnings

warnings.simplefilter("ignore", RuntimeWarning)  # runpy's: a module already imported by a module run before it
results = {}
for module in sys.argv[1:]:
    sys.argv, output = [module, "--help"], io.StringIO()
    try:
        with contextlib.redirect_stdout(output):
            runpy.run_module(module, run_name="__main__", alter_sys=True)
        status = "no exit: the module did nothing"
    except SystemExit as exit:
        status = exit.code
    except Exception as error:
        status = repr(error)
    results[module] = [status, output.getvalue()[:500]]
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def module_launches(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list]:
    """`python -m MODULE --help` for every form, from a folder outside the checkout: [exit status, its output]."""
    command = [sys.executable, "-c", _RUN_AS_MAIN, *MODULE_FORMS]
    folder = tmp_path_factory.mktemp("elsewhere")
    completed = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=600)
    assert completed.returncode == 0, completed.stderr[-3000:]
    return json.loads(completed.stdout.splitlines()[-1])


def test_the_scan_finds_the_module_forms() -> None:
    """Those of the commands and those the pages advise, among others: a pattern that found none would leave the test
    below nothing to run."""
    assert {
        "elmo_transformers.training.pretraining.pretrain",
        "elmo_transformers.training.finetuning.run_token_classification",
        "elmo_transformers.training.build_vocab",
        "elmo_transformers.training.pretrain",
        "elmo_transformers.inference.embed",
    } <= set(MODULE_FORMS)


@pytest.mark.slow
@pytest.mark.parametrize("module", MODULE_FORMS)
def test_a_module_form_runs_the_command(module_launches, module: str) -> None:
    """`python -m MODULE` starts the command (here its usage), as the console script and the file do, not an import
    that exits 0 having done nothing."""
    status, output = module_launches[module]
    assert (status, output[: len("usage: ")]) == (0, "usage: "), output


def test_the_refusal_of_a_vocabulary_without_its_special_words_advises_a_form_that_runs() -> None:
    """It advises the training script's module form (which checks the extra), run above."""
    with pytest.raises(DataFileError) as refusal:
        LmVocabulary(["the", "cat"])
    assert ADVISED_MODULE.findall(str(refusal.value)) == ["elmo_transformers.training.build_vocab"]
    assert "elmo_transformers.training.build_vocab" in MODULE_FORMS


def _training_console_scripts() -> dict[str, str]:
    with open(REPOSITORY / "pyproject.toml", "rb") as file:
        scripts = tomllib.load(file)["project"]["scripts"]
    return {name: target for name, target in scripts.items() if target.startswith("elmo_transformers.training.")}


def _console_script(name: str):
    module, function = _training_console_scripts()[name].split(":")
    return getattr(importlib.import_module(module), function)


def test_every_script_has_a_console_script_named_after_it() -> None:
    named = {"elmo-" + Path(script).stem.replace("_", "-") for script in SCRIPTS if "recipes" not in script}
    assert set(_training_console_scripts()) == named


@pytest.mark.parametrize("name", sorted(_training_console_scripts()))
def test_a_console_script_reads_the_command_line(
    name: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """What the installed console script runs: its function, called with no arguments, on `sys.argv`."""
    monkeypatch.setattr(sys, "argv", [name, "--help"])
    with pytest.raises(SystemExit) as exit_info:
        _console_script(name)()
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: {name} ")


@pytest.mark.parametrize("name", ["elmo-run-token-classification", "elmo-run-classification"])
def test_a_fine_tuning_console_script_reports_bad_data_in_one_line(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    train = tmp_path / "train.jsonl"
    train.write_text("{not json\n", encoding="utf-8")
    arguments = ["--model_name_or_path", DEFAULT_MODEL, "--train_file", str(train), "--do_train"]
    monkeypatch.setattr(sys, "argv", [name, *arguments, "--output_dir", str(tmp_path / "out")])
    with pytest.raises(SystemExit) as exit_info:
        _console_script(name)()
    assert str(exit_info.value.code).startswith(f"error: {train}, line 1: not JSON")
