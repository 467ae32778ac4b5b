"""`elmo_transformers.compat.allennlp` against AllenNLP 0.9.0's own `ElmoEmbedder`, side by side in one run, on the
same random weights of a released shape (default the original 2x4096_512_2048cnn_2xhighway, written once in the
original layout):

1. **Load**: `ElmoEmbedder(options_file, weight_file)`, each side from the same files.
2. **Batches of 64**: `embed_sentences` over `--batches` batches of 64 English-like sentences (Zipf over the default
   model's vocabulary, 10-30 words: `harness_corpora.make_sentences`), both sides stateful (AllenNLP's default);
   and the largest difference between their vectors, call for call (each side from a fresh embedder).
3. **A protein at batch 1**: `embed_sentence(list(protein))` of a 500-residue sequence, against AllenNLP and
   against this package's own path (`ElmoTokenizer` + `ElmoModel(..., output_hidden_states=True)`, to NumPy), and
   with `--graph FOLDER` against `ElmoEmbedder.from_graph(FOLDER)` (its int8 graph, `--threads` onnxruntime threads),
   with the per-word cosine of its vectors to AllenNLP's. FOLDER holds the same weights, exported with int8:

    elmo-convert allennlp --options W/options.json --weights W/weights.hdf5 --output M   # W: under --work-dir
    elmo-convert onnx --model M --output FOLDER --quantize int8

    python benchmarks/speed/bench_compat_allennlp.py --allennlp-wheel allennlp-0.9.0-py3-none-any.whl --output r.md
    python benchmarks/speed/bench_compat_allennlp.py --allennlp-wheel W --options-file O --weights-file H \\
        --batches 2 --rounds 1    # a smoke run on any model

AllenNLP runs in this process from its wheel (`benchmarks/allennlp/stubs.py`: its own code, unmodified). Timing:
alternating rounds, the best of each (`harness_timing.race`), wall and CPU seconds (CPU time counts every thread:
the measure to trust on a shared machine). Both sides use `--threads` torch threads.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from harness_backends import allennlp_stubs, ensure_weights
from harness_corpora import batches_of, make_sentences
from harness_reports import RunRecord, markdown_table, ratio, write_through_rename
from harness_timing import race

from elmo_transformers.compat import allennlp as compat
from elmo_transformers.conversion.variants import VARIANTS
from modeling_elmo import ElmoTokenizer

AMINO_ACIDS = "ACDEFGHIKLMNPQRSTVWY"
BATCH = 64


def protein(length: int, seed: int) -> list[str]:
    """A random sequence of `length` residues, one letter a word (as protein ELMo models read them)."""
    rng = random.Random(seed)
    return [rng.choice(AMINO_ACIDS) for _ in range(length)]


def import_allennlp_embedder(wheel: str) -> type:
    """AllenNLP 0.9.0's `ElmoEmbedder`, imported from its wheel."""
    sys.path.insert(0, str(Path(wheel).resolve()))  # a pure-Python wheel imports as a zip
    allennlp_stubs.import_elmo()
    from allennlp.commands.elmo import ElmoEmbedder

    return ElmoEmbedder


def timed(call: Callable[[], object]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the process) of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    call()
    return time.perf_counter() - wall, time.process_time() - cpu


def largest_difference(theirs: object, ours: object, batches: list[list[list[str]]]) -> float:
    """The largest |ours - AllenNLP| over every vector of `embed_sentences` on `batches`, fresh embedders."""
    sentences = [sentence for batch in batches for sentence in batch]
    worst = 0.0
    for want, got in zip(theirs.embed_sentences(sentences, BATCH), ours.embed_sentences(sentences, BATCH), strict=True):
        worst = max(worst, float(np.abs(got - want).max(initial=0.0)))
    return worst


class PackagePath:
    """This package's own path for one sentence: `ElmoTokenizer` + `ElmoModel` with every layer, to NumPy."""

    def __init__(self, embedder: compat.ElmoEmbedder) -> None:
        self.model = embedder.elmo_bilm._model
        self.tokenizer = ElmoTokenizer()

    def __call__(self, words: list[str]) -> np.ndarray:
        inputs = self.tokenizer([words], is_split_into_words=True, return_tensors="pt")
        with torch.inference_mode():
            output = self.model(**inputs, output_hidden_states=True)
        return torch.stack(output.hidden_states, dim=1)[0].numpy()


def per_word_cosine(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """The cosine of each word's vector in each layer of (layers, words, width) arrays, `got` to `want`."""
    got, want = got.reshape(-1, got.shape[-1]), want.reshape(-1, want.shape[-1])
    return (got * want).sum(1) / np.linalg.norm(got, axis=1) / np.linalg.norm(want, axis=1)


def graph_cosine(args, allennlp_class: type, files: tuple[str, str]) -> str:
    """The line giving the int8 graph's per-word cosine to AllenNLP's vectors of the protein (mean and lowest)."""
    residues = protein(args.protein_length, args.seed)
    want = allennlp_class(*files).embed_sentence(residues)
    cosines = per_word_cosine(compat.ElmoEmbedder.from_graph(args.graph).embed_sentence(residues), want)
    return (
        f"- protein, int8 graph: per-word cosine to AllenNLP's vectors (every layer), mean {cosines.mean():.6f},"
        f" lowest {cosines.min():.6f}"
    )


def measurements(args, allennlp_class: type, files: tuple[str, str]) -> dict[str, Callable[[], object]]:
    """What is timed, by row name (each a call without arguments)."""
    batches = batches_of(make_sentences(args.seed, BATCH, BATCH * args.batches, 10, 30), BATCH)
    sentences = [sentence for batch in batches for sentence in batch]
    residues = protein(args.protein_length, args.seed)
    theirs, ours = allennlp_class(*files), compat.ElmoEmbedder(*files)
    package = PackagePath(ours)
    graph = compat.ElmoEmbedder.from_graph(args.graph, threads=args.threads) if args.graph else None
    calls = {
        "load: AllenNLP": lambda: allennlp_class(*files),
        "load: compat": lambda: compat.ElmoEmbedder(*files),
        "batches of 64: AllenNLP": lambda: list(theirs.embed_sentences(sentences, BATCH)),
        "batches of 64: compat": lambda: list(ours.embed_sentences(sentences, BATCH)),
        "protein, batch 1: AllenNLP": lambda: theirs.embed_sentence(residues),
        "protein, batch 1: compat": lambda: ours.embed_sentence(residues),
        "protein, batch 1: ElmoModel": lambda: package(residues),
    }
    if graph is not None:
        calls["protein, batch 1: int8 graph"] = lambda: graph.embed_sentence(residues)
    return calls


def report(args, record: RunRecord, wall: dict, cpu: dict, differences: list[str], loads: list[str]) -> str:
    rows = []
    for name in wall:
        task = name.split(":")[0]
        baseline = f"{task}: AllenNLP"
        rows.append(
            [name, f"{wall[name]:.3f}", f"{cpu[name]:.3f}", ratio(wall[name], wall[baseline]),
             ratio(cpu[name], cpu[baseline])]
        )  # fmt: skip
    table = markdown_table(rows, ["measure", "wall s (best)", "CPU s (best)", "wall / AllenNLP", "CPU / AllenNLP"])
    return "\n".join(
        [
            f"## compat.allennlp against AllenNLP 0.9.0 (shape {args.shape if not args.options_file else 'given'})",
            "",
            table,
            "",
            *differences,
            f"- protein: {args.protein_length} residues; {args.rounds} alternating rounds; loads {', '.join(loads)}",
            record.command_line(record.minutes()),
            record.machine_line(f"{args.threads} torch threads", os.getloadavg(), "this run adds up to its threads"),
            "",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    record = RunRecord.start()
    torch.set_num_threads(args.threads)
    if args.options_file:
        files = (args.options_file, args.weights_file)
    else:
        files = tuple(map(str, ensure_weights(args.work_dir, args.seed, args.shape)))
    allennlp_class = import_allennlp_embedder(args.allennlp_wheel)
    batches = batches_of(make_sentences(args.seed, BATCH, BATCH * args.batches, 10, 30), BATCH)
    difference = largest_difference(allennlp_class(*files), compat.ElmoEmbedder(*files), batches)
    differences = [f"- largest |compat - AllenNLP| over {args.batches} batches of 64, state carried: {difference:.3g}"]
    if args.graph:
        differences.append(graph_cosine(args, allennlp_class, files))
    calls = measurements(args, allennlp_class, files)
    wall_cpu: dict[str, list[tuple[float, float]]] = {name: [] for name in calls}

    def measure(_round: int, name: str) -> float:
        wall_cpu[name].append(timed(calls[name]))
        return wall_cpu[name][-1][0]

    wall, loads = race(list(calls), args.rounds, measure)
    cpu = {name: min(cpu for _, cpu in values) for name, values in wall_cpu.items()}
    text = report(args, record, wall, cpu, differences, loads)
    print(text)
    if args.output:
        write_through_rename(args.output, text)
    return 0


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--allennlp-wheel", required=True, help="allennlp-0.9.0-py3-none-any.whl")
    parser.add_argument("--shape", choices=sorted(VARIANTS), default="original", help="released shape (random weights)")
    parser.add_argument("--options-file", help="a model's options.json instead of random weights (with --weights-file)")
    parser.add_argument("--weights-file", help="its weights.hdf5")
    parser.add_argument("--batches", type=int, default=4, help="batches of 64 sentences (default %(default)s)")
    parser.add_argument("--graph", type=Path, help="an elmo-convert onnx --quantize int8 folder of the same weights")
    parser.add_argument("--protein-length", type=int, default=500, help="residues (default %(default)s)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (default %(default)s)")
    parser.add_argument("--threads", type=int, default=torch.get_num_threads(), help="torch threads")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work-dir", type=Path, default=Path("/tmp/elmo-bench-compat"))
    parser.add_argument("--output", type=Path, help="write the Markdown report here too")
    args = parser.parse_args(argv)
    if bool(args.options_file) != bool(args.weights_file):
        parser.error("--options-file and --weights-file go together")
    return args


if __name__ == "__main__":
    sys.exit(main())
