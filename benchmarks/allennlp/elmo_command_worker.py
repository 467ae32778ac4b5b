"""Runs AllenNLP 0.9.0's `allennlp elmo` command (its `ElmoEmbedder.embed_file`, every layer, batches of 64, on the
CPU) in the AllenNLP venv (``make_venv.sh``), for ``benchmarks/speed/bench_embed_backends.py``:

    python benchmarks/allennlp/elmo_command_worker.py OPTIONS WEIGHTS INPUT OUTPUT

The command's own code does the work, from reading the lines to writing the hdf5 file; what `elmo_command` adds
around it (its logging set-up) is left out, and its progress bar prints nothing (``stubs`` stands in for tqdm when
it is absent).
"""

from __future__ import annotations

import importlib
import sys

import stubs


def main() -> None:
    options, weights, input_path, output_path = sys.argv[1:5]
    stubs.import_elmo()
    command = importlib.import_module("allennlp.commands.elmo")
    command.Tqdm.tqdm = staticmethod(lambda iterable, *args, **kwargs: iterable)
    embedder = command.ElmoEmbedder(options, weights, cuda_device=-1)
    with open(input_path, encoding="utf-8") as lines:
        embedder.embed_file(lines, output_path, output_format="all", batch_size=command.DEFAULT_BATCH_SIZE)


if __name__ == "__main__":
    main()
