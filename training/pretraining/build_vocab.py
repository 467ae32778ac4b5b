"""Write the vocabulary of a biLM's softmax from a corpus: `<S>`, `</S>`, `<UNK>`, then words by count.

The corpus is read one file at a time (memory grows with the distinct words, not the text); lines that are
not UTF-8 and empty lines are skipped and counted.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from tqdm.auto import tqdm

from elmo_transformers.common.errors import DataFileError, exit_on_error
from elmo_transformers.training.argument_parser import OneSpellingArgumentParser
from elmo_transformers.training.pretraining.lm_vocabulary import LmVocabulary
from elmo_transformers.training.pretraining.text_stream import CorpusReport, expand_files, read_sentences

EXAMPLES = """example (from the repository root; installed: elmo-build-vocab --train_files ...):
  python training/build_vocab.py --train_files 'corpus/train/*.txt' --output vocab.txt --min_count 3 --max_size 50000
"""


@dataclass(frozen=True)
class VocabularyArguments:
    train_files: list[str] = field(metadata={"help": "Glob(s) of text: one sentence per line."})
    output: str = field(metadata={"help": "The vocabulary file to write."})
    min_count: int = field(default=1, metadata={"help": "Keep words seen at least this often."})
    max_size: int | None = field(
        default=None, metadata={"help": "At most this many lines, the 3 special words included."}
    )


def main(argv: list[str] | None = None) -> None:
    parser = OneSpellingArgumentParser.for_command((VocabularyArguments,), doc=__doc__, examples=EXAMPLES)
    (args,) = parser.parse_command_line(argv)
    with exit_on_error():
        files = expand_files(args.train_files, option="--train_files")
        report, counts = CorpusReport(), Counter()
        for path in tqdm(files, desc="counting words", unit=" files"):
            for sentence in read_sentences(path, report):
                counts.update(sentence)
        if not counts:
            raise DataFileError(f"--train_files: no words in {', '.join(map(str, files))} ({report.summary()})")
        vocabulary = LmVocabulary.from_counts(counts, min_count=args.min_count, max_size=args.max_size)
    vocabulary.save(args.output)
    covered = sum(counts[word] for word in vocabulary.words)
    print(
        f"{args.output}: {len(vocabulary):,} words (of {len(counts):,} distinct) covering "
        f"{covered / report.words:.2%} of the {report.summary()}"
    )


if __name__ == "__main__":  # python -m elmo_transformers.training.pretraining.build_vocab
    main()
