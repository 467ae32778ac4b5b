"""`elmo-convert --help`, a subcommand's `--help` and an argument error come without importing torch,
transformers or h5py (seconds of imports): the subcommands and their options live in the light
`elmo_transformers.conversion.command` and `convert_options`, and a converter module is imported only when its
subcommand runs."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from ctrl_c_on_import import run_with_ctrl_c_on_importing_torch

# The console script's route: `elmo-convert ARGS` calls `elmo_transformers.conversion.cli.main()` with ARGS in sys.argv.
_RUN_THE_COMMAND = textwrap.dedent(
    """
    import sys
    from elmo_transformers.conversion.cli import main
    sys.argv = ["elmo-convert", *sys.argv[1:]]
    try:
        main()
    finally:
        heavy = sorted(name for name in ("torch", "transformers", "h5py", "numpy") if name in sys.modules)
        print("imported:", *heavy, file=sys.stderr)
    """
)


@pytest.mark.parametrize(
    ("arguments", "expected_code", "expected_text"),
    [
        (["--help"], 0, "sentence-transformers"),
        (["allennlp", "--help"], 0, "--variant {medium,original,original-5.5b,small}"),
        (["allennlp", "--variant", "tiny", "--weights", "w.hdf5", "--output", "o"], 2, "invalid choice: 'tiny'"),
        (["token-embeddings", "--model", "m"], 2, "the following arguments are required: --vocab, --output"),
    ],
    ids=["help", "subcommand-help", "bad-choice", "missing-argument"],
)
def test_parsing_the_arguments_imports_nothing_heavy(arguments, expected_code, expected_text) -> None:
    completed = subprocess.run(
        [sys.executable, "-c", _RUN_THE_COMMAND, *arguments], capture_output=True, text=True, timeout=60
    )
    assert completed.returncode == expected_code, completed.stderr
    assert expected_text in completed.stdout + completed.stderr
    assert completed.stderr.splitlines()[-1] == "imported:", completed.stderr


def test_a_ctrl_c_while_torch_is_imported_is_one_line(tmp_path) -> None:
    """A Ctrl-C in the first seconds of `elmo-convert onnx` (torch being imported) was a KeyboardInterrupt
    traceback; now the command's interruption line, exit status 130, nothing written."""
    output = tmp_path / "out"
    completed = run_with_ctrl_c_on_importing_torch(
        "elmo_transformers.conversion.cli", "onnx", "--model", "some-model", "--output", str(output)
    )
    assert (completed.returncode, completed.stderr) == (
        130,
        f"elmo-convert: interrupted: nothing was written: {output} is as it was; run the command again\n",
    )
    assert not any(tmp_path.iterdir())
