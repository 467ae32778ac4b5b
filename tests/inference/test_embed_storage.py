"""`elmo-embed --storage-dtype float16 --compression gzip|lzf`: the same datasets (names, shapes, words) holding the
float32 values rounded to float16 and/or compressed, on awkward lines (empty, in pieces, unicode, --tokenize), through
the merge and a resume; a resume with other storage options refused; a float16 overflow refused in one line."""

from __future__ import annotations

import itertools
import json
import re
import shutil
from pathlib import Path

import h5py
import numpy as np
import pytest
import torch
from embed_limits import main_runs_with
from safetensors.torch import load_file, save_file

from elmo_transformers.inference.embed import main
from elmo_transformers.inference.limits import EmbedLimits
from elmo_transformers.inference.storage import Storage
from modeling_elmo import ElmoModel

LINES = [
    "The cat sat on the mat .",
    "",
    "one two three four five six seven eight nine ten",  # over --max-words 4: pieces of 4, 4 and 2
    "naïve café — 東京 🙂 \x00",
    "  \t ",
    "Hello , world !",
]
# Batches of 2 of the pieces of at most 4 words, in every run: the float32 run they are compared with computes the
# same batches.
RUN_OPTIONS = ("--max-words", "4", "--batch-size", "2")
STORAGE_DTYPES = ("float32", "float16")
COMPRESSIONS = ("none", "gzip", "lzf")
# A few words per chunk (1 to 7, by dtype and layers), so that the pieces of the long line cross chunk boundaries.
SMALL_CHUNK_BYTES = 500


def _set_native_libraries(monkeypatch: pytest.MonkeyPatch) -> None:
    """main() sets the native libraries' settings (unless set): set them here so that they are unset again after."""
    monkeypatch.setenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "0")
    monkeypatch.setenv("MKL_CBWR", "AUTO,STRICT")


@pytest.fixture(autouse=True)
def _keep_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    _set_native_libraries(monkeypatch)


def _write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def _embed(source: Path, output: Path, model: Path, *args: str) -> int:
    return main([str(source), str(output), "--model", str(model), *RUN_OPTIONS, *args])


@pytest.fixture(scope="module")
def float32_files(fixture_model_folder: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, bool], Path]:
    """The default (float32, uncompressed) file of LINES for each (--layers, --tokenize), computed as the tests'
    runs are (one thread, the same native settings: the vectors are then equal bit for bit)."""
    folder = tmp_path_factory.mktemp("float32")
    source = _write_lines(folder / "in.txt", LINES)
    files: dict[tuple[str, bool], Path] = {}
    threads = torch.get_num_threads()
    with pytest.MonkeyPatch.context() as monkeypatch:
        _set_native_libraries(monkeypatch)
        torch.set_num_threads(1)
        for layers, tokenize in itertools.product(("all", "top", "average"), (False, True)):
            output = folder / f"{layers}-{tokenize}.hdf5"
            args = ["--layers", layers, *(["--tokenize"] if tokenize else [])]
            assert _embed(source, output, fixture_model_folder, *args) == 0
            files[layers, tokenize] = output
    torch.set_num_threads(threads)
    return files


def _assert_stored_as(path: Path, float32_file: Path, storage_dtype: str, compression: str) -> None:
    """`path` holds the datasets of `float32_file` (names, shapes, attributes, sentence_to_index), their values
    rounded to `storage_dtype` exactly, every non-empty line with the filter `compression` in chunks of whole words."""
    with h5py.File(path, "r") as file, h5py.File(float32_file, "r") as expected:
        assert sorted(file) == sorted(expected)
        assert file.attrs["elmo_embed_storage_dtype"] == storage_dtype
        assert file.attrs["elmo_embed_compression"] == compression
        for name in expected:
            stored, wanted = file[name], expected[name]
            assert stored.shape == wanted.shape and dict(stored.attrs) == dict(wanted.attrs), name
            if name == "sentence_to_index":
                assert stored[0] == wanted[0]
                continue
            assert stored.dtype == np.dtype(storage_dtype), name
            assert np.array_equal(stored[()], wanted[()].astype(storage_dtype)), name
            if compression == "none" or stored.shape[-2] == 0:
                assert stored.chunks is None and stored.compression is None, f"{name} is contiguous"
                continue
            assert stored.compression == compression and stored.shuffle, name
            chunk, shape = stored.chunks, stored.shape
            assert chunk[:-2] == shape[:-2] and chunk[-1] == shape[-1], f"{name}: every layer and the whole width"
            word_bytes = stored.dtype.itemsize * int(np.prod(shape)) // shape[-2]
            assert chunk[-2] == min(shape[-2], max(1, SMALL_CHUNK_BYTES // word_bytes)), name


@pytest.mark.parametrize(("layers", "tokenize"), [("all", False), ("top", False), ("average", True)])
@pytest.mark.parametrize("compression", COMPRESSIONS)
@pytest.mark.parametrize("storage_dtype", STORAGE_DTYPES)
@pytest.mark.slow
def test_every_storage_option_stores_the_float32_values(
    storage_dtype: str,
    compression: str,
    layers: str,
    tokenize: bool,
    float32_files: dict[tuple[str, bool], Path],
    fixture_model_folder: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Empty lines, a line in pieces (each piece written into the chunked dataset), unicode and --tokenize's words;
    what the finished file holds has been through the merge."""
    main_runs_with(monkeypatch, limits=EmbedLimits(chunk_bytes=SMALL_CHUNK_BYTES))
    source = _write_lines(tmp_path / "in.txt", LINES)
    output = tmp_path / "out.hdf5"
    args = ["--layers", layers, "--storage-dtype", storage_dtype, "--compression", compression]
    assert _embed(source, output, fixture_model_folder, *args, *(["--tokenize"] if tokenize else [])) == 0
    _assert_stored_as(output, float32_files[layers, tokenize], storage_dtype, compression)
    if tokenize:
        with h5py.File(output, "r") as file:
            # split on whitespace, "\x00" is a word; --tokenize makes no word of a control character
            assert json.loads(file["3"].attrs["words"]) == ["naïve", "café", "—", "東京", "🙂"]


def test_dataset_options() -> None:
    """The defaults store as before: a contiguous float32 dataset. Chunks hold up to 256 KiB of whole words, at
    least one; an empty line is left unfiltered (HDF5 refuses chunks larger than a 0-word dataset)."""
    assert Storage().dataset_options((3, 1000, 1024)) == {"dtype": "float32"}
    assert Storage("float16").dataset_options((1000, 1024)) == {"dtype": "float16"}
    gzip = Storage("float32", "gzip").dataset_options((3, 1000, 1024))  # 12 KB a word: 21 words
    assert gzip == {"dtype": "float32", "chunks": (3, 21, 1024), "compression": "gzip", "shuffle": True}
    assert Storage("float16", "lzf").dataset_options((1000, 1024))["chunks"] == (128, 1024)  # 2 KB a word
    assert Storage("float16", "lzf").dataset_options((5, 1024))["chunks"] == (5, 1024)
    assert Storage("float32", "gzip").dataset_options((3, 2, 100_000))["chunks"] == (3, 1, 100_000)
    assert Storage("float16", "gzip").dataset_options((3, 0, 1024)) == {"dtype": "float16"}


@pytest.fixture
def interrupted_forward(monkeypatch: pytest.MonkeyPatch) -> dict:
    """Patches ElmoModel.forward to raise KeyboardInterrupt at call number `at` (never when None)."""
    original_forward = ElmoModel.forward
    state: dict = {"calls": 0, "at": None}

    def forward(self, *args, **kwargs):
        state["calls"] += 1
        if state["calls"] == state["at"]:
            raise KeyboardInterrupt
        return original_forward(self, *args, **kwargs)

    monkeypatch.setattr(ElmoModel, "forward", forward)
    return state


def _stored_lines(partial: Path) -> set[str]:
    lines: set[str] = set()
    for segment in partial.glob("lines-*.hdf5"):
        with h5py.File(segment, "r") as file:
            lines.update(name for name in file if name.isdigit())
    return lines


@pytest.mark.parametrize(("storage_dtype", "compression"), list(itertools.product(STORAGE_DTYPES, COMPRESSIONS)))
def test_resume_with_every_storage_option(
    storage_dtype: str,
    compression: str,
    interrupted_forward: dict,
    float32_files: dict[tuple[str, bool], Path],
    fixture_model_folder: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Interrupted with lines half-written, then resumed: the uninterrupted run's file."""
    main_runs_with(monkeypatch, limits=EmbedLimits(chunk_bytes=SMALL_CHUNK_BYTES))
    source = _write_lines(tmp_path / "in.txt", LINES)
    output = tmp_path / "out.hdf5"
    args = ["--storage-dtype", storage_dtype, "--compression", compression]
    # The batches: the last pieces of lines 2 and 3, line 0's two pieces, then (interrupted) line 2's first pieces:
    # lines 2 and 3 are half-written, into their chunked datasets, and dropped.
    interrupted_forward["at"] = 3
    assert _embed(source, output, fixture_model_folder, *args) == 130
    assert _stored_lines(Path(f"{output}.partial")) == {"0", "1", "4"}
    interrupted_forward["at"] = None
    assert _embed(source, output, fixture_model_folder, *args, "--resume") == 0
    _assert_stored_as(output, float32_files["all", False], storage_dtype, compression)


@pytest.mark.parametrize(
    ("started", "resumed", "difference"),
    [
        ([], ["--storage-dtype", "float16"], "storage_dtype 'float32' (now 'float16')"),
        ([], ["--compression", "lzf"], "compression 'none' (now 'lzf')"),
        (
            ["--storage-dtype", "float16", "--compression", "gzip"],
            [],
            "storage_dtype 'float16' (now 'float32'), compression 'gzip' (now 'none')",
        ),
    ],
)
def test_resume_with_other_storage_options_is_refused(
    started: list[str],
    resumed: list[str],
    difference: str,
    interrupted_forward: dict,
    fixture_model_folder: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture,
) -> None:
    source = _write_lines(tmp_path / "in.txt", LINES)
    output = tmp_path / "out.hdf5"
    interrupted_forward["at"] = 2
    assert _embed(source, output, fixture_model_folder, *started) == 130
    interrupted_forward["at"] = None
    capsys.readouterr()
    assert _embed(source, output, fixture_model_folder, *resumed, "--resume") == 2
    assert capsys.readouterr().err == (
        f"elmo-embed: error: {output}.partial was started with {difference}: rerun with the same input and options,"
        " or pass --overwrite to start over\n"
    )


@pytest.fixture(scope="module")
def overflowing_model(fixture_model_folder: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture model with the character "Z" embedded 10^5 times larger: a word holding it gets a token layer
    beyond float16's range (the biLSTM layers clip theirs), the other words are unchanged."""
    folder = tmp_path_factory.mktemp("overflowing") / "model"
    shutil.copytree(fixture_model_folder, folder)
    weights = load_file(folder / "model.safetensors")
    embedding = weights["char_encoder.char_embedding.weight"].clone()
    embedding[ord("Z") + 1] *= 1e5  # a character's id is its UTF-8 byte + 1
    weights["char_encoder.char_embedding.weight"] = embedding
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})
    (folder / "SHA256SUMS").unlink()  # the checksum of the converted weights, which these are not
    return folder


OVERFLOW_LINES = ["a fine line", "", "the Zebra crossing", "the end"]


@pytest.mark.filterwarnings("error")  # the refusal is the one line said: numpy's overflow warning is not printed
@pytest.mark.parametrize("overlap", [False, True], ids=["sequential", "overlapped"])
def test_a_float16_overflow_is_refused_in_one_line(
    overlap: bool,
    overflowing_model: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    main_runs_with(monkeypatch, overlap=overlap)
    source = _write_lines(tmp_path / "in.txt", OVERFLOW_LINES)
    float32 = tmp_path / "float32.hdf5"
    assert _embed(source, float32, overflowing_model) == 0
    with h5py.File(float32, "r") as file:
        largest = {name: float(np.abs(file[str(name)][()]).max(initial=0)) for name in range(len(OVERFLOW_LINES))}
    assert largest[2] > float(np.finfo(np.float16).max) > max(largest[0], largest[1], largest[3]), (
        "only line 3 overflows"
    )
    capsys.readouterr()

    output = tmp_path / "float16.hdf5"
    assert _embed(source, output, overflowing_model, "--storage-dtype", "float16") == 2
    err = capsys.readouterr().err
    assert err.startswith("elmo-embed: error: line 3 (dataset 2) has a value of magnitude ") and err.count("\n") == 1
    assert err.endswith(
        " beyond float16's range (65504): it would be stored as inf; store float32 (--storage-dtype float32, with"
        " --overwrite to start over)\n"
    )
    assert not output.exists() and "2" not in _stored_lines(Path(f"{output}.partial")), "no inf was written"


@pytest.mark.parametrize("overlap", [False, True], ids=["sequential", "overlapped"])
def test_a_float16_compute_overflow_is_refused_in_one_line(
    overlap: bool, overflowing_model: Path, tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch
) -> None:
    """--dtype float16 (the model's dtype) overflowing wrote inf (token layer) and NaN (biLSTM layers) with exit
    status 0; it is refused as the storage overflow is, and nothing non-finite is written."""
    main_runs_with(monkeypatch, overlap=overlap)
    source = _write_lines(tmp_path / "in.txt", OVERFLOW_LINES)
    output = tmp_path / "float16.hdf5"
    assert _embed(source, output, overflowing_model, "--dtype", "float16") == 2
    err = capsys.readouterr().err.splitlines()[-1]
    assert re.fullmatch(
        r"elmo-embed: error: line 3 \(dataset 2\) has a vector holding (nan|-?inf) computed in float16: the model's"
        r" activations went beyond float16's range \(65504\); compute in float32 \(--dtype float32, with --overwrite"
        r" to start over\)",
        err,
    ), err
    assert not output.exists() and "2" not in _stored_lines(Path(f"{output}.partial")), "no NaN was written"


@pytest.mark.parametrize(
    ("args", "needed"),
    [
        ([], "159.0 KB"),
        (["--storage-dtype", "float16"], "120.6 KB"),
        (["--storage-dtype", "float16", "--compression", "gzip"], "120.6 KB"),
    ],
)
def test_the_space_estimate_counts_the_stored_dtype(
    args: list[str], needed: str, fixture_model_folder: Path, tmp_path: Path, capsys, monkeypatch
) -> None:
    """100 words of 3 x 32 values, 4 bytes each or 2 in float16, twice (segments and merged file), plus 100 datasets
    of 400 bytes twice and sentence_to_index's 100 x 22 bytes; compressed vectors are counted uncompressed."""
    source = _write_lines(tmp_path / "in.txt", [",,,,,,,,,,"] * 100)
    monkeypatch.setattr(shutil, "disk_usage", lambda path: shutil._ntuple_diskusage(10**9, 0, 1000))
    assert main([str(source), str(tmp_path / "out.hdf5"), "--model", str(fixture_model_folder), *args]) == 2
    assert f"need about {needed}, but {tmp_path} has 1.0 KB free" in capsys.readouterr().err
