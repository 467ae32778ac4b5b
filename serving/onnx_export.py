"""`elmo-convert onnx`: a model folder -> a folder holding its ONNX graph, served by onnxruntime.

The folder is a Hub model folder in optimum's convention: `model.onnx` (and `model_quantized.onnx` with
`--quantize int8`), each with its weights beside it (`model.onnx_data`), the source's config.json and tokenizer files,
the tokenizer's code (it loads with `AutoTokenizer`; not the model's), and a model page saying how to feed the graph
without this package and what the export measured (`onnx_model_page.py`). The graph is written node by node
(`graph_builder.py`); `--quantize int8` quantises its large products, each row of activations by itself
(`int8_graph.py`); each graph is kept only once its measurements pass their bars (`export_measurements.py`); with
--triton-repository, the Triton models follow (`triton_repository.py`).
"""

from __future__ import annotations

import errno
import importlib.metadata
import inspect
import json
import os
import shutil
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from transformers.utils import CONFIG_NAME

from elmo_transformers.common.atomic_output import atomic_output_folder
from elmo_transformers.common.checksums import CHECKSUMS_FILE, record_checksums
from elmo_transformers.common.disk_space import is_disk_full, require_room
from elmo_transformers.common.errors import ConversionError, first_line
from elmo_transformers.common.extras import require_extra
from elmo_transformers.common.model_folder import require_model_folder
from elmo_transformers.common.parity_sentences import PARITY_SENTENCES
from elmo_transformers.common.run_folder import TRAINING_RECORDS
from elmo_transformers.conversion.convert_options import OnnxOptions
from modeling_elmo import ElmoConfig, ElmoForSequenceClassification, ElmoForTokenClassification, ElmoModel
from modeling_elmo.tokenization_elmo import ElmoTokenizer

# The export's stages are called through their modules, so that a test replaces a stage where it is defined (a
# Ctrl-C in it, a measurement that misses its bar) and not in this module's names.
from . import export_measurements, onnx_model_page
from .export_measurements import OnnxExport, measurement_problem
from .graph_layout import (
    ARCHITECTURE_KEY,
    CONFORMANCE_FILE,
    FLOAT_GRAPH,
    LAYOUT_KEY,
    LAYOUT_VERSION,
    QUANTIZED_GRAPH,
    GraphSignature,
    exported_architecture,
    graph_bytes,
    graph_signature,
    open_graph,
    save_graph,
)
from .triton_repository import (
    graph_model_names,
    refuse_unusable_repository,
    triton_model_folders,
    triton_model_names,
    write_triton_models,
)

if TYPE_CHECKING:
    from onnxruntime import InferenceSession  # the [onnx] extra, imported when an export runs

__all__ = ["export_onnx", "run"]

_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".onnx", ".h5", ".pt")
# The class of each architecture `exported_architecture` names.
_EXPORTED_CLASSES = {
    model.__name__: model for model in (ElmoModel, ElmoForTokenClassification, ElmoForSequenceClassification)
}


def export_onnx(
    model_dir: str | Path,
    output: str | Path,
    *,
    quantize: str | None = None,
    triton_repository: str | Path | None = None,
    overwrite: bool = False,
    space_check: bool = True,
) -> OnnxExport:
    """Write `output`, the ONNX folder of the model folder `model_dir` (an `ElmoModel`, or a token or sequence
    classification head); `quantize="int8"` adds the 8-bit graph, `triton_repository` a Triton model of each graph
    in that repository (`triton_repository.triton_model_names`)."""
    require_extra("onnx", "elmo-convert onnx", ConversionError)
    from .graph_builder import build_graph, graph_config

    model_dir, output = Path(model_dir), Path(output)
    if triton_repository is not None:
        refuse_unusable_repository(triton_repository, output=output, model=model_dir)
    model = _load(model_dir)
    architecture = type(model).__name__
    metadata = {
        LAYOUT_KEY: LAYOUT_VERSION,
        ARCHITECTURE_KEY: architecture,
        "elmo_transformers_version": importlib.metadata.version("elmo-transformers"),
    }
    try:
        graph = build_graph(model, metadata)
    except ValueError as error:
        raise ConversionError(f"{model_dir}: {error}") from None
    # The Triton models' folders outside the ONNX folder's: a full disk while the ONNX folder is written is told by
    # the innermost, naming --output (the Triton models' writer names the repository itself).
    with ExitStack() as outputs:
        triton_folders = outputs.enter_context(
            triton_model_folders(
                triton_repository, output, quantize=bool(quantize), overwrite=overwrite, inputs=(model_dir,)
            )
        )
        folder = outputs.enter_context(atomic_output_folder(output, overwrite=overwrite, inputs=(model_dir,)))
        require_room(
            output,
            _peak_bytes(graph, model_dir, quantize=bool(quantize)),
            "the ONNX graph" + (" and its int8 copy" if quantize else ""),
            space_check=space_check,
        )
        _copy_model_files(model_dir, folder, architecture)
        save_graph(graph, folder / FLOAT_GRAPH)
        result = _write_and_measure_int8(model, folder, output) if quantize else _measure(model, folder)[0]
        problem = measurement_problem(result)
        if problem:
            raise ConversionError(f"{output}: {problem}")
        graphs = [FLOAT_GRAPH, *([QUANTIZED_GRAPH] if quantize else [])]
        onnx_model_page.write_model_page(folder, model_dir, model, result, output.name)
        record_checksums(folder)
        signature = graph_signature(graph_config(model))
        _write_triton_models(triton_folders, triton_repository, output.name, folder, graphs, signature, space_check)
    return result


def _measure(model: torch.nn.Module, folder: Path) -> tuple[OnnxExport, InferenceSession, ElmoTokenizer]:
    """The float32 graph in `folder`, measured against `model` (its parity), with its session and tokenizer."""
    session = open_graph(folder / FLOAT_GRAPH, ConversionError)
    tokenizer = ElmoTokenizer.from_pretrained(folder)
    parity, magnitude = export_measurements.pytorch_parity(model, session, tokenizer)
    result = OnnxExport(type(model).__name__, parity, graph_bytes(folder / FLOAT_GRAPH), magnitude)
    return result, session, tokenizer


def _write_and_measure_int8(model: torch.nn.Module, folder: Path, output: Path) -> OnnxExport:
    """`_measure`, then the int8 graph written beside the float32 one, its per-word cosine to it (the biLM's) and
    its batch difference."""
    result, session, tokenizer = _measure(model, folder)
    _quantize_in_one_line(folder, output)
    quantized = open_graph(folder / QUANTIZED_GRAPH, ConversionError)
    cosine = (
        export_measurements.graph_cosine(session, quantized, tokenizer, PARITY_SENTENCES)
        if result.architecture == "ElmoModel"
        else None
    )
    return replace(
        result,
        quantized_bytes=graph_bytes(folder / QUANTIZED_GRAPH),
        cosine=cosine,
        batch_difference=export_measurements.batch_difference(quantized, tokenizer, PARITY_SENTENCES),
    )


def _write_triton_models(
    triton_folders: dict[str, Path],
    repository: str | Path | None,
    name: str,
    folder: Path,
    graphs: list[str],
    signature: GraphSignature,
    space_check: bool,
) -> None:
    """The Triton models of the export `name` (`triton_repository.write_triton_models`) into `triton_folders` (name
    -> staging folder), the graph models' copies of the ONNX folder's float32 graph and, where `graphs` holds it,
    its int8 graph, once the disk is known to hold the copies; a full disk meanwhile names the `repository`."""
    if not triton_folders:
        return
    models = graph_model_names(name, quantize=QUANTIZED_GRAPH in graphs)
    graph_files = dict(zip(models, (FLOAT_GRAPH, QUANTIZED_GRAPH), strict=False))
    require_room(
        next(iter(triton_folders.values())),
        sum(graph_bytes(folder / graph) for graph in graph_files.values()),
        "the Triton models' copies of the graphs",
        space_check=space_check,
    )
    try:
        write_triton_models(triton_folders, name, folder, graph_files, signature)
    except OSError as error:
        if not is_disk_full(error):
            raise
        raise ConversionError(
            f"--triton-repository {repository}: the disk is full: nothing was written; free some space or write the"
            " repository elsewhere"
        ) from error


def _load(model_dir: Path) -> torch.nn.Module:
    """The float32 model of a folder, as its architecture names it (a head, or the biLM)."""
    require_model_folder(model_dir, ConversionError)
    if not any(model_dir.glob("*.safetensors")):
        raise ConversionError(f"{model_dir}: no model.safetensors (export from the model folder elmo-convert wrote)")
    model_class = _EXPORTED_CLASSES[exported_architecture(ElmoConfig.from_pretrained(model_dir).architectures)]
    return model_class.from_pretrained(model_dir, dtype=torch.float32).eval()


def _model_files(model_dir: Path) -> list[Path]:
    """The source's files that the ONNX folder copies: its config, tokenizer files and SOURCES.md (the biLM's
    training corpus, when it has one); not its weights, its code (the folder holds the front end's instead:
    `_front_end_files`), its model page, its SHA256SUMS (the folder records its own) nor the records of the
    pretraining run that made it (`TRAINING_RECORDS`: its language model's perplexity and the run's arguments, which
    say nothing of a graph without the softmax)."""
    left_out = ("README.md", CHECKSUMS_FILE, *TRAINING_RECORDS)
    return [
        path
        for path in sorted(model_dir.iterdir())
        if path.is_file() and path.suffix not in (*_WEIGHT_SUFFIXES, ".py") and path.name not in left_out
    ]


def _front_end_files() -> list[Path]:
    """The code an ONNX folder holds: this package's tokenizer module and the modules it imports relatively (found as
    transformers' remote code finds them), which `AutoTokenizer.from_pretrained(folder, trust_remote_code=True)`
    loads, the numpy text front end (text_elmo.py) among them; not the model's code (modeling_elmo.py, lstm_elmo.py,
    ...), which serves no graph. And the front end's conformance file, for a client written in another language."""
    from transformers.dynamic_module_utils import get_relative_import_files

    tokenizer = Path(inspect.getfile(ElmoTokenizer))
    conformance = tokenizer.with_name(CONFORMANCE_FILE)
    return [tokenizer, *sorted(map(Path, get_relative_import_files(str(tokenizer)))), conformance]


def _copy_model_files(model_dir: Path, folder: Path, architecture: str) -> None:
    """Copy `_model_files` and `_front_end_files`; the config's `architectures` becomes the exported one, what the
    folder holds (the source's may be the language model, whose softmax is not in the graph)."""
    for path in [*_model_files(model_dir), *_front_end_files()]:
        shutil.copyfile(path, folder / path.name)
    config = json.loads((folder / CONFIG_NAME).read_text(encoding="utf-8"))
    config["architectures"] = [architecture]
    (folder / CONFIG_NAME).write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def _peak_bytes(graph, model_dir: Path, *, quantize: bool) -> int:
    """The most the folder holds while it is written: the float graph and the copied files, and with `quantize`
    the int8 graph, counted as half the float graph (its products' weights take a quarter of their float bytes:
    0.25 times the graph at the original shape, 0.27 for the bundled model; the rewrite is done in memory)."""
    copies = sum(path.stat().st_size for path in [*_model_files(model_dir), *_front_end_files()])
    return graph.ByteSize() + (graph.ByteSize() // 2 if quantize else 0) + copies


def _quantize_in_one_line(folder: Path, output: Path) -> None:
    """`int8_graph.quantize_graph` of the folder's float graph, each failure in one line: a full disk as
    `atomic_output_folder` tells it, anything else naming `output`. (The quantiser writes its copy of the graph
    unchecked: on a full disk the copy is cut short, and reading it back fails with protobuf's DecodeError, not an
    OSError.)"""
    from . import int8_graph  # (onnx: the [onnx] extra, checked when the export starts)

    source = folder / FLOAT_GRAPH
    try:
        int8_graph.quantize_graph(source, folder / QUANTIZED_GRAPH)
    except Exception as failure:  # onnx's, protobuf's and onnxruntime's own types
        if is_disk_full(failure) or shutil.disk_usage(folder).free < graph_bytes(source):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)) from failure
        raise ConversionError(
            f"{output}: onnxruntime's quantiser failed ({first_line(failure)}): nothing was written; export without"
            " --quantize"
        ) from None


def run(options: OnnxOptions) -> str:
    result = export_onnx(
        options.model,
        options.output,
        quantize=options.quantize,
        triton_repository=options.triton_repository,
        overwrite=options.overwrite,
        space_check=options.space_check,
    )
    line = (
        f"Wrote {options.output}: {result.architecture} as ONNX ({FLOAT_GRAPH}, {result.graph_bytes / 1e6:.1f} MB;"
        f" max |onnxruntime - PyTorch| {result.parity:.2e})"
    )
    if result.quantized_bytes is not None:
        line += f", {QUANTIZED_GRAPH} ({result.quantized_bytes / 1e6:.1f} MB"
        if result.cosine is not None:
            line += f"; per-word cosine to float32 mean {result.cosine[0]:.4f}, min {result.cosine[1]:.4f}"
        line += f"; alone vs in a batch {result.batch_difference:.1e})"
    if options.triton_repository:
        names = triton_model_names(Path(options.output).name, quantize=bool(options.quantize))
        line += f"; Triton model{'s' if len(names) > 1 else ''} {', '.join(names)} in {options.triton_repository}"
    return line
