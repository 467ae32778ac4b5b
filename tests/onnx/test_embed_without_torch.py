"""`elmo-embed --model GRAPH_FOLDER` runs without torch, transformers and accelerate: they cost seconds of imports
for a fraction of a second of embedding (issue 41). The command runs in a Python of its own, which then lists the
modules it imported; its vectors are those of the PyTorch run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest
import torch

pytest.importorskip("onnxruntime")
from without_the_package import PROJECT_PACKAGES, run_without_the_package

from elmo_transformers.inference.embed import main as embed
from modeling_elmo import DEFAULT_MODEL, ElmoModel, ElmoTokenizer

# Runs elmo-embed's main with sys.argv[1:] (--help ends it with SystemExit), then prints the top-level names of the
# modules it imported.
_LAUNCHER = """
import json, sys
from elmo_transformers.inference.embed import main

try:
    code = main(sys.argv[1:])
except SystemExit as exit:
    code = exit.code
print(json.dumps(sorted({name.split(".")[0] for name in sys.modules})))
sys.exit(code)
"""
# What a run on a graph must not import.
_LEFT_OUT = {"torch", "transformers", "accelerate", "safetensors"}
# Awkward lines: an empty one, unicode (a decomposed é, an emoji), a word over 48 bytes, an apostrophe to split.
LINES = ["The cat's mat .", "", "Cafe\u0301 ☃ 😀 , ça va ?", "x" * 60 + " is long", "a"]


def _imported(arguments: list[str]) -> set[str]:
    """The top-level modules a run of elmo-embed with `arguments`, in a Python of its own, imported; it must succeed."""
    completed = subprocess.run(
        [sys.executable, "-c", _LAUNCHER, *arguments], capture_output=True, text=True, timeout=300
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    return set(json.loads(completed.stdout.splitlines()[-1]))


def _vectors(path: Path) -> dict[str, np.ndarray]:
    with h5py.File(path, "r") as file:
        return {key: file[key][()] for key in file if key.isdigit()}


@pytest.mark.parametrize("extra", [[], ["--tokenize", "--layers", "top"]])
def test_embed_on_a_graph_imports_neither_torch_nor_transformers_nor_accelerate(
    default_folder: Path, tmp_path: Path, extra: list[str]
) -> None:
    source = tmp_path / "in.txt"
    source.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    imported = _imported([str(source), str(tmp_path / "graph.hdf5"), "--model", str(default_folder), *extra])
    assert not imported & _LEFT_OUT, sorted(imported & _LEFT_OUT)
    assert {"onnxruntime", "h5py", "numpy"} <= imported
    assert embed([str(source), str(tmp_path / "torch.hdf5"), "--model", str(DEFAULT_MODEL), *extra]) == 0
    graph, pytorch = _vectors(tmp_path / "graph.hdf5"), _vectors(tmp_path / "torch.hdf5")
    assert graph.keys() == pytorch.keys() == {str(line) for line in range(len(LINES))}
    for key, expected in pytorch.items():
        assert graph[key].shape == expected.shape
        assert np.abs(graph[key] - expected).max(initial=0.0) <= 1e-5, key
    if extra:
        with h5py.File(tmp_path / "graph.hdf5", "r") as ours, h5py.File(tmp_path / "torch.hdf5", "r") as theirs:
            for key in pytorch:
                assert ours[key].attrs["words"] == theirs[key].attrs["words"], key


@pytest.mark.slow
def test_workers_on_a_graph_import_neither_torch_nor_accelerate(default_folder: Path, tmp_path: Path) -> None:
    """elmo-embed's workers on a graph meet in a group of their own (`common.socket_group`), not torch's: the
    command and each worker (which run the same launcher, each printing its modules) import none of them, and the
    file is that of one process."""
    source = tmp_path / "in.txt"
    source.write_text("\n".join(LINES * 8) + "\n", encoding="utf-8")
    arguments = [str(source), str(tmp_path / "two.hdf5"), "--model", str(default_folder), "--batch-size", "4"]
    completed = subprocess.run(
        [sys.executable, "-c", _LAUNCHER, *arguments, "--workers", "2"], capture_output=True, text=True, timeout=300
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    printed = [set(json.loads(line)) for line in completed.stdout.splitlines() if line.startswith("[")]
    assert len(printed) == 3, completed.stdout  # (the command and its 2 workers)
    for imported in printed:
        assert not imported & _LEFT_OUT, sorted(imported & _LEFT_OUT)
    assert embed([*arguments[:1], str(tmp_path / "one.hdf5"), *arguments[2:], "--workers", "1"]) == 0
    one, two = _vectors(tmp_path / "one.hdf5"), _vectors(tmp_path / "two.hdf5")
    assert one.keys() == two.keys() and all(np.array_equal(one[key], two[key]) for key in one)


def test_help_imports_neither_torch_nor_transformers_nor_accelerate() -> None:
    """--help is read at once: it imports none of what a run may need."""
    imported = _imported(["--help"])
    assert not imported & {*_LEFT_OUT, "onnxruntime", "h5py", "modeling_elmo"}, sorted(imported)


# A client with numpy and onnxruntime alone: the folder's own text front end (text_elmo.py, loaded by its path)
# turns raw lines into the graph's input; saves the ids, the mask and the float32 graph's vectors.
_NUMPY_CLIENT = """
    import importlib.util
    import sys

    import numpy as np
    import onnxruntime

    folder, lines = sys.argv[1], sys.argv[2].split("\\n")
    for name in ("modeling_elmo", "transformers", "torch"):
        assert importlib.util.find_spec(name) is None, name
    spec = importlib.util.spec_from_file_location("text_elmo", f"{folder}/text_elmo.py")
    text_elmo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(text_elmo)
    inputs = text_elmo.ElmoTextEncoder.from_folder(folder).encode_text(lines)
    session = onnxruntime.InferenceSession(f"{folder}/model.onnx")
    (vectors,) = session.run(["hidden_states"], dict(inputs))
    np.savez("client.npz", vectors=vectors, **inputs)
    imported = {name.split(".")[0] for name, module in sys.modules.items() if module is not None}
    assert not {"torch", "transformers"} & imported  # (refused names are None there)
"""
RAW_LINES = ["The cat's mat, isn't it?", "", "Cafe\u0301 ☃ 😀 — «ça va» ?", "x" * 60 + " is long", "a\u200bb c"]


@pytest.mark.slow
def test_a_client_with_numpy_and_onnxruntime_alone_encodes_raw_text_with_the_folders_front_end(
    default_folder: Path, tmp_path: Path
) -> None:
    """An ONNX folder's tokenizer needed transformers and torch: a Python client of the graph could not turn raw
    text into ids. Now the folder's text_elmo.py does, with numpy alone, in a Python where this package,
    transformers and torch cannot be imported; the ids are the tokenizer's, and the vectors PyTorch's."""
    refused = (*PROJECT_PACKAGES, "transformers", "torch")
    completed = run_without_the_package(
        _NUMPY_CLIENT, str(default_folder), "\n".join(RAW_LINES), work=tmp_path, refuse=refused
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    client = np.load(tmp_path / "client.npz")
    expected = ElmoTokenizer.from_pretrained(DEFAULT_MODEL)(RAW_LINES, padding=True, return_tensors="pt")
    assert np.array_equal(client["input_ids"], expected["input_ids"].numpy())
    assert np.array_equal(client["attention_mask"], expected["attention_mask"].numpy())
    with torch.no_grad():
        layers = ElmoModel.from_pretrained(DEFAULT_MODEL).eval()(**expected, output_hidden_states=True).hidden_states
    assert np.abs(client["vectors"] - torch.stack(layers, dim=1).numpy()).max() <= 1e-5


@pytest.mark.slow
def test_processes_of_accelerate_launch_share_a_graphs_lines_as_one_process_embeds_them(
    default_folder: Path, tmp_path: Path
) -> None:
    """A run of one process on a graph leaves accelerate out; under `accelerate launch` (2 CPU processes, gloo) the
    processes still share the lines, and the file is that of one process, bit for bit."""
    from embed_launch import AWKWARD_LINES, embed_in_one_process, launch_embed

    source = tmp_path / "in.txt"
    source.write_text("\n".join(AWKWARD_LINES) + "\n", encoding="utf-8")
    arguments = ["--model", str(default_folder), "--batch-size", "2", "--max-words", "8"]
    launched = launch_embed(source, tmp_path / "two.hdf5", *arguments)
    assert launched.returncode == 0, launched.stderr[-3000:]
    embed_in_one_process(source, tmp_path / "one.hdf5", *arguments)
    two, one = _vectors(tmp_path / "two.hdf5"), _vectors(tmp_path / "one.hdf5")
    assert two.keys() == one.keys() == {str(line) for line in range(len(AWKWARD_LINES))}
    assert all(np.array_equal(two[key], one[key]) for key in one)
