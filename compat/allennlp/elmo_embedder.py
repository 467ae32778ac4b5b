"""AllenNLP 0.9's `ElmoEmbedder` and its `allennlp elmo` command (allennlp.commands.elmo), computed by this package's
model: the same calls, arrays and hdf5 layout (a dataset per line named by its index, "sentence_to_index").

As in AllenNLP the biLM's LSTM state is carried from batch to batch (`stateful=True`, the default), so a sentence's
vectors depend on the batches embedded before it; `stateful=False` gives vectors that depend on the sentence alone.
`ElmoEmbedder.from_graph(folder)` computes the same calls with the int8 ONNX graph of an `elmo-convert onnx` folder
instead (the [onnx] extra; no state carried): several times faster on a CPU for one long sentence at a time.
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import os
from collections.abc import Iterable, Iterator, Sequence
from typing import IO

import h5py
import numpy as np
import torch

from elmo_transformers.common.atomic_output import atomic_output_file
from elmo_transformers.inference.hdf5_output import SENTENCE_TO_INDEX

from .bilm_files import DEFAULT_OPTIONS_FILE, DEFAULT_WEIGHT_FILE
from .bilm_modules import _ElmoBiLm
from .checks import ConfigurationError
from .graph_bilm import GraphBiLm
from .token_ids import batch_to_ids

__all__ = ["DEFAULT_BATCH_SIZE", "ElmoEmbedder", "elmo_command", "main"]

logger = logging.getLogger(__name__)

DEFAULT_BATCH_SIZE = 64
OUTPUT_FORMATS = ("all", "top", "average")


def empty_embedding() -> np.ndarray:
    """What AllenNLP 0.9 gave an empty sentence, whatever the model's width: zeros of shape (3, 0, 1024)."""
    return np.zeros((3, 0, 1024))


class ElmoEmbedder:
    """ELMo vectors of tokenized sentences as NumPy arrays (layers, words, 2P), as AllenNLP 0.9's `ElmoEmbedder`.

    `options_file`, `weight_file`: local paths or http(s) URLs (fetched once into a cache), or a model folder of
    this package or a Hub id as `options_file` with `weight_file=None`. `stateful` (keyword only): see the module.
    `from_graph` makes one computing with an ONNX graph instead.
    """

    def __init__(
        self,
        options_file: str | os.PathLike = DEFAULT_OPTIONS_FILE,
        weight_file: str | os.PathLike | None = DEFAULT_WEIGHT_FILE,
        cuda_device: int = -1,
        *,
        stateful: bool = True,
    ) -> None:
        logger.info("Initializing ELMo.")
        self.elmo_bilm = _ElmoBiLm(options_file, weight_file, stateful=stateful)
        if cuda_device >= 0:
            self.elmo_bilm = self.elmo_bilm.cuda(device=cuda_device)
        self.cuda_device = cuda_device
        self.graph: GraphBiLm | None = None

    @classmethod
    def from_graph(
        cls, folder: str | os.PathLike, *, quantized: bool = True, threads: int | None = None
    ) -> ElmoEmbedder:
        """An embedder whose calls (the same arrays and shapes) are computed by the graph of `folder`, written by
        `elmo-convert onnx --model M --output folder --quantize int8`: its int8 graph (8-bit products, vectors close
        to float32's but not the same: docs/migration.md gives the cosine), or its float32 graph if not `quantized`
        (PyTorch's vectors within 1e-5), on onnxruntime's CPU provider with `threads` threads (its choice if None).
        Every sentence starts from a zero state, as `stateful=False`: no state is carried and `elmo_bilm` is None.
        Needs the [onnx] extra; a folder it cannot use is one line (`ConfigurationError`)."""
        embedder = cls.__new__(cls)
        embedder.elmo_bilm, embedder.cuda_device = None, -1
        embedder.graph = GraphBiLm(folder, quantized=quantized, threads=threads)
        return embedder

    def batch_to_embeddings(self, batch: list[list[str]]) -> tuple[torch.Tensor, torch.Tensor]:
        """Activations (batch, layers, words, 2P) and mask (batch, words) of a batch of tokenized sentences."""
        if self.graph is not None:
            return self.graph.layers(batch)
        character_ids = batch_to_ids(batch)
        if self.cuda_device >= 0:
            character_ids = character_ids.cuda(device=self.cuda_device)
        with torch.no_grad():  # (not inference_mode: the tensors returned stay ordinary ones, as AllenNLP's)
            return self.elmo_bilm.layers_without_markers(character_ids)

    def embed_sentence(self, sentence: list[str]) -> np.ndarray:
        """The vectors (layers, words, 2P) of one tokenized sentence."""
        return self.embed_batch([sentence])[0]

    def embed_batch(self, batch: list[list[str]]) -> list[np.ndarray]:
        """The vectors (layers, words, 2P) of each tokenized sentence of a batch, in order."""
        if batch == [[]]:  # AllenNLP's special case: nothing runs, the state stays
            return [empty_embedding()]
        embeddings, mask = self.batch_to_embeddings(batch)
        lengths = mask.sum(dim=1).tolist()
        embeddings = embeddings.cpu().numpy()
        return [embeddings[i, :, :length] if length else empty_embedding() for i, length in enumerate(lengths)]

    def embed_sentences(
        self, sentences: Iterable[list[str]], batch_size: int = DEFAULT_BATCH_SIZE
    ) -> Iterator[np.ndarray]:
        """The vectors of each sentence, computed `batch_size` sentences at a time as they are read (lazily)."""
        iterator = iter(sentences)
        while batch := list(itertools.islice(iterator, batch_size)):
            yield from self.embed_batch(batch)

    def embed_file(
        self,
        input_file: IO | str | os.PathLike,
        output_file_path: str | os.PathLike,
        output_format: str = "all",
        batch_size: int = DEFAULT_BATCH_SIZE,
        forget_sentences: bool = False,
        use_sentence_keys: bool = False,
    ) -> None:
        """Write the vectors of each line of `input_file` (one whitespace-tokenized sentence a line) to the hdf5
        file `output_file_path` (replaced when complete): a float32 dataset per line named by its index (or by
        the sentence, `use_sentence_keys`), of every layer (`output_format` "all"), the top one ("top") or their
        mean ("average"), and "sentence_to_index" (a JSON object from sentence to key) unless `forget_sentences`
        or `use_sentence_keys`."""
        if output_format not in OUTPUT_FORMATS:
            raise ConfigurationError(f"output_format must be one of {OUTPUT_FORMATS}, got {output_format!r}")
        sentences = _read_sentences(input_file)
        embedded = self.embed_sentences([sentence.split() for sentence in sentences], batch_size)
        keys = sentences if use_sentence_keys else [str(index) for index in range(len(sentences))]
        if use_sentence_keys:
            logger.warning("Using sentences as keys can fail if sentences contain forward slashes or colons.")
        with atomic_output_file(output_file_path, overwrite=True) as staging, h5py.File(staging, "w") as output:
            for key, embeddings in zip(keys, embedded, strict=True):
                if use_sentence_keys and key in output:
                    raise ConfigurationError(
                        f"Key already exists in {output_file_path}: the sentence {key!r:.80} occurs twice. To encode "
                        "duplicate sentences, do not pass the --use-sentence-keys flag."
                    )
                output.create_dataset(key, data=_formatted(embeddings, output_format).astype(np.float32))
            if not forget_sentences and not use_sentence_keys:
                index = output.create_dataset(SENTENCE_TO_INDEX, (1,), dtype=h5py.string_dtype())
                index[0] = json.dumps(dict(zip(sentences, keys, strict=True)))


def _formatted(embeddings: np.ndarray, output_format: str) -> np.ndarray:
    if output_format == "top":
        return embeddings[-1]
    if output_format == "average":
        return np.average(embeddings, axis=0)
    return embeddings


def _read_sentences(input_file: IO | str | os.PathLike) -> list[str]:
    """The stripped lines of `input_file` (an open file, closed after, or a path); a blank one is refused."""
    if isinstance(input_file, str | os.PathLike):
        with open(input_file, encoding="utf-8") as opened:
            return _read_sentences(opened)
    name = getattr(input_file, "name", "the input file")
    with input_file:
        sentences = [line.strip() for line in input_file]
    blank = [index for index, sentence in enumerate(sentences) if not sentence]
    if blank:
        shown = ", ".join(map(str, blank[:10])) + (f" and {len(blank) - 10} more" if len(blank) > 10 else "")
        raise ConfigurationError(
            f"{name}: your input file contains empty lines at indexes {shown} (from 0). Please remove them."
        )
    return sentences


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="allennlp", description="AllenNLP 0.9's elmo command (this package's model)")
    commands = parser.add_subparsers(title="Commands", metavar="", dest="command", required=True)
    elmo = commands.add_parser("elmo", description="Create word vectors using ELMo.", help="Create word vectors.")
    elmo.add_argument("input_file", type=argparse.FileType("r", encoding="utf-8"), help="The path to the input file.")
    elmo.add_argument("output_file", type=str, help="The path to the output file.")
    group = elmo.add_mutually_exclusive_group(required=True)
    group.add_argument("--all", action="store_true", help="Output all three ELMo vectors.")
    group.add_argument("--top", action="store_true", help="Output the top ELMo vector.")
    group.add_argument("--average", action="store_true", help="Output the average of the ELMo vectors.")
    elmo.add_argument("--vocab-path", type=str, help="(accepted and unused, as in AllenNLP 0.9)")
    elmo.add_argument("--options-file", type=str, default=DEFAULT_OPTIONS_FILE, help="The ELMo options file.")
    elmo.add_argument("--weight-file", type=str, default=DEFAULT_WEIGHT_FILE, help="The ELMo weight file.")
    elmo.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE, help="The batch size to use.")
    elmo.add_argument("--file-friendly-logging", action="store_true", help="(accepted, as in AllenNLP 0.9)")
    elmo.add_argument("--cuda-device", type=int, default=-1, help="The cuda_device to run on.")
    elmo.add_argument("--forget-sentences", action="store_true", help='Leave out "sentence_to_index".')
    elmo.add_argument("--use-sentence-keys", action="store_true", help="Name each dataset by its sentence.")
    elmo.add_argument("--stateful", default=True, action=argparse.BooleanOptionalAction, help="Carry the state.")
    return parser


def elmo_command(args: argparse.Namespace) -> None:
    """`allennlp elmo` with parsed arguments."""
    embedder = ElmoEmbedder(args.options_file, args.weight_file, args.cuda_device, stateful=args.stateful)
    output_format = "all" if args.all else "top" if args.top else "average"
    with torch.no_grad():
        embedder.embed_file(
            args.input_file,
            args.output_file,
            output_format,
            args.batch_size,
            args.forget_sentences,
            args.use_sentence_keys,
        )


def main(argv: Sequence[str] | None = None) -> None:
    """AllenNLP 0.9's `allennlp.commands.main` for its `elmo` command: reads `sys.argv` (or `argv`) as
    `allennlp elmo INPUT OUTPUT (--all | --top | --average) ...`; bad input raises `ConfigurationError`."""
    elmo_command(_parser().parse_args(argv))
