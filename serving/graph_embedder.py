"""ELMo vectors from a folder of `elmo-convert onnx`, on onnxruntime alone: no torch, no transformers.

`GraphEmbedder` opens the folder's graph (checked against its config.json: `graph_layout.open_graph`) and its text
front end (`modeling_elmo.text_elmo`, numpy alone), and embeds sentences given as raw text or as lists of words:

    from elmo_transformers.serving import GraphEmbedder

    embedder = GraphEmbedder("elmo-onnx")  # a folder elmo-convert onnx wrote
    vectors = embedder.embed(["The cat sat.", ["Hello", "world"]], layers="average", batch_size=32)
    vectors[0].shape  # (4, width): "The", "cat", "sat", "."; width = 2 x projection_dim (1024 at the original shape)

Each sentence's vectors are its own: the graph computes every row by itself, so they are the same bits alone, in any
batch and at any `batch_size` (docs/onnx.md). `elmo-embed` on an ONNX folder runs this class
(`inference.onnx_runner`). Bad input raises `GraphError` (a ValueError), one line naming the file or argument.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from modeling_elmo.text_elmo import ElmoTextEncoder
from modeling_elmo.token_cache_elmo import DEFAULT_CACHED_WORDS

from .graph_layout import FLOAT_GRAPH, QUANTIZED_GRAPH, TOKEN_VECTORS, graph_inputs, open_graph
from .token_graph import GraphTokenCache, TokenLayerOpener

__all__ = ["LAYER_CHOICES", "EncodedBatch", "GraphEmbedder", "GraphError"]

# What `embed` returns of each sentence: every layer (L+1, words, width), the top biLSTM layer or the layers' mean
# (words, width); or a sequence of L+1 weights, the weighted sum of the layers (words, width).
LAYER_CHOICES = ("all", "top", "average")
_CPU = ("CPUExecutionProvider",)


class GraphError(ValueError):
    """A graph folder or an argument `GraphEmbedder` cannot use; the message names it and says what is wrong."""


@dataclass(frozen=True)
class EncodedBatch:
    """Sentences as the graph's inputs (`inputs`: `input_ids` (batch, words, characters) and `attention_mask`
    (batch, words), int64), their rows longest sentence first: row i is sentence `order[i]`; `lengths` are the
    sentences' numbers of words, in the sentences' order."""

    inputs: dict[str, np.ndarray]
    order: list[int]
    lengths: list[int]


class GraphEmbedder:
    """The biLM graph of the `elmo-convert onnx` folder `folder` (`model.onnx`, or `model_quantized.onnx` if
    `quantized`) on onnxruntime with `providers` (CPU by default) and `threads` threads within an operator
    (onnxruntime's choice by default). `num_layers` (L+1) and `width` (2 x projection_dim) size its vectors.

    The token vector of each distinct word (the character CNN, highway layers and projection) is computed once and
    kept for the next batches, for up to `cached_words` words (`token_cache`: least recently used out first;
    `cached_words x projection_dim x 4` bytes at most, 32 MiB for the bundled model at the default 2**16, 128 MiB at
    the original shape): the graph is split in memory at its token layer (`token_graph`), and `session` runs the
    rest. The vectors are the whole graph's, to the bit (checked on the CPU provider). `cached_words=0` runs the
    whole graph on every batch, as does a folder exported before the graph named its token layer (`token_cache` is
    None then)."""

    def __init__(
        self,
        folder: str | Path,
        *,
        quantized: bool = False,
        threads: int | None = None,
        providers: Sequence[str | tuple[str, dict]] = _CPU,
        cached_words: int = DEFAULT_CACHED_WORDS,
    ) -> None:
        if type(cached_words) is not int or cached_words < 0:
            raise GraphError(f"cached_words must be 0 (no cache) or a positive integer, got {cached_words!r}")
        folder = Path(folder)
        self.graph = folder / (QUANTIZED_GRAPH if quantized else FLOAT_GRAPH)
        opener = TokenLayerOpener() if cached_words else None  # (the graph's part after its token layer, if it has one)
        self.session = open_graph(self.graph, GraphError, threads=threads, providers=providers, opener=opener)
        outputs = {output.name: output for output in self.session.get_outputs()}
        if "hidden_states" not in outputs:
            raise GraphError(f"{self.graph}: the graph of a task head (logits), not of the biLM: export the biLM")
        # The graph's inputs, which `encode` gives (a contextual part's token vectors come from `token_cache`).
        self.input_names = [tensor.name for tensor in graph_inputs(self.session)]
        try:
            self.encoder = ElmoTextEncoder.from_folder(folder)
        except ValueError as error:  # (it names the file and what is wrong with it)
            raise GraphError(str(error)) from None
        # The graph's sizes, which `open_graph` found to be those of config.json.
        _, self.num_layers, _, self.width = outputs["hidden_states"].shape
        expected = self.session.get_inputs()[0].shape[-1]
        if self.encoder.max_characters_per_token != expected:
            raise GraphError(
                f"{folder}: tokenizer_config.json frames words of {self.encoder.max_characters_per_token} characters,"
                f" but the graph reads {expected} (max_characters_per_token): the model and its tokenizer must frame"
                " words alike"
            )
        sessions = None if opener is None else opener.sessions
        self.token_cache = None if sessions is None else GraphTokenCache(sessions, cached_words)

    def split(self, text: str) -> list[str]:
        """The words of a line of raw text, as the folder's tokenizer splits it."""
        return self.encoder.split(text)

    def embed(
        self,
        sentences: Iterable[str | Sequence[str]],
        *,
        layers: str | Sequence[float] = "all",
        batch_size: int = 32,
    ) -> list[np.ndarray]:
        """The float32 vectors of each of `sentences` (each a line of raw text, split by `split`, or a list of
        words), in their order, run `batch_size` sentences at a time: (L+1, words, width) for `layers="all"`,
        (words, width) for "top", "average" or a sequence of L+1 weights (the weighted sum of the layers). A
        sentence without words gets vectors of 0 words."""
        if type(batch_size) is not int or batch_size < 1:
            raise GraphError(f"batch_size must be a positive integer, got {batch_size!r}")
        self._check_layers(layers)
        words = [self._words(index, sentence) for index, sentence in enumerate(sentences)]
        vectors = []
        for start in range(0, len(words), batch_size):
            batch = self.encode(words[start : start + batch_size])
            output = self.run(batch, layers)
            vectors += [np.ascontiguousarray(output[row, ..., :length, :]) for row, length in enumerate(batch.lengths)]
        return vectors

    def encode(self, sentences: Sequence[Sequence[str]]) -> EncodedBatch:
        """The front end's padded batch of `sentences` (lists of words), longest sentence first: the order the graph
        runs its rows in, so that it keeps them as they come."""
        order = sorted(range(len(sentences)), key=lambda row: -len(sentences[row]))  # stable: ties keep their order
        inputs = self.encoder.encode_words([list(sentences[row]) for row in order])
        tensors = {name: inputs[name] for name in self.input_names}
        return EncodedBatch(tensors, order, [len(words) for words in sentences])

    def run(self, batch: EncodedBatch, layers: str | Sequence[float] = "all") -> np.ndarray:
        """The graph over `batch`, its rows back in the sentences' order, padded to the longest: (batch, L+1, words,
        width) float32 for `layers="all"`, else (batch, words, width) (`embed` says what each choice gives)."""
        wanted = ["last_hidden_state"] if isinstance(layers, str) and layers == "top" else ["hidden_states"]
        feeds = dict(batch.inputs)
        if self.token_cache is not None:
            feeds[TOKEN_VECTORS] = self.token_cache.contextual_input(feeds["input_ids"], feeds["attention_mask"])
        (vectors,) = self.session.run(wanted, feeds)
        if isinstance(layers, str):
            if layers == "average":
                vectors = vectors.mean(axis=1)  # hidden_states is (batch, L+1, words, width)
        else:
            vectors = np.tensordot(np.asarray(layers, dtype=np.float32), vectors, axes=([0], [1]))
        restored = np.empty_like(vectors)
        restored[batch.order] = vectors
        return restored

    def _check_layers(self, layers: str | Sequence[float]) -> None:
        """Refuse a `layers` that is neither one of `LAYER_CHOICES` nor L+1 finite weights."""
        if isinstance(layers, str):
            if layers not in LAYER_CHOICES:
                raise GraphError(
                    f"layers must be one of {', '.join(LAYER_CHOICES)} or a list of weights, got {layers!r}"
                )
            return
        try:
            weights = np.asarray(layers, dtype=np.float64)
        except (TypeError, ValueError):
            weights = np.empty(0)
        if weights.shape != (self.num_layers,) or not np.isfinite(weights).all():
            raise GraphError(
                f"layers must hold {self.num_layers} finite weights, one per layer (the token layer and each biLSTM"
                f" layer), got {list(layers)!r}"
            )

    def _words(self, index: int, sentence: str | Sequence[str]) -> list[str]:
        """A sentence's words: raw text split, or a list of words taken as it is (each must be a str)."""
        if isinstance(sentence, str):
            return self.split(sentence)
        if not isinstance(sentence, Iterable) or isinstance(sentence, bytes | bytearray):
            raise GraphError(f"sentence {index} is a {type(sentence).__name__}: give a str or a list of str words")
        words = list(sentence)
        for position, word in enumerate(words):
            if not isinstance(word, str):
                raise GraphError(f"sentence {index}: word {position} is a {type(word).__name__}, not a str")
        return words
