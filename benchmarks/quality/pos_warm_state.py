"""What does the zero LSTM state cost? POS tagging (the experiment of pos_sample_efficiency.py) with the biLM's
layers computed with every sentence starting from the zero state, as this package does, against every sentence
starting from one fixed warm state.

    python benchmarks/quality/pos_warm_state.py --model modeling_elmo/default_model --warmup_text heldout.txt
    python benchmarks/quality/pos_warm_state.py --model modeling_elmo/default_model --warmup_text heldout.txt \\
        --fractions 0.01 --seeds 0 --output_dir /tmp/warm

AllenNLP and bilm-tf carried the LSTM state of batch row k into row k of the next batch, so their vectors depended
on what ran before, and AllenNLP's advice against the run-to-run noise was to warm the model up on some text first.
The warm state here is that warm-up made fixed: --warmup_rows rows read --warmup_batches batches of sentences of
--warmup_text (one sentence a line, words separated by spaces), the state carried from batch to batch; the final
state is averaged over the rows, and every sentence of the corpus then starts from that one state (so its vectors
depend on nothing else). Both biLM runs go through the feature cache; every tagger is trained with the recipe and
the options of pos_sample_efficiency.py (any of its options may be given), on the same samples and seeds.
Written to --output_dir: `pos_warm_state.md` (token accuracy, zero vs warm, mean ± std over seeds).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
from pos_comparison import (
    FeatureSource,
    compare_and_report,
    load_corpus,
    parse_comparison_arguments,
)
from pos_features import compute_features

from modeling_elmo import ElmoModel, ElmoTokenizer


class WarmStartedElmo(ElmoModel):
    """The biLM with every sentence starting from the fixed state `warm_h`, `warm_c` (buffers of shapes
    (2, layers, 1, P) and (2, layers, 1, C), so that the feature cache's key, a hash of the state dict, tells the
    two runs apart) instead of zeros."""

    def set_warm_state(self, h: torch.Tensor, c: torch.Tensor) -> None:
        self.register_buffer("warm_h", h)
        self.register_buffer("warm_c", c)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None, **kwargs):
        batch = input_ids.shape[0]
        state = (self.warm_h.expand(-1, -1, batch, -1), self.warm_c.expand(-1, -1, batch, -1))
        return super().forward(input_ids, attention_mask, state=state, use_cache=False, **kwargs)


def warm_state(
    bilm: ElmoModel, tokenizer: ElmoTokenizer, sentences: list[list[str]], rows: int, batches: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """The final state after `rows` rows read `batches` batches of `sentences`, carried, averaged over the rows."""
    if len(sentences) < rows * batches:
        sys.exit(f"error: the warm-up needs {rows * batches} sentences, the text has {len(sentences)}")
    state = None
    with torch.no_grad():
        for first in range(0, rows * batches, rows):
            inputs = tokenizer(
                sentences[first : first + rows], is_split_into_words=True, padding=True, return_tensors="pt"
            )
            state = bilm(**inputs, state=state, use_cache=True).state
    h, c = state
    return h.mean(dim=2, keepdim=True), c.mean(dim=2, keepdim=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--warmup_text", type=Path, required=True, help="one sentence a line, words by spaces")
    parser.add_argument("--warmup_rows", type=int, default=64, help="rows of the warm-up batches")
    parser.add_argument("--warmup_batches", type=int, default=4, help="batches read, the state carried")
    own, arguments = parse_comparison_arguments(parser, argv)
    corpus = load_corpus(arguments)
    tokenizer = ElmoTokenizer.from_pretrained(arguments.model)
    zero = ElmoModel.from_pretrained(arguments.model, mix_layers=None).eval()
    warm = WarmStartedElmo.from_pretrained(arguments.model, mix_layers=None).eval()
    warmup = [line.split() for line in own.warmup_text.read_text(encoding="utf-8").splitlines() if line.split()]
    warm.set_warm_state(*warm_state(zero, tokenizer, warmup, own.warmup_rows, own.warmup_batches))

    def source(bilm: ElmoModel) -> FeatureSource:
        return lambda: compute_features(corpus, bilm, tokenizer, arguments)[:2]

    compare_and_report(
        {"zero state": source(zero), "warm state": source(warm)},
        zero.config,
        corpus,
        arguments,
        scheme_key=own.scheme,
        script="pos_warm_state.py",
        argv=argv,
        versus="zero vs warm LSTM state",
        first_column="start of every sentence",
        detail=f"warm-up: {own.warmup_rows} rows x {own.warmup_batches} batches of `{own.warmup_text}`",
    )


if __name__ == "__main__":
    main()
