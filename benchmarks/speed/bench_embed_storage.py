"""elmo-embed's storage options (`--storage-dtype`, `--compression`): bytes per word, and the speed of writing the
output (segments and merge, as elmo-embed writes it) and of reading every dataset back, for each choice.

    python benchmarks/speed/bench_embed_storage.py --lines 5000 --repeats 3 [--model DIR]

The vectors are computed once (the model's time is left out): for `examples/sentences.txt` (the README's example)
and for `--lines` lines cycled from it; each choice is written in batches of 64 lines, elmo-embed's default, and
timed as the median of `--repeats`.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import statistics
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from harness_corpora import REPOSITORY, batches_of
from harness_embed import read_every_dataset
from harness_timing import seconds_of

from elmo_transformers.inference.hdf5_output import write_hdf5
from elmo_transformers.inference.options import COMPRESSIONS, STORAGE_DTYPES, EmbedOptions
from elmo_transformers.inference.segment_store import SegmentStore
from elmo_transformers.inference.settings import EmbedSettings
from elmo_transformers.inference.storage import Storage
from elmo_transformers.inference.torch_runner import TorchEmbedder
from modeling_elmo import DEFAULT_MODEL

BATCH_LINES = 64


def write(path: Path, vectors: list[np.ndarray], storage: Storage, shape: Callable[[int], tuple[int, ...]]) -> None:
    options = EmbedOptions(path, path, storage_dtype=storage.dtype, compression=storage.compression)
    settings = EmbedSettings("", "", "pytorch", "", options)
    with SegmentStore(path, settings=settings, attributes={}, shape=shape, resume=False) as file:
        for line, array in enumerate(vectors):
            file.write(line, 0, array, array.shape[-2])
            if line % BATCH_LINES == BATCH_LINES - 1:
                file.end_batch()
        file.end_batch()
        write_hdf5(file, len(vectors), None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, default=5000, help="lines of the second input (default %(default)s)")
    parser.add_argument("--repeats", type=int, default=3, help="timed writes and reads of each (default %(default)s)")
    parser.add_argument("--model", default=str(DEFAULT_MODEL), help="model folder (default: the bundled one)")
    args = parser.parse_args()
    torch.set_num_threads(2)
    sentences = [line.split() for line in (REPOSITORY / "examples" / "sentences.txt").read_text().splitlines()]
    inputs = {
        "sentences.txt": sentences,
        f"{args.lines:,} lines": list(itertools.islice(itertools.cycle(sentences), args.lines)),
    }
    embedder = TorchEmbedder(args.model, layers="all", device="cpu")
    print("| input | layers | dtype | compression | bytes/word | write words/s | read words/s |")
    print("| --- | --- | --- | --- | ---: | ---: | ---: |")
    for name, lines in inputs.items():
        every_layer = [vectors.copy() for batch in batches_of(lines, BATCH_LINES) for vectors in embedder.embed(batch)]
        words = sum(len(line) for line in lines)
        for layers in ("all", "top"):
            vectors = every_layer if layers == "all" else [array[-1].copy() for array in every_layer]
            shape = embedder.shape if layers == "all" else (lambda count: (count, embedder.width))
            for dtype, compression in itertools.product(STORAGE_DTYPES, COMPRESSIONS):
                writes, reads = [], []
                with tempfile.TemporaryDirectory() as folder:
                    for repeat in range(args.repeats):
                        path = Path(folder) / f"out{repeat}.hdf5"
                        writes.append(
                            seconds_of(functools.partial(write, path, vectors, Storage(dtype, compression), shape))
                        )
                        reads.append(seconds_of(functools.partial(read_every_dataset, path)))
                    size = path.stat().st_size
                print(
                    f"| {name} | {layers} | {dtype} | {compression} | {size / words:,.0f} |"
                    f" {words / statistics.median(writes):,.0f} | {words / statistics.median(reads):,.0f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
