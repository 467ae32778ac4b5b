"""`elmo-model-card` on a run folder made from the bundled model: what it measures, and the page it renders."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from huggingface_hub import ModelCard

from elmo_transformers.common.errors import DataFileError
from elmo_transformers.common.run_folder import EVAL_RESULTS_FILE, MODEL_FOLDER, TRAINING_ARGS_FILE
from elmo_transformers.training.pretraining.checkpoint import TRAINER_STATE_FILE, checkpoint_name
from elmo_transformers.training.pretraining.model_card import main, measure_trained_model, run_arguments
from modeling_elmo import DEFAULT_MODEL

TEXT = "the cat sat on the mat .\nthe king said to his son , go .\nin the beginning was the word .\n"
SENTENCES, WORDS = 3, 23


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished run: its model folder (the bundled model) with the run's arguments, and its training text."""
    work = tmp_path_factory.mktemp("run")
    (work / "train.txt").write_text(TEXT * 10, encoding="utf-8")
    (work / "heldout.txt").write_text(TEXT, encoding="utf-8")
    model = shutil.copytree(DEFAULT_MODEL, work / "run" / MODEL_FOLDER)
    arguments = {"unroll_steps": 20, "train_files": [str(work / "train.txt")], "per_device_train_batch_size": 4}
    (model / TRAINING_ARGS_FILE).write_text(json.dumps(arguments), encoding="utf-8")
    return work / "run"


def _page_options(run_dir: Path) -> list[str]:
    """The page's text and the run's held-out text, as elmo-model-card's options."""
    options = {
        "--license": "cc-by-sa-4.0",
        "--data_description": "Three sentences.",
        "--sources": "here",
        "--command": "bash train.sh",
        "--time": "1 min",
        "--repo_id": "me/elmo",
        "--heldout": f"all={run_dir.parent / 'heldout.txt'}",
    }
    return [item for option in options.items() for item in option]


def test_the_measurements_are_the_run_and_its_texts(run_dir: Path) -> None:
    heldout = run_dir.parent / "heldout.txt"
    measured = measure_trained_model(run_dir / MODEL_FOLDER, run_arguments(run_dir), {"all": heldout})
    steps = json.loads((run_dir / MODEL_FOLDER / EVAL_RESULTS_FILE).read_text())["step"]
    assert (measured.steps, measured.streams, measured.unroll_steps) == (steps, 4, 20)
    assert (measured.corpus.sentences, measured.corpus.words) == (10 * SENTENCES, 10 * WORDS)
    assert measured.epochs == steps * 4 * 20 / (10 * WORDS + 10 * SENTENCES)  # every word and each sentence's </S>
    assert measured.heldout["all"]["tokens"] == WORDS + SENTENCES and measured.heldout["all"]["perplexity"] > 1


def test_the_page_reports_the_measurements(run_dir: Path, tmp_path: Path) -> None:
    heldout = run_dir.parent / "heldout.txt"
    main(["--run_dir", str(run_dir), "--output", str(tmp_path / "page"), *_page_options(run_dir)])
    measured = measure_trained_model(run_dir / MODEL_FOLDER, run_arguments(run_dir), {"all": heldout})
    card = ModelCard.load(tmp_path / "page" / "README.md")
    perplexity = f"{measured.heldout['all']['perplexity']:.1f}"
    assert card.data.eval_results[0].metric_value == float(perplexity)
    assert f"| all | {WORDS + SENTENCES} | {perplexity} |" in card.text
    steps = f"{measured.steps:,} (4 streams x 20 words per direction), {measured.epochs:.2f} epochs"
    assert f"| steps | {steps} |" in card.text


def test_the_arguments_of_a_run_without_its_model_come_from_its_newest_checkpoint(tmp_path: Path) -> None:
    with pytest.raises(DataFileError, match=f"no {MODEL_FOLDER}/{TRAINING_ARGS_FILE} and no checkpoint"):
        run_arguments(tmp_path)
    checkpoint = tmp_path / checkpoint_name(10)
    checkpoint.mkdir()
    (checkpoint / TRAINER_STATE_FILE).write_text(json.dumps({"step": 10, "args": {"unroll_steps": 7}}))
    assert run_arguments(tmp_path) == {"unroll_steps": 7}


def test_the_page_folder_records_its_files(run_dir: Path, tmp_path: Path) -> None:
    """The folder had no SHA256SUMS (the bundled model is one of these)."""
    output = tmp_path / "page"
    main(["--run_dir", str(run_dir), "--output", str(output), *_page_options(run_dir)])
    recorded = dict(reversed(line.split("  ", 1)) for line in (output / "SHA256SUMS").read_text().splitlines())
    files = {path.name for path in output.iterdir() if path.name not in ("README.md", "SHA256SUMS")}
    assert set(recorded) == files and TRAINING_ARGS_FILE in files
    assert all(hashlib.sha256((output / name).read_bytes()).hexdigest() == recorded[name] for name in files)


def test_a_damaged_run_model_is_refused(run_dir: Path, tmp_path: Path) -> None:
    """A flipped byte in the run's weights was measured, given a page and recorded afresh."""
    damaged = tmp_path / "run"
    shutil.copytree(run_dir, damaged)
    weights = damaged / MODEL_FOLDER / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[len(data) // 2] ^= 0x01
    weights.write_bytes(bytes(data))
    with pytest.raises(SystemExit, match=rf"^error: {weights}: its sha256 is [0-9a-f]{{16}}\.\.\., but SHA256SUMS"):
        main(["--run_dir", str(damaged), "--output", str(tmp_path / "page"), *_page_options(run_dir)])
    assert not (tmp_path / "page").exists()
