"""`elmo-convert onnx`: a model folder -> a folder holding its ONNX graph, served by onnxruntime.

The folder is a Hub model folder in optimum's convention: `model.onnx` (and `model_quantized.onnx` with
`--quantize int8`), the source's config.json, tokenizer files and model code (the tokenizer loads with
`AutoTokenizer`), and a model page saying how to feed the graph without this package and what the export
measured. The graph is written node by node (`onnx_graph.py`); `--quantize int8` runs onnxruntime's dynamic
quantisation over the LSTM's products only.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import logging
import shutil
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch
from huggingface_hub import ModelCard

from elmo_transformers.common.atomic_output import atomic_output_folder
from elmo_transformers.common.errors import ConversionError
from elmo_transformers.common.extras import require_extra
from elmo_transformers.common.model_folder import record_checksums, require_model_folder
from elmo_transformers.inference.onnx_embedder import (
    FLOAT_GRAPH,
    LAYOUT_KEY,
    LAYOUT_VERSION,
    QUANTIZED_GRAPH,
    open_graph,
)
from modeling_elmo import ElmoConfig, ElmoForSequenceClassification, ElmoForTokenClassification, ElmoModel
from modeling_elmo.tokenization_elmo import ElmoTokenizer

from .model_card import PARITY_SENTENCES
from .saving import require_room

__all__ = ["OnnxExport", "export_onnx", "graph_cosine", "product_node_names", "quantize_graph", "run"]

_HEADS = {cls.__name__: cls for cls in (ElmoForTokenClassification, ElmoForSequenceClassification)}
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".onnx", ".h5", ".pt")


@dataclass(frozen=True)
class OnnxExport:
    """What an export wrote and measured: the largest difference to PyTorch float32 on `PARITY_SENTENCES`, and
    with int8 the per-word cosine (mean, min) of the biLSTM layers to the float32 graph."""

    architecture: str
    parity: float
    graph_bytes: int
    quantized_bytes: int | None = None
    cosine: tuple[float, float] | None = None


def export_onnx(
    model_dir: str | Path,
    output: str | Path,
    *,
    quantize: str | None = None,
    overwrite: bool = False,
    space_check: bool = True,
) -> OnnxExport:
    """Write `output`, the ONNX folder of the model folder `model_dir` (an `ElmoModel`, or a token or sequence
    classification head); `quantize="int8"` adds the 8-bit graph."""
    require_extra("onnx", "elmo-convert onnx", ConversionError)
    from .onnx_graph import build_graph

    model_dir, output = Path(model_dir), Path(output)
    model = _load(model_dir)
    architecture = type(model).__name__
    metadata = {
        LAYOUT_KEY: LAYOUT_VERSION,
        "elmo_architecture": architecture,
        "elmo_transformers_version": importlib.metadata.version("elmo-transformers"),
    }
    try:
        graph = build_graph(model, metadata)
    except ValueError as error:
        raise ConversionError(f"{model_dir}: {error}") from None
    with atomic_output_folder(output, overwrite=overwrite, inputs=(model_dir,)) as folder:
        require_room(
            output, graph.ByteSize() * (13 if quantize else 10) // 10, "the ONNX graph", space_check=space_check
        )
        _copy_model_files(model_dir, folder)
        import onnx

        onnx.save(graph, folder / FLOAT_GRAPH)
        session = open_graph(folder / FLOAT_GRAPH, ConversionError)
        tokenizer = ElmoTokenizer.from_pretrained(folder)
        result = OnnxExport(architecture, _parity(model, session, tokenizer), (folder / FLOAT_GRAPH).stat().st_size)
        if quantize:
            quantize_graph(folder / FLOAT_GRAPH, folder / QUANTIZED_GRAPH)
            quantized = open_graph(folder / QUANTIZED_GRAPH, ConversionError)
            cosine = (
                graph_cosine(session, quantized, tokenizer, PARITY_SENTENCES) if architecture == "ElmoModel" else None
            )
            result = replace(result, quantized_bytes=(folder / QUANTIZED_GRAPH).stat().st_size, cosine=cosine)
        record_checksums(folder, [FLOAT_GRAPH, *([QUANTIZED_GRAPH] if quantize else [])])
        _write_model_page(folder, model_dir, model, result, output.name)
    return result


def _load(model_dir: Path) -> torch.nn.Module:
    """The float32 model of a folder, as its architecture names it (a head, or the biLM)."""
    require_model_folder(model_dir, ConversionError)
    if not any(model_dir.glob("*.safetensors")):
        raise ConversionError(f"{model_dir}: no model.safetensors (export from the model folder elmo-convert wrote)")
    config = ElmoConfig.from_pretrained(model_dir)
    model_class = _HEADS.get((config.architectures or [""])[0], ElmoModel)
    return model_class.from_pretrained(model_dir, dtype=torch.float32).eval()


def _copy_model_files(model_dir: Path, folder: Path) -> None:
    """The source's config, tokenizer files and code; not its weights nor its model page."""
    for path in sorted(model_dir.iterdir()):
        if path.is_file() and path.suffix not in _WEIGHT_SUFFIXES and path.name != "README.md":
            shutil.copyfile(path, folder / path.name)


def product_node_names(graph) -> list[str]:
    """The names of the product nodes `--quantize int8` quantises (`onnx_graph.QUANTIZABLE_PREFIX`: the LSTM's input,
    state and output projections, the highway layers and the token projection), in the graph and its loops."""
    from .onnx_graph import QUANTIZABLE_PREFIX

    names, graphs = [], [graph.graph]
    while graphs:
        current = graphs.pop()
        for node in current.node:
            if node.name.startswith(QUANTIZABLE_PREFIX):
                names.append(node.name)
            graphs.extend(attribute.g for attribute in node.attribute if attribute.HasField("g"))
    return names


def quantize_graph(source: Path, target: Path) -> None:
    """onnxruntime's dynamic quantisation of the large products (`product_node_names`): int8 weights (per output
    column), activations quantised per call; every other operator stays float32."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)  # the quantiser logs advice about static models on the root logger
    try:
        quantize_dynamic(
            source,
            target,
            weight_type=QuantType.QInt8,
            per_channel=True,
            op_types_to_quantize=["MatMul"],
            nodes_to_quantize=product_node_names(onnx.load(source, load_external_data=False)),
            extra_options={"EnableSubgraph": True},
        )
    finally:
        root.setLevel(level)


def graph_cosine(float_graph, quantized_graph, tokenizer: ElmoTokenizer, sentences) -> tuple[float, float]:
    """Per-word cosine between two biLM graphs' biLSTM layers (each word's vector of each layer): (mean, min)."""
    ids = tokenizer(sentences, is_split_into_words=True, padding=True, return_tensors="np")["input_ids"]
    reference, mask = float_graph.run(["hidden_states", "word_mask"], {"input_ids": ids})
    (other,) = quantized_graph.run(["hidden_states"], {"input_ids": ids})
    reference, other = reference[1:, mask], other[1:, mask]  # (L, words, 2P)
    products = (reference * other).sum(-1)
    norms = np.linalg.norm(reference, axis=-1) * np.linalg.norm(other, axis=-1)
    cosine = products / np.maximum(norms, np.finfo(np.float32).tiny)
    return float(cosine.mean()), float(cosine.min())


def _parity(model: torch.nn.Module, session, tokenizer: ElmoTokenizer) -> float:
    """Largest |graph - PyTorch| over `PARITY_SENTENCES`: every biLM layer, or a head's logits."""
    inputs = tokenizer(PARITY_SENTENCES, is_split_into_words=True, padding=True, return_tensors="pt")
    with torch.no_grad():
        if isinstance(model, ElmoModel):
            expected = torch.stack(model(inputs["input_ids"], output_hidden_states=True).hidden_states)
            name = "hidden_states"
        else:
            expected, name = model(inputs["input_ids"]).logits, "logits"
    (actual,) = session.run([name], {"input_ids": inputs["input_ids"].numpy()})
    return float(np.abs(actual - expected.numpy()).max())


_PAGE = """---
library_name: onnx
{source_fields}tags:
- elmo
- onnx
- feature-extraction
---

# {name}: ELMo as one ONNX graph

`{architecture}` exported by `elmo-convert onnx` (elmo-transformers {version}, graph layout {layout}). One graph
serves every batch size and sentence length, empty sentences included: the biLSTM's time loop is an ONNX `Scan`.

| file | what |
| --- | --- |
| `{float_graph}` | float32 graph ({float_mb:.1f} MB); max abs difference to PyTorch float32: {parity:.2e} |
{quantized_row}
## Input: character ids

`input_ids`, int64, shape `(batch, words, {chars})`: each word is {chars} ids, `[{bow}, b1 + 1, ..., bn + 1, {eow},
{pad}, {pad}, ...]` where `b1..bn` are the word's UTF-8 bytes, cut to the first {body} bytes; a sentence's words come
first, then all-zero rows as padding. The graph adds the sentence markers itself. In plain numpy:

```python
import numpy as np

def char_ids(sentences, width={chars}):
    ids = np.zeros((len(sentences), max(map(len, sentences), default=0), width), dtype=np.int64)
    for row, words in enumerate(sentences):
        for column, word in enumerate(words):
            body = [byte + 1 for byte in word.encode("utf-8")[: width - 2]]
            ids[row, column] = [{bow}, *body, {eow}] + [{pad}] * (width - 2 - len(body))
    return ids
```

(The tokenizer files in this folder do the same: `AutoTokenizer.from_pretrained(folder, trust_remote_code=True)`.)

## Outputs

{outputs}

## Run it

```python
import onnxruntime

session = onnxruntime.InferenceSession("{float_graph}")
outputs = session.run(None, {{"input_ids": char_ids([["Hello", "world", "."], []])}})
```
"""

_BILM_OUTPUTS = """- `last_hidden_state` float32 `(batch, words, {width})`: the top biLSTM layer, `[forward; backward]`.
- `hidden_states` float32 `({layers}, batch, words, {width})`: layer 0 the token vector twice, layer j the j-th biLSTM
  layer, zero at padding (as `ElmoModel(..., output_hidden_states=True)`).
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
            f"| `{QUANTIZED_GRAPH}` | int8 weights in the LSTM, highway and projection products"
            f" ({result.quantized_bytes / 1e6:.1f} MB)"
            f"{measured} |\n"
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
        bow=special["bow"],
        eow=special["eow"],
        pad=special["pad"],
        outputs=outputs,
    )
    (folder / "README.md").write_text(page, encoding="utf-8")


def run(args: argparse.Namespace) -> str:
    result = export_onnx(
        args.model, args.output, quantize=args.quantize, overwrite=args.overwrite, space_check=not args.no_space_check
    )
    line = (
        f"Wrote {args.output}: {result.architecture} as ONNX ({FLOAT_GRAPH}, {result.graph_bytes / 1e6:.1f} MB;"
        f" max |onnxruntime - PyTorch| {result.parity:.2e})"
    )
    if result.quantized_bytes is not None:
        line += f", {QUANTIZED_GRAPH} ({result.quantized_bytes / 1e6:.1f} MB"
        if result.cosine is not None:
            line += f"; per-word cosine to float32 mean {result.cosine[0]:.4f}, min {result.cosine[1]:.4f}"
        line += ")"
    return line
