"""How well do the biLM's lexical substitutes recover the word that was there? The measurement behind the default
combination of `ElmoForBidirectionalLM.substitutes` (`modeling_elmo.substitutes_elmo`).

    python benchmarks/quality/lm_substitutes.py --text heldout.txt
    python benchmarks/quality/lm_substitutes.py --text heldout_by_source/wikipedia.txt --max_sentences 200

Input: one sentence per line, words separated by spaces (the layout `training/recipes/prepare_default_corpus.py`
writes; its `heldout.txt` holds whole documents the bundled model never trained on). Every word that is in the
model's `vocab.txt` (not `<UNK>`) is a test case: the substitutes of its position are computed without it (the
forward LM sees the words before it, the backward LM those after it) and ranked; the case counts as found at k
where the word is among the top k. Rows: every combination of `SUBSTITUTE_COMBINATIONS`, and the unigram baseline
that proposes the k most frequent words everywhere (the first k non-special lines of `vocab.txt`, which bilm-tf
sorts by frequency). Every sentence starts from the zero state, or with --warmup_text from the fixed warm state of
pos_warm_state.py. Printed as a Markdown table (and written to --output, where given).
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path

import torch
from pos_warm_state import warm_state
from tqdm.auto import tqdm

from modeling_elmo import DEFAULT_MODEL, ElmoForBidirectionalLM, ElmoTokenizer
from modeling_elmo.substitutes_elmo import SUBSTITUTE_COMBINATIONS, combine_lm_log_probabilities
from modeling_elmo.text_elmo import BILM_TF_SPECIAL_WORD_IDS, VOCABULARY_FILE

CUTOFFS = (1, 10, 100)


def read_sentences(path: Path, max_sentences: int | None) -> list[list[str]]:
    sentences = [line.split() for line in path.read_text(encoding="utf-8").splitlines() if line.split()]
    return sentences[:max_sentences]


def original_word_ranks(
    model: ElmoForBidirectionalLM,
    tokenizer: ElmoTokenizer,
    sentences: list[list[str]],
    word_ids: dict[str, int],
    batch_size: int,
    start_state: tuple[torch.Tensor, torch.Tensor] | None = None,
) -> dict[str, torch.Tensor]:
    """Per combination, the rank (1 = best) of each in-vocabulary original word among all proposable words, and
    under "forward LM" and "backward LM" its log-probability by each LM alone; every sentence starts from
    `start_state` (one row: (2, layers, 1, width)), or from zeros."""
    ranks: dict[str, list[torch.Tensor]] = {name: [] for name in SUBSTITUTE_COMBINATIONS}
    log_probabilities: dict[str, list[torch.Tensor]] = {"forward LM": [], "backward LM": []}
    for start in tqdm(range(0, len(sentences), batch_size), desc="substitutes", unit="batch"):
        batch = sentences[start : start + batch_size]
        inputs = tokenizer(batch, is_split_into_words=True, padding=True, return_tensors="pt")
        targets = torch.tensor(
            [
                [word_ids.get(word, -1) for word in sentence] + [-1] * (inputs["input_ids"].shape[1] - len(sentence))
                for sentence in batch
            ]
        )
        known = targets >= 0
        with torch.no_grad():
            state = None
            if start_state is not None:
                state = tuple(part.expand(-1, -1, len(batch), -1) for part in start_state)
            forward, backward = model.word_log_probabilities(**inputs, state=state)
            for name, direction in zip(log_probabilities, (forward, backward), strict=True):
                log_probabilities[name].append(direction[known].gather(1, targets[known][:, None])[:, 0])
            for name in SUBSTITUTE_COMBINATIONS:
                scores = combine_lm_log_probabilities(forward[known], backward[known], name)
                target_scores = scores.gather(1, targets[known][:, None])
                ranks[name].append((scores > target_scores).sum(dim=1) + 1)
    return {name: torch.cat(parts) for name, parts in {**ranks, **log_probabilities}.items()}


def unigram_ranks(sentences: list[list[str]], word_ids: dict[str, int]) -> torch.Tensor:
    """The rank of each in-vocabulary original word when the k most frequent words are proposed everywhere."""
    specials = len(BILM_TF_SPECIAL_WORD_IDS)
    return torch.tensor(
        [word_ids[word] - specials + 1 for sentence in sentences for word in sentence if word in word_ids]
    )


def report(
    ranks: dict[str, torch.Tensor], log_probabilities: dict[str, torch.Tensor], command: str, seconds: float, total: int
) -> str:
    header = "| proposer | " + " | ".join(f"original word in top {k}" for k in CUTOFFS) + " | mean reciprocal rank |"
    lines = [header, "| --- |" + " ---: |" * (len(CUTOFFS) + 1)]
    for name, rank in ranks.items():
        found = " | ".join(f"{100 * float((rank <= k).float().mean()):.1f}%" for k in CUTOFFS)
        lines.append(f"| {name} | {found} | {float((1.0 / rank.double()).mean()):.3f} |")
    perplexities = ", ".join(
        f"{name} {float((-values.double().mean()).exp()):.1f}" for name, values in log_probabilities.items()
    )
    covered = len(ranks["unigram baseline"])
    lines.append("")
    lines.append(f"Perplexity of the test words: {perplexities}.")
    lines.append("")
    lines.append(
        f"{covered:,} test words (of {total:,} words; the rest are not in the vocabulary); `{command}`, "
        f"{seconds:.0f} s on {torch.get_num_threads()} thread(s)"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n")[1])
    parser.add_argument("--model", default=DEFAULT_MODEL, help="language-model folder (default: the bundled model)")
    parser.add_argument("--text", type=Path, required=True, help="held-out text: one sentence a line, words by spaces")
    parser.add_argument("--max_sentences", type=int, help="only the first sentences")
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--output", type=Path, help="also write the table here")
    parser.add_argument(
        "--warmup_text", type=Path, help="start every sentence from the warm state of this text (pos_warm_state.py)"
    )
    parser.add_argument("--warmup_rows", type=int, default=64, help="rows of the warm-up batches")
    parser.add_argument("--warmup_batches", type=int, default=4, help="warm-up batches read, the state carried")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    model = ElmoForBidirectionalLM.from_pretrained(args.model).eval()
    tokenizer = ElmoTokenizer.from_pretrained(args.model)
    vocabulary = (Path(args.model) / VOCABULARY_FILE).read_text(encoding="utf-8").splitlines()
    special = {vocabulary[index] for index in BILM_TF_SPECIAL_WORD_IDS}
    word_ids = {word: index for index, word in enumerate(vocabulary) if word not in special}
    sentences = read_sentences(args.text, args.max_sentences)
    start_state = None
    if args.warmup_text:
        warmup = read_sentences(args.warmup_text, None)
        start_state = warm_state(model.elmo, tokenizer, warmup, args.warmup_rows, args.warmup_batches)
    ranks = original_word_ranks(model, tokenizer, sentences, word_ids, args.batch_size, start_state)
    log_probabilities = {name: ranks.pop(name) for name in ("forward LM", "backward LM")}
    ranks["unigram baseline"] = unigram_ranks(sentences, word_ids)
    command = shlex.join(["python", *sys.argv])
    total = sum(len(sentence) for sentence in sentences)
    table = report(ranks, log_probabilities, command, time.perf_counter() - started, total)
    print(table)
    if args.output:
        args.output.write_text(table + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
