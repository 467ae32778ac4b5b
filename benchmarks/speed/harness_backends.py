"""The backends the speed benchmarks race: this package's `ElmoModel` (and the model that runs only the layers of
``mix_layers=[0, 1]``), the exported ONNX graphs on onnxruntime, and AllenNLP 0.9.0 (its worker protocol and its
ELMo modules, loaded from ``benchmarks/allennlp/`` by their path); and the model they all run: random weights of a
released shape, written once in the original layout, converted and exported once.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import torch
from harness_corpora import REPOSITORY

from elmo_transformers.common.errors import ConversionError
from elmo_transformers.conversion.variants import VARIANTS
from elmo_transformers.serving.graph_layout import QUANTIZED_GRAPH, open_graph
from modeling_elmo import DEFAULT_MODEL, ElmoConfig, ElmoModel, ElmoTokenizer

__all__ = [
    "ALLENNLP",
    "ALLENNLP_FOLDER",
    "DEFAULT_ALLENNLP_VENV",
    "MixedLayersModel",
    "add_onnx_arguments",
    "allennlp_stubs",
    "converted_model",
    "encode_batch",
    "ensure_weights",
    "exported_graphs",
    "graph_backends",
    "lstm_layers_run",
    "onnx_folders",
    "open_graphs",
    "with_mix_layers",
    "worker_protocol",
]

ALLENNLP_FOLDER = REPOSITORY / "benchmarks" / "allennlp"
ALLENNLP = "AllenNLP 0.9.0 `_ElmoBiLm`"
DEFAULT_ALLENNLP_VENV = os.environ.get("ELMO_BENCH_ALLENNLP_VENV", "/tmp/elmo-bench-allennlp-venv")


def module_from_file(path: Path) -> ModuleType:
    """The module of a Python file in another folder, imported by its path: a speed script's ``sys.path`` holds
    only its own folder."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# The AllenNLP side (standard library only: its workers import these in AllenNLP's venv, where this package is absent).
worker_protocol = module_from_file(ALLENNLP_FOLDER / "worker_protocol.py")
allennlp_stubs = module_from_file(ALLENNLP_FOLDER / "stubs.py")


# ----------------------------------------------------------------------------------------------------------------
# The model: random weights of a released shape, converted and exported once


def ensure_weights(work_dir: Path, seed: int, shape: str = "original") -> tuple[Path, Path]:
    """options.json + weights.hdf5 of a released shape (``elmo_transformers.conversion.variants.VARIANTS``, default the
    original model's) with random weights, written once per shape and seed."""
    options = VARIANTS[shape].options
    folder = work_dir / f"{shape}-seed{seed}"
    options_path, weights_path, done = folder / "options.json", folder / "weights.hdf5", folder / "complete"
    if done.is_file() and json.loads(options_path.read_text()) == options:
        return options_path, weights_path
    original_files = module_from_file(REPOSITORY / "tests" / "helpers" / "original_files.py")
    print(f"writing random weights of the {shape} shape to {folder} ...", flush=True)
    original_files.write_original_model(folder, options, seed=seed)
    done.write_text("")
    return options_path, weights_path


def converted_model(work_dir: Path, seed: int, shape: str = "original") -> Path:
    """The model folder of ``ensure_weights``' random weights, converted once with ``elmo-convert allennlp``."""
    from elmo_transformers.conversion.cli import main as convert

    options, weights = ensure_weights(work_dir, seed, shape)
    folder = options.parent / "converted"
    if not (folder / "config.json").is_file():
        assert convert(["allennlp", "--options", str(options), "--weights", str(weights), "--output", str(folder)]) == 0
    return folder


def exported_graphs(model: Path, folder: Path) -> Path:
    """``folder``: ``model`` exported once with ``elmo-convert onnx --quantize int8`` (the float32 and int8 graphs)."""
    from elmo_transformers.conversion.cli import main as convert

    if not (folder / QUANTIZED_GRAPH).is_file():
        arguments = ["onnx", "--model", str(model), "--output", str(folder), "--quantize", "int8", "--overwrite"]
        assert convert(arguments) == 0
    return folder


def add_onnx_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of the ONNX benchmarks: the model (a released shape's random weights, or the bundled model), the
    timed batches, the threads, the sentences' lengths, the work folder."""
    parser.add_argument("--shape", default="original", help="released shape of the random weights")
    parser.add_argument("--bundled", action="store_true", help="the bundled model instead of random weights")
    parser.add_argument("--batches", default="32:3", help="SIZE:COUNT,... batches timed (default %(default)s)")
    parser.add_argument("--threads", type=int, default=1, help="threads of each backend (default %(default)s)")
    parser.add_argument("--min-words", type=int, default=10)
    parser.add_argument("--max-words", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work-dir", type=Path, default=Path("/tmp/elmo-bench-onnx"))


def onnx_folders(args: argparse.Namespace) -> tuple[Path, Path]:
    """The PyTorch model folder (the bundled model, or the random-weight shape converted once with `elmo-convert
    allennlp`) and its ONNX folder (`elmo-convert onnx --quantize int8`, once)."""
    if args.bundled:
        model, name = Path(DEFAULT_MODEL), "bundled"
    else:
        model, name = converted_model(args.work_dir, args.seed, args.shape), f"{args.shape}-seed{args.seed}"
    return model, exported_graphs(model, args.work_dir / f"{name}-onnx")


# ----------------------------------------------------------------------------------------------------------------
# The backends


def graph_backends(model_folder: Path, graphs: dict[str, Any]) -> dict[str, Callable[[dict], object]]:
    """Each backend as a function of the tokenizer's batch: PyTorch's `ElmoModel` float32 of `model_folder` ("PyTorch
    float32"), then each onnxruntime session of `graphs` by its label (the graphs take the tokenizer's output as it
    is)."""
    model = ElmoModel.from_pretrained(model_folder).eval()

    def pytorch(inputs: dict[str, Any]) -> None:
        with torch.inference_mode():
            model(**{name: torch.from_numpy(array) for name, array in inputs.items()}, output_hidden_states=True)

    backends: dict[str, Callable[[dict], object]] = {"PyTorch float32": pytorch}
    for label, session in graphs.items():
        backends[label] = lambda inputs, session=session: session.run(["hidden_states"], inputs)
    return backends


def encode_batch(tokenizer: ElmoTokenizer, sentences: list[list[str]], return_tensors: str = "pt") -> dict[str, Any]:
    """The tokenizer's batch of words already split, padded to the longest sentence: the call elmo-embed makes."""
    return tokenizer(sentences, is_split_into_words=True, padding=True, return_tensors=return_tensors)


def open_graphs(folder: Path, files: dict[str, str], threads: int) -> dict[str, Any]:
    """An onnxruntime session of each graph file of `folder` (`files`: by label), `threads` threads each."""
    return {label: open_graph(folder / name, ConversionError, threads=threads) for label, name in files.items()}


class MixedLayersModel(ElmoModel):
    """``ElmoModel`` running only the biLSTM layers its config's mix reads (``config.mix_depth``), as the task heads
    run it: the ``mix_layers=[0, 1]`` rows. (``ElmoModel`` itself computes every layer, whatever the config.)"""

    def forward(self, *args, **kwargs):
        return super().forward(*args, num_layers=self.config.mix_depth, **kwargs)


def with_mix_layers(model: ElmoModel, mix_layers: list[int]) -> MixedLayersModel:
    """``model``'s weights in a ``MixedLayersModel`` whose config mixes ``mix_layers``."""
    mixed = MixedLayersModel(ElmoConfig.from_dict({**model.config.to_dict(), "mix_layers": mix_layers})).eval()
    mixed.load_state_dict(model.state_dict())
    return mixed


def lstm_layers_run(model: ElmoModel) -> int:
    """LSTM layers the model runs: all of them but in a ``MixedLayersModel``."""
    return model.config.mix_depth if isinstance(model, MixedLayersModel) else model.config.num_hidden_layers
