"""`elmo-convert onnx`: a model folder -> a folder holding its ONNX graph, served by onnxruntime.

The folder is a Hub model folder in optimum's convention: `model.onnx` (and `model_quantized.onnx` with
`--quantize int8`), each with its weights beside it (`model.onnx_data`), the source's config.json and tokenizer files,
the tokenizer's code (it loads with `AutoTokenizer`; not the model's), and a model page saying how to feed the graph
without this package and what the export measured. The graph is written node by node (`graph_builder.py`);
`--quantize int8` quantises its large products, each row of activations by itself (`int8_graph.py`).
"""

from __future__ import annotations

import errno
import importlib.metadata
import inspect
import json
import os
import shutil
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch
from huggingface_hub import ModelCard
from transformers.utils import CONFIG_NAME

from elmo_transformers.common.atomic_output import atomic_output_folder
from elmo_transformers.common.checksums import CHECKSUMS_FILE, record_checksums
from elmo_transformers.common.disk_space import is_disk_full
from elmo_transformers.common.errors import ConversionError, first_line
from elmo_transformers.common.extras import require_extra
from elmo_transformers.common.model_folder import require_model_folder
from elmo_transformers.common.run_folder import TRAINING_RECORDS
from elmo_transformers.conversion.convert_options import OnnxOptions
from elmo_transformers.conversion.converted_model_card import PARITY_SENTENCES
from elmo_transformers.conversion.saving import require_room
from modeling_elmo import ElmoConfig, ElmoForSequenceClassification, ElmoForTokenClassification, ElmoModel
from modeling_elmo.text_elmo import SPLIT_RULE
from modeling_elmo.tokenization_elmo import ElmoTokenizer

from .graph_layout import (
    ARCHITECTURE_KEY,
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

__all__ = [
    "FLOAT_PARITY_BAR",
    "INT8_BATCH_BAR",
    "INT8_COSINE_BAR",
    "OnnxExport",
    "batch_difference",
    "export_onnx",
    "graph_cosine",
    "measurement_problem",
    "per_word_cosine",
    "product_node_names",
    "quantize_graph",
    "run",
]

_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".onnx", ".h5", ".pt")
# What the export requires of a graph before it keeps it (`measurement_problem`): the float32 graph within this of
# PyTorch float32 on `PARITY_SENTENCES` (every biLM layer, or a head's logits), times the largest |value| PyTorch
# gives where that exceeds 1 (float32's rounding grows with the values: an absolute bar refused a model whose values
# reach 4e5 at 2.2e-1, a few float32 steps), the int8 graph's mean per-word
# cosine to the float32 graph at least this (`graph_cosine`), and the int8 graph's outputs for each of those
# sentences the same alone and in their batch within this (`batch_difference`).
FLOAT_PARITY_BAR = 1e-5
INT8_COSINE_BAR = 0.99
INT8_BATCH_BAR = 1e-4
# The text front end's conformance file (raw lines, their words, ids and mask), beside it in the package.
_CONFORMANCE_FILE = "text_elmo_conformance.json"
# The class of each architecture `exported_architecture` names.
_EXPORTED_CLASSES = {
    model.__name__: model for model in (ElmoModel, ElmoForTokenClassification, ElmoForSequenceClassification)
}
# The Hub pipeline tag of each exported architecture: what the graph computes.
_PIPELINE_TAGS = {
    "ElmoModel": "feature-extraction",
    "ElmoForTokenClassification": "token-classification",
    "ElmoForSequenceClassification": "text-classification",
}


@dataclass(frozen=True)
class OnnxExport:
    """What an export wrote and measured: the largest difference to PyTorch float32 on `PARITY_SENTENCES` (and the
    largest |value| PyTorch gave there, `magnitude`), and with int8 the per-word cosine (mean, min) of the biLSTM
    layers to the float32 graph (of the biLM) and the largest difference between a sentence's outputs alone and in a
    batch (`batch_difference`)."""

    architecture: str
    parity: float
    graph_bytes: int
    magnitude: float = 1.0
    quantized_bytes: int | None = None
    cosine: tuple[float, float] | None = None
    batch_difference: float | None = None


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
        _write_model_page(folder, model_dir, model, result, output.name)
        record_checksums(folder)
        signature = graph_signature(graph_config(model))
        _write_triton_models(triton_folders, triton_repository, output.name, folder, graphs, signature, space_check)
    return result


def _measure(model: torch.nn.Module, folder: Path) -> tuple[OnnxExport, InferenceSession, ElmoTokenizer]:
    """The float32 graph in `folder`, measured against `model` (its parity), with its session and tokenizer."""
    session = open_graph(folder / FLOAT_GRAPH, ConversionError)
    tokenizer = ElmoTokenizer.from_pretrained(folder)
    parity, magnitude = _parity(model, session, tokenizer)
    result = OnnxExport(type(model).__name__, parity, graph_bytes(folder / FLOAT_GRAPH), magnitude)
    return result, session, tokenizer


def _write_and_measure_int8(model: torch.nn.Module, folder: Path, output: Path) -> OnnxExport:
    """`_measure`, then the int8 graph written beside the float32 one, its per-word cosine to it (the biLM's) and
    its batch difference."""
    result, session, tokenizer = _measure(model, folder)
    _quantize_in_one_line(folder, output)
    quantized = open_graph(folder / QUANTIZED_GRAPH, ConversionError)
    cosine = (
        graph_cosine(session, quantized, tokenizer, PARITY_SENTENCES) if result.architecture == "ElmoModel" else None
    )
    return replace(
        result,
        quantized_bytes=graph_bytes(folder / QUANTIZED_GRAPH),
        cosine=cosine,
        batch_difference=batch_difference(quantized, tokenizer, PARITY_SENTENCES),
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
    conformance = tokenizer.with_name(_CONFORMANCE_FILE)
    return [tokenizer, *sorted(map(Path, get_relative_import_files(str(tokenizer)))), conformance]


def _copy_model_files(model_dir: Path, folder: Path, architecture: str) -> None:
    """Copy `_model_files` and `_front_end_files`; the config's `architectures` becomes the exported one, what the
    folder holds (the source's may be the language model, whose softmax is not in the graph)."""
    for path in [*_model_files(model_dir), *_front_end_files()]:
        shutil.copyfile(path, folder / path.name)
    config = json.loads((folder / CONFIG_NAME).read_text(encoding="utf-8"))
    config["architectures"] = [architecture]
    (folder / CONFIG_NAME).write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def measurement_problem(result: OnnxExport) -> str | None:
    """The line refusing an export whose measurements miss their bars (`FLOAT_PARITY_BAR`, `INT8_COSINE_BAR`,
    `INT8_BATCH_BAR`), and the way on; None when they pass. A NaN measurement misses."""
    bar = FLOAT_PARITY_BAR * max(1.0, result.magnitude)
    if not result.parity <= bar:
        shown = f"{FLOAT_PARITY_BAR:.0e}"
        if result.magnitude > 1:
            shown = f"{bar:.2e} ({shown} x the largest |value|, {result.magnitude:.2e})"
        return (
            f"the float32 graph differs from PyTorch float32 by {result.parity:.2e} on the parity sentences, above"
            f" the bar of {shown}: nothing was written; the graph does not compute this model, report it with the"
            " model folder"
        )
    if result.cosine is not None and not result.cosine[0] >= INT8_COSINE_BAR:
        return (
            f"the int8 graph's mean per-word cosine to float32 is {result.cosine[0]:.4f}, below the bar of"
            f" {INT8_COSINE_BAR}: nothing was written; export without --quantize"
        )
    if result.batch_difference is not None and not result.batch_difference <= INT8_BATCH_BAR:
        return (
            f"the int8 graph's outputs for a sentence alone and in a batch differ by {result.batch_difference:.2e} on"
            f" the parity sentences, above the bar of {INT8_BATCH_BAR:.0e}: nothing was written; export without"
            " --quantize"
        )
    return None


def _peak_bytes(graph, model_dir: Path, *, quantize: bool) -> int:
    """The most the folder holds while it is written: the float graph and the copied files, and with `quantize`
    the int8 graph, counted as half the float graph (its products' weights take a quarter of their float bytes:
    0.25 times the graph at the original shape, 0.27 for the bundled model; the rewrite is done in memory)."""
    copies = sum(path.stat().st_size for path in [*_model_files(model_dir), *_front_end_files()])
    return graph.ByteSize() + (graph.ByteSize() // 2 if quantize else 0) + copies


def _quantize_in_one_line(folder: Path, output: Path) -> None:
    """`quantize_graph` of the folder's float graph, each failure in one line: a full disk as `atomic_output_folder`
    tells it, anything else naming `output`. (The quantiser writes its copy of the graph unchecked: on a full disk
    the copy is cut short, and reading it back fails with protobuf's DecodeError, not an OSError.)"""
    source = folder / FLOAT_GRAPH
    try:
        quantize_graph(source, folder / QUANTIZED_GRAPH)
    except Exception as failure:  # onnx's, protobuf's and onnxruntime's own types
        if is_disk_full(failure) or shutil.disk_usage(folder).free < graph_bytes(source):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)) from failure
        raise ConversionError(
            f"{output}: onnxruntime's quantiser failed ({first_line(failure)}): nothing was written; export without"
            " --quantize"
        ) from None


def product_node_names(graph) -> list[str]:
    """The names of the product nodes `--quantize int8` quantises (`graph_builder.QUANTIZABLE_PREFIX`: the LSTM's input,
    state and output projections, the highway layers and the token projection), in the graph and its loops."""
    from .graph_builder import QUANTIZABLE_PREFIX

    names, graphs = [], [graph.graph]
    while graphs:
        current = graphs.pop()
        for node in current.node:
            if node.name.startswith(QUANTIZABLE_PREFIX):
                names.append(node.name)
            graphs.extend(attribute.g for attribute in node.attribute if attribute.HasField("g"))
    return names


def quantize_graph(source: Path, target: Path) -> None:
    """The int8 graph of the float graph at `source`, written to `target`: its large products (`product_node_names`)
    with 8-bit weights and activations, each row of activations quantised by itself (`int8_graph.quantize_rows`), so
    that a sentence gets the same vectors alone and in any batch; every other operator stays float32."""
    import onnx

    from .int8_graph import quantize_rows

    graph = onnx.load(str(source))  # (its weights too, from beside it: onnx before 1.15 finds them from a str only)
    quantize_rows(graph, product_node_names(graph))
    save_graph(graph, target)


def graph_cosine(float_graph, quantized_graph, tokenizer: ElmoTokenizer, sentences) -> tuple[float, float]:
    """Per-word cosine between two biLM graphs' biLSTM layers (each word's vector of each layer): (mean, min)."""
    inputs = dict(tokenizer(sentences, is_split_into_words=True, padding=True, return_tensors="np"))
    reference, mask = float_graph.run(["hidden_states", "word_mask"], inputs)
    (other,) = quantized_graph.run(["hidden_states"], inputs)
    cosine = per_word_cosine(other, reference, mask)
    return float(cosine.mean()), float(cosine.min())


def batch_difference(session, tokenizer: ElmoTokenizer, sentences) -> float:
    """The largest difference between a graph's outputs for each of `sentences` alone and in one batch of them all:
    every output, at the sentence's own row and words (its outputs are batch-first, padded to the longest)."""

    def run(batch) -> list[np.ndarray]:
        return session.run(None, dict(tokenizer(batch, is_split_into_words=True, padding=True, return_tensors="np")))

    together, worst = run(sentences), 0.0
    for row, sentence in enumerate(sentences):
        for batched, alone in zip(together, run([sentence]), strict=True):
            mine = batched[row : row + 1][tuple(slice(0, size) for size in alone.shape)]
            worst = max(worst, float(np.abs(mine.astype(np.float32) - alone.astype(np.float32)).max(initial=0.0)))
    return worst


def per_word_cosine(layers: np.ndarray, reference: np.ndarray, word_mask: np.ndarray) -> np.ndarray:
    """The cosine of each word's vector in each biLSTM layer, (words, L), between two `hidden_states` outputs
    (batch, L+1, words, 2P) at the words of `word_mask` (batch, words)."""
    layers, reference = (array.transpose(0, 2, 1, 3)[word_mask][:, 1:] for array in (layers, reference))
    products = (layers * reference).sum(-1)
    norms = np.linalg.norm(layers, axis=-1) * np.linalg.norm(reference, axis=-1)
    return products / np.maximum(norms, np.finfo(np.float32).tiny)


def _parity(model: torch.nn.Module, session, tokenizer: ElmoTokenizer) -> tuple[float, float]:
    """Largest |graph - PyTorch| over `PARITY_SENTENCES` (every biLM layer, or a head's logits), and the largest
    |PyTorch| there, which the bar scales with."""
    inputs = tokenizer(PARITY_SENTENCES, is_split_into_words=True, padding=True, return_tensors="pt")
    with torch.no_grad():
        if isinstance(model, ElmoModel):
            expected = torch.stack(model(**inputs, output_hidden_states=True).hidden_states, dim=1)
            name = "hidden_states"
        else:
            expected, name = model(**inputs).logits, "logits"
    (actual,) = session.run([name], {key: tensor.numpy() for key, tensor in inputs.items()})
    return float(np.abs(actual - expected.numpy()).max()), float(expected.abs().max())


_PAGE = """---
library_name: onnx
{source_fields}tags:
- elmo
- onnx
- {pipeline_tag}
pipeline_tag: {pipeline_tag}
---

# {name}: ELMo as one ONNX graph

`{architecture}` exported by `elmo-convert onnx` (elmo-transformers {version}, graph layout {layout}). One graph
serves every batch size and sentence length, empty sentences included: the biLSTM's time loop is an ONNX `Scan`.

| file | what |
| --- | --- |
| `{float_graph}` | float32 graph ({float_mb:.1f} MB); max abs difference to PyTorch float32: {parity:.2e} |
| `{float_graph}_data` | its weights (ONNX external data: onnxruntime reads them from beside the graph) |
{quantized_row}| `config.json` | the source's config; `architectures` is `{architecture}`, what the graph computes |
{sources_row}
The export keeps a graph only if it passes these bars on its parity sentences: the float32 graph within
{parity_bar:.0e} of PyTorch float32 (times the largest |value| where that exceeds 1), the int8 graph's mean per-word
cosine to float32 at least {cosine_bar} (measured on the biLM), and its outputs for a sentence the same alone and in a
batch within {batch_bar:.0e}. The int8 graph
quantises each row of activations (a word, or a sentence's state at a step) with a scale of its own, so a sentence's
vectors never depend on its batch mates.

## Inputs: what the tokenizer gives

The graph takes the folder's tokenizer's output as it is: `input_ids`, int64, `(batch, words, {chars})`, and
`attention_mask`, int64, `(batch, words)` (`AutoTokenizer.from_pretrained(folder, trust_remote_code=True)` with
`padding=True, return_tensors="np"`; it returns no other key). The tokenizer is the folder's own code, which needs
`transformers`. Without it, the folder's `text_elmo.py` (numpy alone: the tokenizer's split of raw text and its ids,
which the tokenizer itself calls) gives the same inputs:

```python
import importlib.util

import onnxruntime

spec = importlib.util.spec_from_file_location("text_elmo", "{name}/text_elmo.py")
text_elmo = importlib.util.module_from_spec(spec)
spec.loader.exec_module(text_elmo)
encoder = text_elmo.ElmoTextEncoder.from_folder("{name}")
session = onnxruntime.InferenceSession("{name}/{float_graph}")
outputs = session.run(None, encoder.encode_text(["Hello world.", "Hi!"]))  # raw lines (encode_words: split ones)
```

### Raw text: the split rule

`encode_text` splits each line into words with `text_elmo.split_words`, by this rule:

{split_rule}
A client in another language passes when it gives every case of `{conformance}` (in this folder) its words and ids,
and the batch its arrays.

### In a browser (onnxruntime-web)

A browser cannot open `{float_graph}_data` by path: name it in the session's options, or the weights are missing.

```javascript
const session = await ort.InferenceSession.create("{float_graph}", {{
  externalData: [{{ path: "{float_graph}_data", data: "{float_graph}_data" }}],  // data: a URL, or the file's bytes
}});
```

**The mask decides a sentence's words**, not the ids: its words are the positions before the first 0 of its
`attention_mask` (any non-zero value counts as 1), and everything after that first 0 is padding, whatever the mask or
the ids say there (ids past the words are never read). The tokenizer's masks are ones then zeros, and then this is
exactly `ElmoModel`'s rule. A mask with a 1 after a 0 (which `ElmoModel` refuses, and a graph cannot refuse) is cut
at its first 0: no position the mask calls padding becomes a word, and the biLM's `word_mask` output shows which
positions were taken. A mask of another shape than the ids' `(batch, words)` fails the run.

Each word is {chars} ids, `[{bow}, b1 + 1, ..., bn + 1, {eow}, {pad}, {pad}, ...]` where `b1..bn` are the word's UTF-8
bytes, cut to the first {body} bytes (a lone surrogate has none: it is dropped, not written as U+FFFD); the literal
words `<S>` and `</S>` are the sentence markers' rows, `[{bow}, {bos}, {eow}, {pad}, ...]` and `[{bow}, {eos}, {eow},
{pad}, ...]`. A sentence's words come first, then padding. The graph adds the sentence markers itself. In plain
numpy, for sentences split into words:

```python
import numpy as np

MARKERS = {{"<S>": [{bos}], "</S>": [{eos}]}}

def encode(sentences, width={chars}):
    ids = np.zeros((len(sentences), max(map(len, sentences), default=0), width), dtype=np.int64)
    mask = np.zeros(ids.shape[:2], dtype=np.int64)
    for row, words in enumerate(sentences):
        mask[row, : len(words)] = 1
        for column, word in enumerate(words):
            body = MARKERS.get(word) or [byte + 1 for byte in word.encode("utf-8", "ignore")[: width - 2]]
            ids[row, column] = [{bow}, *body, {eow}] + [{pad}] * (width - 2 - len(body))
    return {{"input_ids": ids, "attention_mask": mask}}

outputs = session.run(None, encode([["Hello", "world", "."], []]))
```

## Outputs

Every output is batch-first (its first dimension is the batch), so that a server can batch requests along it.

{outputs}
"""

_SOURCES_ROW = "| `SOURCES.md` | the source's: the corpus its biLM was trained on (sources, licenses, counts) |\n"

_BILM_OUTPUTS = """- `last_hidden_state` float32 `(batch, words, {width})`: the top biLSTM layer, `[forward; backward]`.
- `hidden_states` float32 `(batch, {layers}, words, {width})`: layer 0 the token vector twice, layer j the j-th biLSTM
  layer, zero at padding (as `ElmoModel(..., output_hidden_states=True)`, stacked along dimension 1).
- `word_mask` bool `(batch, words)`: True at each sentence's words."""


def _source_fields(model_dir: Path) -> str:
    """The source model page's license and language, as lines of the new page's front matter."""
    if not (model_dir / "README.md").is_file():
        return ""
    data = ModelCard.load(model_dir / "README.md").data
    fields = {"license": data.license, "language": data.language}
    return "".join(f"{key}: {value}\n" for key, value in fields.items() if isinstance(value, str))


def _write_model_page(folder: Path, source: Path, model: torch.nn.Module, result: OnnxExport, name: str) -> None:
    config = model.config
    special = config.special_char_ids
    quantized_row = ""
    if result.quantized_bytes is not None:
        measured = (
            ""
            if result.cosine is None
            else (
                "; per-word cosine of the biLSTM layers to float32:"
                f" mean {result.cosine[0]:.4f}, min {result.cosine[1]:.4f}"
            )
        )
        quantized_row = (
            f"| `{QUANTIZED_GRAPH}` | int8 weights and activations in the LSTM, highway and projection products (its"
            f" weights in `{QUANTIZED_GRAPH}_data`)"
            f" ({result.quantized_bytes / 1e6:.1f} MB){measured}; a sentence alone vs in a batch:"
            f" {result.batch_difference:.1e} |\n"
        )
    if result.architecture == "ElmoModel":
        outputs = _BILM_OUTPUTS.format(width=config.hidden_size, layers=config.num_hidden_layers + 1)
    elif result.architecture == "ElmoForTokenClassification":
        outputs = f"- `logits` float32 `(batch, words, {config.num_labels})`; labels: `config.json`'s `id2label`."
    else:
        outputs = f"- `logits` float32 `(batch, {config.num_labels})`; labels: `config.json`'s `id2label`."
    page = _PAGE.format(
        source_fields=_source_fields(source),
        name=name,
        architecture=result.architecture,
        version=importlib.metadata.version("elmo-transformers"),
        layout=LAYOUT_VERSION,
        float_graph=FLOAT_GRAPH,
        float_mb=result.graph_bytes / 1e6,
        parity=result.parity,
        quantized_row=quantized_row,
        chars=config.max_characters_per_token,
        body=config.max_characters_per_token - 2,
        bos=special["bos"],
        eos=special["eos"],
        bow=special["bow"],
        eow=special["eow"],
        pad=special["pad"],
        outputs=outputs,
        pipeline_tag=_PIPELINE_TAGS[result.architecture],
        sources_row=_SOURCES_ROW if (folder / "SOURCES.md").is_file() else "",
        parity_bar=FLOAT_PARITY_BAR,
        cosine_bar=INT8_COSINE_BAR,
        batch_bar=INT8_BATCH_BAR,
        split_rule=SPLIT_RULE,
        conformance=_CONFORMANCE_FILE,
    )
    (folder / "README.md").write_text(page, encoding="utf-8")


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
