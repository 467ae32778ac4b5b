"""What an `elmo-embed` run computes and stores (`EmbedSettings`): the vectors depend on these settings and on
nothing else, so that `OUT.partial/settings.json` records them and `--resume` continues only a run of equal ones.

Two dtypes take part, and their names never meet: `compute_dtype` is the model's (`--dtype`: float32, bfloat16 or
float16), `storage_dtype` the stored vectors' (`--storage-dtype`: float32 or float16).
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.metadata import version
from typing import Any

from .options import EmbedOptions
from .output_attributes import (
    BACKEND,
    COMMAND,
    COMPRESSION,
    COMPUTE_DTYPE,
    LAYERS,
    MODEL,
    MODEL_SHA256,
    NORMALIZATION,
    STORAGE_DTYPE,
    VERSION,
)
from .storage import Storage

__all__ = ["EmbedSettings"]


@dataclass(frozen=True)
class EmbedSettings:
    """The settings of one run: the `options` that the vectors depend on (`EmbedOptions.recorded`) and what the run
    found out before it started; `as_json()` is what `settings.json` holds and `--resume` compares."""

    input_sha256: str  # of the input's content: a moved or renamed input resumes
    model: str  # the model folder's absolute path (or a Hub name)
    backend: str  # what runs the model: "pytorch", or "onnxruntime" for a folder of `elmo-convert onnx`
    model_sha256: str  # of the weights file the backend reads ("" for a Hub model): changed weights do not resume
    options: EmbedOptions

    @property
    def normalization(self) -> str:
        """The Unicode normalisation of the words. With --tokenize, NFC without control and format characters:
        `modeling_elmo.split_words` normalises the raw text, so that decomposed and precomposed accents are one word
        with one vector, and no word holds an invisible character (a control character or a zero-width space
        separates words, other format characters are dropped, but for the joiners inside a word and a flag's tag
        characters). Without, none: the whitespace-separated words as given, as AllenNLP's command embeds them."""
        return "NFC, control and format characters removed" if self.options.tokenize else "none"

    @property
    def storage(self) -> Storage:
        """The stored dtype and HDF5 filter (`EmbedOptions` refused an unknown one)."""
        return Storage(self.options.storage_dtype, self.options.compression)

    def as_json(self) -> dict[str, Any]:
        found = {"input_sha256": self.input_sha256, "model": self.model, "backend": self.backend}
        found["model_sha256"] = self.model_sha256
        return {**found, **self.options.recorded(), "normalization": self.normalization}

    def differences(self, started: dict[str, Any]) -> list[str]:
        """How these settings differ from those (`as_json()`) a run was started with: "layers 'all' (now 'top')"."""
        return [
            f"{key} {started.get(key)!r} (now {value!r})"
            for key, value in self.as_json().items()
            if started.get(key) != value
        ]

    def attributes(self, command: Sequence[str]) -> dict[str, str]:
        """The finished file's root attributes (`output_attributes.ATTRIBUTES`, in their order): these settings (but
        the input's hash), the package version and the `command` line that started the file."""
        return {
            MODEL.name: self.model,
            BACKEND.name: self.backend,
            MODEL_SHA256.name: self.model_sha256,
            COMPUTE_DTYPE.name: self.options.compute_dtype,
            LAYERS.name: self.options.layers,
            NORMALIZATION.name: self.normalization,
            STORAGE_DTYPE.name: self.options.storage_dtype,
            COMPRESSION.name: self.options.compression,
            VERSION.name: version("elmo-transformers"),
            COMMAND.name: shlex.join(command),
        }
