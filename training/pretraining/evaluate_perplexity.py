"""Held-out perplexity of a biLM language model, as bilm-tf's run_test computed it (full softmax, state carried,
both directions): run it before and after domain fine-tuning to see what the adaptation bought.

With `--vocab_file` different from the model's own, the softmax is first re-mapped to it the way fine-tuning
starts (known words keep their rows, `<UNK>`'s probability is split among the new words), so a model before
and after fine-tuning with a new vocabulary are scored on the same words.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path

import torch

from elmo_transformers.common.errors import DataFileError, exit_on_error
from elmo_transformers.training.argument_parser import OneSpellingArgumentParser
from elmo_transformers.training.pretraining.lm_vocabulary import LmVocabulary
from elmo_transformers.training.pretraining.perplexity import evaluate_perplexity
from elmo_transformers.training.pretraining.starting_model import load_starting_model
from elmo_transformers.training.pretraining.text_stream import expand_files
from modeling_elmo.native_elmo import set_native_libraries
from modeling_elmo.text_elmo import VOCABULARY_FILE

EXAMPLES = """examples (from the repository root; installed: elmo-evaluate-perplexity --model_name_or_path ...):
  python training/evaluate_perplexity.py --model_name_or_path my-elmo/model --files corpus/heldout.txt
  # before and after domain fine-tuning, on the domain's vocabulary
  python training/evaluate_perplexity.py --model_name_or_path elmo-original-lm --files 'bio/heldout/*.txt' \\
      --vocab_file bio_vocab.txt --output before.json
"""


@dataclass(frozen=True)
class PerplexityArguments:
    model_name_or_path: str = field(metadata={"help": "A language-model folder (with vocab.txt)."})
    files: list[str] = field(metadata={"help": "Glob(s) of held-out text, one sentence per line."})
    vocab_file: str | None = field(
        default=None, metadata={"help": "Score on this vocabulary (default: the model's vocab.txt)."}
    )
    batch_size: int = field(default=32, metadata={"help": "Streams per window."})
    unroll_steps: int = 20
    device: str = field(default_factory=lambda: "cuda" if torch.cuda.is_available() else "cpu")
    output: str | None = field(default=None, metadata={"help": "Also write the results to this JSON file."})


def parse_args(argv: list[str] | None = None) -> PerplexityArguments:
    """The options from `argv` (default: the command line); --help, or a usage error, exits."""
    parser = OneSpellingArgumentParser.for_command((PerplexityArguments,), doc=__doc__, examples=EXAMPLES)
    (args,) = parser.parse_command_line(argv)
    return args


def main(argv: list[str] | None = None) -> None:
    set_native_libraries()  # before the first kernel
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    folder = Path(args.model_name_or_path)
    with exit_on_error():
        if not (folder / VOCABULARY_FILE).is_file():
            raise DataFileError(
                f"{folder} has no {VOCABULARY_FILE}: it is a biLM without its softmax (as the released hdf5 models), "
                "which cannot score text; convert a bilm-tf checkpoint or train one with training/pretrain.py"
            )
        vocabulary = LmVocabulary.from_file(args.vocab_file or folder / VOCABULARY_FILE)
        starting = load_starting_model(vocabulary, model_name_or_path=str(folder))
        if starting.model.softmax_is_random:  # a biLM or a task head with a vocab.txt put beside it
            raise DataFileError(
                f"{folder} holds no language-model softmax (softmax.weight, softmax.bias), though it has a "
                f"{VOCABULARY_FILE}: its perplexity would be a random softmax's; convert a bilm-tf checkpoint or "
                "train one with training/pretrain.py"
            )
        files = expand_files(args.files, option="--files")
        results = evaluate_perplexity(
            starting.model.to(args.device),
            starting.tokenizer,
            vocabulary,
            files,
            batch_size=args.batch_size,
            unroll_steps=args.unroll_steps,
        )
    results = {"model": str(folder), "files": [str(path) for path in files], **results}
    print(json.dumps(results, indent=2))
    if args.output:
        Path(args.output).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":  # python -m elmo_transformers.training.pretraining.evaluate_perplexity
    main()
