"""Fine-tune an ELMo token-classification head (NER, chunking, part-of-speech tagging) with the Trainer.

    python training/run_token_classification.py --model_name_or_path elmo-fixture \\
        --train_file train.jsonl --validation_file dev.jsonl --do_train --do_eval \\
        --output_dir ner-model --num_train_epochs 10 --learning_rate 1e-3 --cache_features

(from the repository root, as Hugging Face's example scripts are run; from the installed package:
`elmo-run-token-classification ...` or `python -m elmo_transformers.training.run_token_classification ...`).

Each line of the data files is one sentence: {"tokens": ["EU", "rejects", ...], "tags": ["B-ORG", "O", ...]}
(the column names are set with --text_column_name and --label_column_name). The label list is the sorted set of
the training tags. Evaluation reports seqeval's entity precision, recall and F1 (IOB tags: B-X, I-X, O) and
the token accuracy. After training, the model, tokenizer, `layer_weights.json` and `layer_weights.png` are
written to --output_dir. See `elmo_transformers.training.finetuning.arguments` for the mixing options and
--cache_features.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from datasets import Dataset
from transformers import AutoModelForTokenClassification, DataCollatorForTokenClassification, PreTrainedTokenizerBase

from elmo_transformers.training.finetuning.arguments import DataFileArguments
from elmo_transformers.training.finetuning.evaluation import token_classification_metrics
from elmo_transformers.training.finetuning.jsonl import JsonLine, read_json_lines
from elmo_transformers.training.finetuning.workflow import FineTuningTask


@dataclass
class TokenClassificationDataArguments(DataFileArguments):
    text_column_name: str = field(default="tokens", metadata={"help": "Column of the words (a list of strings)."})
    label_column_name: str = field(
        default="tags", metadata={"help": "Column of the tags, one per word (e.g. ner_tags)."}
    )


class Sentence(NamedTuple):
    row: JsonLine  # where it came from, for errors
    words: list[str]
    tags: list[str]


def read_tagged_sentences(path: str, data_args: TokenClassificationDataArguments) -> list[Sentence]:
    """The words and tags (as strings) of each line of `path`."""
    sentences = []
    for row in read_json_lines(path):
        words = row.column(data_args.text_column_name, "--text_column_name")
        tags = row.column(data_args.label_column_name, "--label_column_name")
        if not isinstance(words, list) or not all(isinstance(word, str) for word in words):
            raise row.error(f"{data_args.text_column_name!r} must be a list of strings (words)")
        if not isinstance(tags, list) or any(isinstance(tag, list | dict) or tag is None for tag in tags):
            raise row.error(f"{data_args.label_column_name!r} must be a list of tags (strings or numbers)")
        if len(tags) != len(words):
            raise row.error(f"{len(words)} words but {len(tags)} tags")
        sentences.append(Sentence(row, words, [str(tag) for tag in tags]))
    return sentences


def encode(sentences: list[Sentence], tokenizer: PreTrainedTokenizerBase, label2id: dict[str, int]) -> Dataset:
    """Character ids (words, 50) and label ids (words,) per sentence; a tag the labels lack is an error."""
    for sentence in sentences:
        unknown = sorted(set(sentence.tags) - set(label2id))
        if unknown:
            raise sentence.row.error(f"tags {unknown} are not among the model's labels ({', '.join(label2id)})")
    encoding = tokenizer([sentence.words for sentence in sentences], is_split_into_words=True)
    labels = [[label2id[tag] for tag in sentence.tags] for sentence in sentences]
    return Dataset.from_dict({**encoding, "labels": labels})


TASK = FineTuningTask(
    title="token classification",
    head=AutoModelForTokenClassification,
    data_class=TokenClassificationDataArguments,
    read=read_tagged_sentences,
    labels=lambda sentences: (tag for sentence in sentences for tag in sentence.tags),
    encode=encode,
    collator=DataCollatorForTokenClassification,
    metrics=token_classification_metrics,
)


# The script's entry points: `main(args)`, which returns the metrics, and `cli()`, the command line.
main, cli = TASK.main, TASK.cli


if __name__ == "__main__":  # python -m elmo_transformers.training.finetuning.run_token_classification
    cli()
