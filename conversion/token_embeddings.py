"""`elmo-convert token-embeddings`: the context-free token layer of a vocabulary, as bilm-tf's
`elmo_token_embeddings.hdf5` (dataset "embedding" of shape (vocabulary, projection_dim), row i for line i)."""

from __future__ import annotations

from pathlib import Path

import h5py
import torch
from tqdm.auto import tqdm

from elmo_transformers.common.atomic_output import atomic_output_file
from elmo_transformers.common.disk_space import require_room
from elmo_transformers.common.errors import ConversionError
from elmo_transformers.common.vocabulary_file import read_vocabulary
from modeling_elmo import ElmoTokenizer

from .allennlp import load_converted_model
from .convert_options import TokenEmbeddingsOptions

__all__ = ["run", "write_token_embeddings"]


def write_token_embeddings(
    model_folder: str | Path,
    vocabulary_file: str | Path,
    output: str | Path,
    *,
    batch_size: int = 1024,
    overwrite: bool = False,
    space_check: bool = True,
) -> int:
    """Compute and write the token layer of every vocabulary word; returns the number of words. Unless
    `space_check` is off, a disk too small for the vectors is refused before they are computed."""
    words = read_vocabulary(vocabulary_file, error=ConversionError)
    model = load_converted_model(model_folder)
    tokenizer = ElmoTokenizer.from_pretrained(model_folder)
    with atomic_output_file(output, overwrite=overwrite) as staging:
        shape = (len(words), model.config.projection_dim)
        float32_bytes = 4
        require_room(
            output,
            shape[0] * shape[1] * float32_bytes,
            f"the token layer of {len(words):,} words",
            space_check=space_check,
        )
        with h5py.File(staging, "w") as embeddings:
            dataset = embeddings.create_dataset("embedding", shape, dtype="float32")
            for start in tqdm(range(0, len(words), batch_size), desc="Token embeddings", unit="batch"):
                batch = words[start : start + batch_size]
                inputs = tokenizer([batch], is_split_into_words=True, return_tensors="pt")
                word_ids = inputs["input_word_ids"][0] if "input_word_ids" in inputs else None
                with torch.no_grad():
                    dataset[start : start + len(batch)] = (
                        model.char_encoder(inputs["input_ids"][0], word_ids).float().numpy()
                    )
    return len(words)


def run(options: TokenEmbeddingsOptions) -> str:
    count = write_token_embeddings(
        options.model,
        options.vocab,
        options.output,
        batch_size=options.batch_size,
        overwrite=options.overwrite,
        space_check=options.space_check,
    )
    return f"Wrote the token layer of {count:,} words -> {options.output}"
