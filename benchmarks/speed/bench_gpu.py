"""GPU benchmark: ``ElmoModel`` against AllenNLP 0.9.0's ``_ElmoBiLm`` on one GPU, forward and end to end, and the
biLM's training step, written as Markdown. On a machine without a CUDA GPU it says so and exits 0.

    python benchmarks/speed/bench_gpu.py --allennlp-wheel allennlp-0.9.0-py3-none-any.whl --output gpu.md
    python benchmarks/speed/bench_gpu.py --device cpu --shape small --batches 2,4 --seconds 0.2 \\
        --training-streams 4 --training-steps 1    # a smoke run of every section, anywhere

What one run measures (about 4 minutes on an H200 with the defaults):

1. **Forward**, inputs already on the device (character ids made beforehand), words/s at each ``--batches`` size:
   AllenNLP ``_ElmoBiLm`` in float32 (LSTM state reset before every batch), this package in float32,
   ``mix_layers=[0, 1]`` (the first LSTM layer only), bfloat16 and float16 (``model.to(dtype)``). Both sides load
   the same random weights of the released ``--shape`` (``options.json`` + ``weights.hdf5`` in the original
   layout, scaled like a trained model's) and see the same deterministic sentences of 10-30 words (Zipf over the
   default model's vocabulary, 5% awkward words; ``harness_corpora.make_sentences``).
2. **Exactness** at every batch size: the largest difference, over every layer and word, of each configuration to
   this package in float64 on the same device, and of AllenNLP to it.
3. **End to end**, words in and float32 NumPy vectors of every layer out: AllenNLP's ``batch_to_ids`` + forward +
   copy, against ``ElmoTokenizer`` + forward + copy, in float32 and bfloat16.
4. **Training step** (``benchmarks/speed/bench_training.py`` in a subprocess per setting: ``LmTrainer``'s step with
   the sampled softmax, windows of ``--training-streams`` streams x 20 words) in float32 and with accelerate's
   bfloat16 autocast (``ACCELERATE_MIXED_PRECISION=bf16``).

AllenNLP comes from ``--allennlp-wheel`` (the wheel is imported as it is: no pip, no network; a missing or
Python 3.12-incompatible ``overrides`` package is replaced by a no-op decorator, see ``benchmarks/allennlp/stubs.py``),
or from an installed ``allennlp``; without either its rows are left out. Nothing here needs the ``datasets`` package.
Timing: ``torch.cuda.synchronize()`` around each timed call, one untimed warm-up per configuration and batch size,
batches cycled until ``--seconds`` have passed.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from harness_backends import ALLENNLP, allennlp_stubs, encode_batch, ensure_weights, lstm_layers_run, with_mix_layers
from harness_corpora import batches_of, make_sentences, write_sentences
from harness_flops import synchronizer
from harness_reports import markdown_table, ratio, write_through_rename

from elmo_transformers.conversion.allennlp import load_allennlp_model
from elmo_transformers.conversion.variants import VARIANTS
from elmo_transformers.inference.options import EmbedOptions
from elmo_transformers.inference.run import embed_file
from modeling_elmo import ElmoModel, ElmoTokenizer

HERE = Path(__file__).resolve().parent
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
OURS = "ElmoModel"
MIXED = "ElmoModel, mix_layers=[0, 1]"


@dataclass
class Cell:
    """One configuration at one batch size: its speed and its largest difference to the float64 run."""

    words_per_s: float
    max_diff: float | None = None


def words_per_second(
    run: Callable[[Any], Any], inputs: Sequence[Any], words: Sequence[int], device: torch.device, seconds: float
) -> float:
    """Time ``run`` over ``inputs`` (cycled, one untimed warm-up call first) until ``seconds`` have passed."""
    sync = synchronizer(device)
    run(inputs[0])
    sync()
    done_words, elapsed, index = 0, 0.0, 0
    while elapsed < seconds or index == 0:
        start = time.perf_counter()
        run(inputs[index % len(inputs)])
        sync()
        elapsed += time.perf_counter() - start
        done_words += words[index % len(inputs)]
        index += 1
    return done_words / elapsed


def max_difference(layers: Sequence[torch.Tensor], reference: Sequence[torch.Tensor]) -> float:
    return max(
        float((layer.double() - expected).abs().max()) for layer, expected in zip(layers, reference, strict=True)
    )


class AllenNLPSide:
    """AllenNLP 0.9.0's `_ElmoBiLm` on the device, with its own `batch_to_ids`."""

    def __init__(self, options_path: Path, weights_path: Path, device: torch.device) -> None:
        elmo_bilm_class, self.batch_to_ids, self.remove_boundaries = allennlp_stubs.import_elmo()
        self.bilm = elmo_bilm_class(str(options_path), str(weights_path), requires_grad=False).to(device).eval()
        self.device = device

    def ids(self, sentences: list[list[str]]) -> torch.Tensor:
        return self.batch_to_ids(sentences).to(self.device)

    def layers(self, char_ids: torch.Tensor) -> list[torch.Tensor]:
        """Every layer (batch, words, 2P), sentence markers removed, from a zero LSTM state."""
        self.bilm._elmo_lstm.reset_states()
        output = self.bilm(char_ids)
        return [self.remove_boundaries(layer, output["mask"])[0] for layer in output["activations"]]


def import_allennlp(wheel: str | None) -> str | None:
    """Make AllenNLP importable; returns why it is not (None when it is)."""
    if wheel:
        if not Path(wheel).is_file():
            return f"--allennlp-wheel {wheel}: no such file"
        sys.path.insert(0, str(Path(wheel).resolve()))  # a pure-Python wheel imports as a zip
    try:
        allennlp_stubs.import_elmo()
    except ImportError as error:
        return f"AllenNLP 0.9.0 is not importable ({error}): pass --allennlp-wheel"
    return None


def our_configurations(args, model_source: Callable[[list[int] | None], ElmoModel], device) -> dict[str, ElmoModel]:
    """This package's models on the device, by row name: each --dtypes, and float32 with mix_layers=[0, 1]."""
    models = {
        f"{OURS} {name}": model_source(None).to(device, dtype) for name, dtype in DTYPES.items() if name in args.dtypes
    }
    models[f"{MIXED} float32"] = model_source([0, 1]).to(device)
    return models


def bench_forward(args, models: dict[str, ElmoModel], float64: ElmoModel, allennlp: AllenNLPSide | None, device):
    """Per row name and batch size: forward words/s with the largest difference to `float64`, and end-to-end words/s
    (AllenNLP, and this package in float32 and bfloat16)."""
    tokenizer = ElmoTokenizer()
    forward: dict[str, dict[int, Cell]] = {}
    end_to_end: dict[str, dict[int, float]] = {}
    for batch_size in args.batches:
        sentences = make_sentences(args.seed, batch_size, batch_size * args.batches_per_size, 10, 30)
        batches = batches_of(sentences, batch_size)
        words = [sum(map(len, batch)) for batch in batches]
        encoded = [encode_batch(tokenizer, batch).to(device) for batch in batches]
        with torch.no_grad():
            reference = float64(**encoded[0], output_hidden_states=True).hidden_states
            if allennlp:
                name = f"{ALLENNLP} float32"
                char_ids = [allennlp.ids(batch) for batch in batches]
                cell = Cell(words_per_second(allennlp.layers, char_ids, words, device, args.seconds))
                cell.max_diff = max_difference(allennlp.layers(char_ids[0]), reference)
                forward.setdefault(name, {})[batch_size] = cell
                end_to_end.setdefault(name, {})[batch_size] = words_per_second(
                    lambda batch: [layer.float().cpu().numpy() for layer in allennlp.layers(allennlp.ids(batch))],
                    batches, words, device, args.seconds,
                )  # fmt: skip
            for name, model in models.items():

                def run(inputs, model=model):
                    return model(**inputs, output_hidden_states=True).hidden_states

                cell = Cell(words_per_second(run, encoded, words, device, args.seconds))
                cell.max_diff = max_difference(run(encoded[0]), reference[: 1 + lstm_layers_run(model)])
                forward.setdefault(name, {})[batch_size] = cell
                if not name.startswith(MIXED) and model.dtype in (torch.float32, torch.bfloat16):

                    def embed(batch, model=model):
                        inputs = encode_batch(tokenizer, batch).to(device)
                        layers = model(**inputs, output_hidden_states=True).hidden_states
                        return torch.stack(layers, dim=1).float().cpu().numpy()

                    end_to_end.setdefault(name, {})[batch_size] = words_per_second(
                        embed, batches, words, device, args.seconds
                    )
        print(f"batch {batch_size}: done", flush=True)
    return forward, end_to_end


def bench_elmo_embed(args, model: ElmoModel, device: torch.device, work: Path) -> list[str]:
    """`elmo-embed` (elmo_transformers.inference.run.embed_file) over --embed-lines generated lines, per dtype:
    words/s."""
    folder = work / "model"
    model.save_pretrained(folder)
    ElmoTokenizer().save_pretrained(folder)
    write_sentences(work / "input.txt", make_sentences(args.seed, 0, args.embed_lines, 10, 30))
    rows = []
    for dtype in ("float32", "bfloat16"):
        options = EmbedOptions(
            work / "input.txt", work / f"{dtype}.hdf5", model=str(folder), compute_dtype=dtype, device=str(device),
            forget_sentences=True,
        )  # fmt: skip
        summary = embed_file(options)
        rows.append([dtype, f"{summary.embedded_words:,}", f"{summary.embedded_words / summary.seconds:,.0f}"])
    return [
        f"### `elmo-embed --device {device} --layers all`, end to end ({args.embed_lines:,} lines of 10-30 words)",
        "",
        markdown_table(rows, ["dtype", "words", "words/s"]),
        "",
    ]


def forward_tables(forward: dict[str, dict[int, Cell]], end_to_end: dict[str, dict[int, float]], args) -> list[str]:
    header = ["", *(f"batch {size}" for size in args.batches)]
    baseline = forward.get(f"{ALLENNLP} float32", {})

    def speed(name: str, size: int, value: float) -> str:
        if name.startswith(ALLENNLP) or size not in baseline:
            return f"{value:,.0f}"
        return f"{value:,.0f} ({ratio(value, baseline[size].words_per_s)})"

    lines = [
        f"### Forward, inputs on the device (words/s; ratio to {ALLENNLP} float32)",
        "",
        markdown_table(
            [
                [name, *(speed(name, size, cells[size].words_per_s) for size in args.batches)]
                for name, cells in forward.items()
            ],
            header,
        ),
        "",
        "### Largest difference to this package in float64 on the same device, every layer and word",
        "",
        markdown_table(
            [[name, *(f"{cells[size].max_diff:.1e}" for size in args.batches)] for name, cells in forward.items()],
            header,
        ),
        "",
        "### End to end: words in, float32 NumPy vectors of every layer out (words/s)",
        "",
    ]
    e2e_baseline = end_to_end.get(f"{ALLENNLP} float32", {})
    rows = []
    for name, cells in end_to_end.items():
        row = [name]
        for size in args.batches:
            ratio_text = (
                ""
                if name.startswith(ALLENNLP) or size not in e2e_baseline
                else f" ({ratio(cells[size], e2e_baseline[size])})"
            )
            row.append(f"{cells[size]:,.0f}{ratio_text}")
        rows.append(row)
    return [*lines, markdown_table(rows, header), ""]


def bench_training(args, device: torch.device) -> list[str]:
    """`bench_training.py` in a subprocess per (streams, precision): a fresh accelerate state for each."""
    rows = []
    shape = "original" if args.shape == "original" else "default"
    for streams in args.training_streams:
        row = [str(streams)]
        for precision in args.training_precisions:
            environment = {**os.environ, "ACCELERATE_MIXED_PRECISION": "bf16" if precision == "bfloat16" else "no"}
            if device.type != "cuda":
                environment["CUDA_VISIBLE_DEVICES"] = ""
            command = [
                sys.executable, str(HERE / "bench_training.py"), "--shapes", shape, "--batch_size", str(streams),
                "--steps", str(args.training_steps), "--warmup", "1", "--json",
            ]  # fmt: skip
            completed = subprocess.run(command, capture_output=True, text=True, env=environment, check=False)
            if completed.returncode != 0:
                row.append(f"failed: {completed.stderr.strip().splitlines()[-1][:120]}")
                continue
            result = json.loads(completed.stdout.strip().splitlines()[-1])
            row.append(f"{result['words_per_second']:,.0f} ({result['share_of_peak']:.1%} of the fp32 peak)")
        rows.append(row)
        print(f"training, {streams} streams: done", flush=True)
    return [
        f"### Training step, {shape} shape, windows of streams x 20 words (target words/s of both directions)",
        "",
        markdown_table(rows, ["streams", *args.training_precisions]),
        "",
    ]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--device", default="cuda", help="cuda (default), cuda:1, ... or cpu for a smoke run")
    parser.add_argument(
        "--shape", choices=sorted(VARIANTS), default="original", help="released shape (default original)"
    )
    parser.add_argument("--options-file", help="an original options.json to use instead of --shape's random weights")
    parser.add_argument("--weights-file", help="its weights.hdf5 (with --options-file)")
    parser.add_argument("--batches", default="32,128,512,2048", help="batch sizes (default 32,128,512,2048)")
    parser.add_argument("--batches-per-size", type=int, default=4, help="distinct batches per size (default 4)")
    parser.add_argument("--dtypes", default="float32,bfloat16,float16", help="of this package (default all three)")
    parser.add_argument("--seconds", type=float, default=3.0, help="timed seconds per configuration (default 3)")
    parser.add_argument("--embed-lines", type=int, default=50_000, help="lines for elmo-embed (default 50000; 0: skip)")
    parser.add_argument("--training-streams", default="128,512", help="streams per training step (default 128,512)")
    parser.add_argument("--training-precisions", default="float32,bfloat16", help="(default float32,bfloat16)")
    parser.add_argument("--training-steps", type=int, default=10, help="timed training steps (default 10)")
    parser.add_argument("--allennlp-wheel", metavar="WHL", help="allennlp-0.9.0-py3-none-any.whl (else: installed)")
    parser.add_argument("--work-dir", default=os.environ.get("ELMO_BENCH_WORK", "/tmp/elmo-bench"), help="weights")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", help="also write the Markdown here")
    args = parser.parse_args(argv)
    if bool(args.options_file) != bool(args.weights_file):
        parser.error("--options-file and --weights-file go together")
    args.batches = [int(size) for size in args.batches.split(",")]
    args.dtypes = args.dtypes.split(",")
    args.training_streams = [int(size) for size in args.training_streams.split(",") if size]
    args.training_precisions = args.training_precisions.split(",")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print("bench_gpu: no CUDA GPU on this machine (torch.cuda.is_available() is False): nothing to measure")
        return 0
    if args.options_file:
        options_path, weights_path = Path(args.options_file), Path(args.weights_file)
    else:
        options_path, weights_path = ensure_weights(Path(args.work_dir), args.seed, args.shape)
    options = json.loads(options_path.read_text())

    def model_source(mix_layers: list[int] | None) -> ElmoModel:
        """A freshly converted model (one in memory per configuration), running only the layers `mix_layers` needs."""
        model = load_allennlp_model(options, weights_path, progress=False)
        return model if mix_layers is None else with_mix_layers(model, mix_layers)

    why_not = import_allennlp(args.allennlp_wheel)
    allennlp = None if why_not else AllenNLPSide(options_path, weights_path, device)
    models = our_configurations(args, model_source, device)
    float64 = model_source(None).to(device, torch.float64)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else f"CPU ({torch.get_num_threads()} threads)"
    lines = [
        f"## ELMo on {name}: {args.options_file or f'the {args.shape} shape with random weights'} "
        f"({sum(p.numel() for p in float64.parameters()):,} parameters)",
        "",
        f"{datetime.date.today()}, torch {torch.__version__}, `python benchmarks/speed/bench_gpu.py "
        f"{' '.join(argv if argv is not None else sys.argv[1:])}`"
        + (f"; AllenNLP left out: {why_not}" if why_not else ""),
        "",
    ]
    lines += forward_tables(*bench_forward(args, models, float64, allennlp, device), args)
    del models, float64, allennlp
    if args.embed_lines:
        with tempfile.TemporaryDirectory() as work:
            lines += bench_elmo_embed(args, model_source(None), device, Path(work))
    if args.training_streams:
        lines += bench_training(args, device)
    text = "\n".join(lines)
    print(text)
    if args.output:
        write_through_rename(Path(args.output), text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
