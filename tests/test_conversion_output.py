"""What `elmo-convert` does around its output: one writer at a time (a second is refused in one line naming the
first, touching nothing), and no output that would replace the current directory or the inputs."""

from __future__ import annotations

import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from original_files import small_options, write_original_model

from conversion.cli import main
from modeling_elmo import ElmoModel

# `elmo-convert ARGS` as the console script runs it, paused (until a line comes on stdin) once it has written the
# weights into its staging folder: a first writer caught in the middle of its output, deterministically.
_PAUSED_CONVERSION = textwrap.dedent(
    """
    import sys
    from conversion import saving
    from conversion.cli import main

    def paused(*args, **kwargs):
        print("writing", flush=True)
        sys.stdin.readline()
        return write_model_card(*args, **kwargs)

    write_model_card, saving.write_model_card = saving.write_model_card, paused
    sys.argv = ["elmo-convert", *sys.argv[1:]]
    sys.exit(main())
    """
)


@pytest.fixture
def original(tmp_path: Path) -> tuple[Path, Path]:
    return write_original_model(tmp_path / "original", small_options(), seed=11)


def _allennlp(options: Path, weights: Path, output: Path | str, *extra: str) -> list[str]:
    return ["allennlp", "--options", str(options), "--weights", str(weights), "--output", str(output), *extra]


def _elmo_convert(*arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "conversion.cli", *arguments], capture_output=True, text=True, timeout=300
    )


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


@pytest.mark.parametrize("second_overwrites", [False, True], ids=["second-plain", "second-overwrite"])
def test_a_second_writer_is_refused_naming_the_first(original, tmp_path: Path, second_overwrites: bool) -> None:
    """The first writer replaces an old output where the second would too (--overwrite), and writes a new one
    where the second would not: in both the second stops, naming the first, and the first's output is whole."""
    output = tmp_path / "converted"
    first_arguments = _allennlp(*original, output)
    if second_overwrites:
        assert main(_allennlp(*original, output)) == 0  # the old output both would replace
        first_arguments.append("--overwrite")
    first = subprocess.Popen(
        [sys.executable, "-c", _PAUSED_CONVERSION, *first_arguments],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert first.stdout.readline().strip() == "writing", first.stderr.read()
        before = _tree(tmp_path)
        second = _elmo_convert(*_allennlp(*original, output, *(["--overwrite"] if second_overwrites else [])))
        assert second.returncode == 2
        assert second.stderr.splitlines() == [
            f"elmo-convert: error: {output} is being written by process {first.pid}"
            f" ({shlex.join(['elmo-convert', *first_arguments])}): wait for it to finish, or stop it first"
        ]
        assert _tree(tmp_path) == before, "the second writer touched nothing"
    finally:
        out, err = first.communicate("\n", timeout=300)
    assert first.returncode == 0, err
    assert out.strip().splitlines()[-1].startswith(f"Converted {original[1]}")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["converted", "original"], "no staging or lock left"
    ElmoModel.from_pretrained(output)  # complete and loadable


def test_the_current_directory_and_a_folder_of_the_inputs_are_refused(
    original, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    options, weights = original
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    before = _tree(tmp_path)
    for output, problem in [
        (".", ". is the current directory or holds it: it cannot be replaced; name a new folder"),
        ("..", ".. is the current directory or holds it: it cannot be replaced; name a new folder"),
        (
            str(options.parent),
            f"{options.parent} holds the input {weights}: replacing it would delete the input; name another folder",
        ),
    ]:
        assert main(_allennlp(options, weights, output, "--overwrite")) == 2
        assert capsys.readouterr().err.splitlines() == [f"elmo-convert: error: {problem}"]
    assert _tree(tmp_path) == before
    converted = tmp_path / "converted"
    assert main(_allennlp(options, weights, converted)) == 0
    capsys.readouterr()
    for command in (["to-allennlp"], ["sentence-transformers"]):
        assert main([*command, "--model", str(converted), "--output", str(converted), "--overwrite"]) == 2
        # (after the progress bar of loading the model)
        assert capsys.readouterr().err.splitlines()[-1:] == [
            f"elmo-convert: error: {converted} holds the input {converted}: replacing it would delete the input;"
            " name another folder"
        ]
    assert ElmoModel.from_pretrained(converted).config.cell_size == 32
