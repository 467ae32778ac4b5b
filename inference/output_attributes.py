"""The root attributes of `elmo-embed`'s output, which record how it was made, each a string (readers of AllenNLP's
`elmo` layout ignore them): every name with its meaning, in one table (`ATTRIBUTES`); the attribute of a line's
dataset that names its words (`WORDS`), and the group that holds a segment's half-written lines (`INCOMPLETE_GROUP`).

The writer (`settings.EmbedSettings.attributes`), the readers (`datasets_output`, whose fingerprint is the model's
sha256, and the `--format datasets` folder's `elmo_embed.json`, a copy of them) and `segment_store`'s docstring take
them from here; docs/elmo-embed.md holds the table too (where `--help` points), and a test holds it equal to this one.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "ATTRIBUTES",
    "BACKEND",
    "COMMAND",
    "COMPRESSION",
    "COMPUTE_DTYPE",
    "INCOMPLETE_GROUP",
    "LAYERS",
    "MODEL",
    "MODEL_SHA256",
    "NORMALIZATION",
    "STORAGE_DTYPE",
    "VERSION",
    "WORDS",
    "OutputAttribute",
]


@dataclass(frozen=True)
class OutputAttribute:
    """One root attribute: its `name` and what it records (`meaning`, one line)."""

    name: str
    meaning: str


MODEL = OutputAttribute("elmo_embed_model", "the model (its folder's absolute path)")
BACKEND = OutputAttribute(
    "elmo_embed_backend", "what ran it: pytorch, or onnxruntime for a folder of `elmo-convert onnx`"
)
MODEL_SHA256 = OutputAttribute(
    "elmo_embed_model_sha256", "the sha256 of the weights file the backend read (model.safetensors, or the graph)"
)
COMPUTE_DTYPE = OutputAttribute("elmo_embed_compute_dtype", "the dtype the model computed in (--dtype)")
LAYERS = OutputAttribute("elmo_embed_layers", "--layers")
NORMALIZATION = OutputAttribute(
    "elmo_embed_normalization",
    'the normalisation of the words: "NFC, control and format characters removed" with --tokenize, none without',
)
STORAGE_DTYPE = OutputAttribute(
    "elmo_embed_storage_dtype", "the dtype of the stored vectors (--storage-dtype): float32 or float16"
)
COMPRESSION = OutputAttribute(
    "elmo_embed_compression", "the HDF5 filter of the line datasets (--compression): none, gzip or lzf"
)
VERSION = OutputAttribute("elmo_embed_version", "the version of elmo-transformers")
COMMAND = OutputAttribute("elmo_embed_command", "the command line that started the file (a --resume continues it)")

# In the order the file records them, and the docs list them.
ATTRIBUTES = (
    MODEL,
    BACKEND,
    MODEL_SHA256,
    COMPUTE_DTYPE,
    LAYERS,
    NORMALIZATION,
    STORAGE_DTYPE,
    COMPRESSION,
    VERSION,
    COMMAND,
)

# The attribute of a line's dataset holding the strings its vectors stand for (a JSON list), where they are not simply
# the line's whitespace-separated tokens (`--tokenize`).
WORDS = "words"
# The group of a segment that holds the lines being written in pieces (`segment_store`), moved to their names once
# their last piece is written: never in a finished file.
INCOMPLETE_GROUP = "elmo_embed_incomplete"
