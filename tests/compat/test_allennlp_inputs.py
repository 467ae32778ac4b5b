"""compat.allennlp's inputs: bad input in one line (where AllenNLP 0.9 raised and where it crashed), http(s) URLs
fetched once into a cache (a server on 127.0.0.1), a converted model folder and a Hub id (from a local Hub cache)."""

from __future__ import annotations

import functools
import http.server
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch

from elmo_transformers.compat import allennlp as compat
from elmo_transformers.compat.allennlp import cached_files

SENTENCE = "Michael went to the store to buy some eggs .".split()


@pytest.fixture(scope="module")
def files(elmo_fixture: Path) -> tuple[str, str]:
    return str(elmo_fixture / "options.json"), str(elmo_fixture / "lm_weights.hdf5")


def one_line(error: pytest.ExceptionInfo) -> str:
    message = str(error.value)
    assert message and "\n" not in message, message
    return message


# ---------------------------------------------------------------------------------------------------- bad input


def test_a_blank_line_in_embed_file_is_named(files, tmp_path) -> None:
    lines = tmp_path / "lines.txt"
    lines.write_text("A b\n\n  \nC\n", encoding="utf-8")
    output = tmp_path / "out.hdf5"
    with pytest.raises(compat.ConfigurationError) as error:
        compat.ElmoEmbedder(*files).embed_file(str(lines), output)
    assert f"{lines}: your input file contains empty lines at indexes 1, 2 (from 0)" in one_line(error)
    assert not output.exists()


def test_a_batch_of_empty_sentences_is_refused_in_elmo(files) -> None:
    """AllenNLP crashed: IndexError, Dimension out of range."""
    elmo = compat.Elmo(*files, 1)
    for batch in ([[]], [[], []]):
        with pytest.raises(compat.ConfigurationError) as error:
            elmo(compat.batch_to_ids(batch))
        assert "are all empty" in one_line(error)


@pytest.mark.parametrize("batch", [[["a", 5]], [["a"], [None]], ["a sentence"]])
def test_tokens_that_are_not_strings_are_refused(files, batch) -> None:
    """AllenNLP crashed: AttributeError, 'int' object has no attribute 'encode' (and read a string as characters)."""
    with pytest.raises(compat.ConfigurationError) as error:
        compat.batch_to_ids(batch)
    assert one_line(error).startswith("batch_to_ids: ")
    with pytest.raises(compat.ConfigurationError):
        compat.ElmoEmbedder(*files).embed_batch(batch)


def test_options_that_do_not_match_the_weights_are_named(files, tmp_path) -> None:
    """AllenNLP crashed: KeyError or a shape mismatch deep in its loading."""
    options = json.loads(Path(files[0]).read_text())
    options["lstm"]["n_layers"] = 3
    mismatched = tmp_path / "options.json"
    mismatched.write_text(json.dumps(options))
    with pytest.raises(compat.ConfigurationError) as error:
        compat.ElmoEmbedder(str(mismatched), files[1])
    assert "lm_weights.hdf5: dataset RNN_0/RNN/MultiRNNCell/Cell2/LSTMCell/B is missing" in one_line(error)


def test_missing_files_and_unread_schemes_are_named(files, tmp_path) -> None:
    with pytest.raises(compat.ConfigurationError) as error:
        compat.Elmo(str(tmp_path / "absent.json"), files[1], 1)
    assert one_line(error) == f"{tmp_path / 'absent.json'}: no such file"
    with pytest.raises(compat.ConfigurationError) as error:
        compat.Elmo(files[0], "s3://bucket/weights.hdf5", 1)
    assert "only local paths and http(s) URLs" in one_line(error)


# ---------------------------------------------------------------------------------------------------- URLs


class _CountingHandler(http.server.SimpleHTTPRequestHandler):
    requests: list[str]

    def do_GET(self) -> None:
        self.requests.append(self.path)
        super().do_GET()

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def server(files, tmp_path) -> Iterator[tuple[str, list[str]]]:
    """An http server on 127.0.0.1 serving the fixture's files; its base URL and the paths asked for."""
    served = tmp_path / "served"
    served.mkdir()
    for name in files:
        shutil.copy(name, served)
    requests: list[str] = []
    handler = functools.partial(type("Handler", (_CountingHandler,), {"requests": requests}), directory=str(served))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", requests
    httpd.shutdown()
    httpd.server_close()


def test_urls_are_fetched_once_into_the_cache(files, server, tmp_path, monkeypatch) -> None:
    base, requests = server
    monkeypatch.setenv("ELMO_ALLENNLP_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("ALLENNLP_CACHE_ROOT", str(tmp_path / "no-allennlp-cache"))
    urls = f"{base}/options.json", f"{base}/lm_weights.hdf5"
    first = compat.ElmoEmbedder(*urls).embed_sentence(SENTENCE)
    second = compat.ElmoEmbedder(*urls).embed_sentence(SENTENCE)
    assert sorted(requests) == ["/lm_weights.hdf5", "/options.json"]  # once each
    np.testing.assert_array_equal(first, compat.ElmoEmbedder(*files).embed_sentence(SENTENCE))
    np.testing.assert_array_equal(second, first)
    assert not list((tmp_path / "cache").glob("*.partial"))


def test_a_file_allennlp_fetched_is_used_as_it_is(files, server, tmp_path, monkeypatch) -> None:
    base, requests = server
    url = f"{base}/options.json"
    monkeypatch.setenv("ELMO_ALLENNLP_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("ALLENNLP_CACHE_ROOT", str(tmp_path / "allennlp"))
    theirs = tmp_path / "allennlp" / "cache" / (cached_files.hashlib.sha256(url.encode()).hexdigest() + ".etag")
    theirs.parent.mkdir(parents=True)
    shutil.copy(files[0], theirs)
    assert compat.cached_path(url) == theirs
    assert requests == []


def test_a_server_error_is_named(server, tmp_path, monkeypatch) -> None:
    base, _ = server
    monkeypatch.setenv("ELMO_ALLENNLP_CACHE", str(tmp_path / "cache"))
    with pytest.raises(compat.ConfigurationError) as error:
        compat.cached_path(f"{base}/absent.json")
    assert one_line(error) == f"{base}/absent.json: the server answered 404 File not found"


def test_a_url_that_does_not_answer_is_named(tmp_path, monkeypatch) -> None:
    """A server that accepts the connection and says nothing: the download stops after DOWNLOAD_TIMEOUT_S."""
    monkeypatch.setenv("ELMO_ALLENNLP_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(cached_files, "DOWNLOAD_TIMEOUT_S", 0.5)
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/weights.hdf5"
        with pytest.raises(compat.ConfigurationError) as error:
            compat.cached_path(url)
    assert one_line(error).startswith(f"{url} did not answer (")
    assert not list((tmp_path / "cache").iterdir())


# ---------------------------------------------------------------------------------------------------- folders


def test_a_converted_model_folder_gives_the_original_files_vectors(files, fixture_model_folder) -> None:
    expected = compat.ElmoEmbedder(*files).embed_sentence(SENTENCE)
    np.testing.assert_array_equal(
        compat.ElmoEmbedder(str(fixture_model_folder), None).embed_sentence(SENTENCE), expected
    )
    with pytest.raises(compat.ConfigurationError) as error:
        compat.ElmoEmbedder(str(fixture_model_folder), files[1])
    assert "pass weight_file=None" in one_line(error)


HUB_SCRIPT = """
import sys
import numpy as np
from elmo_transformers.compat.allennlp import ElmoEmbedder
vectors = ElmoEmbedder("elmo-test/fixture", None).embed_sentence(sys.argv[2].split())
np.save(sys.argv[1], vectors)
"""


def test_a_hub_id_loads_from_the_hub_cache(files, fixture_model_folder, tmp_path) -> None:
    """The Hub's cache layout (models--OWNER--NAME/snapshots/REVISION, refs/main), offline."""
    repository = tmp_path / "hub" / "models--elmo-test--fixture"
    shutil.copytree(fixture_model_folder, repository / "snapshots" / ("0" * 40))
    (repository / "refs").mkdir()
    (repository / "refs" / "main").write_text("0" * 40)
    environment = {**os.environ, "HF_HUB_CACHE": str(tmp_path / "hub"), "HF_HUB_OFFLINE": "1"}
    output = tmp_path / "vectors.npy"
    command = [sys.executable, "-c", HUB_SCRIPT, str(output), " ".join(SENTENCE)]
    completed = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=300, check=False)
    assert completed.returncode == 0, completed.stderr[-3000:]
    # (the other process runs more threads, which may move a float32 last bit)
    np.testing.assert_allclose(np.load(output), compat.ElmoEmbedder(*files).embed_sentence(SENTENCE), atol=1e-6, rtol=0)


def test_a_model_folder_with_other_characters_is_refused(tmp_path) -> None:
    """A folder whose model reads other ids than batch_to_ids gives (ELMoForManyLangs': code points and words)."""
    from elmoformanylangs_files import write_small_model

    from elmo_transformers.conversion.cli import main as convert

    source, folder = write_small_model(tmp_path / "source"), tmp_path / "converted"
    assert convert(["elmoformanylangs", "--model", str(source), "--output", str(folder)]) == 0
    with pytest.raises(compat.ConfigurationError) as error:
        compat.ElmoEmbedder(str(folder), None)
    assert "reads other characters than AllenNLP's batch_to_ids gives" in one_line(error)


def test_requires_grad_reaches_every_weight(files) -> None:
    for requires_grad in (False, True):
        elmo = compat.Elmo(*files, 1, requires_grad=requires_grad)
        flags = {parameter.requires_grad for name, parameter in elmo.named_parameters() if "_elmo_lstm" in name}
        assert flags == {requires_grad}
    registered = {id(parameter) for parameter in elmo.parameters()}
    assert {id(parameter) for parameter in elmo._elmo_lstm._model.parameters()} <= registered  # .to(), optimisers
    assert torch.is_tensor(elmo(compat.batch_to_ids([SENTENCE]))["mask"])
