"""The steps both fine-tuning scripts share: parse the options, read the data, load the head, hold --output_dir (no
other run writes it meanwhile; one that holds files is refused without --overwrite_output_dir), cache the biLM's
layers, train, evaluate, save, write the layer weights and print a summary. A script states what is its own, its
`FineTuningTask` (the head, how its data is read, labelled and encoded, its metrics), whose `main` and `cli` are
the script's."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

import datasets
from datasets import Dataset
from transformers import AutoConfig, AutoTokenizer, PreTrainedTokenizerBase, Trainer, set_seed

import modeling_elmo  # noqa: F401  (registers the ELMo classes with the Auto classes)
from elmo_transformers.common.errors import DataFileError, TrainingError, exit_on_error, first_line
from elmo_transformers.common.model_folder import model_type_problem, require_model_folder
from elmo_transformers.common.processes import on_main_process
from elmo_transformers.training.argument_parser import OneSpellingArgumentParser
from elmo_transformers.training.output_dir import exclusive_output_dir, refuse_existing_output_dir
from modeling_elmo.modeling_elmo import ElmoTaskModel
from modeling_elmo.native_elmo import set_native_libraries

from .arguments import DataFileArguments, ElmoModelArguments, ElmoTrainingArguments
from .collator import ElmoCachedFeaturesCollator
from .feature_cache import cache_bilm_features
from .jsonl import label_names
from .layer_weights import write_layer_weights

__all__ = ["FineTuningTask", "TrainingRun", "model_label_names", "parse_arguments", "require_model"]

DEFAULT_CACHE_FOLDER = "elmo_bilm_features"
DataArguments = TypeVar("DataArguments", bound=DataFileArguments)
Example = TypeVar("Example")  # one example of a data file, as the task reads it


@dataclass(frozen=True)
class FineTuningTask(Generic[DataArguments, Example]):
    """What a fine-tuning script states of its own; its entry points, `main` and `cli`, run the rest."""

    title: str  # "token classification": the summary's and layer_weights.json's name of the task
    head: type  # the Auto class of the task head (AutoModelForTokenClassification)
    data_class: type[DataArguments]  # the data options: the files and their columns
    read: Callable[[str, DataArguments], list[Example]]  # the examples of one data file
    labels: Callable[[list[Example]], Iterable[Any]]  # the labels the training examples hold
    encode: Callable[[list[Example], PreTrainedTokenizerBase, dict[str, int]], Dataset]  # the head's inputs
    collator: Callable[[PreTrainedTokenizerBase], Callable]  # batches of examples whose biLM layers run live
    metrics: Callable[[Sequence[str]], Callable]  # `compute_metrics`, given the label names in id order

    def main(self, args: list[str] | None = None) -> dict[str, float]:
        """Run the script on `args` (default: the command line); returns the train and eval metrics. The label names
        are those of the training data (sorted), or the fine-tuned head's when it is only evaluated."""
        set_native_libraries()  # before the first kernel
        model_args, data_args, training_args = parse_arguments(self.data_class, args)
        require_model(model_args.model_name_or_path)
        set_seed(training_args.seed)
        train = self.read(data_args.train_file, data_args) if training_args.do_train else None
        validation = self.read(data_args.validation_file, data_args) if training_args.do_eval else None
        if train is not None:
            labels = label_names(self.labels(train))
        else:
            labels = model_label_names(model_args.model_name_or_path)
        run = TrainingRun(self.head, model_args, training_args, labels, self.title)
        tokenizer = AutoTokenizer.from_pretrained(model_args.model_name_or_path)
        return run.run(
            tokenizer=tokenizer,
            train=self.encode(train, tokenizer, run.label2id) if train is not None else None,
            validation=self.encode(validation, tokenizer, run.label2id) if validation is not None else None,
            live_collator=self.collator(tokenizer),
            compute_metrics=self.metrics(labels),
        )

    def cli(self) -> None:
        """The script's command line (`elmo-run-classification`, `python training/run_classification.py`, and the
        like): bad data is one line, not a traceback (`main` raises it, for callers)."""
        with exit_on_error():
            self.main()


def parse_arguments(
    data_class: type[DataArguments], args: list[str] | None
) -> tuple[ElmoModelArguments, DataArguments, ElmoTrainingArguments]:
    """Parse `args` (default: the command line) into the model, data and training options; --help exits."""
    parser = OneSpellingArgumentParser((ElmoModelArguments, data_class, ElmoTrainingArguments))
    model_args, data_args, training_args = parser.parse_args_into_dataclasses(args=args)
    if not (training_args.do_train or training_args.do_eval):
        parser.error("nothing to do: pass --do_train (with --train_file) and/or --do_eval (with --validation_file)")
    if training_args.do_train and not data_args.train_file:
        parser.error("--do_train needs --train_file")
    if training_args.do_eval and not data_args.validation_file:
        parser.error("--do_eval needs --validation_file")
    if model_args.cache_features and not model_args.freeze_bilm:
        parser.error("--cache_features needs a frozen biLM: the layers of a biLM in training change at every step")
    return model_args, data_args, training_args


def require_model(model_name_or_path: str) -> None:
    """Raise `DataFileError`, one line, when --model_name_or_path is neither an ELMo model folder nor a Hub
    repository of one: before anything loads it (transformers fails on a missing path with a traceback)."""
    require_model_folder(model_name_or_path, DataFileError, hub=True)
    if Path(model_name_or_path).exists():
        return
    try:  # a Hub name: its config (cached for the loads that follow) tells whether it is there and an ELMo
        model_type = AutoConfig.from_pretrained(model_name_or_path).model_type
    except (OSError, ValueError) as error:
        raise DataFileError(f"{model_name_or_path}: no such model folder or Hub model ({first_line(error)})") from None
    problem = model_type_problem(model_name_or_path, model_type)
    if problem:
        raise DataFileError(problem)


def model_label_names(model_name_or_path: str) -> list[str]:
    """The label names of an already fine-tuned head, in id order (for evaluation without training)."""
    config = AutoConfig.from_pretrained(model_name_or_path)
    return [config.id2label[index] for index in range(config.num_labels)]


class TrainingRun:
    """One run of a script: the head with its labels, and the steps around the Trainer."""

    def __init__(
        self,
        auto_class: type,
        model_args: ElmoModelArguments,
        training_args: ElmoTrainingArguments,
        label_names: list[str],
        title: str,
    ) -> None:
        if len(label_names) < 2:
            raise TrainingError(f"a classifier needs at least 2 labels, got {label_names}")
        self.model_args = model_args
        self.training_args = training_args
        self.label_names = label_names
        self.label2id = {name: index for index, name in enumerate(label_names)}
        self.title = title
        self.model: ElmoTaskModel = auto_class.from_pretrained(
            model_args.model_name_or_path,
            num_labels=len(label_names),
            id2label=dict(enumerate(label_names)),
            label2id=self.label2id,
            **model_args.config_overrides(),
        )
        self.cache_dir = Path(
            model_args.features_cache_dir or Path(datasets.config.HF_DATASETS_CACHE) / DEFAULT_CACHE_FOLDER
        )

    def run(
        self,
        *,
        tokenizer: PreTrainedTokenizerBase,
        train: Dataset | None,
        validation: Dataset | None,
        live_collator: Callable,
        compute_metrics: Callable,
    ) -> dict[str, float]:
        """Build the Trainer over the tokenized `train`/`validation` sets (their biLM layers cached under
        --cache_features), train and save (--do_train), evaluate (--do_eval), print a summary; returns the metrics.
        The lock of --output_dir is held from before anything is written into it to the end."""
        output_dir = Path(self.training_args.output_dir)
        with exclusive_output_dir(output_dir):
            on_main_process(
                lambda: refuse_existing_output_dir(output_dir, overwrite=self.training_args.overwrite_output_dir),
                error=TrainingError,
            )
            trainer = Trainer(
                model=self.model,
                args=self.training_args,
                train_dataset=self._model_inputs(train),
                eval_dataset=self._model_inputs(validation),
                data_collator=ElmoCachedFeaturesCollator() if self.model_args.cache_features else live_collator,
                processing_class=tokenizer,
                compute_metrics=compute_metrics,
            )
            return self._train_and_evaluate(trainer)

    def _model_inputs(self, dataset: Dataset | None) -> Dataset | None:
        """`dataset` (tokenized, with labels) as the head will read it: with `bilm_layers` under --cache_features."""
        if dataset is None or not self.model_args.cache_features:
            return dataset
        self.model.to(self.training_args.device)
        return cache_bilm_features(
            dataset,
            self.model,
            self.cache_dir,
            batch_size=self.training_args.per_device_eval_batch_size,
            storage_dtype=self.model_args.features_dtype,
        )

    def _train_and_evaluate(self, trainer: Trainer) -> dict[str, float]:
        metrics: dict[str, float] = {}
        layer_weights = None
        if self.training_args.do_train:
            train_metrics = trainer.train().metrics
            trainer.save_model()
            trainer.log_metrics("train", train_metrics)
            trainer.save_metrics("train", train_metrics)
            layer_weights = write_layer_weights(self.model, self.training_args.output_dir, self.title)
            metrics.update(train_metrics)
        if self.training_args.do_eval:
            eval_metrics = trainer.evaluate()
            trainer.log_metrics("eval", eval_metrics)
            trainer.save_metrics("eval", eval_metrics)
            metrics.update(eval_metrics)
        print(self._summary(trainer, metrics, layer_weights))
        return metrics

    def _summary(self, trainer: Trainer, metrics: dict[str, float], layer_weights: dict[str, Any] | None) -> str:
        config = self.model.config
        features = f"cached in {self.cache_dir}" if self.model_args.cache_features else "computed live"
        lines = [
            f"ELMo {self.title}: {self.model_args.model_name_or_path}",
            f"  labels ({len(self.label_names)}): {' '.join(self.label_names)}",
            f"  mixing: {config.mix_mode} of layers {config.mixed_layers}, "
            f"{config.num_output_representations} representation(s), task encoder {config.task_encoder}",
            f"  biLM: {'frozen' if config.freeze_bilm else 'trained'}, its layers {features}",
        ]
        if trainer.train_dataset is not None and "train_loss" in metrics:
            lines.append(
                f"  train: {len(trainer.train_dataset)} examples, {metrics['epoch']:g} epochs, "
                f"loss {metrics['train_loss']:.4f}, {metrics['train_runtime']:.1f} s"
            )
        scores = {name.removeprefix("eval_"): value for name, value in metrics.items() if name.startswith("eval_")}
        if scores:
            shown = ", ".join(f"{name} {value:.4f}" for name, value in scores.items() if not name.endswith("_second"))
            lines.append(f"  eval: {shown}")
        if layer_weights is not None:
            for representation in layer_weights.get("representations", []):
                weights = ", ".join(
                    f"{name} {weight:.3f}"
                    for name, weight in zip(layer_weights["layer_names"], representation["weights"], strict=True)
                )
                gamma = representation["gamma"]
                lines.append(f"  layer weights ({representation['name']}): {weights}; gamma {gamma:.3f}")
            if "note" in layer_weights:
                lines.append(f"  layer weights: {layer_weights['note']}")
            output_dir = os.path.abspath(self.training_args.output_dir)
            lines.append(f"  saved: model, tokenizer and layer weights in {output_dir}")
        return "\n".join(lines)
