"""Write the vocabulary of a biLM's softmax from a corpus: `<S>`, `</S>`, `<UNK>`, then words by count.

The corpus is read one file at a time (memory grows with the distinct words, not the text); lines that are
not UTF-8 and empty lines are skipped and counted.
"""

from __future__ import annotations

import argparse
from collections import Counter

from tqdm.auto import tqdm

from elmo_transformers.common.errors import DataFileError, exit_on_error
from elmo_transformers.training.pretraining.lm_vocabulary import LmVocabulary
from elmo_transformers.training.pretraining.text_stream import CorpusReport, expand_files, read_sentences

EXAMPLES = """example (from the repository root; installed: elmo-build-vocab --train_files ...):
  python training/build_vocab.py --train_files 'corpus/train/*.txt' --output vocab.txt --min_count 3 --max_size 50000
"""


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        allow_abbrev=False,
        description=__doc__.split("\n\n")[0],
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--train_files", required=True, nargs="+", help="Glob(s) of text: one sentence per line.")
    parser.add_argument("--output", required=True, help="The vocabulary file to write.")
    parser.add_argument("--min_count", type=int, default=1, help="Keep words seen at least this often.")
    parser.add_argument("--max_size", type=int, help="At most this many lines, the 3 special words included.")
    args = parser.parse_args(argv)
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
