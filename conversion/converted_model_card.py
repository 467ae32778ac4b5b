"""The Hub model page (README.md) of a converted folder, built from `model_card.md`
(`elmo_transformers.common.model_card_template`), with the checksums of the source files and the parity figure
measured on that folder against a float64 computation from the source weights."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from huggingface_hub import ModelCard

from elmo_transformers.common.checksums import file_sha256
from elmo_transformers.common.model_card_template import elmo_card_data, render_model_card
from elmo_transformers.common.parity_sentences import PARITY_SENTENCES
from modeling_elmo import ElmoModel, ElmoTokenizer

from .convert_options import ModelFolderOptions

__all__ = ["SourceDescription", "measure_parity", "model_page_source", "write_model_card"]


@dataclass(frozen=True)
class SourceDescription:
    """What a model page says about where the weights came from."""

    description: str  # e.g. "the AllenNLP release elmo_2x4096_512_2048cnn_2xhighway"
    source_files: tuple[Path, ...]  # the weight files, named with their checksums on the page
    license: str = "apache-2.0"
    language: str | list[str] = "en"  # ISO 639 codes, one or several
    training_data: str = "the 1 Billion Word Benchmark (about 800M tokens of news text)"
    options_file: Path | None = None  # the options.json the weights were read with, where one was given
    card_fields: dict[str, Any] = field(default_factory=dict)  # further page metadata, e.g. an archive's meta.json


def model_page_source(
    options: ModelFolderOptions,
    description: str,
    files: tuple[Path, ...],
    training_data: str,
    options_file: str | None = None,
) -> SourceDescription:
    """What the model page says of the source: `description`, `files` (named with their checksums), the
    `training_data`, the options file where one was read, and the license and language the options give."""
    return SourceDescription(
        description,
        files,
        options.license,
        options.language or "en",  # None where the language could have come from the source (an --archive's)
        training_data,
        options_file=None if options_file is None else Path(options_file),
    )


def _file_record(path: Path) -> dict[str, str]:
    """How the model page names a source file: its name and checksum."""
    return {"file": path.name, "sha256": file_sha256(path)}


def measure_parity(converted: ElmoModel, float64_reference: ElmoModel, tokenizer: ElmoTokenizer) -> float:
    """Largest |difference| over every layer of `PARITY_SENTENCES` between two models of the same weights."""
    inputs = tokenizer(PARITY_SENTENCES, is_split_into_words=True, padding=True, return_tensors="pt")
    with torch.no_grad():
        actual = converted(**inputs, output_hidden_states=True).hidden_states
        expected = float64_reference(**inputs, output_hidden_states=True).hidden_states
    return max(float((a.double() - e).abs().max()) for a, e in zip(actual, expected, strict=True))


def write_model_card(
    folder: Path, model: ElmoModel, source: SourceDescription, *, parity: float, repo_id: str
) -> ModelCard:
    """Render `model_card.md` for a converted `model` into `folder/README.md`; `repo_id` is what its snippets load."""
    card_data = elmo_card_data(
        license=source.license,
        language=source.language,
        source_weights=[_file_record(path) for path in source.source_files],
        parity_max_abs_difference=float(f"{parity:.3g}"),
        **source.card_fields,
    )
    if source.options_file is not None:
        card_data.source_options = _file_record(source.options_file)
    return render_model_card(
        folder,
        model,
        card_data,
        model_name=f"ELMo: {source.description}",
        repo_id=repo_id,
        source_description=source.description,
        training_data=source.training_data,
        source_weights=card_data.source_weights,
        source_options=card_data.get("source_options"),
        parity=f"{parity:.2e}",
        parity_words=sum(len(sentence) for sentence in PARITY_SENTENCES),
        parity_sentences=len(PARITY_SENTENCES),
    )
