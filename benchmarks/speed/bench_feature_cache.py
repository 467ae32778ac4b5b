"""Benchmark of the frozen-biLM workflow at the full-size shape (random weights of the original 93.6M model).

Run from the repository root with the package installed (2 shared cores, one thread: about 4 minutes with the
defaults)::

    python benchmarks/speed/bench_feature_cache.py
    python benchmarks/speed/bench_feature_cache.py --sentences 400 --epochs 5 --threads 2

What it measures, on `--sentences` random sentences of `--min-words` to `--max-words` words:

1. Training a token-classification head (scalar_mix over all layers, BiLSTM task encoder, frozen biLM) for
   `--epochs` epochs with the biLM run live in every batch, against computing the biLM's layers once with
   `training.cache_bilm_features` (into a fresh temporary folder: the build time is included) and training on
   the cached layers. Both start from the same head weights and see the same batches; the ratio of the two
   total times is the speed-up. The last epoch's mean loss of each is printed as a check that they train
   the same model (they agree to float32 rounding).
2. The biLM forward alone with `mix_layers=[0, 1]` (only the first biLSTM layer is computed) against all
   layers, same weights, same batches, alternating `--repeats` times; the ratio of the best times is the
   speed-up of the truncated biLM.

Timing uses `time.perf_counter` around whole epochs (data loading and collation included). The machine may be
shared: other processes slow every figure, so the load average is printed before and after.
"""

from __future__ import annotations

import argparse
import os
import random
import shlex
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch
from datasets import Dataset
from harness_reports import ratio
from harness_timing import interleaved_rounds
from torch.utils.data import DataLoader
from transformers import DataCollatorForTokenClassification

from elmo_transformers.training.finetuning.collator import ElmoCachedFeaturesCollator
from elmo_transformers.training.finetuning.feature_cache import cache_bilm_features
from modeling_elmo import ElmoConfig, ElmoForTokenClassification, ElmoModel, ElmoTokenizer

NUM_LABELS = 5


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sentences", type=int, default=200, help="training sentences (default 200)")
    parser.add_argument("--min-words", type=int, default=5, help="shortest sentence (default 5)")
    parser.add_argument("--max-words", type=int, default=20, help="longest sentence (default 20)")
    parser.add_argument("--epochs", type=int, default=3, help="training epochs (default 3)")
    parser.add_argument("--batch-size", type=int, default=32, help="sentences per batch (default 32)")
    parser.add_argument("--repeats", type=int, default=2, help="timed passes of each biLM forward (default 2)")
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads (default 1, the fastest on a shared 2-core machine; 0: all)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the weights and the data (default 0)")
    return parser.parse_args(argv)


def random_dataset(tokenizer: ElmoTokenizer, arguments: argparse.Namespace) -> Dataset:
    """Sentences of random lowercase words (2-10 letters), each word labelled with a random class."""
    rng = random.Random(arguments.seed)
    rows = []
    for _ in range(arguments.sentences):
        length = rng.randint(arguments.min_words, arguments.max_words)
        words = ["".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(2, 10))) for _ in range(length)]
        labels = [rng.randrange(NUM_LABELS) for _ in words]
        rows.append(dict(tokenizer(words, is_split_into_words=True), labels=labels))
    return Dataset.from_list(rows)


def train_epochs(
    model: ElmoForTokenClassification, dataset: Dataset, collator: Callable, arguments: argparse.Namespace
) -> tuple[list[float], float]:
    """Train the head for `--epochs` epochs; returns the seconds of each epoch and the last epoch's mean loss.
    Seeded, so that two runs draw the same batches and dropout masks."""
    torch.manual_seed(arguments.seed)
    generator = torch.Generator().manual_seed(arguments.seed)
    loader = DataLoader(
        dataset, batch_size=arguments.batch_size, shuffle=True, collate_fn=collator, generator=generator
    )
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
    model.train()
    seconds, losses = [], []
    for _ in range(arguments.epochs):
        start = time.perf_counter()
        losses = []
        for batch in loader:
            loss = model(**batch).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            losses.append(loss.item())
        seconds.append(time.perf_counter() - start)
    return seconds, sum(losses) / len(losses)


def time_bilm_forward(model: ElmoModel, batches: list[dict[str, torch.Tensor]], num_layers: int | None = None) -> float:
    """Seconds of one inference pass of the biLM over `batches` (its first `num_layers` biLSTM layers; all by
    default)."""
    start = time.perf_counter()
    with torch.inference_mode():
        for batch in batches:
            model(**batch, output_hidden_states=True, num_layers=num_layers)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> None:
    arguments = parse_arguments(argv)
    if arguments.threads:
        torch.set_num_threads(arguments.threads)
    command = ["python", "benchmarks/speed/bench_feature_cache.py", *(sys.argv[1:] if argv is None else argv)]
    print(f"$ {shlex.join(command)}")
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), {os.cpu_count()} cores")
    print(f"load average before: {' '.join(f'{load:.2f}' for load in os.getloadavg())}")

    torch.manual_seed(arguments.seed)
    model = ElmoForTokenClassification(ElmoConfig(num_labels=NUM_LABELS))
    bilm_parameters = sum(parameter.numel() for parameter in model.elmo.parameters())
    tokenizer = ElmoTokenizer()
    dataset = random_dataset(tokenizer, arguments)
    words = sum(len(row) for row in dataset["labels"])
    print(f"model: random weights, ElmoConfig() defaults ({bilm_parameters / 1e6:.1f}M biLM parameters), frozen biLM")
    print(f"data: {len(dataset)} sentences, {words} words; {arguments.epochs} epochs, batch {arguments.batch_size}")
    head_state = {name: tensor.clone() for name, tensor in model.state_dict().items() if not name.startswith("elmo.")}

    live_seconds, live_loss = train_epochs(model, dataset, DataCollatorForTokenClassification(tokenizer), arguments)
    model.load_state_dict(head_state, strict=False)
    with tempfile.TemporaryDirectory() as cache_dir:
        start = time.perf_counter()
        cached_dataset = cache_bilm_features(dataset, model, cache_dir, batch_size=arguments.batch_size)
        build_seconds = time.perf_counter() - start
        cache_mib = sum(path.stat().st_size for path in Path(cache_dir).iterdir()) / 2**20
        cached_seconds, cached_loss = train_epochs(model, cached_dataset, ElmoCachedFeaturesCollator(), arguments)
    live_total, cached_total = sum(live_seconds), build_seconds + sum(cached_seconds)
    print()
    print(f"live biLM:      {live_total:8.1f} s  (epochs: {', '.join(f'{s:.1f}' for s in live_seconds)} s)")
    print(
        f"feature cache:  {cached_total:8.1f} s  (build {build_seconds:.1f} s, {cache_mib:.0f} MiB float32; "
        f"epochs: {', '.join(f'{s:.2f}' for s in cached_seconds)} s)"
    )
    print(f"speed-up of the cache over {arguments.epochs} epochs: {ratio(live_total, cached_total)}")
    print(f"last epoch's mean loss: live {live_loss:.6f}, cached {cached_loss:.6f}")

    full = model.elmo.eval()
    truncated = ElmoConfig(mix_layers=[0, 1]).mix_depth  # the biLSTM layers a head mixing layers 0 and 1 runs
    collate = DataCollatorForTokenClassification(tokenizer)
    batches = []
    for start in range(0, len(dataset), arguments.batch_size):
        batch = collate(list(dataset.select(range(start, min(start + arguments.batch_size, len(dataset))))))
        batches.append({"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"]})
    layers = {"all layers": None, "mix_layers=[0, 1]": truncated}
    seconds = interleaved_rounds(
        list(layers), arguments.repeats, lambda _, name: time_bilm_forward(full, batches, num_layers=layers[name])
    )
    best = {name: min(times) for name, times in seconds.items()}
    print()
    print(f"biLM forward, batches of {arguments.batch_size} ({words} words), best of {arguments.repeats}:")
    for name, least in best.items():
        print(f"  {name:18s} {least:7.1f} s  ({words / least:6.0f} words/s)")
    print(f"speed-up of mix_layers=[0, 1] over all layers: {ratio(best['all layers'], best['mix_layers=[0, 1]'])}")
    print(f"load average after: {' '.join(f'{load:.2f}' for load in os.getloadavg())}")


if __name__ == "__main__":
    main()
