"""The model page (README.md) of an `elmo-convert onnx` folder: how to feed the graph without this package (the
tokenizer's inputs in plain numpy, the split rule, onnxruntime-web), its outputs, and what the export measured.
The page is `onnx_model_page.md` (a `string.Template`) filled in by `write_model_page`.
"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path
from string import Template
from typing import TYPE_CHECKING

from huggingface_hub import ModelCard

from modeling_elmo.text_elmo import SPLIT_RULE

from .export_measurements import FLOAT_PARITY_BAR, INT8_BATCH_BAR, INT8_COSINE_BAR, OnnxExport
from .graph_layout import CONFORMANCE_FILE, FLOAT_GRAPH, LAYOUT_VERSION, QUANTIZED_GRAPH

if TYPE_CHECKING:
    import torch

__all__ = ["write_model_page"]

_TEMPLATE = Path(__file__).with_name("onnx_model_page.md")
# The Hub pipeline tag of each exported architecture: what the graph computes.
_PIPELINE_TAGS = {
    "ElmoModel": "feature-extraction",
    "ElmoForTokenClassification": "token-classification",
    "ElmoForSequenceClassification": "text-classification",
}

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


def write_model_page(folder: Path, source: Path, model: torch.nn.Module, result: OnnxExport, name: str) -> None:
    """Write `folder`'s README.md: the page of the export `name` of `model` (read from the folder `source`, whose
    page gives the license and language), stating what the export measured (`result`)."""
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
    page = Template(_TEMPLATE.read_text(encoding="utf-8")).substitute(
        source_fields=_source_fields(source),
        name=name,
        architecture=result.architecture,
        version=importlib.metadata.version("elmo-transformers"),
        layout=LAYOUT_VERSION,
        float_graph=FLOAT_GRAPH,
        float_mb=f"{result.graph_bytes / 1e6:.1f}",
        parity=f"{result.parity:.2e}",
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
        parity_bar=f"{FLOAT_PARITY_BAR:.0e}",
        cosine_bar=INT8_COSINE_BAR,
        batch_bar=f"{INT8_BATCH_BAR:.0e}",
        split_rule=SPLIT_RULE,
        conformance=CONFORMANCE_FILE,
    )
    (folder / "README.md").write_text(page, encoding="utf-8")
