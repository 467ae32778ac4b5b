"""Upload a converted folder to the Hugging Face Hub (`--push-to-hub`), after checking it offline."""

from __future__ import annotations

from pathlib import Path

from huggingface_hub import HfApi, ModelCard
from transformers.tokenization_utils_base import TOKENIZER_CONFIG_FILE
from transformers.utils import CONFIG_NAME, SAFE_WEIGHTS_NAME

from elmo_transformers.common.errors import ConversionError
from elmo_transformers.common.model_folder import damaged_file_problem

__all__ = ["check_model_folder", "push_folder"]

REQUIRED_FILES = (CONFIG_NAME, SAFE_WEIGHTS_NAME, TOKENIZER_CONFIG_FILE, "README.md", "modeling_elmo.py")
REQUIRED_METADATA = ("library_name", "pipeline_tag", "license", "language", "tags")


def check_model_folder(folder: str | Path) -> ModelCard:
    """Everything a Hub repo of this model needs is in `folder`, as its SHA256SUMS records it, and its card's
    metadata parses."""
    folder = Path(folder)
    missing = [name for name in REQUIRED_FILES if not (folder / name).is_file()]
    if missing:
        raise ConversionError(f"{folder}: missing {', '.join(missing)}")
    damaged = damaged_file_problem(folder)
    if damaged:
        raise ConversionError(damaged)
    card = ModelCard.load(folder / "README.md")
    absent = [key for key in REQUIRED_METADATA if not getattr(card.data, key, None)]
    if absent:
        raise ConversionError(f"{folder / 'README.md'}: metadata lacks {', '.join(absent)}")
    return card


def push_folder(folder: str | Path, repo_id: str) -> str:
    """Check `folder`, create the model repo if needed and upload; returns the commit URL."""
    check_model_folder(folder)
    api = HfApi()
    api.create_repo(repo_id, repo_type="model", exist_ok=True)
    return str(api.upload_folder(repo_id=repo_id, folder_path=str(folder), repo_type="model"))
