"""training/pretrain.py end to end: a 2-process accelerate run (of the module, and of the file) that learns, saves
and resumes exactly; the LSTM state carried from window to window in training and in evaluation; a one-process
resume that gives the same generators, state and windows; fine-tuning with a new vocabulary; perplexity
evaluation; bad input."""

from __future__ import annotations

import errno
import hashlib
import itertools
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from bad_inputs import RunsAShellCommand, flip_bytes_in_the_middle
from command_output import messages
from lock_holder import start_lock_holder
from original_files import small_options
from safetensors.torch import load_file
from transformers import AutoModel, AutoModelForPreTraining

import modeling_elmo  # noqa: F401  (registers the Auto classes)
from elmo_transformers.common.checksums import record_checksums
from elmo_transformers.common.errors import TrainingError
from elmo_transformers.common.output_lock import lock_path
from elmo_transformers.training.pretraining.checkpoint import refuse_damaged_checkpoint
from elmo_transformers.training.pretraining.evaluate_perplexity import main as evaluate_main
from elmo_transformers.training.pretraining.lm_vocabulary import LmVocabulary
from elmo_transformers.training.pretraining.metrics_log import MetricsLog
from elmo_transformers.training.pretraining.perplexity import evaluate_perplexity
from elmo_transformers.training.pretraining.pretrain import LmTrainer, parse_args
from elmo_transformers.training.pretraining.pretrain import main as pretrain_main
from elmo_transformers.training.pretraining.starting_model import load_starting_model, transfer_softmax
from modeling_elmo import ElmoConfig, ElmoModel, ElmoTokenizer

REPOSITORY = Path(__file__).resolve().parents[2]
TINY_OPTIONS = small_options(n_characters=261, n_highway=1, filters=[[1, 8], [2, 8]], n_negative_samples_batch=8)


def _toy_sentences(count: int, seed: int, nouns=("cat", "dog", "bird", "fish")) -> list[str]:
    """A tiny regular language: easy to learn, so perplexity must fall far below the vocabulary size."""
    rng = random.Random(seed)
    verbs = ("sees", "likes", "chases")
    return [f"the {rng.choice(nouns)} {rng.choice(verbs)} the {rng.choice(nouns)} ." for _ in range(count)]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("corpus")
    for shard in range(2):
        (root / f"train-{shard}.txt").write_text("\n".join(_toy_sentences(150, shard)) + "\n")
    (root / "heldout.txt").write_text("\n".join(_toy_sentences(40, 99)) + "\n")
    (root / "options.json").write_text(json.dumps(TINY_OPTIONS))
    words = ["<S>", "</S>", "<UNK>", "the", ".", "cat", "dog", "bird", "fish", "sees", "likes", "chases"]
    (root / "vocab.txt").write_text("\n".join(words) + "\n")
    return root


def _arguments(corpus: Path, output: Path, *extra: str) -> list[str]:
    return [
        "--train_files", str(corpus / "train-*.txt"),
        "--validation_files", str(corpus / "heldout.txt"),
        "--vocab_file", str(corpus / "vocab.txt"),
        "--output_dir", str(output),
        "--per_device_train_batch_size", "4",
        "--per_device_eval_batch_size", "4",
        "--unroll_steps", "5",
        "--logging_steps", "10",
        "--seed", "3",
        "--optimizer", "adamw",  # learns the toy language in few steps (Adagrad at 0.2 needs many more)
        "--learning_rate", "0.01",
        *extra,
    ]  # fmt: skip


def _launch_two_processes(
    arguments: list[str],
    script: tuple[str, ...] = ("-m", "elmo_transformers.training.pretrain"),
    *,
    succeed: bool = True,
    environment: dict[str, str] | None = None,
) -> subprocess.CompletedProcess:
    """`accelerate launch` two processes of the module, or of `script=("training/pretrain.py",)`, the file; a run
    that must fail (`succeed=False`) is returned for its one-line errors."""
    command = [
        sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2",
        "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no", *script, *arguments,
    ]  # fmt: skip
    return _run(command, succeed=succeed, environment=environment)


def _run_file(arguments: list[str], *, succeed: bool = True) -> subprocess.CompletedProcess:
    """`python training/pretrain.py ARGUMENTS`, one process, as the user runs the file."""
    return _run([sys.executable, "training/pretrain.py", *arguments], succeed=succeed)


def _run(
    command: list[str], *, succeed: bool, environment: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    environment = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPOSITORY), **(environment or {})}
    result = subprocess.run(command, cwd=REPOSITORY, env=environment, capture_output=True, text=True, timeout=600)
    assert (result.returncode == 0) == succeed, result.stderr[-4000:]
    if not succeed:  # one line per process; the only traceback is that of accelerate's launcher, if any
        tracebacks = result.stderr.count("Traceback (most recent call last)")
        assert tracebacks == result.stderr.count("raise ChildFailedError("), result.stderr[-4000:]
    return result


def _errors(result: subprocess.CompletedProcess) -> list[str]:
    """The `error: MESSAGE` lines of a failed run, one per process."""
    return messages(result.stderr, "error: ")


def _weights(folder: Path) -> dict[str, torch.Tensor]:
    return load_file(str(folder / "model.safetensors"))


@pytest.fixture(scope="module")
def two_process_run(corpus, tmp_path_factory) -> Path:
    output = tmp_path_factory.mktemp("run") / "out"
    _launch_two_processes(
        _arguments(
            corpus, output, "--options_file", str(corpus / "options.json"), "--max_steps", "60", "--save_steps", "30"
        )
    )
    return output


@pytest.mark.slow
def test_two_processes_learn_the_corpus_and_save_a_model(two_process_run):
    model_folder = two_process_run / "model"
    results = json.loads((model_folder / "eval_results.json").read_text())
    # 12 words: a model that learned nothing scores about 12; the toy language allows far less.
    assert results["perplexity"] < 5.0, results
    assert results["forward_perplexity"] < 5.5 and results["backward_perplexity"] < 5.5
    assert (model_folder / "perplexity.png").stat().st_size > 0
    records = [json.loads(line) for line in (two_process_run / "metrics.jsonl").read_text().splitlines()]
    evaluations = [record["eval_perplexity"] for record in records if "eval_perplexity" in record]
    assert len(evaluations) == 2 and evaluations[1] < evaluations[0]
    assert type(AutoModelForPreTraining.from_pretrained(model_folder)).__name__ == "ElmoForBidirectionalLM"
    assert type(AutoModel.from_pretrained(model_folder)).__name__ == "ElmoModel"
    assert (two_process_run / "checkpoint-30" / "process-1.json").is_file()
    assert not list(two_process_run.glob(".checkpoint-*"))


@pytest.mark.slow
def test_resuming_two_processes_reproduces_the_uninterrupted_run(two_process_run, corpus, tmp_path):
    output = tmp_path / "resumed"
    output.mkdir()
    shutil.copytree(two_process_run / "checkpoint-30", output / "checkpoint-30")
    # A save killed half-way leaves a hidden partial folder: resuming ignores it.
    (output / ".checkpoint-60.partial").mkdir()
    _launch_two_processes(
        _arguments(corpus, output, "--options_file", str(corpus / "options.json"), "--max_steps", "60",
                   "--save_steps", "30", "--resume_from_checkpoint", "latest"),
        script=("training/pretrain.py",),  # as Hugging Face's example scripts are launched
    )  # fmt: skip
    expected, resumed = _weights(two_process_run / "model"), _weights(output / "model")
    assert expected.keys() == resumed.keys()
    for name in expected:
        assert torch.equal(expected[name], resumed[name]), name


@pytest.mark.slow
def test_sparse_softmax_sync_equals_ddps_dense_all_reduce(two_process_run, corpus, tmp_path):
    output = tmp_path / "sparse"
    _launch_two_processes(
        _arguments(corpus, output, "--options_file", str(corpus / "options.json"), "--max_steps", "30",
                   "--save_steps", "30", "--sparse_softmax_sync")
    )  # fmt: skip
    dense, sparse = _weights(two_process_run / "checkpoint-30"), _weights(output / "model")
    for name in dense:
        assert torch.equal(dense[name], sparse[name]), name


class TrainingWindowSpy:
    """Records each training window's call of a trainer's model: the LSTM state given and returned, the windows,
    and the random generators it draws from (torch's, the GPU's, the softmax sampler's) as they stood before it."""

    def __init__(self, trainer: LmTrainer) -> None:
        self.calls: list[dict[str, object]] = []
        model = trainer.accelerator.unwrap_model(trainer.model)
        model.register_forward_pre_hook(self._before, with_kwargs=True)
        model.register_forward_hook(self._after, with_kwargs=True)

    def _before(self, model, args, kwargs) -> None:
        if not model.training:  # a validation perplexity between steps
            return
        state = kwargs["state"]
        call = {
            "state": None if state is None else tuple(tensor.clone() for tensor in state),
            **{name: kwargs[name].clone() for name in ("input_ids", "backward_input_ids", "labels", "backward_labels")},
            "torch_rng": torch.get_rng_state(),
            "sampler_rng": kwargs["sampler_generator"].get_state(),
        }
        if kwargs["input_ids"].is_cuda:
            call["cuda_rng"] = torch.cuda.get_rng_state(kwargs["input_ids"].device)
        self.calls.append(call)

    def _after(self, model, args, kwargs, output) -> None:
        if model.training:
            self.calls[-1]["returned_state"] = tuple(tensor.detach().clone() for tensor in output.state)


def _single_process_trainer(corpus: Path, output: Path, *extra: str) -> LmTrainer:
    """A trainer in this process; dropout on, so that every step draws from torch's generator too."""
    options = ("--options_file", str(corpus / "options.json"), "--dropout", "0.2", "--save_steps", "2")
    return LmTrainer(parse_args(_arguments(corpus, output, *options, *extra)))


def _assert_equal_calls(expected: dict[str, object], actual: dict[str, object]) -> None:
    assert expected.keys() == actual.keys()
    for name, value in expected.items():
        if isinstance(value, tuple):
            assert isinstance(actual[name], tuple), name
            assert all(torch.equal(a, b) for a, b in zip(value, actual[name], strict=True)), name
        else:
            assert torch.equal(value, actual[name]), name


def test_the_trainer_carries_the_lstm_state_from_window_to_window(corpus, tmp_path):
    trainer = _single_process_trainer(corpus, tmp_path / "out", "--max_steps", "4")
    spy = TrainingWindowSpy(trainer)
    trainer.train()
    assert len(spy.calls) == 4 and spy.calls[0]["state"] is None
    for previous, call in itertools.pairwise(spy.calls):
        # bilm-tf's truncated backpropagation: each window starts from the state the previous one ended in.
        assert call["state"] is not None and call["state"][0].abs().sum() > 0
        assert all(torch.equal(a, b) for a, b in zip(call["state"], previous["returned_state"], strict=True))


def test_a_checkpoint_resumes_generators_state_and_windows_exactly(corpus, tmp_path):
    uninterrupted = _single_process_trainer(corpus, tmp_path / "run", "--max_steps", "4")
    expected = TrainingWindowSpy(uninterrupted)
    uninterrupted.train()
    output = tmp_path / "resumed"
    output.mkdir()
    shutil.copytree(tmp_path / "run" / "checkpoint-2", output / "checkpoint-2")
    resumed = _single_process_trainer(corpus, output, "--max_steps", "4", "--resume_from_checkpoint", "latest")
    actual = TrainingWindowSpy(resumed)
    resumed.train()
    # Steps 3 and 4 start from the same generators (advanced by 2 steps of dropout and sampling), the same
    # non-zero LSTM state and the same windows (the text streams' positions) as without the interruption.
    assert len(actual.calls) == 2 and expected.calls[2]["state"][1].abs().sum() > 0
    for expected_call, actual_call in zip(expected.calls[2:], actual.calls, strict=True):
        _assert_equal_calls(expected_call, actual_call)
    expected_weights, resumed_weights = _weights(tmp_path / "run" / "model"), _weights(output / "model")
    assert all(torch.equal(expected_weights[name], resumed_weights[name]) for name in expected_weights)


def test_perplexity_carries_the_state_across_windows(corpus):
    """One stream (batch 1) holds the same words whatever the window length: in windows of 3 words, the carried
    state must give what one window over the whole stream (where nothing is carried) gives."""
    vocabulary = LmVocabulary.from_file(corpus / "vocab.txt")
    torch.manual_seed(0)
    starting = load_starting_model(vocabulary, options_file=str(corpus / "options.json"))
    files = [corpus / "heldout.txt"]

    def perplexity(unroll_steps: int) -> dict[str, float]:
        return evaluate_perplexity(
            starting.model,
            starting.tokenizer,
            vocabulary,
            files,
            batch_size=1,
            unroll_steps=unroll_steps,
            progress=False,
        )

    windows = perplexity(3)
    whole = perplexity(windows["tokens"])
    assert windows["tokens"] == whole["tokens"]
    for name in ("forward_perplexity", "backward_perplexity"):
        assert windows[name] == pytest.approx(whole[name], rel=1e-6), name


def test_fine_tuning_with_a_new_vocabulary(two_process_run, corpus, tmp_path, capsys):
    domain = tmp_path / "domain"
    domain.mkdir()
    nouns = ("cat", "cow", "horse", "goat")  # two new words
    (domain / "train.txt").write_text("\n".join(_toy_sentences(200, 7, nouns)) + "\n")
    (domain / "heldout.txt").write_text("\n".join(_toy_sentences(40, 8, nouns)) + "\n")
    words = ["<S>", "</S>", "<UNK>", "the", ".", "cat", "cow", "horse", "goat", "sees", "likes", "chases"]
    (domain / "vocab.txt").write_text("\n".join(words) + "\n")
    base = two_process_run / "model"
    evaluate = ["--files", str(domain / "heldout.txt"), "--vocab_file", str(domain / "vocab.txt")]
    evaluate_main(["--model_name_or_path", str(base), *evaluate, "--output", str(tmp_path / "before.json")])
    pretrain_main([
        "--train_files", str(domain / "train.txt"), "--validation_files", str(domain / "heldout.txt"),
        "--vocab_file", str(domain / "vocab.txt"), "--model_name_or_path", str(base), "--output_dir",
        str(tmp_path / "adapted"), "--max_steps", "40", "--save_steps", "40", "--per_device_train_batch_size", "4",
        "--unroll_steps", "5", "--num_sampled", "0",
    ])  # fmt: skip
    evaluate_main(["--model_name_or_path", str(tmp_path / "adapted" / "model"), *evaluate])
    before = json.loads((tmp_path / "before.json").read_text())
    after = json.loads((tmp_path / "adapted" / "model" / "eval_results.json").read_text())
    assert after["perplexity"] < before["perplexity"]
    assert (tmp_path / "adapted" / "model" / "vocab.txt").read_text().split() == words
    assert '"perplexity"' in capsys.readouterr().out


def test_perplexity_of_a_folder_without_the_softmax_is_refused_in_one_line(tmp_path):
    """A biLM folder with a vocab.txt put beside it loads as a language model with a random softmax: no perplexity."""
    folder = tmp_path / "bilm"
    config = ElmoConfig(cell_size=16, projection_dim=8, char_cnn_filters=[[1, 4]], num_highway_layers=0)
    ElmoModel(config).save_pretrained(folder)
    ElmoTokenizer().save_pretrained(folder)
    (folder / "vocab.txt").write_text("<S>\n</S>\n<UNK>\nthe\ncat\n")
    (tmp_path / "heldout.txt").write_text("the cat\n")
    with pytest.raises(SystemExit) as refusal:
        evaluate_main(["--model_name_or_path", str(folder), "--files", str(tmp_path / "heldout.txt")])
    assert refusal.value.code == (
        f"error: {folder} holds no language-model softmax (softmax.weight, softmax.bias), though it has a vocab.txt: "
        "its perplexity would be a random softmax's; convert a bilm-tf checkpoint or train one with "
        "training/pretrain.py"
    )


def test_transferred_softmax_keeps_known_words_and_splits_unk(two_process_run):
    model = AutoModelForPreTraining.from_pretrained(two_process_run / "model").eval()
    old = LmVocabulary.from_file(two_process_run / "model" / "vocab.txt")
    hidden = torch.randn(5, 8)
    old_log_probs = torch.log_softmax(hidden @ model.softmax.weight.T + model.softmax.bias, -1)
    new = LmVocabulary(["<S>", "</S>", "<UNK>", "the", "cat", "cow", "horse"])  # "cow", "horse" new; others dropped
    assert transfer_softmax(model, old, new) == 4
    new_log_probs = torch.log_softmax(hidden @ model.softmax.weight.T + model.softmax.bias, -1)

    def relative(log_probs, vocabulary, word):  # log p(word) - log p("the"): what dropping other words keeps
        return log_probs[:, vocabulary.ids[word]] - log_probs[:, vocabulary.ids["the"]]

    for word in ("<S>", "</S>", "cat"):
        assert torch.allclose(relative(new_log_probs, new, word), relative(old_log_probs, old, word), atol=1e-5)
    # The old <UNK> mass is split evenly among <UNK>, cow and horse.
    unk_like = new_log_probs[:, [new.ids["<UNK>"], new.ids["cow"], new.ids["horse"]]]
    assert torch.allclose(unk_like, unk_like[:, :1].expand_as(unk_like), atol=1e-6)
    split_unk = torch.logsumexp(unk_like, dim=1) - new_log_probs[:, new.ids["the"]]
    assert torch.allclose(split_unk, relative(old_log_probs, old, "<UNK>"), atol=1e-5)
    assert model.config.vocab_size == 7


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"train": ""}, "no sentences"),
        ({"train": "the cat .\n"}, "fewer than one batch"),
        ({"vocab": "the\ncat\n"}, "lacks the special words <S>, </S>, <UNK>"),
        ({"options": {**TINY_OPTIONS, "n_tokens_vocab": 99}}, "n_tokens_vocab=99 but the vocabulary has 12 words"),
    ],
)
def test_bad_input_is_a_clear_error(corpus, tmp_path, change, message, capsys):
    train, vocab, options = corpus / "train-*.txt", corpus / "vocab.txt", corpus / "options.json"
    if "train" in change:
        train = tmp_path / "train.txt"
        train.write_text(change["train"])
    if "vocab" in change:
        vocab = tmp_path / "vocab.txt"
        vocab.write_text(change["vocab"])
    if "options" in change:
        options = tmp_path / "options.json"
        options.write_text(json.dumps(change["options"]))
    arguments = _arguments(corpus, tmp_path / "out", "--options_file", str(options), "--max_steps", "2")
    arguments[arguments.index("--train_files") + 1] = str(train)
    arguments[arguments.index("--vocab_file") + 1] = str(vocab)
    with pytest.raises(SystemExit) as raised:
        pretrain_main(arguments)
    assert message in str(raised.value)


def test_an_existing_output_dir_is_not_overwritten(corpus, tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep.txt").write_text("x")
    with pytest.raises(SystemExit, match="is not empty"):
        pretrain_main(_arguments(corpus, tmp_path / "out", "--options_file", str(corpus / "options.json")))
    with pytest.raises(SystemExit, match=r"either --options_file .* or --model_name_or_path"):
        pretrain_main(_arguments(corpus, tmp_path / "other"))


def _run_into(corpus: Path, output: Path, *extra: str) -> list[str]:
    """The arguments of a new biLM from the toy options into `output`."""
    return _arguments(corpus, output, "--options_file", str(corpus / "options.json"), *extra)


@pytest.mark.slow
def test_a_second_run_into_an_output_dir_in_use_is_refused_by_every_process(corpus, tmp_path):
    """Another writer holds the output_dir (as a running pretrain.py does): both processes of a second run stop
    with the same one line naming it, before they write anything, even with --overwrite_output_dir."""
    output = tmp_path / "out"
    output.mkdir()
    (output / "metrics.jsonl").write_text("the first run's\n")
    holder = start_lock_holder(output)
    try:
        lock_file = lock_path(output).read_text()
        refused = _launch_two_processes(
            _run_into(corpus, output, "--max_steps", "4", "--overwrite_output_dir"),
            script=("training/pretrain.py",),
            succeed=False,
        )
        holder_is = f"is being written by process {holder.pid} (-c {output}): wait for it to finish, or stop it first"
        message = f"error: {output} {holder_is}"
        assert _errors(refused) == [message, message], refused.stderr[-4000:]
        assert [path.name for path in output.iterdir()] == ["metrics.jsonl"]
        assert (output / "metrics.jsonl").read_text() == "the first run's\n"
        assert lock_path(output).read_text() == lock_file
    finally:
        holder.communicate("\n")


# Installed with PYTHONPATH where no tmpfs can be mounted: every safetensors file written under the folder named by
# TEST_ENOSPC_UNDER fails as on a full disk (before transformers imports save_file, which then is this one).
_INJECTED_ENOSPC = """
import errno, os
_under = os.environ.get("TEST_ENOSPC_UNDER")
if _under:
    import safetensors.torch
    _save_file = safetensors.torch.save_file

    def save_file(tensors, filename, metadata=None):
        if _under in str(filename):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(filename))
        return _save_file(tensors, filename, metadata)

    safetensors.torch.save_file = save_file
"""


class SmallDisk:
    """A folder on a disk with room for one checkpoint of the toy biLM (two processes) but not two: a tmpfs where
    one can be mounted (as root), else an injected ENOSPC for the files of the second checkpoint."""

    def __init__(self, folder: Path, full_under: str, room_kib: int) -> None:
        self.folder = folder
        folder.mkdir()
        size = f"size={room_kib}k"
        mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", size, "tmpfs", str(folder)], capture_output=True)
        self.method = "tmpfs" if mounted.returncode == 0 else "injected ENOSPC"
        self.environment: dict[str, str] = {}
        if self.method == "injected ENOSPC":
            (folder.parent / "sitecustomize.py").write_text(_INJECTED_ENOSPC)
            self.environment = {
                "PYTHONPATH": f"{folder.parent}{os.pathsep}{REPOSITORY}",
                "TEST_ENOSPC_UNDER": full_under,
            }

    def free_space(self) -> None:
        if self.method == "tmpfs":
            subprocess.run(["mount", "-o", "remount,size=8m", str(self.folder)], check=True)
        self.environment = {}

    def release(self) -> None:
        if self.method == "tmpfs":
            subprocess.run(["umount", str(self.folder)], check=True)


@pytest.fixture
def small_disk(tmp_path, capsys, two_process_run) -> Iterator[SmallDisk]:
    # room for one and a half of the uninterrupted run's checkpoints: its size moves with the code files it carries
    checkpoint = two_process_run / "checkpoint-30"
    room = 3 * sum(path.stat().st_blocks * 512 for path in checkpoint.rglob("*") if path.is_file()) // 2 // 1024
    disk = SmallDisk(tmp_path / "disk", full_under=".checkpoint-60.partial", room_kib=room)
    with capsys.disabled():
        print(f"\n[disk full by {disk.method}]", end=" ")
    yield disk
    disk.release()


@pytest.mark.slow
def test_a_full_disk_during_a_save_is_one_line_and_the_run_resumes_to_the_same_weights(
    two_process_run, corpus, small_disk
):
    output = small_disk.folder / "out"
    # --no_space_check: the estimate leaves out the code files of each checkpoint, so it may or may not see that
    # this disk fills at the second; what is tested here is the save that fails.
    arguments = _run_into(corpus, output, "--max_steps", "60", "--save_steps", "30", "--no_space_check")
    full = _launch_two_processes(arguments, succeed=False, environment=small_disk.environment)
    message = (
        f"error: {output}/checkpoint-60 was not saved: the disk of {output} is full; the newest intact checkpoint is "
        f"{output}/checkpoint-30: free some space and resume with --resume_from_checkpoint latest"
    )
    assert _errors(full) == [message, message], full.stderr[-4000:]
    assert sorted(path.name for path in output.iterdir()) == ["checkpoint-30", "metrics.jsonl"]  # no staging left
    intact, expected = _weights(output / "checkpoint-30"), _weights(two_process_run / "checkpoint-30")
    assert all(torch.equal(expected[name], intact[name]) for name in expected)
    small_disk.free_space()
    _launch_two_processes(
        [*arguments, "--resume_from_checkpoint", "latest"], script=("training/pretrain.py",),
        environment=small_disk.environment,
    )  # fmt: skip
    final, resumed = _weights(two_process_run / "model"), _weights(output / "model")
    assert all(torch.equal(final[name], resumed[name]) for name in final)
    assert (output / "checkpoint-60" / "process-1.json").is_file()


@pytest.mark.parametrize("logged", ["log_training", "log_evaluation"])
def test_a_full_disk_while_logging_metrics_is_one_line(logged: str, corpus, tmp_path, monkeypatch):
    output = tmp_path / "out"
    trainer = _single_process_trainer(corpus, output, "--max_steps", "4", "--logging_steps", "3", "--eval_steps", "3")

    def full_disk(self, *args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self.path))

    monkeypatch.setattr(MetricsLog, logged, full_disk)
    with pytest.raises(TrainingError) as refused:
        trainer.train()
    assert str(refused.value) == (
        f"{output}/metrics.jsonl was not saved: the disk of {output} is full; the newest intact checkpoint is"
        f" {output}/checkpoint-2: free some space and resume with --resume_from_checkpoint latest"
    )


@pytest.mark.slow
def test_a_run_the_disk_has_no_room_for_is_refused_before_training(corpus, tmp_path):
    output = tmp_path / "out"
    # A billion checkpoints of the toy biLM need about 420 TB: more than this disk has free.
    arguments = _run_into(corpus, output, "--max_steps", str(10**9), "--save_steps", "1")
    (refused,) = _errors(_run_file(arguments, succeed=False))
    assert refused.startswith(f"error: {output}: 1,000,000,000 checkpoint(s) of 140.1 KB and the model need about ")
    assert refused.endswith("free some space, write elsewhere, or pass --no_space_check to try anyway")
    assert not any(output.iterdir())


@pytest.fixture(scope="module")
def one_process_run(corpus, tmp_path_factory) -> Path:
    """`python training/pretrain.py`, 4 steps saved every 2: checkpoint-2 and checkpoint-4, the last step."""
    output = tmp_path_factory.mktemp("one") / "out"
    _run_file(_run_into(corpus, output, "--max_steps", "4", "--save_steps", "2"))
    return output


@pytest.mark.slow
def test_the_last_step_is_a_checkpoint_that_resumes_to_a_longer_run(one_process_run, corpus, tmp_path):
    longer = _run_into(corpus, tmp_path / "six", "--max_steps", "6", "--save_steps", "2")
    _run_file(longer)
    output = tmp_path / "continued"
    output.mkdir()
    shutil.copytree(one_process_run / "checkpoint-4", output / "checkpoint-4")
    resumed = _run_file(_run_into(corpus, output, "--max_steps", "6", "--save_steps", "2",
                                  "--resume_from_checkpoint", "latest"))  # fmt: skip
    assert f"resumed from {output}/checkpoint-4 at step 4; corpus: " in resumed.stderr
    assert "new biLM" not in resumed.stderr
    expected, continued = _weights(tmp_path / "six" / "model"), _weights(output / "model")
    assert all(torch.equal(expected[name], continued[name]) for name in expected)


@pytest.mark.parametrize(
    ("checkpoint", "damaged"),
    [
        ("checkpoint-4", "model.safetensors"),
        ("checkpoint-4", "optimizer.pt"),
        ("checkpoint-4", "process-0.safetensors"),
        ("checkpoint-4", "process-0.json"),
        ("checkpoint-4", "trainer_state.json"),
        ("checkpoint-2", "optimizer.pt"),  # the first checkpoint: none to use instead
    ],
)
@pytest.mark.slow
def test_a_truncated_checkpoint_file_is_named_with_the_checkpoint_to_use_instead(
    one_process_run, corpus, tmp_path, checkpoint, damaged
):
    output = tmp_path / "out"
    shutil.copytree(one_process_run, output)
    path = output / checkpoint / damaged
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])  # a copy or a disk that stopped half-way
    arguments = _run_into(corpus, output, "--max_steps", "6", "--save_steps", "2")
    (refused,) = _errors(_run_file([*arguments, "--resume_from_checkpoint", str(output / checkpoint)], succeed=False))
    if checkpoint == "checkpoint-4":
        intact = output / "checkpoint-2"
        instead = f"the newest intact checkpoint is {intact}: resume with --resume_from_checkpoint {intact}"
    else:
        instead = "there is no intact checkpoint before it: start again with --overwrite_output_dir"
    assert refused.startswith(f"error: {path} is damaged (")
    assert refused.endswith(f": the checkpoint {output / checkpoint} cannot be resumed; {instead}"), refused


def _refused_resume(corpus: Path, output: Path) -> str:
    """The one error line of resuming the copied run `output` from its latest checkpoint (checkpoint-4)."""
    arguments = _run_into(corpus, output, "--max_steps", "6", "--save_steps", "2", "--resume_from_checkpoint", "latest")
    (refused,) = _errors(_run_file(arguments, succeed=False))
    return refused


def _resume_way_on(output: Path) -> str:
    """What a refused checkpoint-4 of `output` says to do instead."""
    intact = output / "checkpoint-2"
    return (
        f"the checkpoint {output / 'checkpoint-4'} cannot be resumed; the newest intact checkpoint is {intact}:"
        f" resume with --resume_from_checkpoint {intact}"
    )


@pytest.mark.parametrize("damaged", ["model.safetensors", "optimizer.pt"])
@pytest.mark.slow
def test_a_checkpoint_with_flipped_bytes_is_refused_by_its_checksums(one_process_run, corpus, tmp_path, damaged):
    """64 bytes flipped inside a file that still loads: the run resumed and finished with exit 0, its final weights
    off by up to 157 (the perplexity barely moved: 24.68 against 24.63)."""
    output = tmp_path / "out"
    shutil.copytree(one_process_run, output)
    path = output / "checkpoint-4" / damaged
    expected = hashlib.sha256(path.read_bytes()).hexdigest()
    flip_bytes_in_the_middle(path)
    actual = hashlib.sha256(path.read_bytes()).hexdigest()
    assert _refused_resume(corpus, output) == (
        f"error: {path}: its sha256 is {actual[:16]}..., but SHA256SUMS records {expected[:16]}...: the file is"
        f" damaged: {_resume_way_on(output)}"
    )
    assert sorted(path.name for path in output.iterdir()) == sorted(path.name for path in one_process_run.iterdir())


def _copied_checkpoint_refusal(one_process_run: Path, tmp_path: Path, damage) -> str:
    """The line refusing checkpoint-4 of a copy of the run once `damage(checkpoint-4)` was done to it."""
    output = tmp_path / "out"
    shutil.copytree(one_process_run, output)
    damage(output / "checkpoint-4")
    with pytest.raises(TrainingError) as refused:
        refuse_damaged_checkpoint(output / "checkpoint-4")
    return str(refused.value)


def _rewrite_json(path: Path, value: object) -> None:
    path.write_text(json.dumps(value), encoding="utf-8")
    record_checksums(path.parent)  # the record rewritten too: only the file's shape shows it


@pytest.mark.parametrize(
    ("damage", "problem"),
    [
        (lambda folder: (folder / "SHA256SUMS").unlink(), "SHA256SUMS: missing: the folder's files cannot be compared"),
        (
            lambda folder: (folder / "SHA256SUMS").write_text(
                "".join(line for line in (folder / "SHA256SUMS").open() if "model.safetensors" not in line)
            ),
            "model.safetensors: {folder}/SHA256SUMS does not record it, though every record written lists it: the"
            " record is damaged",
        ),
        (
            lambda folder: _rewrite_json(folder / "trainer_state.json", [4]),
            "trainer_state.json is damaged (expected a JSON object with a step and a world_size of at least 1, got"
            " [4])",
        ),
        (
            lambda folder: _rewrite_json(folder / "trainer_state.json", {"step": 4, "world_size": "1"}),
            "trainer_state.json is damaged (expected a JSON object with a step and a world_size of at least 1, got"
            ' {"step": 4, "world_size": "1"})',
        ),
    ],
    ids=["record deleted", "weights not recorded", "state a list", "world_size a string"],
)
@pytest.mark.slow
def test_a_checkpoint_without_its_record_or_of_another_shape_is_refused(one_process_run, tmp_path, damage, problem):
    """A checkpoint whose SHA256SUMS was deleted (or left out its weights) resumed from damaged weights in silence;
    a trainer_state.json of another shape was a traceback (used before the record was compared)."""
    refusal = _copied_checkpoint_refusal(one_process_run, tmp_path, damage)
    folder = tmp_path / "out" / "checkpoint-4"
    assert refusal == f"{folder}/{problem.replace('{folder}', str(folder))}: {_resume_way_on(tmp_path / 'out')}"


@pytest.mark.slow
def test_the_checkpoint_offered_instead_skips_every_damaged_one(one_process_run, tmp_path):
    """Bytes flipped in checkpoint-4 and in checkpoint-2 (only SHA256SUMS shows it): the offer skips both, to the
    intact checkpoint-1 (a copy of checkpoint-2 made before the damage)."""

    def damage(folder: Path) -> None:
        shutil.copytree(folder.parent / "checkpoint-2", folder.parent / "checkpoint-1")
        for checkpoint in (folder, folder.parent / "checkpoint-2"):
            flip_bytes_in_the_middle(checkpoint / "model.safetensors")

    refusal = _copied_checkpoint_refusal(one_process_run, tmp_path, damage)
    intact = tmp_path / "out" / "checkpoint-1"
    assert refusal.endswith(
        f"the checkpoint {tmp_path / 'out' / 'checkpoint-4'} cannot be resumed; the newest intact checkpoint is"
        f" {intact}: resume with --resume_from_checkpoint {intact}"
    )


@pytest.mark.slow
def test_checkpoints_and_the_model_record_their_files(one_process_run):
    """Neither had a SHA256SUMS; `sha256sum -c` checks each without this package."""
    for folder in (one_process_run / "checkpoint-2", one_process_run / "checkpoint-4", one_process_run / "model"):
        lines = (folder / "SHA256SUMS").read_text().splitlines()
        recorded = {line[66:]: line[:64] for line in lines}
        assert set(recorded) == {path.name for path in folder.iterdir() if path.name != "SHA256SUMS"}, folder
        assert all(hashlib.sha256((folder / name).read_bytes()).hexdigest() == recorded[name] for name in recorded)


@pytest.mark.slow
def test_an_optimizer_state_that_holds_code_is_refused_in_one_line(one_process_run, corpus, tmp_path):
    output = tmp_path / "out"
    shutil.copytree(one_process_run, output)
    path, ran = output / "checkpoint-4" / "optimizer.pt", tmp_path / "the-code-ran"
    torch.save({"state": RunsAShellCommand(ran)}, path)
    record_checksums(path.parent)  # the record rewritten too, as whoever planted the file would
    assert _refused_resume(corpus, output) == (
        f"error: {path}: the file holds code (Python objects other than tensors), which is not loaded:"
        f" {_resume_way_on(output)}"
    ), "a checkpoint refused only when loaded is not its own way on"
    assert not ran.exists()


@pytest.mark.slow
def test_every_process_refuses_a_checkpoint_whose_other_process_file_is_damaged(two_process_run, corpus, tmp_path):
    output = tmp_path / "out"
    shutil.copytree(two_process_run, output)
    path = output / "checkpoint-60" / "process-1.safetensors"
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    refused = _launch_two_processes(
        _run_into(corpus, output, "--max_steps", "60", "--save_steps", "30", "--resume_from_checkpoint", "latest"),
        succeed=False,
    )
    message = (
        f"error: {path} is damaged (Error while deserializing header: incomplete metadata, file not fully covered): "
        f"the checkpoint {output}/checkpoint-60 cannot be resumed; the newest intact checkpoint is "
        f"{output}/checkpoint-30: resume with --resume_from_checkpoint {output}/checkpoint-30"
    )
    assert _errors(refused) == [message, message], refused.stderr[-4000:]


@pytest.mark.slow
def test_ctrl_c_is_one_line_with_the_way_to_resume(corpus, tmp_path):
    """SIGINT once a checkpoint is saved: a KeyboardInterrupt traceback was printed, with no word of the resume."""
    output = tmp_path / "out"
    arguments = _run_into(corpus, output, "--max_steps", "100000", "--save_steps", "2")
    environment = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPOSITORY)}
    run = subprocess.Popen(
        [sys.executable, "training/pretrain.py", *arguments], cwd=REPOSITORY, env=environment, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 300
    while not (output / "checkpoint-2").is_dir():
        assert run.poll() is None and time.monotonic() < deadline, "the run ended before it could be interrupted"
        time.sleep(0.05)
    run.send_signal(signal.SIGINT)
    stderr = run.communicate(timeout=120)[1].decode()
    assert run.returncode == 130, stderr[-3000:]
    assert "Traceback" not in stderr, stderr[-3000:]
    latest = max(output.glob("checkpoint-*"), key=lambda path: int(path.name.split("-")[1]))
    assert stderr.splitlines()[-1] == (
        f"interrupted: the newest checkpoint is {latest}: continue with the same command and"
        " --resume_from_checkpoint latest"
    )


@pytest.mark.slow
def test_without_validation_files_the_model_is_saved_without_a_plot(corpus, tmp_path):
    arguments = _run_into(corpus, tmp_path / "out", "--max_steps", "2")
    del arguments[arguments.index("--validation_files") : arguments.index("--validation_files") + 2]
    saved = _run_file(arguments)
    assert f"saved {tmp_path}/out/model (no --validation_files: no perplexity measured)" in saved.stderr
    assert not (tmp_path / "out" / "model" / "perplexity.png").exists()
    assert json.loads((tmp_path / "out" / "model" / "eval_results.json").read_text()) == {"step": 2}
