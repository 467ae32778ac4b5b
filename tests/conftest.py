"""Shared test fixtures.

The bilm-tf reference activations ship in the allennlp 0.9.0 wheel (Apache-2.0). The wheel is fetched once
with `pip download` (PyPI is the only network these tests use) and cached, with its ELMo fixtures, in
$ELMO_TEST_CACHE (default ~/.cache/elmo-transformers-tests).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import torch

from elmo_transformers.common.pip_download import PipDownloadError, pip_download
from modeling_elmo.native_elmo import NATIVE_LIBRARY_SETTINGS

ALLENNLP_WHEEL = "allennlp==0.9.0"
_FIXTURE_PREFIX = "allennlp/tests/fixtures/"
_FIXTURE_FOLDERS = ("elmo/", "elmo_multilingual/")


def _cache_root() -> Path:
    return Path(os.environ.get("ELMO_TEST_CACHE", Path.home() / ".cache" / "elmo-transformers-tests"))


def _cached_wheel() -> Path:
    """The allennlp 0.9.0 wheel, fetched once with `pip download` into the cache."""
    try:
        return pip_download(ALLENNLP_WHEEL, _cache_root(), ("--only-binary=:all:",))
    except PipDownloadError as error:
        pytest.fail(f"could not fetch the bilm-tf fixtures: {error}")


def _extract_fixtures(wheel: Path, target: Path) -> None:
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=".fixtures-"))
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            relative = name.removeprefix(_FIXTURE_PREFIX)
            if name.startswith(_FIXTURE_PREFIX) and relative.startswith(_FIXTURE_FOLDERS) and not name.endswith("/"):
                destination = staging / relative
                destination.parent.mkdir(parents=True, exist_ok=True)
                destination.write_bytes(archive.read(name))
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)


@pytest.fixture(autouse=True)
def one_thread() -> Iterator[None]:
    """The test models are tiny: on one thread they run faster, as thread synchronisation dominates small ops."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(autouse=True)
def native_library_settings_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """A command called in-process sets the native libraries' settings (`set_native_libraries`, unless set): they are
    as before each test after it, so that no later test, nor the processes it starts, inherits them."""
    for name in NATIVE_LIBRARY_SETTINGS:
        if name in os.environ:
            monkeypatch.setenv(name, os.environ[name])
        else:
            monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="session")
def allennlp_wheel() -> Path:
    """allennlp 0.9.0's wheel (pure Python: it imports as a zip, see benchmarks/allennlp/stubs.py)."""
    return _cached_wheel()


@pytest.fixture(scope="session")
def allennlp_fixtures() -> Path:
    """Folder holding allennlp 0.9.0's `elmo/` and `elmo_multilingual/` test fixtures."""
    target = _cache_root() / "allennlp-0.9.0-fixtures"
    if not (target / "elmo" / "lm_embeddings_2.hdf5").is_file():
        _extract_fixtures(_cached_wheel(), target)
    return target


@pytest.fixture(scope="session")
def elmo_fixture(allennlp_fixtures: Path) -> Path:
    """The tiny bilm-tf-trained model and what bilm-tf computed with it."""
    return allennlp_fixtures / "elmo"


@pytest.fixture(scope="session")
def fixture_model_folder(elmo_fixture: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture model converted with `elmo-convert allennlp`."""
    from elmo_transformers.conversion.cli import main

    output = tmp_path_factory.mktemp("converted") / "elmo-fixture"
    exit_code = main(
        [
            "allennlp",
            "--options",
            str(elmo_fixture / "options.json"),
            "--weights",
            str(elmo_fixture / "lm_weights.hdf5"),
            "--output",
            str(output),
        ]
    )
    assert exit_code == 0
    return output


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Callable[[str], Path | None]]:
    """`mount(size)`: a folder on a tmpfs of `size` (e.g. "2m"), or None where no tmpfs can be mounted (not root):
    the test then injects what a full disk does. For the converters (elmo-convert); elmo-embed's and pretraining's
    tests, which run several processes, have their own."""
    mounted: list[Path] = []

    def mount(size: str) -> Path | None:
        folder = tmp_path / f"disk-{size}"
        folder.mkdir()
        command = ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)]
        if shutil.which("mount") is None or subprocess.run(command, capture_output=True).returncode != 0:
            print(f"no tmpfs of {size}: a full disk is injected")
            return None
        print(f"a tmpfs of {size}")
        mounted.append(folder)
        return folder

    yield mount
    for folder in mounted:
        subprocess.run(["umount", str(folder)], check=True)


@pytest.fixture(scope="session")
def test_cache() -> Path:
    """$ELMO_TEST_CACHE: where the files fetched from PyPI for the tests are kept between runs."""
    return _cache_root()


@pytest.fixture(scope="session")
def default_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled model (trained, 512 cells) exported by `elmo-convert onnx` with its int8 graph (the [onnx] extra:
    tests/onnx, and tests/compat's `ElmoEmbedder.from_graph`; exported once a session, as it takes seconds)."""
    from elmo_transformers.conversion.cli import main
    from modeling_elmo import DEFAULT_MODEL

    output = tmp_path_factory.mktemp("onnx") / "default-onnx"
    assert main(["onnx", "--model", str(DEFAULT_MODEL), "--output", str(output), "--quantize", "int8"]) == 0
    return output
