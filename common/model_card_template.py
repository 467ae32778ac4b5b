"""The Hub model page (README.md) of an ELMo folder, built from the repository's `model_card.md`: what every page
shares (the card metadata of an ELMo biLM, the architecture fields). A converted folder's
page adds its source and parity (`elmo_transformers.conversion.converted_model_card`), a trained one its run
(`elmo_transformers.training.pretraining.model_card`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from huggingface_hub import ModelCard, ModelCardData

from modeling_elmo import ElmoModel

__all__ = ["ELMO_TAGS", "TEMPLATE", "elmo_card_data", "render_model_card"]

TEMPLATE = Path(__file__).with_name("model_card.md")  # a link to the repository's model_card.md; a wheel copies it
ELMO_TAGS = ("elmo", "bilm", "character-cnn", "feature-extraction", "remote-code")


def elmo_card_data(
    *, license: str, language: str | list[str], extra_tags: tuple[str, ...] = (), **fields: Any
) -> ModelCardData:
    """The page metadata of an ELMo biLM folder (transformers, feature extraction, `ELMO_TAGS` then `extra_tags`),
    with any further `ModelCardData` `fields`."""
    return ModelCardData(
        library_name="transformers",
        pipeline_tag="feature-extraction",
        license=license,
        language=language,
        tags=[*ELMO_TAGS, *extra_tags],
        **fields,
    )


def render_model_card(
    folder: Path, model: ElmoModel, card_data: ModelCardData, *, template: Path = TEMPLATE, **fields: Any
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
