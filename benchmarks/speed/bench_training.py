"""Training throughput of the biLM (training/pretrain.py's step) and the share of the machine's matmul peak.

Runs LmTrainer's training step on random text for each model shape given, after measuring the float32
matrix-multiply peak in the same run, and prints words/s (target words of both directions) and the share
of the peak the step's arithmetic reaches. Runs on a GPU when one is available (`--device cuda`).

    python benchmarks/speed/bench_training.py                    # the default model's shape and the original's
    python benchmarks/speed/bench_training.py --shapes default --steps 20 --threads 1
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

import torch
from harness_corpora import REPOSITORY
from harness_flops import flops_per_position, measure_matmul_peak

from elmo_transformers.conversion.variants import VARIANTS
from elmo_transformers.training.pretraining.pretrain import LmTrainer, parse_args
from modeling_elmo.text_elmo import BILM_TF_SPECIAL_WORDS, VOCABULARY_FILE

SHAPES = {
    "default": (json.loads((REPOSITORY / "training/recipes/default_model_options.json").read_text()), 16_000),
    "original": ({**VARIANTS["original"].options, "n_negative_samples_batch": 8192}, 100_000),
}


def training_flops_per_word(trainer: LmTrainer) -> float:
    """FLOPs per target word of one direction: 3x the forward (forward + backward pass) of the token layer, that
    direction's LSTMs and the softmax over the sampled candidates (or the whole vocabulary)."""
    model = trainer.accelerator.unwrap_model(trainer.model)
    per_position = flops_per_position(model.config)
    forward = per_position["cnn"] + per_position["highway"] + per_position["projection"] + per_position["lstm"] / 2
    softmax_rows = (model.num_sampled or model.config.vocab_size - 1) + 1
    forward += 2 * model.config.projection_dim * softmax_rows
    return 3 * forward


def write_random_corpus(folder: Path, vocab_size: int, sentences: int = 4000) -> None:
    rng = random.Random(0)
    words = [f"w{index}" for index in range(vocab_size - len(BILM_TF_SPECIAL_WORDS))]
    lines = [" ".join(rng.choice(words) for _ in range(rng.randint(10, 30))) for _ in range(sentences)]
    (folder / "train.txt").write_text("\n".join(lines) + "\n")
    (folder / VOCABULARY_FILE).write_text("\n".join([*BILM_TF_SPECIAL_WORDS, *words]) + "\n")


def bench_shape(name: str, args: argparse.Namespace, peak: float) -> dict[str, float]:
    options, vocab_size = SHAPES[name]
    with tempfile.TemporaryDirectory() as work:
        folder = Path(work)
        write_random_corpus(folder, vocab_size)
        (folder / "options.json").write_text(json.dumps(options))
        trainer = LmTrainer(
            parse_args([
                "--train_files", str(folder / "train.txt"), "--vocab_file", str(folder / VOCABULARY_FILE),
                "--options_file", str(folder / "options.json"), "--output_dir", str(folder / "out"),
                "--per_device_train_batch_size", str(args.batch_size), "--unroll_steps", "20",
                "--max_steps", str(args.steps),
            ])
        )  # fmt: skip
        trainer.model.train()
        for _ in range(args.warmup):
            trainer._train_step()
        start = time.perf_counter()
        for _ in range(args.steps):
            trainer._train_step()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        elapsed = time.perf_counter() - start
    words_per_second = 2 * args.batch_size * 20 * args.steps / elapsed
    gflops = words_per_second * training_flops_per_word(trainer) / 1e9
    return {"words_per_second": words_per_second, "gflops": gflops, "share_of_peak": gflops / peak}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", nargs="+", choices=sorted(SHAPES), default=["default", "original"])
    parser.add_argument("--batch_size", type=int, default=64, help="Streams per step (bilm-tf: 128 per GPU).")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--threads", type=int, help="torch threads (default: torch's choice)")
    parser.add_argument("--json", action="store_true", help="print one JSON line per shape instead of the table")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    peak = measure_matmul_peak(torch.float32, device="cuda" if torch.cuda.is_available() else "cpu")["gflops"]
    if args.json:
        for name in args.shapes:
            print(json.dumps({"shape": name, "peak_gflops": peak, **bench_shape(name, args, peak)}))
        return
    device = torch.cuda.get_device_name() if torch.cuda.is_available() else f"CPU, {torch.get_num_threads()} threads"
    print(f"{device}: float32 matmul peak {peak:.1f} GFLOP/s")
    print("| shape | words/s (both directions) | GFLOP/s | share of peak |")
    print("| --- | --- | --- | --- |")
    for name in args.shapes:
        result = bench_shape(name, args, peak)
        print(
            f"| {name} | {result['words_per_second']:,.0f} | {result['gflops']:.1f} | {result['share_of_peak']:.0%} |"
        )


if __name__ == "__main__":
    main()
