"""The Hub model page (README.md) of a converted folder, built from `model_card.md`, with the parity
figure measured on that folder against a float64 computation from the source weights."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import torch
from huggingface_hub import ModelCard, ModelCardData

from modeling_elmo import ElmoModel, ElmoTokenizer

__all__ = [
    "PARITY_SENTENCES",
    "SourceDescription",
    "file_sha256",
    "measure_parity",
    "render_model_card",
    "write_model_card",
]

TEMPLATE = Path(__file__).with_name("model_card.md")

# Awkward on purpose: non-ASCII, a word over 48 bytes, an empty sentence, an empty-string word, mixed lengths.
PARITY_SENTENCES = [
    ["The", "naïve", "café", "owner", "said", "«", "bonjour", "»", "."],
    ["Größe", "日本語", "emoji🙂", "x" * 60, ""],
    [],
    ["A", "longer", "sentence", "with", "several", "ordinary", "words", "and", "numbers", "like", "3.14", "."],
]


@dataclass(frozen=True)
class SourceDescription:
    """What a model page says about where the weights came from."""

    description: str  # e.g. "the AllenNLP release elmo_2x4096_512_2048cnn_2xhighway"
    source_files: tuple[Path, ...]  # the weight files, named with their checksums on the page
    license: str = "apache-2.0"
    language: str = "en"
    training_data: str = "the 1 Billion Word Benchmark (about 800M tokens of news text)"
    options_file: Path | None = None  # the options.json the weights were read with, where one was given


def file_sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


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
    card_data = ModelCardData(
        library_name="transformers",
        pipeline_tag="feature-extraction",
        license=source.license,
        language=source.language,
        tags=["elmo", "bilm", "character-cnn", "feature-extraction", "remote-code"],
        source_weights=[_file_record(path) for path in source.source_files],
        parity_max_abs_difference=float(f"{parity:.3g}"),
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


def render_model_card(
    folder: Path, model: ElmoModel, card_data: ModelCardData, *, template: Path = TEMPLATE, **fields
) -> ModelCard:
    """Fill `template` (`model_card.md` by default) with `card_data`, the architecture of `model` and `fields`
    (see the template: a converted model passes `parity`, a trained one `training`); writes `folder/README.md`."""
    config = model.config
    card = ModelCard.from_template(
        card_data,
        template_path=str(template),
        num_layers=config.num_hidden_layers,
        hidden_size=config.hidden_size,
        char_vocab_size=config.char_vocab_size,
        char_embedding_dim=config.char_embedding_dim,
        max_characters_per_token=config.max_characters_per_token,
        char_cnn_filters=", ".join(f"{width}x{count}" for width, count in config.char_cnn_filters),
        num_filters=config.num_filters,
        char_cnn_activation=config.char_cnn_activation,
        num_highway_layers=config.num_highway_layers,
        projection_dim=config.projection_dim,
        cell_size=config.cell_size,
        cell_clip=config.cell_clip if config.cell_clip is not None else "none",
        proj_clip=config.proj_clip if config.proj_clip is not None else "none",
        use_skip_connections="yes" if config.use_skip_connections else "no",
        parameters=f"{sum(parameter.numel() for parameter in model.parameters()):,}",
        **fields,
    )
    card.save(folder / "README.md")
    return card
