"""`elmo-convert onnx --triton-repository REPO`: the exported graphs as models of a Triton Inference Server model
repository, served by Triton's onnxruntime backend with dynamic batching, and raw text into them through an ensemble.

Each graph becomes a model folder, `REPO/<name>/config.pbtxt` and `REPO/<name>/1/model.onnx` (version 1; the
backend's default file name), the int8 graph a second model `<name>_int8`. The config declares the inputs and outputs
of `graph_signature`, the graph's one statement of them, in Triton's convention for `max_batch_size > 0`: the batch
dimension left out (every input and output is batch-first), -1 for each size a call chooses (the words).

Raw text: `<name>_text_encoder`, a python-backend model (`triton_text_model.py` as its `1/model.py`, beside the
front end `text_elmo.py` and the tokenizer files it reads: numpy only), turns each request's sentences (`text`,
TYPE_STRING, one per batch row) into the graph's inputs; the ensemble `<graph model>_text` (platform `ensemble`) runs
it, then the graph, and answers the graph's outputs.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from elmo_transformers.common.atomic_output import atomic_output_folder
from elmo_transformers.common.checksums import record_checksums
from elmo_transformers.common.errors import ConversionError
from elmo_transformers.common.output_lock import output_lock
from modeling_elmo import text_elmo

from .graph_layout import GraphSignature, GraphTensor, graph_weights

__all__ = [
    "INT8_SUFFIX",
    "MAX_BATCH_SIZE",
    "MAX_QUEUE_DELAY_MICROSECONDS",
    "TEXT_ENCODER_SUFFIX",
    "TEXT_INPUT",
    "TEXT_SUFFIX",
    "TRITON_GRAPH_FILE",
    "ensemble_config",
    "graph_model_names",
    "model_config",
    "quoted",
    "refuse_unusable_repository",
    "text_encoder_config",
    "triton_dims",
    "triton_model_folders",
    "triton_model_names",
    "write_triton_models",
]

# The sample config's batching (docs/onnx.md, "Serving with Triton", says why): batches of up to 32 sentences, which
# get most of the throughput that batching gives at the original shape while a batch of 128 makes every sentence wait
# for the longest of four times as many; no preferred sizes (none is markedly faster; Triton 2.51 fills in
# [max_batch_size]), so the batcher forms the largest batch the queue holds; a queue delay of 5 ms, under 2% of one
# 20-word sentence's time alone at the original shape, so that requests arriving together share a batch.
MAX_BATCH_SIZE = 32
MAX_QUEUE_DELAY_MICROSECONDS = 5000
INT8_SUFFIX = "_int8"  # the int8 graph's model: `<name>_int8`
TEXT_ENCODER_SUFFIX = "_text_encoder"  # the front end's model: `<name>_text_encoder`
TEXT_SUFFIX = "_text"  # the ensemble of each graph model: raw text in, `<graph model>_text`
TEXT_INPUT = "text"  # the raw sentences, one per batch row
# The file name of a graph in its model's version folder: the onnxruntime backend's default (`default_model_filename`
# unset), whatever the graph's name in the ONNX folder (model.onnx, model_quantized.onnx).
TRITON_GRAPH_FILE = "model.onnx"
_DATA_TYPES = {"int64": "TYPE_INT64", "float": "TYPE_FP32", "bool": "TYPE_BOOL"}  # ONNX's spelling -> Triton's
# What the front-end model's folder holds besides its model.py: the front end and the tokenizer files it reads.
_TEXT_MODEL = Path(__file__).with_name("triton_text_model.py")
_TOKENIZER_FILES = ("config.json", "tokenizer_config.json")


def graph_model_names(name: str, *, quantize: bool) -> list[str]:
    """The graph models of an export named `name`: the float32 graph's, then the int8 graph's."""
    return [name, *([name + INT8_SUFFIX] if quantize else [])]


def triton_model_names(name: str, *, quantize: bool) -> list[str]:
    """Every model of an export named `name` in the repository: the graph models, the front end's, then each graph
    model's ensemble."""
    graphs = graph_model_names(name, quantize=quantize)
    return [*graphs, name + TEXT_ENCODER_SUFFIX, *(graph + TEXT_SUFFIX for graph in graphs)]


def triton_dims(tensor: GraphTensor) -> list[int]:
    """Triton's `dims` of a batch-first graph tensor: its shape without the batch, -1 for each size a call
    chooses."""
    if tensor.shape[:1] != ("batch",):
        raise ValueError(f"{tensor.name} is not batch-first ({tensor}): Triton cannot batch it")
    return [size if isinstance(size, int) else -1 for size in tensor.shape[1:]]


def _tensor_list(kind: str, tensors: list[tuple[str, str, list[int]]]) -> str:
    """The `input [...]` or `output [...]` list of a model's config.pbtxt, of (name, Triton type, dims)."""
    entries = ",\n".join(
        f"  {{\n    name: {quoted(name)}\n    data_type: {data_type}\n    dims: [ {', '.join(map(str, dims))} ]\n  }}"
        for name, data_type, dims in tensors
    )
    return f"{kind} [\n{entries}\n]\n"


def _graph_tensors(tensors: tuple[GraphTensor, ...]) -> list[tuple[str, str, list[int]]]:
    return [(tensor.name, _DATA_TYPES[tensor.element], triton_dims(tensor)) for tensor in tensors]


def quoted(text: str) -> str:
    """`text` as a string of protobuf's text format, which Triton parses a config in: a quote, a backslash and
    each control character escaped (octal, which every parser reads; JSON's \\u escapes are not protobuf's), the
    rest as UTF-8. A model is named after the --output folder, whose name may hold any of them."""
    escaped = "".join(
        "\\" + char if char in '"\\' else f"\\{ord(char):03o}" if ord(char) < 0x20 or ord(char) == 0x7F else char
        for char in text
    )
    return f'"{escaped}"'


def _shown(name: str) -> str:
    """A name as a comment shows it: escaped as in a string (a line break in it would end the comment)."""
    return quoted(name)[1:-1]


def _header(name: str, what: str) -> str:
    """A config's first lines: what the model is, and its name."""
    return (
        f"# Triton model {_shown(name)}, written by elmo-convert onnx: {what}\n"
        f"# (elmo-transformers, docs/onnx.md: Serving with Triton).\n"
        f"name: {quoted(name)}\n"
    )


def model_config(name: str, signature: GraphSignature) -> str:
    """The `config.pbtxt` (Triton's `ModelConfig` in protobuf text format) of the model `name` serving a graph of
    `signature`."""
    return (
        _header(
            name,
            "the ELMo graph. Requests batch together only when their\n# inputs have the same shape: pad each"
            " request's sentences to a common number of words",
        )
        + 'backend: "onnxruntime"\n'
        'platform: "onnxruntime_onnx"\n'
        f"max_batch_size: {MAX_BATCH_SIZE}\n"
        + _tensor_list("input", _graph_tensors(signature.inputs))
        + _tensor_list("output", _graph_tensors(signature.outputs))
        + f"dynamic_batching {{\n  max_queue_delay_microseconds: {MAX_QUEUE_DELAY_MICROSECONDS}\n}}\n"
    )


def text_encoder_config(name: str, signature: GraphSignature) -> str:
    """The config of the front-end model `name`: `text` (one sentence per batch row) in, the inputs of a graph of
    `signature` out, each request encoded by itself (no batcher: a request is a batch, padded to its longest)."""
    return (
        _header(name, "raw sentences (UTF-8, one per batch row) -> the graph's inputs") + 'backend: "python"\n'
        f"max_batch_size: {MAX_BATCH_SIZE}\n"
        + _tensor_list("input", [(TEXT_INPUT, "TYPE_STRING", [1])])
        + _tensor_list("output", _graph_tensors(signature.inputs))
    )


def _step(model: str, inputs: list[str], outputs: list[str]) -> str:
    """One step of an ensemble: the model `model`, its `inputs` and `outputs` mapped to the ensemble's tensors of
    the same names."""
    maps = [f"      input_map {{ key: {quoted(name)} value: {quoted(name)} }}\n" for name in inputs]
    maps += [f"      output_map {{ key: {quoted(name)} value: {quoted(name)} }}\n" for name in outputs]
    return f"    {{\n      model_name: {quoted(model)}\n      model_version: -1\n{''.join(maps)}    }}"


def ensemble_config(name: str, encoder: str, graph: str, signature: GraphSignature) -> str:
    """The config of the ensemble `name`: raw sentences in, the front-end model `encoder`, then the graph model
    `graph` (of `signature`), whose outputs it answers."""
    inputs, outputs = ([tensor.name for tensor in tensors] for tensors in (signature.inputs, signature.outputs))
    steps = (_step(encoder, [TEXT_INPUT], inputs), _step(graph, inputs, outputs))
    return (
        _header(name, f"raw sentences (UTF-8, one per batch row) -> {_shown(encoder)} -> {_shown(graph)}")
        + 'platform: "ensemble"\n'
        f"max_batch_size: {MAX_BATCH_SIZE}\n"
        + _tensor_list("input", [(TEXT_INPUT, "TYPE_STRING", [1])])
        + _tensor_list("output", _graph_tensors(signature.outputs))
        + "ensemble_scheduling {\n  step [\n"
        + ",\n".join(steps)
        + "\n  ]\n}\n"
    )


def _overlaps(folder: Path, other: Path) -> bool:
    """Whether one of the two paths is the other or lies inside it (links resolved)."""
    folder, other = folder.resolve(), other.resolve()
    return folder == other or folder in other.parents or other in folder.parents


def refuse_unusable_repository(repository: str | Path, *, output: Path, model: Path) -> None:
    """Refuse, before anything is written, a repository that cannot hold the export's models: a file (or a path
    through one), or a folder overlapping the input `model` (its models would travel with the model folder, or be
    read as part of it) or the `--output` folder (one would be written into the other)."""
    repository = Path(repository)
    existing = next(path for path in (repository.absolute(), *repository.absolute().parents) if path.exists())
    if not existing.is_dir():
        raise ConversionError(
            f"--triton-repository {repository}: {existing} is a file, not a folder: name a folder for the model"
            " repository"
        )
    for flag, other in (("the input --model", model), ("--output", output)):
        if _overlaps(repository, other):
            raise ConversionError(
                f"--triton-repository {repository} overlaps {flag} {other} (one holds the other, or they are the"
                " same): name a repository apart from it"
            )


@contextmanager
def triton_model_folders(
    repository: str | Path | None, output: Path, *, quantize: bool, overwrite: bool, inputs: tuple[Path, ...]
) -> Iterator[dict[str, Path]]:
    """The staging folder of each model of the export to `output` in `repository` (by name; none without a
    repository), each published atomically as `REPO/<name>` when the block completes (`atomic_output_folder`: an
    existing model is refused unless `overwrite`, and kept as it was on any failure). The int8 models of an earlier
    export of the same name, which an export without int8 does not write, are refused too unless `overwrite`, and
    removed once the new models are published: Triton would serve the old int8 graph beside the new one."""
    if repository is None:
        yield {}
        return
    repository, names = Path(repository), triton_model_names(output.name, quantize=quantize)
    left = _left_by_an_earlier_export(repository, output.name, names)
    if left and not overwrite:
        raise ConversionError(
            f"{left[0]} is left by an earlier export with --quantize int8, and would go on serving beside the new"
            " models: pass --overwrite to remove it (or export with --quantize int8 again)"
        )
    with ExitStack() as stack:
        yield {
            name: stack.enter_context(atomic_output_folder(repository / name, overwrite=overwrite, inputs=inputs))
            for name in names
        }
    for folder in left:  # (once the new models are published)
        _remove_model(folder)


def _left_by_an_earlier_export(repository: Path, name: str, names: list[str]) -> list[Path]:
    """The models of an export named `name` in `repository` that this export does not write (`names`): an earlier
    export's int8 models, which Triton would go on serving beside the new ones (links are not followed)."""
    every = triton_model_names(name, quantize=True)
    return [repository / model for model in every if model not in names and (repository / model).is_dir()]


def _remove_model(folder: Path) -> None:
    """Remove the model folder `folder` under its lock: renamed first to a staging name (Triton never sees half a
    model, and a run killed meanwhile leaves what the next writer removes: `atomic_output`), then deleted."""
    with output_lock(folder, error=ConversionError):
        if folder.is_dir() and not folder.is_symlink():
            aside = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", suffix=".partial", dir=folder.parent))
            folder.replace(aside)
            shutil.rmtree(aside)


def _write_graph_model(folder: Path, name: str, graph: Path, signature: GraphSignature) -> None:
    """The model folder of the graph model `name`: `config.pbtxt` and version 1, a copy of `graph` (as the
    backend's default file name) and of its weights' file, under the name the graph refers to it by
    (`graph_weights`)."""
    (folder / "1").mkdir()
    shutil.copyfile(graph, folder / "1" / TRITON_GRAPH_FILE)
    weights = graph_weights(graph)
    if weights.is_file():
        shutil.copyfile(weights, folder / "1" / weights.name)
    (folder / "config.pbtxt").write_text(model_config(name, signature), encoding="utf-8")


def _write_text_encoder(folder: Path, name: str, onnx_folder: Path, signature: GraphSignature) -> None:
    """The model folder of the front-end model `name`: its config, and in version 1 `model.py`, the front end and
    the ONNX folder's tokenizer files that it reads."""
    version = folder / "1"
    version.mkdir()
    shutil.copyfile(_TEXT_MODEL, version / "model.py")
    shutil.copyfile(text_elmo.__file__, version / Path(text_elmo.__file__).name)
    for file in _TOKENIZER_FILES:
        shutil.copyfile(onnx_folder / file, version / file)
    (folder / "config.pbtxt").write_text(text_encoder_config(name, signature), encoding="utf-8")


def _write_ensemble(folder: Path, name: str, encoder: str, graph: str, signature: GraphSignature) -> None:
    """The model folder of the ensemble `name`: its config and an empty version 1 (an ensemble has no files)."""
    (folder / "1").mkdir()
    (folder / "config.pbtxt").write_text(ensemble_config(name, encoder, graph, signature), encoding="utf-8")


def write_triton_models(
    folders: dict[str, Path], name: str, onnx_folder: Path, graphs: dict[str, str], signature: GraphSignature
) -> None:
    """Fill the staging folder of each model of the export `name` (`triton_model_names` -> folder): each graph
    model of `graphs` (`graph_model_names` -> its graph file in `onnx_folder`, of `signature`), the front end's and
    each graph model's ensemble; each folder records its files' sha256 in SHA256SUMS (`sha256sum -c` reads it)."""
    encoder = name + TEXT_ENCODER_SUFFIX
    _write_text_encoder(folders[encoder], encoder, onnx_folder, signature)
    for model, graph in graphs.items():
        _write_graph_model(folders[model], model, onnx_folder / graph, signature)
        _write_ensemble(folders[model + TEXT_SUFFIX], model + TEXT_SUFFIX, encoder, model, signature)
    for folder in folders.values():
        record_checksums(folder)
