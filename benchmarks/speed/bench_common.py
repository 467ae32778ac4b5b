"""What the speed benchmarks share: the AllenNLP side's modules, the random full-size weights (and their converted and
exported folders) and the generated sentences both sides run, the FLOPs of a biLM position and the machine's matmul
peak, the model that runs the ``mix_layers=[0, 1]`` rows, and the Markdown and run details of the reports.

The speed scripts import it from their own folder (a script run puts that folder first on ``sys.path``).
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import os
import platform
import random
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import torch
import torch.nn.functional as F

from elmo_transformers.conversion.variants import VARIANTS
from modeling_elmo import DEFAULT_MODEL, ElmoConfig, ElmoModel
from modeling_elmo.text_elmo import BILM_TF_SPECIAL_WORDS

REPOSITORY = Path(__file__).resolve().parents[2]
ALLENNLP_FOLDER = REPOSITORY / "benchmarks" / "allennlp"
ALLENNLP = "AllenNLP 0.9.0 `_ElmoBiLm`"
DEFAULT_ALLENNLP_VENV = os.environ.get("ELMO_BENCH_ALLENNLP_VENV", "/tmp/elmo-bench-allennlp-venv")


def module_from_file(path: Path) -> ModuleType:
    """The module of a Python file in another folder, imported by its path: a speed script's ``sys.path`` holds
    only its own folder."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# The AllenNLP side (standard library only: its workers import these in AllenNLP's venv, where this package is absent).
worker_protocol = module_from_file(ALLENNLP_FOLDER / "worker_protocol.py")
allennlp_stubs = module_from_file(ALLENNLP_FOLDER / "stubs.py")


# ----------------------------------------------------------------------------------------------------------------
# Inputs: weights and sentences

# Words a tokenizer must survive: non-ASCII, punctuation, clitics, numbers and a word over 48 UTF-8 bytes (cut).
AWKWARD_WORDS = [
    "naïve", "café", "Zürich", "São", "Paulo", "Straße", "façade", "résumé", "Москва", "Ελληνικά", "東京",
    "日本語", "한국어", "עברית", "😀", "—", "…", ",", ".", ";", "'s", "n't", "(", ")", "$", "3.14", "1,000",
    "U.S.", "e-mail", "O'Neill", "supercalifragilisticexpialidocious-antidisestablishmentarianism",
]  # fmt: skip
# The bundled default model's vocabulary: 16,000 words of English text, most frequent first.
RANKED_WORDS = [
    line.strip()
    for line in (REPOSITORY / "modeling_elmo" / "default_model" / "vocab.txt").read_text(encoding="utf-8").splitlines()
    if line.strip() not in (*BILM_TF_SPECIAL_WORDS, "")
]


def ensure_weights(work_dir: Path, seed: int, shape: str = "original") -> tuple[Path, Path]:
    """options.json + weights.hdf5 of a released shape (``elmo_transformers.conversion.variants.VARIANTS``, default the
    original model's) with random weights, written once per shape and seed."""
    options = VARIANTS[shape].options
    folder = work_dir / f"{shape}-seed{seed}"
    options_path, weights_path, done = folder / "options.json", folder / "weights.hdf5", folder / "complete"
    if done.is_file() and json.loads(options_path.read_text()) == options:
        return options_path, weights_path
    original_files = module_from_file(REPOSITORY / "tests" / "helpers" / "original_files.py")
    print(f"writing random weights of the {shape} shape to {folder} ...", flush=True)
    original_files.write_original_model(folder, options, seed=seed)
    done.write_text("")
    return options_path, weights_path


def converted_model(work_dir: Path, seed: int, shape: str = "original") -> Path:
    """The model folder of ``ensure_weights``' random weights, converted once with ``elmo-convert allennlp``."""
    from elmo_transformers.conversion.cli import main as convert

    options, weights = ensure_weights(work_dir, seed, shape)
    folder = options.parent / "converted"
    if not (folder / "config.json").is_file():
        assert convert(["allennlp", "--options", str(options), "--weights", str(weights), "--output", str(folder)]) == 0
    return folder


def exported_graphs(model: Path, folder: Path) -> Path:
    """``folder``: ``model`` exported once with ``elmo-convert onnx --quantize int8`` (the float32 and int8 graphs)."""
    from elmo_transformers.common.onnx_layout import QUANTIZED_GRAPH
    from elmo_transformers.conversion.cli import main as convert

    if not (folder / QUANTIZED_GRAPH).is_file():
        arguments = ["onnx", "--model", str(model), "--output", str(folder), "--quantize", "int8", "--overwrite"]
        assert convert(arguments) == 0
    return folder


def make_sentences(seed: int, batch_size: int, count: int, min_words: int, max_words: int) -> list[list[str]]:
    """Random sentences whose words repeat as in real text: Zipf's law (the word of rank r with probability
    ~ 1/r) over ``RANKED_WORDS``, and one word in 20 from ``AWKWARD_WORDS``.

    How often words repeat matters because each distinct word of a batch goes through the character CNN once.
    With 10-30 words per sentence, 58% of a batch of 32's words are distinct here; in the default model's
    held-out text (Wikipedia, Shakespeare, the King James Bible) 53% are: these batches repeat a little less.
    """
    rng = random.Random(f"elmo-bench-{seed}-{batch_size}")
    cumulative = list(itertools.accumulate(1.0 / rank for rank in range(1, len(RANKED_WORDS) + 1)))

    def word() -> str:
        if rng.random() < 0.05:
            return rng.choice(AWKWARD_WORDS)
        return rng.choices(RANKED_WORDS, cum_weights=cumulative)[0]

    return [[word() for _ in range(rng.randint(min_words, max_words))] for _ in range(count)]


def sentence_batches(
    spec: str,
    seed: int,
    min_words: int,
    max_words: int,
    edit: Callable[[list[list[str]]], list[list[str]]] = lambda sentences: sentences,
) -> Iterator[tuple[int, list[list[list[str]]], list[list[str]]]]:
    """For each ``SIZE:COUNT`` of ``spec`` (``32:20,128:5``): the batch size, COUNT batches of generated sentences
    (all of them passed through ``edit`` first) and a warm-up batch of other sentences."""
    for item in spec.split(","):
        size, _, count = item.partition(":")
        batch_size, n_batches = int(size), int(count or 1)
        sentences = edit(make_sentences(seed, batch_size, batch_size * n_batches, min_words, max_words))
        batches = [sentences[i : i + batch_size] for i in range(0, len(sentences), batch_size)]
        yield batch_size, batches, make_sentences(seed + 1, batch_size, min(batch_size, 8), min_words, max_words)


# ----------------------------------------------------------------------------------------------------------------
# The exported graphs (bench_onnx.py, bench_onnx_int8.py)


def add_onnx_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of the ONNX benchmarks: the model (a released shape's random weights, or the bundled model), the
    timed batches, the threads, the sentences' lengths, the work folder."""
    parser.add_argument("--shape", default="original", help="released shape of the random weights")
    parser.add_argument("--bundled", action="store_true", help="the bundled model instead of random weights")
    parser.add_argument("--batches", default="32:3", help="SIZE:COUNT,... batches timed (default %(default)s)")
    parser.add_argument("--threads", type=int, default=1, help="threads of each backend (default %(default)s)")
    parser.add_argument("--min-words", type=int, default=10)
    parser.add_argument("--max-words", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work-dir", type=Path, default=Path("/tmp/elmo-bench-onnx"))


def onnx_folders(args: argparse.Namespace) -> tuple[Path, Path]:
    """The PyTorch model folder (the bundled model, or the random-weight shape converted once with `elmo-convert
    allennlp`) and its ONNX folder (`elmo-convert onnx --quantize int8`, once)."""
    if args.bundled:
        model, name = Path(DEFAULT_MODEL), "bundled"
    else:
        model, name = converted_model(args.work_dir, args.seed, args.shape), f"{args.shape}-seed{args.seed}"
    return model, exported_graphs(model, args.work_dir / f"{name}-onnx")


def time_backends(
    backends: dict[str, Callable[[Any], object]], batches: list[list[list[str]]], encode: Callable[[Any], Any]
) -> tuple[int, dict[str, float]]:
    """The words of `batches` and each backend's seconds over them, every batch run on each backend in turn, so that
    the machine's load hits all alike."""
    seconds, words = dict.fromkeys(backends, 0.0), 0
    for batch in batches:
        inputs = encode(batch)
        words += sum(map(len, batch))
        for label, run in backends.items():
            start = time.perf_counter()
            run(inputs)
            seconds[label] += time.perf_counter() - start
    return words, seconds


def graph_backends(model_folder: Path, graphs: dict[str, Any]) -> dict[str, Callable[[dict], object]]:
    """Each backend as a function of the tokenizer's batch: PyTorch's `ElmoModel` float32 of `model_folder` ("PyTorch
    float32"), then each onnxruntime session of `graphs` by its label (the graphs take the tokenizer's output as it
    is)."""
    model = ElmoModel.from_pretrained(model_folder).eval()

    def pytorch(inputs: dict[str, Any]) -> None:
        with torch.inference_mode():
            model(**{name: torch.from_numpy(array) for name, array in inputs.items()}, output_hidden_states=True)

    backends: dict[str, Callable[[dict], object]] = {"PyTorch float32": pytorch}
    for label, session in graphs.items():
        backends[label] = lambda inputs, session=session: session.run(["hidden_states"], inputs)
    return backends


def speed_rows(
    args: argparse.Namespace,
    backends: dict[str, Callable[[Any], object]],
    encode: Callable[[Any], Any],
    each_size: Callable[[list[list[list[str]]]], None] = lambda batches: None,
) -> list[list[str]]:
    """For each batch size of `--batches`: a warm-up batch on every backend, then the timed batches
    (`time_backends`), `each_size` called with them, and a row per backend (backend, batch, batches, words/s, the
    ratio to PyTorch float32)."""
    rows = []
    for batch_size, batches, warmup in sentence_batches(args.batches, args.seed, args.min_words, args.max_words):
        warm_inputs = encode(warmup)
        for run in backends.values():
            run(warm_inputs)
        words, seconds = time_backends(backends, batches, encode)
        each_size(batches)
        baseline = words / seconds["PyTorch float32"]
        for label in backends:
            speed = words / seconds[label]
            rows.append([label, str(batch_size), str(len(batches)), f"{speed:,.0f}", f"{speed / baseline:.2f}x"])
    return rows


# ----------------------------------------------------------------------------------------------------------------
# The mix_layers=[0, 1] rows


class MixedLayersModel(ElmoModel):
    """``ElmoModel`` running only the biLSTM layers its config's mix reads (``config.mix_depth``), as the task heads
    run it: the ``mix_layers=[0, 1]`` rows. (``ElmoModel`` itself computes every layer, whatever the config.)"""

    def forward(self, *args, **kwargs):
        return super().forward(*args, num_layers=self.config.mix_depth, **kwargs)


def with_mix_layers(model: ElmoModel, mix_layers: list[int]) -> MixedLayersModel:
    """``model``'s weights in a ``MixedLayersModel`` whose config mixes ``mix_layers``."""
    mixed = MixedLayersModel(ElmoConfig.from_dict({**model.config.to_dict(), "mix_layers": mix_layers})).eval()
    mixed.load_state_dict(model.state_dict())
    return mixed


def lstm_layers_run(model: ElmoModel) -> int:
    """LSTM layers the model runs: all of them but in a ``MixedLayersModel``."""
    return model.config.mix_depth if isinstance(model, MixedLayersModel) else model.config.num_hidden_layers


# ----------------------------------------------------------------------------------------------------------------
# FLOPs and the machine's matmul peak


def flops_per_position(config: ElmoConfig, lstm_layers: int | None = None) -> dict[str, int]:
    """FLOPs of the biLM for one position (a word, or the <S>/</S> added around each sentence): 2 x multiply-adds.

    With E = char_embedding_dim, K = max_characters_per_token, F = sum of the filter counts, P = projection_dim,
    C = cell_size, L = the LSTM layers computed (default num_hidden_layers; 1 for mix_layers=[0, 1]):
      CNN         sum over filters (w, n) of (K - w + 1) * w * E * n     (valid convolution over all K slots)
      highway     n_highway * 2 * F * F                                  (carry and transform)
      projection  (F + word_embedding_dim) * P
      LSTMs       2 directions * L * (P * 4C  +  P * 4C  +  C * P)        (input, recurrent, output projection)
    Element-wise work (embedding look-up, max-pool, gates, clipping) is not counted. The original model:
    8.81M + 16.78M + 1.05M + 75.50M = 102.1M multiply-adds, 204.3 MFLOP per position.
    """
    E, K, P, C, L = (
        config.char_embedding_dim,
        config.max_characters_per_token,
        config.projection_dim,
        config.cell_size,
        config.num_hidden_layers if lstm_layers is None else lstm_layers,
    )
    F_ = config.num_filters
    macs = {
        "cnn": sum((K - width + 1) * width * E * count for width, count in config.char_cnn_filters),
        "highway": config.num_highway_layers * 2 * F_ * F_,
        "projection": (F_ + (config.word_embedding_dim or 0)) * P,
        "lstm": 2 * L * (P * 4 * C + P * 4 * C + C * P),
    }
    return {name: 2 * value for name, value in macs.items()}


def measure_matmul_peak(
    dtype: torch.dtype, *, min_seconds: float = 1.5, device: torch.device | str = "cpu"
) -> dict[str, Any]:
    """GFLOP/s (2 n^3 per product) of square products, in the two layouts a model uses; the better one is the peak.

    ``torch.mm(a, b)`` and ``F.linear(a, w)`` (``a @ w.T``, the layout of ``nn.Linear``) can take different
    kernels (for bfloat16 on CPUs without native bfloat16 they differ by 10x). n doubles from 256 until one
    product takes 0.3 s (at most 4096 on a CPU, 16384 on a GPU), then the best of >= 3 repetitions over >=
    ``min_seconds`` counts.
    """
    device = torch.device(device)
    sync = torch.cuda.synchronize if device.type == "cuda" else lambda: None
    largest = 16384 if device.type == "cuda" else 4096

    def timed(operation, a, b) -> float:
        sync()
        start = time.perf_counter()
        operation(a, b)
        sync()
        return time.perf_counter() - start

    operations = {"torch.mm(a, b)": torch.mm, "F.linear(a, w)": F.linear}
    results = {}
    for name, operation in operations.items():
        n = 256
        while True:
            generator = torch.Generator().manual_seed(0)
            a = torch.randn(n, n, generator=generator).to(device, dtype)
            b = torch.randn(n, n, generator=generator).to(device, dtype)
            operation(a, b)
            elapsed = timed(operation, a, b)
            if elapsed >= 0.3 or n >= largest:
                break
            n *= 2
        times = [elapsed]
        while len(times) < 3 or sum(times) < min_seconds:
            times.append(timed(operation, a, b))
        results[name] = {"n": n, "gflops": 2 * n**3 / min(times) / 1e9}
    best = max(results, key=lambda name: results[name]["gflops"])
    return {"gflops": results[best]["gflops"], "best": best, "layouts": results}


# ----------------------------------------------------------------------------------------------------------------
# Reports


def markdown_table(rows: list[list[str]], header: list[str]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def git_description() -> str:
    """The repository's commit, and whether the package's code differs from it in the working tree."""

    def git(*command: str) -> str:
        result = subprocess.run(["git", "-C", str(REPOSITORY), *command], capture_output=True, text=True, check=False)
        return result.stdout.strip()

    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    dirty = git("status", "--porcelain", "--", "modeling_elmo", "conversion")
    return f"{commit}" + (" (modeling_elmo/ or conversion/ modified in the working tree)" if dirty else "")


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def load_averages(values: tuple[float, ...]) -> str:
    """``os.getloadavg()`` as the reports print it: ``0.52, 0.61, 0.70``."""
    return ", ".join(f"{value:.2f}" for value in values)


def write_through_rename(path: Path, text: str) -> None:
    """Write to a temporary file next to ``path``, then rename it: a reader never sees half a report."""
    with tempfile.NamedTemporaryFile(
        "w", encoding="utf-8", dir=path.parent, prefix=f".{path.name}.", delete=False
    ) as file:
        file.write(text)
    os.replace(file.name, path)
