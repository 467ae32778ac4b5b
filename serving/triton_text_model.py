"""The front-end model of a Triton repository written by `elmo-convert onnx --triton-repository`: raw sentences in,
the ELMo graph's inputs out. It is copied as `REPO/<name>_text_encoder/1/model.py` and runs in Triton's python
backend (never imported by this package): it needs numpy and the files beside it, no torch and no installed package.

Each request holds at most `max_batch_size` sentences, one per batch row of `text` (TYPE_STRING, UTF-8), each of at
most `MAX_SENTENCE_BYTES` bytes and `MAX_SENTENCE_WORDS` words. Its response is the front end's encoding of that
request alone (`text_elmo.ElmoTextEncoder`'s split and encoding, the folder's own copy, reading the tokenizer files
beside it): `input_ids` (batch, words, characters) and `attention_mask` (batch, words), int64, padded to the
request's longest sentence.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import triton_python_backend_utils as pb_utils

_FOLDER = Path(__file__).resolve().parent
_FRONT_END = "text_elmo"
# A request's bounds, so that no request asks for more memory than a batch of long sentences needs: its ids are
# (sentences, longest sentence's words, max_characters_per_token) int64, 400 bytes a word at 50 characters, padded
# to the longest sentence (a 33 MB row of one-letter words asked for 4.2 GB and died in MemoryError after 44 s).
# At most MAX_SENTENCE_BYTES of UTF-8 a row (checked before it is split: 2 MiB of text a request at most) and
# MAX_SENTENCE_WORDS words a sentence (checked before it is encoded: 32 x 4,096 x 400 bytes, 52 MB of ids at most).
MAX_SENTENCE_BYTES = 64 * 1024
MAX_SENTENCE_WORDS = 4096


def _front_end():
    """The folder's own `text_elmo.py`, loaded from its file (not from whatever `text_elmo` the stub's path holds)."""
    spec = importlib.util.spec_from_file_location(_FRONT_END, _FOLDER / f"{_FRONT_END}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[_FRONT_END] = module  # as an import would: code that looks its own module up finds it
    spec.loader.exec_module(module)
    return module


def sentences(rows: np.ndarray) -> list[str]:
    """The request's sentences: each row of `text`, UTF-8 bytes of at most `MAX_SENTENCE_BYTES`; ValueError naming
    the first row that is not."""
    lines = []
    for index, row in enumerate(rows.reshape(-1)):
        if len(row) > MAX_SENTENCE_BYTES:
            raise ValueError(
                f"text row {index} is {len(row):,} bytes, over the {MAX_SENTENCE_BYTES:,} a sentence may have: send"
                " one sentence per row"
            )
        try:
            lines.append(row.decode("utf-8"))
        except UnicodeDecodeError as problem:
            raise ValueError(
                f"text row {index} is not UTF-8 ({problem.reason} at byte {problem.start}): send each sentence as UTF-8"
            ) from None
    return lines


def split_sentences(encoder, lines: list[str]) -> list[list[str]]:
    """Each sentence's words (`encoder.split`); ValueError naming the first of more than `MAX_SENTENCE_WORDS`."""
    sentences = []
    for index, line in enumerate(lines):
        words = encoder.split(line)
        if len(words) > MAX_SENTENCE_WORDS:
            raise ValueError(
                f"text row {index} has {len(words):,} words, over the {MAX_SENTENCE_WORDS:,} a sentence may have: send"
                " one sentence per row"
            )
        sentences.append(words)
    return sentences


class TritonPythonModel:
    """Triton's python-backend interface: `initialize` once, `execute` for each list of requests."""

    def initialize(self, args: dict) -> None:
        self.encoder = _front_end().ElmoTextEncoder.from_folder(_FOLDER)
        self.outputs = [output["name"] for output in json.loads(args["model_config"])["output"]]

    def execute(self, requests: list) -> list:
        return [self._respond(request) for request in requests]

    def _respond(self, request):
        """One request's response: its sentences encoded together, or the line saying why they cannot be."""
        try:
            lines = sentences(pb_utils.get_input_tensor_by_name(request, "text").as_numpy())
            words = split_sentences(self.encoder, lines)
        except ValueError as problem:
            return pb_utils.InferenceResponse(output_tensors=[], error=pb_utils.TritonError(str(problem)))
        encoded = self.encoder.encode_words(words)
        tensors = [pb_utils.Tensor(name, encoded[name]) for name in self.outputs]
        return pb_utils.InferenceResponse(output_tensors=tensors)
