"""The training scripts end to end on a toy task with the fixture model: they train, evaluate (seqeval F1,
accuracy), save a reloadable model with its layer weights, and give the same results from cached biLM layers; run
as files, they refuse a missing model, an --output_dir in use or not empty in one line."""

from __future__ import annotations

import dataclasses
import json
import os
import random
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
import torch
from lock_holder import start_lock_holder
from transformers import AutoModelForSequenceClassification, AutoModelForTokenClassification, AutoTokenizer

import modeling_elmo  # noqa: F401  (registers the Auto classes)
from elmo_transformers.common.errors import DataFileError
from elmo_transformers.training.finetuning import run_classification, run_token_classification
from elmo_transformers.training.finetuning.arguments import ElmoModelArguments
from modeling_elmo.configuration_elmo import ELMO_CONFIG_FIELDS, TASK_HEAD_FIELDS, ElmoConfig

# A toy tagging task: each word's tag is its class; the fixture biLM tells the classes apart in a few epochs.
WORD_TAGS = {
    "house": "B-NOUN",
    "river": "B-NOUN",
    "table": "B-NOUN",
    "city": "B-NOUN",
    "green": "B-ADJ",
    "open": "B-ADJ",
    "quiet": "B-ADJ",
    "walks": "B-VERB",
    "sings": "B-VERB",
    "reads": "B-VERB",
    "the": "O",
    "a": "O",
}
TRAINING = {"do_train": True, "num_train_epochs": 6, "learning_rate": 1e-2, "per_device_train_batch_size": 16}
QUIET = {"save_strategy": "no", "use_cpu": True, "seed": 0, "report_to": "none", "disable_tqdm": "true"}
SCORES = ("eval_precision", "eval_recall", "eval_f1", "eval_accuracy")
REPOSITORY = Path(__file__).resolve().parents[2]
# Each script (training/NAME.py) with the fixture that gives its data files.
SCRIPT_DATA = {run_token_classification: "tagging_files", run_classification: "classification_files"}


def _arguments(**options: object) -> list[str]:
    """Command-line arguments: `--name value`, `--name` alone for True, `--name v1 v2` for a list."""
    arguments = []
    for name, value in options.items():
        arguments.append(f"--{name}")
        if isinstance(value, list):
            arguments += [str(item) for item in value]
        elif value is not True:
            arguments.append(str(value))
    return arguments


def _write_json_lines(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _sentences(count: int, seed: int) -> list[list[str]]:
    rng = random.Random(seed)
    return [[rng.choice(list(WORD_TAGS)) for _ in range(rng.randint(2, 8))] for _ in range(count)]


@pytest.fixture(scope="module")
def tagging_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("tagging")
    files = []
    for name, count, seed in (("train", 160, 1), ("dev", 60, 2)):
        rows = [{"tokens": words, "tags": [WORD_TAGS[word] for word in words]} for words in _sentences(count, seed)]
        files.append(_write_json_lines(folder / f"{name}.jsonl", rows))
    return files[0], files[1]


@pytest.fixture(scope="module")
def classification_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Raw sentences labelled by whether they have a verb."""
    folder = tmp_path_factory.mktemp("classification")
    files = []
    for name, count, seed in (("train", 160, 3), ("dev", 60, 4)):
        rows = [
            {"sentence": " ".join(words), "label": "verb" if any(WORD_TAGS[w] == "B-VERB" for w in words) else "none"}
            for words in _sentences(count, seed)
        ]
        files.append(_write_json_lines(folder / f"{name}.jsonl", rows))
    return files[0], files[1]


def _tag_accuracy(model_folder: Path, dev: Path) -> float:
    """The token accuracy of a saved tagger, loaded with the Auto class, on the rows of `dev`."""
    model = AutoModelForTokenClassification.from_pretrained(model_folder).eval()
    tokenizer = AutoTokenizer.from_pretrained(model_folder)
    rows = [json.loads(line) for line in dev.read_text().splitlines()]
    batch = tokenizer([row["tokens"] for row in rows], is_split_into_words=True, padding=True, return_tensors="pt")
    with torch.no_grad():
        predicted = model(**batch).logits.argmax(-1)
    correct = total = 0
    for row, row_predicted in zip(rows, predicted, strict=True):
        tags = [model.config.id2label[int(index)] for index in row_predicted[: len(row["tags"])]]
        correct += sum(tag == gold for tag, gold in zip(tags, row["tags"], strict=True))
        total += len(tags)
    return correct / total


def test_token_classification_trains_saves_and_gives_the_same_results_from_cached_layers(
    tagging_files: tuple[Path, Path], fixture_model_folder: Path, tmp_path: Path
) -> None:
    train, dev = tagging_files
    options = {"model_name_or_path": fixture_model_folder, "train_file": train, "validation_file": dev, **TRAINING}
    live = run_token_classification.main(_arguments(**options, **QUIET, do_eval=True, output_dir=tmp_path / "live"))
    assert live["eval_f1"] > 0.9 and live["eval_accuracy"] > 0.9, live

    saved = tmp_path / "live"
    config = json.loads((saved / "config.json").read_text())
    assert config["id2label"] == {"0": "B-ADJ", "1": "B-NOUN", "2": "B-VERB", "3": "O"}
    assert _tag_accuracy(saved, dev) == pytest.approx(live["eval_accuracy"])
    weights = json.loads((saved / "layer_weights.json").read_text())
    assert weights["mix_mode"] == "scalar_mix" and weights["layer_names"] == ["token", "biLSTM 1", "biLSTM 2"]
    (representation,) = weights["representations"]
    assert sum(representation["weights"]) == pytest.approx(1.0)
    assert (saved / "layer_weights.png").read_bytes().startswith(b"\x89PNG")

    cached = run_token_classification.main(
        _arguments(
            **options,
            **QUIET,
            do_eval=True,
            output_dir=tmp_path / "cached",
            cache_features=True,
            features_cache_dir=tmp_path / "features",
        )
    )
    # The cache computes the layers in other batches than training does: equal up to float32 rounding (~1e-7).
    assert {name: cached[name] for name in SCORES} == {name: live[name] for name in SCORES}
    assert cached["eval_loss"] == pytest.approx(live["eval_loss"], rel=1e-4)
    cached_weights = json.loads((tmp_path / "cached" / "layer_weights.json").read_text())
    assert cached_weights["representations"][0]["weights"] == pytest.approx(representation["weights"], abs=1e-5)

    # Evaluation alone of the saved model: the labels come from its config.
    evaluated = run_token_classification.main(
        _arguments(model_name_or_path=saved, validation_file=dev, do_eval=True, output_dir=tmp_path / "eval", **QUIET)
    )
    assert {name: evaluated[name] for name in SCORES} == {name: live[name] for name in SCORES}


def test_classification_trains_on_cached_layers_and_saves(
    classification_files: tuple[Path, Path], fixture_model_folder: Path, tmp_path: Path
) -> None:
    train, dev = classification_files
    metrics = run_classification.main(
        _arguments(
            model_name_or_path=fixture_model_folder,
            train_file=train,
            validation_file=dev,
            do_eval=True,
            output_dir=tmp_path / "model",
            cache_features=True,
            features_cache_dir=tmp_path / "features",
            **{**TRAINING, **QUIET, "num_train_epochs": 12},
            num_output_representations=2,
            mix_l2_coefficient=1e-3,
        )
    )
    assert metrics["eval_accuracy"] > 0.9, metrics
    model = AutoModelForSequenceClassification.from_pretrained(tmp_path / "model")
    assert model.config.id2label == {0: "none", 1: "verb"} and model.config.num_output_representations == 2
    weights = json.loads((tmp_path / "model" / "layer_weights.json").read_text())
    assert [r["name"] for r in weights["representations"]] == ["task encoder input", "task encoder output"]
    assert (tmp_path / "model" / "layer_weights.png").is_file()


def test_a_mix_without_layer_weights_writes_a_note(
    tagging_files: tuple[Path, Path], fixture_model_folder: Path, tmp_path: Path
) -> None:
    train, _ = tagging_files
    run_token_classification.main(
        _arguments(
            model_name_or_path=fixture_model_folder,
            train_file=train,
            output_dir=tmp_path,
            **{**TRAINING, **QUIET, "num_train_epochs": 1},
            mix_mode="concat",
            mix_layers=[0, 1],
        )
    )
    weights = json.loads((tmp_path / "layer_weights.json").read_text())
    assert weights["mix_mode"] == "concat" and weights["layers"] == [0, 1] and "note" in weights
    assert not (tmp_path / "layer_weights.png").exists()
    assert AutoModelForTokenClassification.from_pretrained(tmp_path).config.mix_layers == [0, 1]


@pytest.mark.parametrize("script", [run_token_classification, run_classification])
def test_help(script, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        script.main(["--help"])
    assert exit_info.value.code == 0
    help_text = capsys.readouterr().out
    for option in ("--model_name_or_path", "--mix_mode", "--mix_layers", "--cache_features", "--label_column_name"):
        assert option in help_text


def test_bad_data_and_options_are_reported(
    fixture_model_folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def run(rows: list[str], **options: object) -> None:
        train = tmp_path / "train.jsonl"
        train.write_text("\n".join(rows) + "\n", encoding="utf-8")
        run_token_classification.main(
            _arguments(
                model_name_or_path=fixture_model_folder,
                train_file=train,
                do_train=True,
                output_dir=tmp_path / "out",
                **QUIET,
                **options,
            )
        )

    good = json.dumps({"tokens": ["a", "house"], "tags": ["O", "B-NOUN"]})
    with pytest.raises(DataFileError, match=r"train\.jsonl, line 3: not JSON"):
        run([good, "", "{not json", good])
    with pytest.raises(DataFileError, match=r"line 1: no 'ner_tags' column \(its columns: tokens, tags\)"):
        run([good, good], label_column_name="ner_tags")
    with pytest.raises(DataFileError, match="line 1: 1 words but 2 tags"):
        run([json.dumps({"tokens": ["a"], "tags": ["O", "O"]})])
    with pytest.raises(SystemExit) as exit_info:
        run([good], cache_features=True, no_freeze_bilm=True)
    assert exit_info.value.code == 2
    assert "--cache_features needs a frozen biLM" in capsys.readouterr().err


def test_every_task_head_field_is_an_option() -> None:
    """The options set exactly the fields ElmoConfig declares the task head's; unset ones keep the model's."""
    assert {option.name for option in dataclasses.fields(ElmoModelArguments)} & set(ELMO_CONFIG_FIELDS) == set(
        TASK_HEAD_FIELDS
    )
    given = {name: f"value of {name}" for name in TASK_HEAD_FIELDS}
    assert ElmoModelArguments(model_name_or_path="m", **given).config_overrides() == given
    assert ElmoModelArguments(model_name_or_path="m").config_overrides() == {"freeze_bilm": True}


def test_the_head_options_help_gives_elmo_configs_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    """The value an unset head option keeps comes from ElmoConfig itself, not from a copy in the help string."""
    with pytest.raises(SystemExit):
        run_token_classification.main(["--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    config = ElmoConfig()
    for name, text in (("mix_dropout", "Dropout on the mix."), ("task_hidden_size", "Task BiLSTM width.")):
        assert f"{text} Default: the model's own configuration ({getattr(config, name)})." in help_text


def _refusal(script: ModuleType, arguments: list[str]) -> str:
    """`python training/SCRIPT.py ARGUMENTS`, as the user runs it, which must stop with one line: that line."""
    environment = {**os.environ, "OMP_NUM_THREADS": "1"}
    launched = Path("training") / Path(script.__file__).name  # the file users start, training/X.py, for its module
    command = [sys.executable, str(launched), *arguments]
    result = subprocess.run(command, cwd=REPOSITORY, env=environment, capture_output=True, text=True, timeout=300)
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr[-4000:]
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    return line


@pytest.mark.parametrize("script", SCRIPT_DATA, ids=lambda script: script.__name__)
@pytest.mark.slow
def test_a_missing_model_is_one_line(script: ModuleType, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    train, _ = request.getfixturevalue(SCRIPT_DATA[script])
    missing = tmp_path / "no-such-model"
    arguments = _arguments(
        model_name_or_path=missing, train_file=train, output_dir=tmp_path / "out", **TRAINING, **QUIET
    )
    assert _refusal(script, arguments) == f"error: {missing}: no such model folder"


@pytest.mark.parametrize("script", SCRIPT_DATA, ids=lambda script: script.__name__)
def test_a_hub_name_that_does_not_load_is_one_line(
    script: ModuleType, tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A name that is no folder may be a Hub model (fine-tuning takes both); one that cannot be loaded (here: no
    network) is refused in one line naming it."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    train, _ = request.getfixturevalue(SCRIPT_DATA[script])
    arguments = _arguments(
        model_name_or_path="someone/no-such-elmo", train_file=train, output_dir=tmp_path / "out", **TRAINING, **QUIET
    )
    line = _refusal(script, arguments)
    assert line.startswith("error: someone/no-such-elmo: no such model folder or Hub model (")


@pytest.mark.parametrize("script", SCRIPT_DATA, ids=lambda script: script.__name__)
@pytest.mark.slow
def test_an_output_dir_not_empty_or_in_use_is_refused_and_kept(
    script: ModuleType, fixture_model_folder: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """As pretrain.py: a folder that holds files is trained into only with --overwrite_output_dir, and never while
    another run (any script's) writes it."""
    train, _ = request.getfixturevalue(SCRIPT_DATA[script])
    output = tmp_path / "out"
    output.mkdir()
    (output / "notes.txt").write_text("mine")
    arguments = _arguments(
        model_name_or_path=fixture_model_folder,
        train_file=train,
        output_dir=output,
        **{**TRAINING, **QUIET, "num_train_epochs": 1},
    )
    not_empty = f"error: {output} is not empty: pass --overwrite_output_dir to write into it anyway"
    assert _refusal(script, arguments) == not_empty
    holder = start_lock_holder(output)
    try:
        in_use = _refusal(script, [*arguments, "--overwrite_output_dir"])
    finally:
        holder.communicate("\n")
    assert in_use.startswith(f"error: {output} is being written by process {holder.pid} (-c {output}): ")
    assert [path.name for path in output.iterdir()] == ["notes.txt"] and (output / "notes.txt").read_text() == "mine"
    script.main([*arguments, "--overwrite_output_dir"])
    assert (output / "config.json").is_file() and (output / "notes.txt").read_text() == "mine"
