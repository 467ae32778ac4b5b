"""`elmo-embed`: AllenNLP's `elmo` layout, values equal to the model run one sentence at a time, bad lines,
long lines, gzip and binary inputs, resuming an interrupted run without recomputing finished lines, and one-line
errors."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import h5py
import numpy as np
import pytest
import torch
from bad_inputs import flip_bytes_in_the_middle
from ctrl_c_on_import import run_with_ctrl_c_on_importing_torch
from embed_limits import main_runs_with
from safetensors.torch import load_file, save_file

import modeling_elmo
from elmo_transformers.inference.embed import main
from elmo_transformers.inference.limits import EmbedLimits
from elmo_transformers.inference.options import EmbedOptions
from elmo_transformers.inference.plan import RunPlan
from elmo_transformers.inference.run import embed_file
from elmo_transformers.inference.segment_store import SegmentStore
from elmo_transformers.inference.torch_runner import TorchEmbedder
from modeling_elmo import ElmoConfig, ElmoForTokenClassification, ElmoModel, ElmoTokenizer, split_words

SENTENCES = [
    "The cat sat on the mat .",
    "Hello !",
    "ELMo gives every word three vectors .",
    "a",
    "Colorless green ideas sleep furiously .",
]


@pytest.fixture(autouse=True)
def _keep_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """main() sets the native libraries' settings (unless set): set them here so that they are unset again after."""
    monkeypatch.setenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "0")
    monkeypatch.setenv("MKL_CBWR", "AUTO,STRICT")


@pytest.fixture(scope="module")
def reference(fixture_model_folder: Path) -> tuple[ElmoModel, ElmoTokenizer]:
    return ElmoModel.from_pretrained(fixture_model_folder).eval(), ElmoTokenizer.from_pretrained(fixture_model_folder)


def _layers(reference: tuple[ElmoModel, ElmoTokenizer], words: list[str]) -> np.ndarray:
    """Every layer of one sentence, (L+1, words, D), computed alone: a batch of one, no padding."""
    model, tokenizer = reference
    inputs = tokenizer([words], is_split_into_words=True, return_tensors="pt")
    with torch.no_grad():
        output = model(**inputs, output_hidden_states=True)
    return torch.stack(output.hidden_states, dim=1)[0].numpy()


def _select(layers: np.ndarray, choice: str) -> np.ndarray:
    return {"all": layers, "top": layers[-1], "average": layers.mean(axis=0)}[choice]


def _embed(capsys: pytest.CaptureFixture, *args: str | Path) -> tuple[int, str, str]:
    code = main([str(arg) for arg in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def _read(path: Path) -> dict[str, np.ndarray]:
    with h5py.File(path, "r") as file:
        assert all(name.startswith("elmo_embed_") for name in file.attrs), "only the record of how it was made"
        return {name: file[name][()] for name in file}


def _finished_lines(partial: Path) -> dict[str, np.ndarray]:
    """The lines stored in the segments of an interrupted run's folder `OUT.partial`."""
    lines: dict[str, np.ndarray] = {}
    for segment in sorted(partial.glob("lines-*.hdf5")):
        with h5py.File(segment, "r") as file:
            lines.update((name, file[name][()]) for name in file if name.isdigit())
    return lines


def _line_datasets(contents: dict[str, np.ndarray]) -> dict[int, np.ndarray]:
    return {int(name): array for name, array in contents.items() if name != "sentence_to_index"}


@pytest.mark.parametrize("layers", ["all", "top", "average"])
def test_layout_and_values_equal_one_sentence_at_a_time(
    layers: str, reference, fixture_model_folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    source = _write_lines(tmp_path / "in.txt", SENTENCES)
    output = tmp_path / "out.hdf5"
    # Batches of 2 of different lengths: every batch but the last is padded.
    args = ("--model", fixture_model_folder, "--layers", layers, "--batch-size", 2)
    code, out, _ = _embed(capsys, source, output, *args)
    assert code == 0
    assert "5 lines, 23 words" in out and "words/s" in out
    assert not Path(f"{output}.partial").exists()
    contents = _read(output)
    assert set(contents) == {*map(str, range(len(SENTENCES))), "sentence_to_index"}
    for index, sentence in enumerate(SENTENCES):
        vectors = contents[str(index)]
        expected = _select(_layers(reference, sentence.split()), layers)
        assert vectors.dtype == np.float32
        assert vectors.shape == expected.shape == ((3,) if layers == "all" else ()) + (len(sentence.split()), 32)
        np.testing.assert_allclose(vectors, expected, rtol=0, atol=1e-6)


def test_sentence_to_index(fixture_model_folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    source = _write_lines(tmp_path / "in.txt", ["  The cat sat .\t", "Hello !", "The cat sat .", "Olá, mundo"])
    output = tmp_path / "out.hdf5"
    assert _embed(capsys, source, output, "--model", fixture_model_folder)[0] == 0
    with h5py.File(output, "r") as file:
        dataset = file["sentence_to_index"]
        assert dataset.shape == (1,) and h5py.check_string_dtype(dataset.dtype).length is None
        text = dataset.asstr()[0]
    # As AllenNLP writes it: json.dumps of the stripped lines in first-seen order, a repeated line's last index.
    assert text == json.dumps({"The cat sat .": "2", "Hello !": "1", "Olá, mundo": "3"})

    forgetful = tmp_path / "forgetful.hdf5"
    assert _embed(capsys, source, forgetful, "--model", fixture_model_folder, "--forget-sentences")[0] == 0
    assert set(_read(forgetful)) == {"0", "1", "2", "3"}


def test_empty_lines_and_undecodable_bytes(
    reference, fixture_model_folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    source = tmp_path / "in.txt"
    # A byte order mark, an empty line, a blank line, CRLF, a lone CR, Latin-1 and stray bytes, no final newline.
    source.write_bytes(b"\xef\xbb\xbfThe cat sat .\n\n \t \nA dog  barked .\r\ncaf\xe9 au lait\r\xff\xfe x\nend")
    output = tmp_path / "out.hdf5"
    code, out, err = _embed(capsys, source, output, "--model", fixture_model_folder)
    assert code == 0
    words = [["The", "cat", "sat", "."], [], [], ["A", "dog", "barked", "."], ["caf\ufffd", "au", "lait"]]
    words += [["\ufffd\ufffd", "x"], ["end"]]
    contents = _read(output)
    lines = _line_datasets(contents)
    assert sorted(lines) == list(range(len(words)))
    for index, expected_words in enumerate(words):
        if expected_words:
            np.testing.assert_allclose(lines[index], _layers(reference, expected_words), rtol=0, atol=1e-6)
        else:
            assert lines[index].shape == (3, 0, 32) and lines[index].dtype == np.float32
    mapping = json.loads(contents["sentence_to_index"][0])
    assert mapping["caf\ufffd au lait"] == "4" and mapping[""] == "2"
    assert "empty lines (written with 0 words): 2 (datasets 1, 2)" in out
    assert "invalid UTF-8 (embedded with U+FFFD for the bad bytes): 2 (datasets 4, 5)" in out
    assert "line 5 (dataset 4) is not valid UTF-8" in err and "line 6 (dataset 5)" in err

    top = tmp_path / "top.hdf5"
    assert _embed(capsys, source, top, "--model", fixture_model_folder, "--layers", "top")[0] == 0
    assert _read(top)["1"].shape == (0, 32)


@pytest.mark.parametrize("layers", ["all", "average"])
def test_long_lines_are_embedded_in_pieces(
    layers: str, reference, fixture_model_folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    long_words = "one two three four five six seven eight nine ten".split()
    source = _write_lines(tmp_path / "in.txt", [" ".join(long_words), "just four words here", "short"])
    output = tmp_path / "out.hdf5"
    args = ("--model", fixture_model_folder, "--layers", layers, "--max-words", 4, "--batch-size", 2)
    code, out, _ = _embed(capsys, source, output, *args)
    assert code == 0
    assert "lines over --max-words 4 (embedded in pieces, concatenated): 1 (datasets 0)" in out
    lines = _line_datasets(_read(output))
    pieces = [_select(_layers(reference, long_words[start : start + 4]), layers) for start in (0, 4, 8)]
    word_axis = pieces[0].ndim - 2
    np.testing.assert_allclose(lines[0], np.concatenate(pieces, axis=word_axis), rtol=0, atol=1e-6)
    # Each piece in its own context: every word of it differs from the word in the whole line (by 0.2 to 1.7 here).
    whole = _select(_layers(reference, long_words), layers)
    difference = np.moveaxis(np.abs(lines[0] - whole), word_axis, 0).reshape(len(long_words), -1)
    assert (difference.max(axis=1) > 0.1).all()
    np.testing.assert_allclose(lines[1], _select(_layers(reference, "just four words here".split()), layers), atol=1e-6)


def _stored_words(path: Path) -> dict[str, list[str]]:
    """The attribute "words" of each line's dataset, decoded."""
    with h5py.File(path, "r") as file:
        return {name: json.loads(file[name].attrs["words"]) for name in file if name != "sentence_to_index"}


def test_tokenize(reference, fixture_model_folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    text = "Don't panic: it's 3.14!"
    long_text = "One, two, three, four, five."  # 10 words: pieces of 8 and 2
    source = _write_lines(tmp_path / "in.txt", [text, "", long_text, "naïve\x00café"])
    output = tmp_path / "out.hdf5"
    args = ("--model", fixture_model_folder, "--tokenize", "--max-words", 8)
    assert _embed(capsys, source, output, *args)[0] == 0
    contents = _read(output)
    np.testing.assert_allclose(contents["0"], _layers(reference, split_words(text)), rtol=0, atol=1e-6)
    assert contents["0"].shape[1] == 8
    assert json.loads(contents["sentence_to_index"][0])[text] == "0"
    # The words the vectors stand for go with them, whole even for a line embedded in pieces.
    words = _stored_words(output)
    assert words == {"0": split_words(text), "1": [], "2": split_words(long_text), "3": split_words("naïve\x00café")}
    assert words["0"] == ["Do", "n't", "panic", ":", "it", "'s", "3.14", "!"]
    assert [len(words[name]) for name in words] == [contents[name].shape[1] for name in words]


def test_tokenize_keeps_characters_whole_and_normalises_to_nfc(
    fixture_model_folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """A decomposed "e\u0301cole" was 3 words (the accent one of them) and an emoji family 5, invisible joiners
    included, each with vectors of its own. Now the decomposed line is the precomposed one, vectors and words, and
    the file records the normalisation."""
    family = "\U0001f468\u200d\U0001f469\u200d\U0001f467"
    source = _write_lines(tmp_path / "in.txt", ["l'e\u0301cole \u2764\ufe0f " + family, "l'école ❤️ " + family])
    output = tmp_path / "out.hdf5"
    assert _embed(capsys, source, output, "--model", fixture_model_folder, "--tokenize")[0] == 0
    assert _stored_words(output) == {name: ["l'école", "\u2764\ufe0f", family] for name in ("0", "1")}
    contents = _read(output)
    np.testing.assert_array_equal(contents["0"], contents["1"])
    with h5py.File(output, "r") as file:
        assert file.attrs["elmo_embed_normalization"] == "NFC, control and format characters removed"


ENGLAND = "\U0001f3f4\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f"  # a tag sequence


def test_tokenize_makes_no_word_of_an_invisible_character(
    fixture_model_folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """Bidirectional marks and overrides, a zero-width space and NUL were words of their own, with vectors
    ("wo\x00rd" three words). A line with them has the words and vectors of the line as a reader sees it; NFC is
    no compatibility mapping (the ligature and the full-width digits stay), and England's flag is one word."""
    long_word = "a" * 30 + "\u200e" + "b" * 30  # over 48 bytes, with a mark inside
    invisible = "\u202eevil\u202c wo\x00rd \u200eleft\u200f a\u200bb soft\u00adware"
    invisible += f" {long_word} {ENGLAND} \ufb01ne \uff11\uff12\uff13"  # a ligature, full-width digits
    seen = f"evil wo rd left a b software {long_word.replace(chr(0x200E), '')} {ENGLAND} \ufb01ne \uff11\uff12\uff13"
    source = _write_lines(tmp_path / "in.txt", [invisible, "", "\u200e\u200b\x00", seen])
    output = tmp_path / "out.hdf5"
    assert _embed(capsys, source, output, "--model", fixture_model_folder, "--tokenize")[0] == 0
    words = seen.split()
    assert _stored_words(output) == {"0": words, "1": [], "2": [], "3": words}
    contents = _read(output)
    np.testing.assert_array_equal(contents["0"], contents["3"])
    assert contents["2"].shape == (3, 0, 32)


def test_words_are_stored_only_with_tokenize(
    fixture_model_folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """Without --tokenize the words are the line's own whitespace-separated tokens: the layout stays AllenNLP's."""
    output = tmp_path / "out.hdf5"
    assert _embed(capsys, _write_lines(tmp_path / "in.txt", SENTENCES), output, "--model", fixture_model_folder)[0] == 0
    with h5py.File(output, "r") as file:
        assert not any(file[name].attrs for name in file)


RESUME_LINES = [
    "alpha",
    "bravo charlie",
    "delta echo foxtrot",
    "golf hotel india",
    "juliett kilo lima mike november oscar papa quebec romeo sierra",  # 10 words: pieces of 4, 4 and 2
    "tango uniform victor whiskey",
    "xray yankee zulu",
]


@pytest.fixture
def recorded_pieces(fixture_model_folder: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    """Patches ElmoModel.forward to record the text of every sentence it embeds, and to raise `interrupt` (an
    exception) when `interrupt_at` calls have been made."""
    tokenizer = ElmoTokenizer.from_pretrained(fixture_model_folder)
    original_forward = ElmoModel.forward
    record: dict = {"pieces": [], "batches": [], "interrupt_at": None, "interrupt": None}

    def recording_forward(self, input_ids, attention_mask=None, **kwargs):
        if len(record["pieces"]) == record["interrupt_at"]:
            raise record["interrupt"]
        record["pieces"].extend(tokenizer.decode(input_ids))
        record["batches"].append(tuple(tokenizer.decode(input_ids)))
        return original_forward(self, input_ids, attention_mask, **kwargs)

    monkeypatch.setattr(ElmoModel, "forward", recording_forward)
    return record


@pytest.mark.parametrize("output_format", ["hdf5", "datasets"])
def test_a_ctrl_c_while_torch_is_imported_is_one_line(output_format: str, tmp_path: Path) -> None:
    """A Ctrl-C in the first seconds (torch, transformers being imported, after the options are read) was a
    KeyboardInterrupt traceback; now the interruption line, exit status 130, nothing written."""
    source = _write_lines(tmp_path / "in.txt", ["a b"])
    completed = run_with_ctrl_c_on_importing_torch(
        "elmo_transformers.inference.embed", str(source), str(tmp_path / "out"), "--format", output_format
    )
    assert (completed.returncode, completed.stderr) == (130, "elmo-embed: interrupted: no line was stored yet\n")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["in.txt"]


@pytest.mark.parametrize(
    ("interrupt", "code", "message"),
    [
        (KeyboardInterrupt(), 130, "interrupted: "),
        (RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB"), 2, "RuntimeError after 7 lines: CUDA out"),
    ],
)
def test_resume_embeds_only_unfinished_lines(
    interrupt: BaseException,
    code: int,
    message: str,
    recorded_pieces: dict,
    reference,
    fixture_model_folder: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture,
) -> None:
    source = _write_lines(tmp_path / "in.txt", RESUME_LINES)
    output = tmp_path / "out.hdf5"
    partial = Path(f"{output}.partial")
    args = (source, output, "--model", fixture_model_folder, "--batch-size", 1, "--max-words", 4)
    # One piece per batch, shortest first: lines 0, 1, line 4's last piece, lines 2, 3, 6, then stop (at line 4's
    # first piece), leaving lines 0-3 and 6 finished, line 4 begun and line 5 not.
    recorded_pieces.update(interrupt_at=6, interrupt=interrupt)
    first_code, _, err = _embed(capsys, *args)
    assert first_code == code
    assert message in err and f"{partial} keeps the finished lines" in err and "--resume" in err
    assert partial.exists() and not output.exists()
    finished = {int(name): vectors for name, vectors in _finished_lines(partial).items()}
    assert sorted(finished) == [0, 1, 2, 3, 6]

    recorded_pieces.update(pieces=[], interrupt_at=None)
    second_code, out, _ = _embed(capsys, *args, "--resume")
    assert second_code == 0
    assert "resumed: 5 lines were already in out.hdf5.partial" in out
    long_pieces = ["juliett kilo lima mike", "november oscar papa quebec", "romeo sierra"]
    assert sorted(recorded_pieces["pieces"]) == sorted([*long_pieces, RESUME_LINES[5]]), (
        "only the unfinished lines are embedded again, the half-done one whole"
    )
    assert not partial.exists()
    lines = _line_datasets(_read(output))
    assert sorted(lines) == list(range(len(RESUME_LINES)))
    for index, vectors in finished.items():
        assert np.array_equal(lines[index], vectors), f"line {index} was kept as the first run wrote it"
    long_expected = np.concatenate([_layers(reference, piece.split()) for piece in long_pieces], axis=1)
    np.testing.assert_allclose(lines[4], long_expected, rtol=0, atol=1e-6)
    np.testing.assert_allclose(lines[5], _layers(reference, RESUME_LINES[5].split()), rtol=0, atol=1e-6)


def test_a_resume_needs_only_the_space_of_what_is_left(
    recorded_pieces: dict,
    fixture_model_folder: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The segments already stored are not needed again: a resume that fits in the free space starts."""
    source = _write_lines(tmp_path / "in.txt", RESUME_LINES)
    output = tmp_path / "out.hdf5"
    args = (source, output, "--model", fixture_model_folder, "--batch-size", 1, "--max-words", 4)
    needed: list[int] = []
    needed_bytes = RunPlan.needed_bytes
    monkeypatch.setattr(RunPlan, "needed_bytes", lambda plan: needed.append(needed_bytes(plan)) or needed[-1])
    recorded_pieces.update(interrupt_at=6, interrupt=KeyboardInterrupt())
    assert _embed(capsys, *args)[0] == 130
    stored = sum(path.stat().st_size for path in Path(f"{output}.partial").glob("lines-*.hdf5"))
    assert 0 < stored < needed[0]
    free = needed[0] - stored // 2  # enough for what is left, not for the whole run
    usage = shutil._ntuple_diskusage(10**9, 10**9 - free, free)
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage)
    recorded_pieces.update(interrupt_at=None)
    code, _, err = _embed(capsys, *args, "--resume")
    assert code == 0, err
    assert needed[1] == needed[0] - stored


def test_resume_judges_the_input_by_its_content(
    recorded_pieces: dict, fixture_model_folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    source = _write_lines(tmp_path / "in.txt", SENTENCES)
    output = tmp_path / "out.hdf5"
    args = ("--model", fixture_model_folder, "--batch-size", 1)
    recorded_pieces.update(interrupt_at=2, interrupt=KeyboardInterrupt())
    assert _embed(capsys, source, output, *args)[0] == 130
    recorded_pieces.update(interrupt_at=None)

    changed = _write_lines(tmp_path / "changed.txt", [*SENTENCES[:-1], "Colorless green ideas sleep soundly ."])
    code, _, err = _embed(capsys, changed, output, *args, "--resume")
    assert code == 2 and f"{output}.partial was started with input_sha256 " in err, "another content is refused"
    moved = tmp_path / "elsewhere" / "renamed.txt"
    moved.parent.mkdir()
    source.rename(moved)
    code, out, err = _embed(capsys, moved, output, *args, "--resume")
    assert code == 0, err
    assert "resumed: 2 lines were already in out.hdf5.partial" in out


def test_interrupted_run_needs_resume_or_overwrite(
    recorded_pieces: dict, fixture_model_folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    source = _write_lines(tmp_path / "in.txt", SENTENCES)
    output = tmp_path / "out.hdf5"
    partial = Path(f"{output}.partial")
    recorded_pieces.update(interrupt_at=2, interrupt=KeyboardInterrupt())
    assert _embed(capsys, source, output, "--model", fixture_model_folder, "--batch-size", 1)[0] == 130
    recorded_pieces.update(interrupt_at=None)

    code, _, err = _embed(capsys, source, output, "--model", fixture_model_folder)
    assert code == 2
    assert err.strip() == (
        f"elmo-embed: error: {partial} exists (an interrupted run): pass --resume to continue it or --overwrite to"
        " start over"
    )
    code, _, err = _embed(capsys, source, output, "--model", fixture_model_folder, "--layers", "top", "--resume")
    assert code == 2 and f"{partial} was started with layers 'all' (now 'top')" in err
    recorded_pieces["pieces"] = []
    code, _, _ = _embed(capsys, source, output, "--model", fixture_model_folder, "--layers", "top", "--overwrite")
    assert code == 0 and len(recorded_pieces["pieces"]) == len(SENTENCES), "--overwrite starts over"
    assert _read(output)["0"].shape == (7, 32)


def test_gzip_input_is_read_whatever_its_name(
    fixture_model_folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    plain = _write_lines(tmp_path / "in.txt", SENTENCES)
    assert _embed(capsys, plain, tmp_path / "plain.hdf5", "--model", fixture_model_folder)[0] == 0
    for name in ("in.txt.gz", "in.data"):  # recognised by its first bytes, not by its suffix
        compressed = tmp_path / name
        compressed.write_bytes(gzip.compress(plain.read_bytes()))
        output = tmp_path / f"{name}.hdf5"
        code, out, err = _embed(capsys, compressed, output, "--model", fixture_model_folder)
        assert code == 0, err
        assert "5 lines, 23 words" in out and "invalid UTF-8 (embedded with U+FFFD for the bad bytes): 0" in out
        expected, actual = _read(tmp_path / "plain.hdf5"), _read(output)
        assert actual.keys() == expected.keys()
        for key in expected:
            np.testing.assert_array_equal(actual[key], expected[key])


def test_binary_input_is_refused_before_writing(
    fixture_model_folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """The command's side of a refusal of the input (`lines.check_input`, whose rules tests/inference/test_lines.py
    tests one by one): one line, exit 2, nothing written."""
    source = tmp_path / "in.bin"
    source.write_bytes(np.random.default_rng(0).integers(0, 256, 100_000, dtype=np.uint8).tobytes())
    code, _, err = _embed(capsys, source, tmp_path / "out.hdf5", "--model", fixture_model_folder)
    assert (code, err.count("\n")) == (2, 1)
    assert err.startswith(f"elmo-embed: error: {source}: looks binary (")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["in.bin"], "nothing is written"


@pytest.mark.slow
def test_a_pipe_is_refused_with_the_reason(fixture_model_folder: Path, tmp_path: Path) -> None:
    """A FIFO, `/dev/stdin` fed by a pipe (and `-`: test_one_line_errors) were refused as "no such input file"."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    output = tmp_path / "out.hdf5"
    for source, stdin in ((str(fifo), None), ("/dev/stdin", subprocess.PIPE)):
        run = subprocess.run(
            [sys.executable, "-m", "elmo_transformers.inference.embed", source, str(output)],
            input="The cat sat .\n" if stdin else None,
            capture_output=True,
            text=True,
        )
        assert run.returncode == 2, run.stderr
        assert run.stderr == (
            f"elmo-embed: error: {source}: a pipe, not a regular file: elmo-embed reads its input more than once (to"
            " count its words before the run, and again to --resume), which only a regular file gives: save the text"
            " to a file first (... > in.txt) and pass that file\n"
        )
    assert sorted(path.name for path in tmp_path.iterdir()) == ["fifo"], "nothing is written"


def test_another_encoding_is_refused_and_a_few_bad_bytes_are_replaced(
    fixture_model_folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """--help said another encoding is refused, yet a Latin-1 file ran with every accented letter as U+FFFD (exit 0).
    A file whose non-ASCII bytes are all not UTF-8 is refused; a UTF-8 file with a bad byte is embedded, warned."""
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("The cat sat .\nun café crème\n".encode("latin-1"))
    code, _, err = _embed(capsys, latin1, tmp_path / "out.hdf5", "--model", fixture_model_folder)
    assert (code, err) == (
        2,
        f"elmo-embed: error: {latin1}: not UTF-8 text: line 2 holds the byte 0xE9, and its first 28 bytes hold no"
        " UTF-8 character beyond ASCII: another encoding (Latin-1, cp1252, ...)? elmo-embed reads UTF-8: convert it"
        f" first, e.g. iconv -f latin1 -t utf-8 < {latin1} > {latin1}.utf8\n",
    )
    assert not (tmp_path / "out.hdf5").exists()
    damaged = tmp_path / "damaged.txt"
    damaged.write_bytes("un café .\n".encode() + b"caf\xe9 .\n")
    code, _, err = _embed(capsys, damaged, tmp_path / "out.hdf5", "--model", fixture_model_folder)
    assert code == 0
    assert "line 2 (dataset 1) is not valid UTF-8: its bad bytes are embedded as U+FFFD" in err


def test_damaged_gzip_input(fixture_model_folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    source = tmp_path / "in.txt.gz"
    source.write_bytes(gzip.compress("".join(line + "\n" for line in SENTENCES).encode())[:-12])
    code, _, err = _embed(capsys, source, tmp_path / "out.hdf5", "--model", fixture_model_folder)
    assert code == 2 and err.count("\n") == 1
    assert err.startswith(f"elmo-embed: error: {source}: damaged gzip data")


def test_refuses_to_overwrite(fixture_model_folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    source = _write_lines(tmp_path / "in.txt", SENTENCES)
    output = tmp_path / "out.hdf5"
    output.write_text("not yet hdf5")
    code, _, err = _embed(capsys, source, output, "--model", fixture_model_folder)
    assert code == 2
    assert err.strip() == f"elmo-embed: error: {output} already exists: pass --overwrite to replace it"
    assert output.read_text() == "not yet hdf5"
    assert _embed(capsys, source, output, "--model", fixture_model_folder, "--overwrite")[0] == 0
    assert len(_read(output)) == len(SENTENCES) + 1


def test_damaged_partial_file(fixture_model_folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    source = _write_lines(tmp_path / "in.txt", SENTENCES)
    output = tmp_path / "out.hdf5"
    Path(f"{output}.partial").write_bytes(b"\0" * 100)
    code, _, err = _embed(capsys, source, output, "--model", fixture_model_folder, "--resume")
    assert code == 2 and f"{output}.partial cannot be resumed" in err and "--overwrite to start over" in err


def test_default_model(
    fixture_model_folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = _write_lines(tmp_path / "in.txt", SENTENCES)
    output = tmp_path / "out.hdf5"
    monkeypatch.delattr(modeling_elmo, "DEFAULT_MODEL", raising=False)
    code, _, err = _embed(capsys, source, output)
    assert code == 2
    assert err.strip() == (
        "elmo-embed: error: there is no default model yet: pass --model DIR, a model folder written by elmo-convert"
    )
    assert not output.exists() and not Path(f"{output}.partial").exists()
    monkeypatch.setattr(modeling_elmo, "DEFAULT_MODEL", str(fixture_model_folder), raising=False)
    assert _embed(capsys, source, output)[0] == 0


def test_mix_needs_mixing_weights(fixture_model_folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    source = _write_lines(tmp_path / "in.txt", SENTENCES)
    code, _, err = _embed(capsys, source, tmp_path / "out.hdf5", "--model", fixture_model_folder, "--layers", "mix")
    assert code == 2
    assert err.strip() == (
        f"elmo-embed: error: --layers mix is not available: the model {fixture_model_folder} has no mixing weights"
        " (a task head fine-tuned with this package has them); use --layers all, top or average"
    )
    with_mix = tmp_path / "with-mix"
    shutil.copytree(fixture_model_folder, with_mix)
    weights = load_file(with_mix / "model.safetensors")
    save_file({**weights, "scalar_mix.gamma": torch.ones(1)}, with_mix / "model.safetensors", metadata={"format": "pt"})
    (with_mix / "SHA256SUMS").unlink()  # the record of the converted weights, which these are not
    code, _, err = _embed(capsys, source, tmp_path / "out.hdf5", "--model", with_mix, "--layers", "mix")
    assert code == 2 and "has mixing weights (scalar_mix.gamma) but not those of a head fine-tuned" in err


@pytest.mark.parametrize(
    "mix",
    [
        {"mix_mode": "scalar_mix", "mix_initial_weights": [1.0, -0.5, 0.25]},
        {"mix_mode": "concat", "mix_layers": [0, 1]},
    ],
)
def test_mix_applies_a_heads_first_mix(fixture_model_folder: Path, tmp_path: Path, capsys, mix) -> None:
    """A head's saved mix (non-uniform weights, or a concat of the truncated biLM's layers) is what gets written."""
    head = ElmoForTokenClassification.from_pretrained(fixture_model_folder, num_labels=2, **mix).eval()
    folder = tmp_path / "head"
    head.save_pretrained(folder)
    ElmoTokenizer.from_pretrained(fixture_model_folder).save_pretrained(folder)
    source = _write_lines(tmp_path / "in.txt", SENTENCES)
    code, _, err = _embed(capsys, source, tmp_path / "out.hdf5", "--model", folder, "--layers", "mix")
    assert code == 0, err
    written = _line_datasets(_read(tmp_path / "out.hdf5"))
    tokenizer = ElmoTokenizer.from_pretrained(folder)
    for index, line in enumerate(SENTENCES):
        inputs = tokenizer([line.split()], is_split_into_words=True, return_tensors="pt")
        with torch.no_grad():
            layers = head.elmo(**inputs, output_hidden_states=True).hidden_states
            expected = head.mixes[0]([layers[j] for j in head.config.mixed_layers], inputs["attention_mask"].bool())
        np.testing.assert_allclose(written[index], expected[0].numpy(), rtol=0, atol=1e-6)
    assert written[0].shape[-1] == head.config.mix_output_size


def test_bfloat16_model_writes_float32(
    reference, fixture_model_folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    source = _write_lines(tmp_path / "in.txt", SENTENCES)
    output = tmp_path / "out.hdf5"
    assert _embed(capsys, source, output, "--model", fixture_model_folder, "--dtype", "bfloat16")[0] == 0
    vectors = _read(output)["0"]
    assert vectors.dtype == np.float32
    expected = _layers(reference, SENTENCES[0].split())
    assert not (vectors.view(np.uint32) & 0xFFFF).any(), "every value a bfloat16 number, widened to float32"
    np.testing.assert_allclose(vectors, expected, rtol=0.05, atol=0.05)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["missing.txt", "out.hdf5"], "missing.txt: no such input file"),
        (["folder", "out.hdf5"], "folder is a folder, expected a text file"),
        (["in.txt", "out.hdf5", "--model", "."], ".: not a model folder (no config.json)"),
        (["in.txt", "out.hdf5", "--model", "./absent"], "./absent: no such model folder\n"),
        (["in.txt", "out.hdf5", "--model", "models/v1/elmo"], "models/v1/elmo: no such model folder\n"),
        (["in.txt", "out.hdf5", "--max-words", "0"], "--batch-size and --max-words must be at least 1, got 64 and 0"),
        (["in.txt", "out.hdf5", "--device", "nonsense"], "--device nonsense: "),
        (["in.txt", "folder"], "folder is a folder, expected a file path"),
        (["in.txt", "."], ". is a folder, expected a file path"),
        (["-", "out.hdf5"], "-: standard input: elmo-embed reads its input more than once (to count its words"),
        # A device was "no such input file" where the check knew only files and pipes.
        (["/dev/null", "out.hdf5"], "/dev/null: a character device, not a regular file: elmo-embed reads its input"),
        (["in.txt/x", "out.hdf5"], "in.txt/x: cannot read the input (Not a directory)\n"),
        # A name over the file system's 255 bytes: an OSError where the path is first looked at, not False.
        (["in.txt", "out.hdf5", "--model", "m" * 300], f"{'m' * 300}: cannot be looked at as a model folder: File"),
        (["in.txt", "out.hdf5", "--layers", "mix", "--model", "m" * 300], f"{'m' * 300}: cannot be looked at as a"),
        (["in.txt", f"{'o' * 300}.hdf5"], f"{'o' * 300}.hdf5: cannot be written: File name too long\n"),
    ],
    ids=lambda value: value[:60] if isinstance(value, str) else None,
)
def test_one_line_errors(
    args: list[str],
    message: str,
    fixture_model_folder: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    _write_lines(tmp_path / "in.txt", SENTENCES)
    (tmp_path / "folder").mkdir()
    if "--model" not in args:
        args = [*args, "--model", str(fixture_model_folder)]
    code, _, err = _embed(capsys, *args)
    assert code == 2
    assert err.startswith(f"elmo-embed: error: {message}") and err.count("\n") == 1


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        # It failed inside the first batch (aten::equal has no meta kernel), leaving OUT.partial behind.
        (
            ["--device", "meta"],
            "--device meta: the meta device holds no data, so nothing can be computed on it; pass --device cpu or"
            " cuda, or no --device",
        ),
        # It was accepted in silence (--overwrite won).
        (
            ["--resume", "--overwrite"],
            "--resume and --overwrite contradict each other: --resume continues OUT.partial's finished lines,"
            " --overwrite starts over without them; pass one of them",
        ),
    ],
    ids=["meta device", "resume and overwrite"],
)
def test_options_that_cannot_run_are_refused_before_anything_is_written(
    flags: list[str], message: str, fixture_model_folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    source = _write_lines(tmp_path / "in.txt", SENTENCES)
    code, _, err = _embed(capsys, source, tmp_path / "out.hdf5", "--model", fixture_model_folder, *flags)
    assert (code, err) == (2, f"elmo-embed: error: {message}\n")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["in.txt"]


def test_damaged_weights_are_named(fixture_model_folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    damaged = Path(shutil.copytree(fixture_model_folder, tmp_path / "damaged"))
    weights = damaged / "model.safetensors"
    os.truncate(weights, weights.stat().st_size // 2)  # an interrupted download or copy
    source = _write_lines(tmp_path / "in.txt", SENTENCES)
    code, _, err = _embed(capsys, source, tmp_path / "out.hdf5", "--model", damaged)
    assert code == 2 and err.count("\n") == 1
    assert err.startswith(f"elmo-embed: error: {weights}: the weights cannot be read (")
    assert err.rstrip().endswith("the file is damaged or incomplete; copy or convert it again")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["damaged", "in.txt"], "nothing is written"


def _edit_weight(folder: Path, edit: Callable[[torch.Tensor], torch.Tensor]) -> str:
    """Replace a weight of `folder`'s model.safetensors with `edit(weight)`; returns the weight's name."""
    weights = folder / "model.safetensors"
    tensors = load_file(weights)
    name = next(name for name in tensors if name.endswith("backward_lstm.layers.0.input_projection.weight"))
    tensors[name] = edit(tensors[name]).contiguous()
    save_file(tensors, weights, metadata={"format": "pt"})
    return name


def test_non_finite_weights_are_refused(fixture_model_folder: Path, tmp_path: Path, capsys) -> None:
    """One NaN in a weight made every vector NaN, with exit status 0."""
    damaged = Path(shutil.copytree(fixture_model_folder, tmp_path / "damaged"))

    def one_nan(weight: torch.Tensor) -> torch.Tensor:
        weight[3, 7] = float("nan")
        return weight

    name = _edit_weight(damaged, one_nan)
    source = _write_lines(tmp_path / "in.txt", SENTENCES)
    code, _, err = _embed(capsys, source, tmp_path / "out.hdf5", "--model", damaged)
    assert (code, err) == (
        2,
        f"elmo-embed: error: {damaged / 'model.safetensors'}: {name} holds a non-finite value (nan) at index [3, 7]:"
        " the weights are damaged (every output would be NaN); copy or convert them again\n",
    )
    assert sorted(path.name for path in tmp_path.iterdir()) == ["damaged", "in.txt"], "nothing is written"


def _assert_damage_is_refused(
    folder: Path, weights_name: str, tmp_path: Path, capsys, *, loads_unrecorded: bool = True
) -> None:
    """`folder`'s weights file, 64 bytes flipped, is refused in one line naming both checksums; without the
    folder's SHA256SUMS the same file is embedded (where it still loads: `loads_unrecorded`)."""
    weights = folder / weights_name
    expected = hashlib.sha256(weights.read_bytes()).hexdigest()
    assert f"{expected}  {weights_name}\n" in (folder / "SHA256SUMS").read_text(), "elmo-convert recorded it"
    flip_bytes_in_the_middle(weights)
    actual = hashlib.sha256(weights.read_bytes()).hexdigest()
    source = _write_lines(tmp_path / "in.txt", SENTENCES)
    code, _, err = _embed(capsys, source, tmp_path / "out.hdf5", "--model", folder)
    assert (code, err) == (
        2,
        f"elmo-embed: error: {weights}: its sha256 is {actual[:16]}..., but SHA256SUMS records {expected[:16]}...:"
        " the file is damaged; copy, convert or download the folder again (or, for a file changed on purpose, write"
        " its new sha256 into SHA256SUMS: sha256sum FILE)\n",
    )
    assert not (tmp_path / "out.hdf5").exists()
    (folder / "SHA256SUMS").unlink()  # a folder that records no checksum (saved by save_pretrained) still works
    if loads_unrecorded:
        assert _embed(capsys, source, tmp_path / "out.hdf5", "--model", folder)[0] == 0


def test_damaged_weights_that_load_are_refused_by_their_recorded_checksum(
    fixture_model_folder: Path, tmp_path: Path, capsys
) -> None:
    """64 bytes flipped inside model.safetensors gave finite vectors off by up to 0.066, exit 0."""
    damaged = Path(shutil.copytree(fixture_model_folder, tmp_path / "damaged"))
    _assert_damage_is_refused(damaged, "model.safetensors", tmp_path, capsys)


def test_damaged_weights_are_refused_whatever_form_of_record_sha256sum_reads(
    fixture_model_folder: Path, tmp_path: Path, capsys
) -> None:
    """A record in the BSD form (`sha256sum --tag`), the hash in upper case and the name `./model.safetensors`, was
    ignored: the damaged weights embedded (off by up to 17), exit 0."""
    damaged = Path(shutil.copytree(fixture_model_folder, tmp_path / "damaged"))
    weights = damaged / "model.safetensors"
    expected = hashlib.sha256(weights.read_bytes()).hexdigest()
    (damaged / "SHA256SUMS").write_text(f"SHA256 (./model.safetensors) = {expected.upper()}\n")
    flip_bytes_in_the_middle(weights)
    actual = hashlib.sha256(weights.read_bytes()).hexdigest()
    source = _write_lines(tmp_path / "in.txt", SENTENCES)
    code, _, err = _embed(capsys, source, tmp_path / "out.hdf5", "--model", damaged)
    assert (code, err.startswith(f"elmo-embed: error: {weights}: its sha256 is {actual[:16]}..., but")) == (2, True)
    assert not (tmp_path / "out.hdf5").exists()


@pytest.mark.parametrize("name", ["config.json", "tokenizer_config.json"])
def test_every_recorded_file_is_compared_not_only_the_weights(
    fixture_model_folder: Path, tmp_path: Path, capsys, name: str
) -> None:
    """Only the weights were compared: a changed config or tokenizer file that still reads embedded, exit 0."""
    damaged = Path(shutil.copytree(fixture_model_folder, tmp_path / "damaged"))
    changed = damaged / name
    expected = hashlib.sha256(changed.read_bytes()).hexdigest()
    changed.write_text(changed.read_text() + "\n")  # still the same JSON
    actual = hashlib.sha256(changed.read_bytes()).hexdigest()
    source = _write_lines(tmp_path / "in.txt", SENTENCES)
    code, _, err = _embed(capsys, source, tmp_path / "out.hdf5", "--model", damaged)
    assert (code, err.splitlines()) == (
        2,
        [
            f"elmo-embed: error: {changed}: its sha256 is {actual[:16]}..., but SHA256SUMS records {expected[:16]}...:"
            " the file is damaged; copy, convert or download the folder again (or, for a file changed on purpose,"
            " write its new sha256 into SHA256SUMS: sha256sum FILE)"
        ],
    )
    assert not (tmp_path / "out.hdf5").exists()


@pytest.mark.parametrize("name", ["model.onnx", "model.onnx_data", "config.json", "tokenizer_config.json"])
def test_a_damaged_graph_is_refused_by_its_recorded_checksum(
    fixture_model_folder: Path, tmp_path: Path, capsys, name: str
) -> None:
    """64 bytes flipped inside model.onnx gave finite vectors off by up to 0.88, exit 0. The graph's weights are
    beside it (model.onnx_data), and its structure is compared before onnxruntime reads it; so are the files the
    run reads besides (the graph's config, the text front end's)."""
    pytest.importorskip("onnxruntime")
    from elmo_transformers.conversion.cli import main as convert

    graph = tmp_path / "graph"
    assert convert(["onnx", "--model", str(fixture_model_folder), "--output", str(graph)]) == 0
    capsys.readouterr()  # (the export's own output)
    _assert_damage_is_refused(graph, name, tmp_path, capsys, loads_unrecorded=name == "model.onnx_data")


def test_a_device_other_than_the_cpu_is_refused_for_a_graph(tmp_path: Path, capsys) -> None:
    """onnxruntime runs a graph on CPU here: --device cuda was ignored in silence."""
    graph = tmp_path / "graph"
    graph.mkdir()
    (graph / "model.onnx").write_bytes(b"")  # refused before the graph is read
    source = _write_lines(tmp_path / "in.txt", SENTENCES)
    code, _, err = _embed(capsys, source, tmp_path / "out.hdf5", "--model", graph, "--device", "cuda")
    assert (code, err) == (
        2,
        f"elmo-embed: error: --device cuda: {graph} holds an ONNX graph, which elmo-embed runs on CPU (onnxruntime's"
        " CPU provider): pass --device cpu, or no --device\n",
    )


# Where one value is put in a batch of two lines: (row, word, column); a negative word counts from the row's end.
PLACES = {"first word, forward half": (0, 0, 0), "last word, backward half": (0, -1, -1), "the other line": (1, -1, 5)}


@pytest.mark.parametrize("place", list(PLACES))
@pytest.mark.parametrize("layer", [0, 1, 2])
@pytest.mark.parametrize(
    ("value", "options", "refusal"),
    [
        (float("nan"), [], "has a vector holding nan computed in float32: "),
        (float("-inf"), [], "has a vector holding -inf computed in float32: "),
        (1e6, ["--storage-dtype", "float16"], "has a value of magnitude 1e+06, beyond float16's range (65504): "),
    ],
    ids=["nan", "infinity", "beyond float16"],
)
def test_a_value_that_cannot_be_stored_in_any_layer_or_word_is_refused(
    value: float,
    options: list[str],
    refusal: str,
    layer: int,
    place: str,
    fixture_model_folder: Path,
    tmp_path: Path,
    capsys,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One value that the file cannot hold (a NaN or an infinity: the model's check; beyond float16's range: the
    storage's) in one layer alone (the token layer, 0, included), at either end of a line, in either half of the
    vector, in either line of a batch, never reaches the file: the check skips no layer, word, column or line."""
    run = TorchEmbedder.run
    row, word, column = PLACES[place]

    def with_the_value(self: TorchEmbedder, prepared):
        pending = run(self, prepared)
        with torch.inference_mode():
            pending.vectors[row, layer, word % int(pending.lengths[row]), column] = value  # (batch, L+1, words, 2P)
        return pending

    monkeypatch.setattr(TorchEmbedder, "run", with_the_value)
    source = _write_lines(tmp_path / "in.txt", SENTENCES[:2])
    code, _, err = _embed(capsys, source, tmp_path / "out.hdf5", "--model", fixture_model_folder, *options)
    assert code == 2 and err.count("\n") == 1, err
    assert re.match(r"elmo-embed: error: line [12] \(dataset [01]\) ", err) and refusal in err, err
    assert not (tmp_path / "out.hdf5").exists()


def test_a_weight_of_the_wrong_shape_is_one_line(fixture_model_folder: Path, tmp_path: Path, capsys) -> None:
    """transformers printed its loading report, then a traceback advising ignore_mismatched_sizes."""
    damaged = Path(shutil.copytree(fixture_model_folder, tmp_path / "damaged"))
    _edit_weight(damaged, lambda weight: weight[:-1])
    (damaged / "SHA256SUMS").unlink()  # weights saved by hand: a folder without a record (its own line is tested)
    source = _write_lines(tmp_path / "in.txt", SENTENCES)
    code, _, err = _embed(capsys, source, tmp_path / "out.hdf5", "--model", damaged)
    rows, columns = (
        ElmoModel.from_pretrained(fixture_model_folder).backward_lstm.layers[0].input_projection.weight.shape
    )
    assert (code, err) == (
        2,
        f"elmo-embed: error: {damaged}: the weight backward_lstm.layers.0.input_projection.weight has the shape"
        f" [{rows - 1}, {columns}], but its config.json makes it [{rows}, {columns}]: the weights and config.json do"
        " not belong together; copy or convert the model again\n",
    )


def test_character_cnn_pads_its_batches_to_few_shapes(fixture_model_folder: Path) -> None:
    """oneDNN builds a kernel for each shape a convolution sees: the character CNN pads its number of distinct
    words to one of 8 sizes per power of two and a multiple of 16, and drops the padded rows after the projection
    without changing any vector: the CPU's products round a row otherwise in fewer than about 12 rows or in a tail
    of 1 or 2 past a multiple of 16 (`TokenVectorCache` needs a word's vector the same in any batch)."""
    model = ElmoModel.from_pretrained(fixture_model_folder).eval()
    tokenizer = ElmoTokenizer.from_pretrained(fixture_model_folder)
    encoder = model.char_encoder
    rows: set[int] = set()
    encoder.convolutions[0].register_forward_pre_hook(lambda module, inputs: rows.add(inputs[0].shape[0]))
    projected: list[int] = []
    encoder.projection.register_forward_pre_hook(lambda module, inputs: projected.append(inputs[0].shape[0]))
    vocabulary = [f"w{index}" for index in range(200)]
    char_ids = tokenizer([vocabulary], is_split_into_words=True, return_tensors="pt")["input_ids"][0]
    with torch.no_grad():
        alone = torch.cat([encoder(char_ids[index : index + 1]) for index in range(len(vocabulary))])
        assert rows == {16}
        for count in range(1, len(vocabulary) + 1):
            assert torch.equal(encoder(char_ids[:count]), alone[:count])
            assert projected[-1] % 16 == 0, "the highway layers and the projection: the padded rows too"
    for power in range(8):
        sizes = {size for size in rows if 2**power <= size < 2 ** (power + 1)}
        assert len(sizes) <= 8, f"{len(sizes)} shapes of {2**power} to {2 ** (power + 1) - 1} rows"


@pytest.mark.slow
@pytest.mark.skipif(not torch.backends.mkldnn.is_available(), reason="this torch build has no oneDNN")
def test_onednn_kernels_are_cached_and_few(fixture_model_folder: Path, tmp_path: Path) -> None:
    """elmo-embed keeps oneDNN's cache of kernels (building them anew for every LSTM step cost 1.5 to 4.6 times
    the time), and the character CNN's padding keeps the kernels a corpus needs few: 16 lines of 144 to 159 distinct
    words (<S> and </S> included) make 2 shapes (144 and 160 rows), one kernel per convolution each."""
    lines = [" ".join(f"w{index}" for index in range(words)) for words in range(142, 158)]
    source = _write_lines(tmp_path / "in.txt", lines)
    command = [
        sys.executable,
        "-m",
        "elmo_transformers.inference.embed",
        source,
        tmp_path / "out.hdf5",
        "--batch-size",
        1,
    ]
    command += ["--model", fixture_model_folder]
    # ONEDNN_VERBOSE=2: one line per kernel, made or taken from the cache. One thread, as for the tests in-process.
    environment = {**os.environ, "ONEDNN_VERBOSE": "2", "OMP_NUM_THREADS": "1"}
    del environment["ONEDNN_PRIMITIVE_CACHE_CAPACITY"]  # set by _keep_environment: elmo-embed's own choice here
    completed = subprocess.run(list(map(str, command)), env=environment, capture_output=True, text=True)
    assert completed.returncode == 0, completed.stderr[-2000:]
    made = [line for line in completed.stdout.splitlines() if line.startswith("onednn_verbose") and ",create:" in line]
    assert made, "no oneDNN kernel was made: elmo-embed's products no longer run on oneDNN"
    assert sum("cache_hit" in line for line in made) > len(made) / 2
    convolutions = [line for line in made if "cache_miss" in line and ",convolution," in line]
    assert len(convolutions) == 2 * len(ElmoConfig.from_pretrained(fixture_model_folder).char_cnn_filters)


def test_help_has_examples(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    help_text = capsys.readouterr().out
    assert "examples:\n  elmo-embed sentences.txt sentences.hdf5 --model elmo-original" in help_text
    assert "--resume" in help_text and "sentence_to_index" in help_text
    assert 'words = json.loads(file["0"].attrs["words"])  # with --tokenize' in help_text
    assert "The rest is in docs/elmo-embed.md" in help_text
    assert len(help_text.split("examples:")[1].splitlines()) <= 25, "examples, the essentials and the way to the docs"


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_slow_low_precision_on_cpu_is_named(
    dtype: str,
    fixture_model_folder: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A dtype without fast kernels on this CPU still embeds, with a warning that float32 is faster."""
    from modeling_elmo import onednn_elmo  # (imported where a run computes in another dtype than float32)

    monkeypatch.setattr(onednn_elmo, "onednn_available", lambda dtype: dtype == torch.float32)
    source = _write_lines(tmp_path / "in.txt", SENTENCES)
    code, _, err = _embed(capsys, source, tmp_path / "out.hdf5", "--model", fixture_model_folder, "--dtype", dtype)
    assert code == 0
    warned = "warning: this CPU has no fast bfloat16 matrix products" in err
    assert warned == (dtype == "bfloat16"), err


# Empty lines (also first and last), a line of 10 words cut in pieces by --max-words 4, unicode, mixed lengths.
OVERLAP_LINES = [
    "",
    "The cat sat on the mat .",
    "one two three four five six seven eight nine ten",
    "",
    "Hello !",
    "naïve café — “quoted” words",
    "a",
    "ELMo gives every word three vectors .",
    "Don't panic: it's 3.14!",
    "x y",
    "Colorless green ideas sleep furiously .",
    "",
]


def _contents_with_attributes(path: Path) -> dict[str, tuple[np.ndarray, dict]]:
    """Every dataset of a file with its attributes (sentence_to_index included), and the root's attributes."""
    with h5py.File(path, "r") as file:
        contents = {name: (file[name][()], dict(file[name].attrs)) for name in file}
        contents["/"] = (np.zeros(0), dict(file.attrs))
    return contents


def _assert_same_file(path: Path, expected: Path) -> None:
    """The same datasets and attributes; the command lines (which name the output) may differ."""
    contents, wanted = _contents_with_attributes(path), _contents_with_attributes(expected)
    for root in (contents["/"][1], wanted["/"][1]):
        root.pop("elmo_embed_command")
    assert sorted(contents) == sorted(wanted)
    for name, (array, attributes) in wanted.items():
        assert contents[name][0].dtype == array.dtype and np.array_equal(contents[name][0], array), name
        assert contents[name][1] == attributes, name


@pytest.fixture
def recorded_writes(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int, str]]:
    """Patches SegmentStore.write to record (line, start, thread name) of every piece written."""
    writes: list[tuple[int, int, str]] = []
    original_write = SegmentStore.write

    def recording_write(self, line, start, vectors, words, **kwargs):
        writes.append((line, start, threading.current_thread().name))
        return original_write(self, line, start, vectors, words, **kwargs)

    monkeypatch.setattr(SegmentStore, "write", recording_write)
    return writes


@pytest.mark.parametrize("tokenize", [False, True])
def test_overlapped_stages_write_the_same_file_in_the_same_order(
    tokenize: bool,
    recorded_writes: list,
    fixture_model_folder: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Reading, the model and writing in three threads give the file of the sequential run, written in its order
    by one thread; several windows (of 3 lines or 12 words) and batches of 2."""
    source = _write_lines(tmp_path / "in.txt", OVERLAP_LINES)
    options = {"model": str(fixture_model_folder), "batch_size": 2, "max_words": 4, "tokenize": tokenize}
    summaries, orders = [], []
    for overlap in (False, True):
        recorded_writes.clear()
        run_options = EmbedOptions(source, tmp_path / f"{overlap}.hdf5", **options)
        summaries.append(embed_file(run_options, overlap=overlap, limits=EmbedLimits(window_lines=3, window_words=12)))
        orders.append([(line, start) for line, start, _ in recorded_writes])
        assert len({thread for _, _, thread in recorded_writes}) == 1, "one thread writes the file"
    _assert_same_file(tmp_path / "True.hdf5", tmp_path / "False.hdf5")
    assert orders[1] == orders[0]
    assert {line for line, _ in orders[0]} == set(range(len(OVERLAP_LINES))) and (2, 8) in orders[0]
    sequential, overlapped = summaries
    assert (
        overlapped.describe(tmp_path / "out", 4).split("\n")[:-1]
        == sequential.describe(tmp_path / "out", 4).split("\n")[:-1]
    ), "the same summary (but the time)"


@pytest.mark.parametrize("size", ["window_lines", "window_words", "segment_bytes", "chunk_bytes", "shard_bytes"])
def test_a_limit_that_is_not_a_positive_int_is_refused_in_one_line(size: str) -> None:
    for value in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match=rf"^EmbedLimits\.{size} must be a positive int, got {value!r}$"):
            EmbedLimits(**{size: value})


@pytest.mark.parametrize(
    ("stage", "code", "message"),
    [
        ("read", 2, "elmo-embed: error: RuntimeError after 12 lines: tokenizer broke; "),
        ("model", 130, "elmo-embed: interrupted: "),
        ("write", 2, "elmo-embed: error: OUT.partial: the disk is full (No space left on device): "),
    ],
)
def test_overlapped_stages_fail_as_the_sequential_run_and_resume(
    stage: str,
    code: int,
    message: str,
    recorded_pieces: dict,
    fixture_model_folder: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An error in the reading, model or writing stage (Ctrl-C in the model's) ends the run with the sequential
    run's one-line message, leaving the same finished lines; --resume completes the same file."""
    source = _write_lines(tmp_path / "in.txt", OVERLAP_LINES)
    args = ("--model", fixture_model_folder, "--batch-size", 2, "--max-words", 4)
    assert _embed(capsys, source, tmp_path / "clean.hdf5", *args)[0] == 0
    original_prepare, original_create = TorchEmbedder.prepare, h5py.Group.create_dataset

    def failing_prepare(self, sentences):
        if stage == "read" and ["Colorless", "green", "ideas", "sleep"] in sentences:  # in the second window
            raise RuntimeError("tokenizer broke\nsecond line")
        return original_prepare(self, sentences)

    def failing_create(self, name, *args, **kwargs):
        if stage == "write" and name.endswith("/10"):  # line 10's dataset, in the second window
            raise OSError(28, "Can't synchronously write data (error message = 'No space left on device')")
        return original_create(self, name, *args, **kwargs)

    monkeypatch.setattr(TorchEmbedder, "prepare", failing_prepare)
    monkeypatch.setattr(h5py.Group, "create_dataset", failing_create)
    # Two windows (the reading stage fails in the second) and a segment per batch (a failed write loses one batch).
    limits = EmbedLimits(window_lines=8, segment_bytes=1)
    finished, errors = [], []
    for overlap in (False, True):
        main_runs_with(monkeypatch, overlap=overlap, limits=limits)
        recorded_pieces.update(interrupt_at=4 if stage == "model" else None, interrupt=KeyboardInterrupt(), pieces=[])
        output = tmp_path / f"{overlap}.hdf5"
        first_code, _, err = _embed(capsys, source, output, *args)
        errors.append(err.replace(str(output), "OUT"))
        assert first_code == code and errors[-1].startswith(message) and err.count("\n") == 1, err
        finished.append(_finished_lines(Path(f"{output}.partial")))
        recorded_pieces.update(interrupt_at=None)
        stage_failing, stage = stage, ""
        assert _embed(capsys, source, output, *args, "--resume")[0] == 0
        stage = stage_failing
    # Resumed in the batches of the uninterrupted run: its file, bit for bit, overlapped or not.
    for overlap in (False, True):
        _assert_same_file(tmp_path / f"{overlap}.hdf5", tmp_path / "clean.hdf5")
    assert errors[1] == errors[0]
    assert sorted(finished[1]) == sorted(finished[0]) and 0 < len(finished[0]) < len(OVERLAP_LINES)
    assert all(np.array_equal(finished[1][name], vectors) for name, vectors in finished[0].items())


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_overlapped_stages_on_cuda_give_the_cpu_vectors(fixture_model_folder: Path, tmp_path: Path) -> None:
    """On a GPU the stages overlap by default, with pinned host memory and a CUDA event before the vectors are read."""
    embedder = TorchEmbedder(str(fixture_model_folder), layers="all", device="cuda")
    prepared = embedder.prepare([["The", "cat"], ["a"]])
    assert all(tensor.is_pinned() for tensor in prepared.tensors.values())
    pending = embedder.run(prepared)
    assert pending.copied is not None and pending.vectors.is_pinned()
    assert [vectors.shape for vectors in pending.result()] == [(3, 2, 32), (3, 1, 32)]

    source = _write_lines(tmp_path / "in.txt", OVERLAP_LINES)
    options = {"model": str(fixture_model_folder), "batch_size": 2, "max_words": 4}
    embed_file(EmbedOptions(source, tmp_path / "cpu.hdf5", device="cpu", **options))
    embed_file(EmbedOptions(source, tmp_path / "cuda.hdf5", device="cuda", **options))
    cpu, cuda = _read(tmp_path / "cpu.hdf5"), _read(tmp_path / "cuda.hdf5")
    assert sorted(cuda) == sorted(cpu)
    for name, vectors in cpu.items():
        if name != "sentence_to_index":
            np.testing.assert_allclose(cuda[name], vectors, rtol=0, atol=1e-5, err_msg=name)


def test_a_resumed_run_computes_in_the_batches_of_an_uninterrupted_one(
    recorded_pieces: dict, fixture_model_folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """Finished lines still take their places in the windows and batches: every batch of the resumed run is a batch
    of the uninterrupted run (where the kernels depend on the batch's shape, the vectors are then the same)."""
    source = _write_lines(tmp_path / "in.txt", OVERLAP_LINES)
    args = ("--model", fixture_model_folder, "--batch-size", 2, "--max-words", 4)
    assert _embed(capsys, source, tmp_path / "clean.hdf5", *args)[0] == 0
    uninterrupted = set(recorded_pieces["batches"])
    recorded_pieces.update(pieces=[], interrupt_at=6, interrupt=KeyboardInterrupt())  # at the 4th batch
    assert _embed(capsys, source, tmp_path / "out.hdf5", *args)[0] == 130
    recorded_pieces.update(interrupt_at=None, batches=[])
    assert _embed(capsys, source, tmp_path / "out.hdf5", *args, "--resume")[0] == 0
    assert recorded_pieces["batches"] and set(recorded_pieces["batches"]) <= uninterrupted
