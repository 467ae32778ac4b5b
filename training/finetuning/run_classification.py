"""Fine-tune an ELMo sequence-classification head (sentiment, topic, ...) with the Trainer.

    python training/run_classification.py --model_name_or_path elmo-fixture \\
        --train_file train.jsonl --validation_file dev.jsonl --do_train --do_eval \\
        --output_dir sst-model --num_train_epochs 10 --learning_rate 1e-3 --cache_features

(from the repository root, as Hugging Face's example scripts are run; from the installed package:
`elmo-run-classification ...` or `python -m elmo_transformers.training.run_classification ...`).

Each line of the data files is one example: {"sentence": "A gripping film .", "label": "positive"}, where the
sentence is raw text (split into words by the tokenizer's PTB-like rules) or a list of words; the column names
are set with --text_column_name and --label_column_name. The label list is the sorted set of the training
labels (as strings). Evaluation reports accuracy. After training, the model, tokenizer, `layer_weights.json`
and `layer_weights.png` are written to --output_dir. See `elmo_transformers.training.finetuning.arguments` for the
mixing options.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from datasets import Dataset
from transformers import AutoModelForSequenceClassification, DataCollatorWithPadding, PreTrainedTokenizerBase

from elmo_transformers.training.finetuning.arguments import DataFileArguments
from elmo_transformers.training.finetuning.evaluation import classification_metrics
from elmo_transformers.training.finetuning.jsonl import JsonLine, read_json_lines
from elmo_transformers.training.finetuning.workflow import FineTuningTask


@dataclass
class ClassificationDataArguments(DataFileArguments):
    text_column_name: str = field(
        default="sentence", metadata={"help": "Column of the text: a string, or a list of words."}
    )
    label_column_name: str = field(default="label", metadata={"help": "Column of the label (a string or number)."})


class Example(NamedTuple):
    row: JsonLine  # where it came from, for errors
    text: str | list[str]
    label: str


def read_examples(path: str, data_args: ClassificationDataArguments) -> list[Example]:
    """The text and label (as a string) of each line of `path`."""
    examples = []
    for row in read_json_lines(path):
        text = row.column(data_args.text_column_name, "--text_column_name")
        label = row.column(data_args.label_column_name, "--label_column_name")
        is_words = isinstance(text, list) and all(isinstance(word, str) for word in text)
        if not (isinstance(text, str) or is_words):
            raise row.error(f"{data_args.text_column_name!r} must be a string or a list of strings (words)")
        if examples and isinstance(text, str) != isinstance(examples[0].text, str):
            raise row.error(
                f"{data_args.text_column_name!r} must be of one kind in a file: line {examples[0].row.line} "
                f"has {'text' if isinstance(examples[0].text, str) else 'a list of words'}"
            )
        if isinstance(label, list | dict) or label is None:
            raise row.error(f"{data_args.label_column_name!r} must be a string or a number")
        examples.append(Example(row, text, str(label)))
    return examples


def encode(examples: list[Example], tokenizer: PreTrainedTokenizerBase, label2id: dict[str, int]) -> Dataset:
    """Character ids (words, 50) and the label id per example; a label the model lacks is an error."""
    for example in examples:
        if example.label not in label2id:
            raise example.row.error(f"label {example.label!r} is not among the model's labels ({', '.join(label2id)})")
    texts = [example.text for example in examples]
    encoding = tokenizer(texts, is_split_into_words=not isinstance(texts[0], str))
    return Dataset.from_dict({**encoding, "labels": [label2id[example.label] for example in examples]})


TASK = FineTuningTask(
    title="sequence classification",
    head=AutoModelForSequenceClassification,
    data_class=ClassificationDataArguments,
    read=read_examples,
    labels=lambda examples: (example.label for example in examples),
    encode=encode,
    collator=DataCollatorWithPadding,
    metrics=lambda label_names: classification_metrics(),  # accuracy needs no names
)


# The script's entry points: `main(args)`, which returns the metrics, and `cli()`, the command line.
main, cli = TASK.main, TASK.cli


if __name__ == "__main__":  # python -m elmo_transformers.training.finetuning.run_classification
    cli()
