"""elmo-embed on a CPU encodes each distinct word of a run once (`TokenVectorCache`, issue 52): the file it writes
holds the same datasets, byte for byte, as without the cache."""

from __future__ import annotations

from pathlib import Path

import h5py
import pytest
from awkward_words import AWKWARD_WORDS

from elmo_transformers.inference.embed import main
from elmo_transformers.inference.torch_runner import TorchEmbedder
from modeling_elmo import TokenVectorCache

# Lines that repeat words across batches of 2: mixed lengths, empty lines, non-ASCII and words over 48 bytes.
LINES = [
    "The cat sat on the mat .",
    "",
    "the cat naïve 日本語 " + "x" * 60,
    "a",
    " ".join(word for word in AWKWARD_WORDS if word.isprintable() and word.strip() and " " not in word),
    "The mat sat on the cat . " * 5,
    "",
    "naïve " + "x" * 60 + " 😀😀😀😀😀😀😀😀😀😀😀😀😀 end",
]


@pytest.fixture(autouse=True)
def _keep_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """main() sets the native libraries' settings (unless set): set them here so that they are unset again after."""
    monkeypatch.setenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "0")
    monkeypatch.setenv("MKL_CBWR", "AUTO,STRICT")


def _datasets(path: Path) -> dict[str, tuple]:
    """Each dataset of an hdf5 file: its dtype, shape, bytes (a string dataset's: its strings) and attributes."""
    with h5py.File(path, "r") as file:
        return {
            name: (dataset.dtype, dataset.shape, _contents(dataset), dict(dataset.attrs))
            for name, dataset in file.items()
        }


def _contents(dataset: h5py.Dataset) -> bytes | list:
    values = dataset[()]
    return values.tolist() if values.dtype == object else values.tobytes()


@pytest.mark.parametrize(("model", "dtype"), [("bundled", "float32"), ("fixture", "float32"), ("bundled", "bfloat16")])
def test_the_file_is_the_same_with_and_without_the_cache(
    model: str, dtype: str, fixture_model_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "in.txt"
    source.write_text("".join(line + "\n" for line in LINES), encoding="utf-8")
    options = ["--batch-size", "2", "--tokenize", "--dtype", dtype]
    options += [] if model == "bundled" else ["--model", fixture_model_folder]
    caches: list[TokenVectorCache | None] = []
    start = TorchEmbedder.__init__

    def started(embedder: TorchEmbedder, *args: object, **kwargs: object) -> None:
        start(embedder, *args, **kwargs)
        caches.append(embedder.token_cache)

    def started_without_a_cache(embedder: TorchEmbedder, *args: object, **kwargs: object) -> None:
        start(embedder, *args, **kwargs)
        embedder.token_cache = None

    monkeypatch.setattr(TorchEmbedder, "__init__", started)
    assert main([str(source), str(tmp_path / "cached.hdf5"), *map(str, options)]) == 0
    assert caches and len(caches[-1]) > 0, "elmo-embed on the CPU did not use a cache"
    monkeypatch.setattr(TorchEmbedder, "__init__", started_without_a_cache)
    assert main([str(source), str(tmp_path / "uncached.hdf5"), *map(str, options)]) == 0
    cached, uncached = _datasets(tmp_path / "cached.hdf5"), _datasets(tmp_path / "uncached.hdf5")
    assert set(cached) == {*map(str, range(len(LINES))), "sentence_to_index"}
    assert cached == uncached
