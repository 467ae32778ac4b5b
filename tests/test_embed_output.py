"""`elmo-embed`'s output, as the user runs the command: one writer at a time, an output that is the input refused,
a full disk told in one line and resumed to the same file, the file's record of how it was made, and a --help that
does not load torch."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import h5py
import numpy as np
import pytest

from inference.embed import main

LINES = [
    "The cat sat on the mat .",
    "Hello !",
    "",
    "ELMo gives every word three vectors .",
    "one two three four five six seven eight nine ten",
    "a",
    "Colorless green ideas sleep furiously .",
]
ELMO_EMBED = str(Path(sys.executable).with_name("elmo-embed"))
# One thread: the runs compared bit for bit compute the same way, and the 2 shared cores are not oversubscribed.
ENVIRONMENT = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}

# `elmo-embed` (its main()) that stops after writing its first batch until the file named by $ELMO_TEST_GO exists,
# having created the one named by $ELMO_TEST_PAUSED: a run caught in the middle, for a second writer to meet.
_PAUSING_RUN = textwrap.dedent(
    """
    import os, sys, time
    from pathlib import Path
    import inference.embed as embed
    write = embed._Run._write
    def pausing_write(self, item, progress):
        write(self, item, progress)
        if not Path(os.environ["ELMO_TEST_PAUSED"]).exists():
            Path(os.environ["ELMO_TEST_PAUSED"]).touch()
            while not Path(os.environ["ELMO_TEST_GO"]).exists():
                time.sleep(0.05)
    embed._Run._write = pausing_write
    sys.argv[0] = "elmo-embed"
    sys.exit(embed.main(sys.argv[1:]))
    """
)


def _write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def _datasets(path: Path) -> dict[str, np.ndarray]:
    """Every dataset of a finished file, read whole (a damaged one raises)."""
    with h5py.File(path, "r") as file:
        return {name: file[name][()] for name in file}


def _snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """(size, modification time) of everything under `folder`: what a refused run must leave as it was."""
    return {str(path.relative_to(folder)): (path.stat().st_size, path.stat().st_mtime_ns) for path in folder.rglob("*")}


@pytest.fixture(scope="module")
def reference_file(fixture_model_folder: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """LINES embedded by an uninterrupted run of the fixture model, batches of 1."""
    folder = tmp_path_factory.mktemp("reference")
    source = _write_lines(folder / "in.txt", LINES)
    output = folder / "out.hdf5"
    assert main([str(source), str(output), "--model", str(fixture_model_folder), "--batch-size", "1"]) == 0
    return output


@pytest.mark.parametrize(
    "flags", [[], ["--overwrite"], ["--resume"], ["--resume", "--overwrite"]], ids=lambda flags: " ".join(flags) or "-"
)
def test_a_second_writer_stops_naming_the_first_and_touches_nothing(
    flags: list[str], reference_file: Path, fixture_model_folder: Path, tmp_path: Path
) -> None:
    source = _write_lines(tmp_path / "in.txt", LINES)
    output = tmp_path / "out.hdf5"
    args = [str(source), str(output), "--model", str(fixture_model_folder), "--batch-size", "1"]
    paused, go = tmp_path / "paused", tmp_path / "go"
    environment = {**ENVIRONMENT, "ELMO_TEST_PAUSED": str(paused), "ELMO_TEST_GO": str(go)}
    first = subprocess.Popen(
        [sys.executable, "-c", _PAUSING_RUN, *args], env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not paused.exists():
            assert first.poll() is None and time.monotonic() < deadline, "the first run did not start writing"
            time.sleep(0.05)
        before = _snapshot(tmp_path)
        second = subprocess.run([ELMO_EMBED, *args, *flags], env=ENVIRONMENT, capture_output=True, text=True)
        assert second.returncode == 2
        assert second.stderr == (
            f"elmo-embed: error: {output} is being written by process {first.pid} (elmo-embed {' '.join(args)}):"
            " wait for it to finish, or stop it first\n"
        )
        assert _snapshot(tmp_path) == before, "the refused run changed nothing"
    finally:
        go.touch()
        out, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    assert out.startswith(f"Wrote {output}: 7 lines")
    written, expected = _datasets(output), _datasets(reference_file)
    assert sorted(written) == sorted(expected) and written.pop("sentence_to_index") == expected.pop("sentence_to_index")
    for name, vectors in expected.items():
        np.testing.assert_allclose(written[name], vectors, rtol=0, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("link", ["output", "hard link", "symbolic link", "partial", "lock"])
def test_an_output_that_is_the_input_is_refused(link: str, fixture_model_folder: Path, tmp_path: Path, capsys) -> None:
    source = _write_lines(tmp_path / "in.txt", LINES)
    content = source.read_bytes()
    output = source if link == "output" else tmp_path / "out.hdf5"
    named = {"hard link": output, "symbolic link": output, "partial": Path(f"{output}.partial")}
    named["lock"] = Path(f"{output}.lock")
    if link == "symbolic link":
        output.symlink_to(source)
    elif link != "output":
        os.link(source, named[link])
    code = main([str(source), str(output), "--model", str(fixture_model_folder), "--overwrite", "--resume"])
    err = capsys.readouterr().err
    assert code == 2
    refused = named.get(link, source)
    assert err == f"elmo-embed: error: {refused} is the input file {source}: write the output to another path\n"
    assert source.read_bytes() == content
