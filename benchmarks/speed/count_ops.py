"""Operator calls of one ``ElmoModel`` forward, counted with ``torch.profiler`` (no timing: the count is exact).

Every operator call costs a launch on a GPU and a dispatch on any device, whatever its size; ELMo's LSTMs issue
theirs once per time step, so their count, not their arithmetic, bounds the speed at small sizes. Run from the
repository root::

    python benchmarks/speed/count_ops.py                       # the default model, 32 sentences of 10-30 words, CPU
    python benchmarks/speed/count_ops.py --wavefront --top 15  # the LSTM schedule of GPUs; the 15 most called ops
    python benchmarks/speed/count_ops.py --device cuda         # on a GPU (the wavefront there by default)

"Operator calls" are all the events the profiler records on the CPU side: every ``aten::`` operator, those
called inside another one included (``aten::linear`` calling ``aten::t`` and ``aten::addmm``; views such as
``aten::slice`` and their ``aten::as_strided``), and custom ops (oneDNN's). The top-level ``aten::`` calls
(those no other recorded op called) are printed too, and how many of all calls the character encoder made.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import random

import torch
from harness_backends import encode_batch
from harness_corpora import uniform_sentences, vocabulary_words
from torch.autograd.profiler import record_function

from modeling_elmo import DEFAULT_MODEL, ElmoModel, ElmoTokenizer

CHAR_ENCODER = "char_encoder"


def make_batch(model_folder: str, batch_size: int, min_words: int, max_words: int, seed: int) -> list[list[str]]:
    """`batch_size` sentences of `min_words` to `max_words` words drawn uniformly from the model's vocabulary."""
    rng = random.Random(f"count-ops-{seed}")
    return uniform_sentences(vocabulary_words(model_folder), batch_size, rng, min_words, max_words)


def count_operator_calls(model: ElmoModel, inputs: dict[str, torch.Tensor]) -> tuple[collections.Counter, int, int]:
    """Profile one forward (after one warm-up call) without gradients. Returns every recorded operator call by
    name, the number of top-level `aten::` calls, and the number of calls made inside the character encoder."""
    with torch.no_grad():
        model(**inputs)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profile:
            with _labelled(model.char_encoder, CHAR_ENCODER):
                model(**inputs)
    events = [event for event in profile.events() if event.name != CHAR_ENCODER]
    top_level = sum(1 for event in events if event.cpu_parent is None and event.name.startswith("aten::"))
    in_encoder = sum(1 for event in events if _inside(event, CHAR_ENCODER))
    return collections.Counter(event.name for event in events), top_level, in_encoder


@contextlib.contextmanager
def _labelled(module: torch.nn.Module, label: str):
    """Record every call of `module` as a profiler range named `label`."""
    ranges = []
    before = module.register_forward_pre_hook(lambda *_: ranges.append(record_function(label).__enter__()))
    after = module.register_forward_hook(lambda *_: ranges.pop().__exit__(None, None, None))
    try:
        yield
    finally:
        before.remove()
        after.remove()


def _inside(event, label: str) -> bool:
    parent = event.cpu_parent
    while parent is not None:
        if parent.name == label:
            return True
        parent = parent.cpu_parent
    return False


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=DEFAULT_MODEL, help="a model folder (default: the bundled default model)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--min-words", type=int, default=10)
    parser.add_argument("--max-words", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0, help="of the sentences")
    parser.add_argument("--device", default="cpu", help="cpu, cuda, ... (default %(default)s)")
    parser.add_argument(
        "--plain", action="store_true", help="without oneDNN on CPU (set_lstm_implementation(onednn=False))"
    )
    parser.add_argument(
        "--wavefront",
        action="store_true",
        help='every LSTM layer together, as on GPUs (lstm_implementation="wavefront")',
    )
    parser.add_argument("--top", type=int, default=0, help="also print the N most called operators")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    implementation = "wavefront" if args.wavefront else "auto"
    model = ElmoModel.from_pretrained(args.model, lstm_implementation=implementation).to(args.device).eval()
    model.set_lstm_implementation(onednn=not args.plain)
    sentences = make_batch(args.model, args.batch_size, args.min_words, args.max_words, args.seed)
    inputs = encode_batch(ElmoTokenizer.from_pretrained(args.model), sentences).to(args.device)
    counts, top_level, in_encoder = count_operator_calls(model, dict(inputs))
    longest = max(len(sentence) for sentence in sentences) + 2  # with <S> and </S>
    total = sum(counts.values())
    print(
        f"{args.batch_size} sentences of {args.min_words}-{args.max_words} words ({longest} LSTM steps with the "
        f"markers), {args.device}{', plain (no oneDNN)' if args.plain else ''}"
        f"{', wavefront' if args.wavefront else ''}, {model.config.num_hidden_layers} layers:"
    )
    print(f"operator calls (all profiler events): {total}  ({total / longest:.1f} per step)")
    print(f"  in the character encoder: {in_encoder}; the rest (LSTMs, bookkeeping): {total - in_encoder}")
    print(f"top-level aten:: calls: {top_level}")
    for name, count in counts.most_common(args.top):
        print(f"  {count:6d}  {name}")


if __name__ == "__main__":
    main()
