"""`elmo-convert onnx --triton-repository REPO`: each graph a Triton model whose config.pbtxt parses as Triton's
`ModelConfig` and declares the graph's own inputs and outputs, batched by Triton's dynamic batcher; written
atomically, an existing model refused without --overwrite."""

from __future__ import annotations

import errno
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType, SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
import onnx
import onnxruntime
from awkward_words import ENGLAND
from command_output import exit_status_after_ctrl_c, file_tree, last_error_line
from google.protobuf import text_format
from triton_server import (
    TritonServer,
    Unavailable,
    server_files,
    stand_in_for_onnxruntime,
    stub_environment,
    triton_server,
)

from elmo_transformers.conversion.cli import main
from elmo_transformers.serving import export_measurements
from elmo_transformers.serving.graph_layout import GraphSignature, GraphTensor, graph_weights
from elmo_transformers.serving.triton_repository import ensemble_config, model_config, text_encoder_config
from modeling_elmo import ElmoForSequenceClassification, ElmoForTokenClassification, ElmoTokenizer

# ONNX's element types as Triton's config names them.
TRITON_TYPES = {
    onnx.TensorProto.INT64: "TYPE_INT64",
    onnx.TensorProto.FLOAT: "TYPE_FP32",
    onnx.TensorProto.BOOL: "TYPE_BOOL",
}


@pytest.fixture(scope="module")
def model_config_pb2() -> ModuleType:
    """Triton's `ModelConfig` schema, `tritonclient/grpc/model_config_pb2.py` of the tritonclient wheel (the [dev]
    extra), loaded from its file: it needs only protobuf, while importing it as `tritonclient.grpc.model_config_pb2`
    runs `tritonclient.grpc`'s client code first, which needs grpcio."""
    spec = importlib.util.find_spec("tritonclient")
    if spec is None:
        pytest.skip("tritonclient is not installed (the [dev] extra): it holds Triton's ModelConfig schema")
    path = Path(next(iter(spec.submodule_search_locations))) / "grpc" / "model_config_pb2.py"
    schema = importlib.util.spec_from_file_location("triton_model_config_pb2", path)
    module = importlib.util.module_from_spec(schema)
    schema.loader.exec_module(module)
    return module


def _export(model: Path, output: Path, repository: Path, *extra: str) -> None:
    command = ["onnx", "--model", str(model), "--output", str(output), "--triton-repository", str(repository)]
    assert main([*command, *extra]) == 0


def _head(kind: type, source: Path, folder: Path) -> Path:
    kind.from_pretrained(source, num_labels=3).save_pretrained(folder)
    ElmoTokenizer.from_pretrained(source).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def exports(fixture_model_folder: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Path]]:
    """One repository holding the fixture biLM's graphs (float32 and int8) and each head's float32 graph; with the
    ONNX folder each model was copied from."""
    work = tmp_path_factory.mktemp("triton")
    repository = work / "models"
    _export(fixture_model_folder, work / "bilm", repository, "--quantize", "int8")
    sources = {"bilm": work / "bilm" / "model.onnx", "bilm_int8": work / "bilm" / "model_quantized.onnx"}
    for kind in (ElmoForTokenClassification, ElmoForSequenceClassification):
        name = kind.__name__.lower()
        _export(_head(kind, fixture_model_folder, work / f"{name}-source"), work / name, repository)
        sources[name] = work / name / "model.onnx"
    return repository, sources


def _dims(value_info: onnx.ValueInfoProto) -> list[int]:
    """What Triton's dims must be for a graph input or output: its shape without the batch, -1 where a call chooses."""
    shape = value_info.type.tensor_type.shape.dim
    assert shape[0].dim_param == "batch"
    return [dim.dim_value if dim.HasField("dim_value") else -1 for dim in shape[1:]]


@pytest.mark.parametrize("name", ["bilm", "bilm_int8", "elmofortokenclassification", "elmoforsequenceclassification"])
def test_each_graph_is_a_triton_model_whose_config_declares_the_graph(
    exports: tuple[Path, dict[str, Path]], model_config_pb2: ModuleType, name: str
) -> None:
    repository, sources = exports
    config = text_format.Parse(
        (repository / name / "config.pbtxt").read_text(encoding="utf-8"), model_config_pb2.ModelConfig()
    )
    assert (config.name, config.backend, config.platform) == (name, "onnxruntime", "onnxruntime_onnx")
    assert config.max_batch_size == 32 and config.HasField("dynamic_batching")
    assert config.dynamic_batching.max_queue_delay_microseconds == 5000
    assert (repository / name / "1" / "model.onnx").read_bytes() == sources[name].read_bytes()
    weights = graph_weights(sources[name])  # (the graph refers to its weights by this name)
    assert (repository / name / "1" / weights.name).read_bytes() == weights.read_bytes()
    graph = onnx.load(str(sources[name]), load_external_data=False).graph
    data_type = model_config_pb2.DataType.Name
    for declared, actual in ((config.input, graph.input), (config.output, graph.output)):
        assert [(tensor.name, data_type(tensor.data_type), list(tensor.dims)) for tensor in declared] == [
            (value.name, TRITON_TYPES[value.type.tensor_type.elem_type], _dims(value)) for value in actual
        ]
    files = {"config.pbtxt", "1", "model.onnx", "SHA256SUMS", weights.name}
    assert {path.name for path in (repository / name).rglob("*")} == files


def _config(folder: Path, model_config_pb2: ModuleType):
    return text_format.Parse((folder / "config.pbtxt").read_text(encoding="utf-8"), model_config_pb2.ModelConfig())


def _declared(tensors, model_config_pb2: ModuleType) -> list[tuple[str, str, list[int]]]:
    return [(tensor.name, model_config_pb2.DataType.Name(tensor.data_type), list(tensor.dims)) for tensor in tensors]


@pytest.mark.parametrize("export", ["bilm", "elmofortokenclassification", "elmoforsequenceclassification"])
def test_the_text_encoder_is_a_python_model_turning_sentences_into_the_graphs_inputs(
    exports: tuple[Path, dict[str, Path]], model_config_pb2: ModuleType, export: str
) -> None:
    repository, _ = exports
    folder = repository / f"{export}_text_encoder"
    config, graph = _config(folder, model_config_pb2), _config(repository / export, model_config_pb2)
    assert (config.name, config.backend, config.platform, config.max_batch_size) == (folder.name, "python", "", 32)
    assert _declared(config.input, model_config_pb2) == [("text", "TYPE_STRING", [1])]
    assert _declared(config.output, model_config_pb2) == _declared(graph.input, model_config_pb2)
    assert not config.HasField("dynamic_batching")  # a request is a batch, padded to its longest sentence
    files = {path.name for path in (folder / "1").iterdir()}
    assert files == {"model.py", "text_elmo.py", "config.json", "tokenizer_config.json"}


@pytest.mark.parametrize("graph", ["bilm", "bilm_int8", "elmofortokenclassification", "elmoforsequenceclassification"])
def test_each_graph_has_an_ensemble_from_raw_text_to_its_outputs(
    exports: tuple[Path, dict[str, Path]], model_config_pb2: ModuleType, graph: str
) -> None:
    repository, _ = exports
    encoder = graph.removesuffix("_int8") + "_text_encoder"
    config, served = (
        _config(repository / f"{graph}_text", model_config_pb2),
        _config(repository / graph, model_config_pb2),
    )
    assert (config.name, config.platform, config.max_batch_size) == (f"{graph}_text", "ensemble", 32)
    assert _declared(config.input, model_config_pb2) == [("text", "TYPE_STRING", [1])]
    assert _declared(config.output, model_config_pb2) == _declared(served.output, model_config_pb2)
    inputs, outputs = ([tensor.name for tensor in tensors] for tensors in (served.input, served.output))
    steps = [
        (step.model_name, step.model_version, dict(step.input_map), dict(step.output_map))
        for step in config.ensemble_scheduling.step
    ]
    assert steps == [
        (encoder, -1, {"text": "text"}, {name: name for name in inputs}),
        (graph, -1, {name: name for name in inputs}, {name: name for name in outputs}),
    ]
    assert sorted(path.name for path in (repository / f"{graph}_text").rglob("*")) == [
        "1",
        "SHA256SUMS",
        "config.pbtxt",
    ]


def test_every_model_folder_records_its_files_sha256(exports: tuple[Path, dict[str, Path]]) -> None:
    """As every folder this package writes: `sha256sum -c --strict` passes and the record names every file."""
    repository, _ = exports
    for folder in (path for path in repository.iterdir() if path.is_dir()):
        files = sorted(path.relative_to(folder).as_posix() for path in folder.rglob("*") if path.is_file())
        recorded = [line.split("  ", 1)[1] for line in (folder / "SHA256SUMS").read_text(encoding="utf-8").splitlines()]
        assert recorded == [file for file in files if file != "SHA256SUMS"], folder.name
        if shutil.which("sha256sum"):
            check = ["sha256sum", "-c", "--strict", "--quiet", "SHA256SUMS"]
            assert subprocess.run(check, cwd=folder, capture_output=True).returncode == 0, folder.name


def test_docs_model_md_counts_the_triton_models_among_the_recorded_folders() -> None:
    """Its "Checking a folder" section said the Triton models were "not yet recorded", though each records its files
    (the test above)."""
    docs = (Path(__file__).resolve().parents[2] / "docs" / "model.md").read_text(encoding="utf-8")
    section = " ".join(docs.partition("## Checking a folder: SHA256SUMS")[2].partition("\n## ")[0].split())
    recorded, _, not_recorded = section.partition("Not yet recorded:")
    assert "--triton-repository" in recorded
    assert "triton" not in not_recorded.partition(".")[0].lower()


def test_the_configs_dims_for_the_bilm(exports: tuple[Path, dict[str, Path]], model_config_pb2: ModuleType) -> None:
    """The fixture biLM's (words of 50 characters, 2 biLSTM layers of projection 16), written out."""
    repository, _ = exports
    config = text_format.Parse(
        (repository / "bilm" / "config.pbtxt").read_text(encoding="utf-8"), model_config_pb2.ModelConfig()
    )
    assert {tensor.name: list(tensor.dims) for tensor in (*config.input, *config.output)} == {
        "input_ids": [-1, 50],
        "attention_mask": [-1],
        "last_hidden_state": [-1, 32],
        "hidden_states": [3, -1, 32],
        "word_mask": [-1],
    }


def test_an_existing_triton_model_is_refused_without_overwrite(
    fixture_model_folder: Path, tmp_path: Path, capsys
) -> None:
    repository = tmp_path / "models"
    _export(fixture_model_folder, tmp_path / "elmo", repository)
    capsys.readouterr()
    (tmp_path / "elmo").rename(tmp_path / "kept")  # the ONNX folder is free: only the Triton model is in the way
    before = file_tree(tmp_path)
    command = ["onnx", "--model", str(fixture_model_folder), "--output", str(tmp_path / "elmo")]
    assert main([*command, "--triton-repository", str(repository)]) == 2
    assert last_error_line(capsys) == (
        f"elmo-convert: error: {repository / 'elmo'} already exists: pass --overwrite to replace it"
    )
    assert file_tree(tmp_path) == before  # neither the ONNX folder nor a staging folder
    config = repository / "elmo" / "config.pbtxt"
    config.write_text("an older model", encoding="utf-8")
    _export(fixture_model_folder, tmp_path / "elmo", repository, "--overwrite")
    assert config.read_text(encoding="utf-8").startswith("# Triton model elmo")


def _every_path(folder: Path) -> list[str]:
    """Every file and folder under `folder` (empty folders included), relative to it."""
    return sorted(str(path.relative_to(folder)) for path in folder.rglob("*"))


@pytest.fixture
def model_copy(fixture_model_folder: Path, tmp_path: Path) -> Path:
    """A copy of the fixture model folder, which a test may find written into (the shared one must stay clean)."""
    return Path(shutil.copytree(fixture_model_folder, tmp_path / "model"))


@pytest.mark.parametrize("where", ["inside the model", "the model itself", "holding the model"])
def test_a_repository_overlapping_the_model_is_refused(model_copy: Path, tmp_path: Path, capsys, where: str) -> None:
    """It was not checked: `--triton-repository M` wrote a Triton model into the input folder M."""
    repository = {"inside the model": model_copy / "models", "the model itself": model_copy}.get(where, tmp_path)
    before = _every_path(tmp_path)
    command = ["onnx", "--model", str(model_copy), "--output", str(tmp_path / "out" / "elmo")]
    assert main([*command, "--triton-repository", str(repository)]) == 2
    assert last_error_line(capsys) == (
        f"elmo-convert: error: --triton-repository {repository} overlaps the input --model {model_copy} (one holds"
        " the other, or they are the same): name a repository apart from it"
    )
    assert _every_path(tmp_path) == before


@pytest.mark.parametrize("where", ["inside the output", "the output itself", "holding the output"])
def test_a_repository_overlapping_the_output_is_refused(
    fixture_model_folder: Path, tmp_path: Path, capsys, where: str
) -> None:
    """Only a model folder that was exactly the output was refused: `--output R/onnx/elmo` with the repository R,
    or a repository inside the output, were written."""
    output = tmp_path / "onnx" / "elmo"
    repository = {"inside the output": output / "models", "the output itself": output}.get(where, tmp_path)
    command = ["onnx", "--model", str(fixture_model_folder), "--output", str(output)]
    assert main([*command, "--triton-repository", str(repository)]) == 2
    assert last_error_line(capsys) == (
        f"elmo-convert: error: --triton-repository {repository} overlaps --output {output} (one holds the other, or"
        " they are the same): name a repository apart from it"
    )
    assert _every_path(tmp_path) == []


@pytest.mark.parametrize("into", ["--model", "--output"])
def test_a_repository_reached_through_a_link_into_the_model_or_output_is_refused(
    model_copy: Path, tmp_path: Path, capsys, into: str
) -> None:
    """The overlap is of real paths: a repository named through a link into the model (or onto the output) is the
    same folder as one named directly (the tests above pass real paths, which a check of the names as given would
    also refuse)."""
    output = tmp_path / "out" / "elmo"
    output.parent.mkdir()
    link = tmp_path / "link"
    link.symlink_to(model_copy if into == "--model" else output.parent)
    repository = link / "models" if into == "--model" else link / "elmo"
    before = _every_path(tmp_path)
    command = ["onnx", "--model", str(model_copy), "--output", str(output)]
    assert main([*command, "--triton-repository", str(repository)]) == 2
    flag, other = ("the input --model", model_copy) if into == "--model" else ("--output", output)
    assert last_error_line(capsys) == (
        f"elmo-convert: error: --triton-repository {repository} overlaps {flag} {other} (one holds the other, or they"
        " are the same): name a repository apart from it"
    )
    assert _every_path(tmp_path) == before


@pytest.mark.parametrize("file", ["repository", "above it"])
def test_a_repository_that_is_a_file_is_refused(fixture_model_folder: Path, tmp_path: Path, capsys, file: str) -> None:
    """It said "File exists: FILE/x.lock cannot be created"."""
    (tmp_path / "models").write_text("not a folder", encoding="utf-8")
    repository = tmp_path / "models" if file == "repository" else tmp_path / "models" / "triton"
    command = ["onnx", "--model", str(fixture_model_folder), "--output", str(tmp_path / "elmo")]
    assert main([*command, "--triton-repository", str(repository)]) == 2
    assert last_error_line(capsys) == (
        f"elmo-convert: error: --triton-repository {repository}: {tmp_path / 'models'} is a file, not a folder: name"
        " a folder for the model repository"
    )
    assert _every_path(tmp_path) == ["models"]


def test_a_full_disk_under_the_repository_blames_the_repository(
    fixture_model_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    """With --no-space-check, a disk that fills while the Triton models are written: the line named --output."""
    repository, copy = tmp_path / "models", shutil.copyfile

    def full_under_the_repository(source, target, *args, **kwargs):
        if repository in Path(target).parents:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return copy(source, target, *args, **kwargs)

    monkeypatch.setattr(shutil, "copyfile", full_under_the_repository)
    command = ["onnx", "--model", str(fixture_model_folder), "--output", str(tmp_path / "elmo"), "--no-space-check"]
    assert main([*command, "--triton-repository", str(repository)]) == 2
    assert last_error_line(capsys) == (
        f"elmo-convert: error: --triton-repository {repository}: the disk is full: nothing was written; free some"
        " space or write the repository elsewhere"
    )
    assert _every_path(tmp_path) == []


def test_a_full_disk_under_the_output_blames_the_output_with_a_repository(
    fixture_model_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    """The Triton models' folders, opened after the ONNX folder's, told its full disk, naming a Triton model."""
    output, save = tmp_path / "elmo", onnx.save

    def full_under_the_output(model, target, *args, **kwargs) -> None:
        if Path(target).name == "model.onnx":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        save(model, target, *args, **kwargs)

    monkeypatch.setattr(onnx, "save", full_under_the_output)
    command = ["onnx", "--model", str(fixture_model_folder), "--output", str(output), "--no-space-check"]
    assert main([*command, "--triton-repository", str(tmp_path / "models")]) == 2
    assert last_error_line(capsys) == (
        f"elmo-convert: error: {output}: the disk is full: nothing was written; free some space or write elsewhere"
    )
    assert _every_path(tmp_path) == []


def test_a_refused_repository_leaves_no_folder_it_created(fixture_model_folder: Path, tmp_path: Path, capsys) -> None:
    """The output's parent, made for it, stayed behind empty when the repository was refused."""
    command = ["onnx", "--model", str(fixture_model_folder), "--output", str(tmp_path / "new" / "elmo")]
    assert main([*command, "--triton-repository", str(tmp_path / "new")]) == 2
    assert _every_path(tmp_path) == []


@pytest.mark.parametrize("stage", ["measuring the graph", "writing the Triton models"])
def test_an_interrupted_export_leaves_no_folder_it_created_and_every_folder_that_was_there(
    fixture_model_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys, stage: str
) -> None:
    """Ctrl-C left the repository (made for its lock) and the output's new parents behind, empty."""
    repository, copy = tmp_path / "mine" / "b" / "models", shutil.copyfile

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    def interrupted_under_the_repository(source, target, *args, **kwargs):
        if repository in Path(target).parents:
            raise KeyboardInterrupt
        return copy(source, target, *args, **kwargs)

    if stage == "measuring the graph":
        monkeypatch.setattr(export_measurements, "pytorch_parity", interrupted)
    else:
        monkeypatch.setattr(shutil, "copyfile", interrupted_under_the_repository)
    (tmp_path / "mine").mkdir()  # the user's empty folder: it stays
    command = ["onnx", "--model", str(fixture_model_folder), "--output", str(tmp_path / "mine" / "a" / "elmo")]
    command += ["--triton-repository", str(repository)]
    assert exit_status_after_ctrl_c(lambda: main(command)) == 130
    assert _every_path(tmp_path) == ["mine"]


# Raw text through a real tritonserver (tests/helpers/triton_server.py): a PTB split, NFC and a decomposed é, marks,
# emoji and a flag, words over 48 bytes (a 60-byte one, cuts inside a character), the literal markers, invisible
# characters, an empty sentence, mixed lengths.
AWKWARD_SENTENCES = [
    "Hello, world's end!",
    "naïve cafe\u0301 日本語 " + "😀" * 13 + " " + "a" * 47 + "é",
    "",
    "x" * 60,
    "New York <S> </S> <s> zero\u200bwidth \u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645 " + ENGLAND,
    "tab\there and\nthere",
    "\U0001f468\u200d\U0001f469\u200d\U0001f467",
]


@pytest.fixture(scope="module")
def text_export(fixture_model_folder: Path, tmp_path_factory: pytest.TempPathFactory, model_config_pb2) -> Path:
    """The fixture biLM exported with its int8 graph into `work/models`, the graph models served by the stand-in
    (`stand_in_for_onnxruntime`); the ONNX folder is `work/elmo`."""
    work = tmp_path_factory.mktemp("triton-text")
    _export(fixture_model_folder, work / "elmo", work / "models", "--quantize", "int8")
    for model in ("elmo", "elmo_int8"):
        stand_in_for_onnxruntime(work / "models" / model, model_config_pb2)
    return work


@pytest.fixture(scope="module")
def served(text_export: Path, test_cache: Path) -> Iterator[TritonServer]:
    """A real tritonserver serving the repository of `text_export`; skipped, with the reason, where its wheel or
    numpy 1's cannot be had for this machine."""
    try:
        files, environment = server_files(test_cache), stub_environment(test_cache, text_export / "stub-env")
    except Unavailable as reason:
        pytest.skip(f"no tritonserver: {reason}")
    with triton_server(files, environment, text_export / "models", text_export) as server:
        yield server


def _graph_outputs(graph: Path, sentences: list[str], tokenizer_folder: Path | None = None) -> dict[str, np.ndarray]:
    """The graph's outputs for `sentences` fed ElmoTokenizer's output (padded to the longest; the tokenizer of
    `tokenizer_folder`, by default the graph's folder), by name."""
    session = onnxruntime.InferenceSession(str(graph), providers=["CPUExecutionProvider"])
    tokenizer = ElmoTokenizer.from_pretrained(tokenizer_folder or graph.parent)
    outputs = session.run(None, dict(tokenizer(sentences, padding=True, return_tensors="np")))
    return {tensor.name: output for tensor, output in zip(session.get_outputs(), outputs, strict=True)}


def _assert_same_outputs(actual: dict[str, np.ndarray], expected: dict[str, np.ndarray]) -> None:
    assert actual.keys() == expected.keys()
    for name, value in expected.items():
        assert actual[name].shape == value.shape, name
        assert actual[name].dtype == value.dtype, name
        np.testing.assert_allclose(actual[name], value, rtol=0, atol=1e-6, err_msg=name)


@pytest.mark.parametrize(
    "batch",
    [AWKWARD_SENTENCES, [""], ["", ""], ["x" * 60], [f"sentence {index} " * (index % 7) for index in range(32)]],
    ids=["awkward", "one empty", "all empty", "one 60-byte word", "32 of mixed lengths"],
)
@pytest.mark.parametrize("graph", ["model.onnx", "model_quantized.onnx"])
def test_raw_sentences_in_a_real_tritonserver_give_the_graphs_vectors(
    served: TritonServer, text_export: Path, batch: list[str], graph: str
) -> None:
    """The ensemble (front end, then the graph) against the graph fed the tokenizer's output."""
    ensemble = "elmo_text" if graph == "model.onnx" else "elmo_int8_text"
    _assert_same_outputs(served.infer(ensemble, batch), _graph_outputs(text_export / "elmo" / graph, batch))


def test_requests_sent_together_are_each_answered_as_alone(served: TritonServer, text_export: Path) -> None:
    """Requests of several lengths at once, which the graph model's batcher may join where their shapes agree."""
    requests = [AWKWARD_SENTENCES[index:] for index in range(len(AWKWARD_SENTENCES))] * 2
    with ThreadPoolExecutor(max_workers=len(requests)) as pool:
        answers = list(pool.map(lambda batch: served.infer("elmo_text", batch), requests))
    for batch, answer in zip(requests, answers, strict=True):
        _assert_same_outputs(answer, _graph_outputs(text_export / "elmo" / "model.onnx", batch))


def test_the_server_refuses_a_request_over_32_sentences_and_a_row_not_utf8(served: TritonServer) -> None:
    with pytest.raises(RuntimeError, match="batch-size must be <= 32"):
        served.infer("elmo_text", ["a sentence"] * 33)
    with pytest.raises(RuntimeError, match=r"text row 1 is not UTF-8 \(invalid start byte at byte 2\): send each"):
        served.infer("elmo_text", ["fine", b"ok\xff"])


def test_the_servers_effective_config_adds_a_preferred_batch_size(served: TritonServer) -> None:
    """The configs set no preferred_batch_size; Triton 2.51 adds [max_batch_size] (docs/onnx.md says so)."""
    dynamic = served.get("/v2/models/elmo/config")["dynamic_batching"]
    assert dynamic["preferred_batch_size"] == [32] and dynamic["max_queue_delay_microseconds"] == 5000


def _python_backend_stand_in() -> ModuleType:
    """The few names of Triton's `triton_python_backend_utils` that a model uses, as plain Python objects."""
    backend = ModuleType("triton_python_backend_utils")
    backend.Tensor = lambda name, array: SimpleNamespace(name=name, as_numpy=lambda: array)
    backend.TritonError = lambda message: SimpleNamespace(message=message)
    backend.InferenceResponse = lambda output_tensors, error=None: SimpleNamespace(tensors=output_tensors, error=error)
    backend.get_input_tensor_by_name = lambda request, name: request[name]
    return backend


def _text_encoder_model(repository: Path, monkeypatch: pytest.MonkeyPatch) -> object:
    """The front-end model's model.py under a stand-in of the python backend's module (where no tritonserver can be
    had), initialised."""
    monkeypatch.setitem(sys.modules, "triton_python_backend_utils", _python_backend_stand_in())
    monkeypatch.setitem(sys.modules, "text_elmo", None)  # (the model loads its own: removed after the test)
    spec = importlib.util.spec_from_file_location("text_encoder_model", repository / "bilm_text_encoder/1/model.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model = module.TritonPythonModel()
    outputs = [{"name": "input_ids"}, {"name": "attention_mask"}]
    model.initialize({"model_config": json.dumps({"output": outputs})})
    return model


def test_the_text_encoders_model_alone_encodes_each_request_as_the_tokenizer_does(
    exports: tuple[Path, dict[str, Path]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each request padded to its own longest sentence, the tokenizer's ids; a row that is not UTF-8 gets one
    line."""
    repository, sources = exports
    model = _text_encoder_model(repository, monkeypatch)
    batches = [AWKWARD_SENTENCES, [""], ["x" * 60, "short"]]
    rows = [np.array([[sentence.encode("utf-8")] for sentence in batch], dtype=object) for batch in batches]
    rows.append(np.array([[b"fine"], [b"ok\xff"]], dtype=object))
    responses = model.execute([{"text": SimpleNamespace(as_numpy=lambda rows=rows: rows)} for rows in rows])
    tokenizer = ElmoTokenizer.from_pretrained(sources["bilm"].parent)
    for batch, response in zip(batches, responses[:-1], strict=True):
        expected = tokenizer(batch, padding=True, return_tensors="np")
        assert response.error is None and [tensor.name for tensor in response.tensors] == list(expected)
        for tensor in response.tensors:
            assert tensor.as_numpy().dtype == np.int64
            np.testing.assert_array_equal(tensor.as_numpy(), expected[tensor.name])
    assert responses[-1].error.message == (
        "text row 1 is not UTF-8 (invalid start byte at byte 2): send each sentence as UTF-8"
    )


@pytest.mark.parametrize(
    ("row", "error"),
    [
        ("a " * 40_000, "text row 1 is 80,000 bytes, over the 65,536 a sentence may have: send one sentence per row"),
        ("a," * 2_100, "text row 1 has 4,200 words, over the 4,096 a sentence may have: send one sentence per row"),
    ],
)
def test_the_text_encoders_model_refuses_a_request_over_its_bounds(
    exports: tuple[Path, dict[str, Path]], monkeypatch: pytest.MonkeyPatch, row: str, error: str
) -> None:
    """A request's ids are 400 bytes a word, padded to its longest sentence: a 33 MB row of one-letter words asked
    for 4.2 GB and died in MemoryError after 44 s. A sentence over the bounds is refused, the request answered."""
    model = _text_encoder_model(exports[0], monkeypatch)
    rows = np.array([[b"fine"], [row.encode("utf-8")]], dtype=object)
    (response,) = model.execute([{"text": SimpleNamespace(as_numpy=lambda: rows)}])
    assert response.error.message == error and response.tensors == []
    rows = np.array([[b"fine"], [("a " * 4096).encode("utf-8")]], dtype=object)  # (the most words a sentence may have)
    (response,) = model.execute([{"text": SimpleNamespace(as_numpy=lambda: rows)}])
    assert response.error is None and response.tensors[0].as_numpy().shape == (2, 4096, 50)


def test_a_graph_with_external_data_brings_its_data_into_the_triton_model(
    fixture_model_folder: Path, tmp_path: Path
) -> None:
    """A graph's weights lie in a file beside it (ONNX external data, `model.onnx_data`): its Triton model holds
    that file too, under the name the graph gives it, and opens on onnxruntime with the ONNX folder's outputs."""
    _export(fixture_model_folder, tmp_path / "elmo", tmp_path / "models", "--quantize", "int8")
    for model, graph in (("elmo", "model.onnx"), ("elmo_int8", "model_quantized.onnx")):
        assert (tmp_path / "elmo" / f"{graph}_data").is_file()
        files = sorted(path.name for path in (tmp_path / "models" / model / "1").iterdir())
        assert files == sorted(["model.onnx", f"{graph}_data"])
        sentences = ["Hello , world", ""]
        copy = _graph_outputs(tmp_path / "models" / model / "1" / "model.onnx", sentences, tmp_path / "elmo")
        _assert_same_outputs(copy, _graph_outputs(tmp_path / "elmo" / graph, sentences))


@pytest.mark.parametrize("name", ['el"mo', "el\\mo", "el\nmo", "élmo ✓", "tab\there"])
def test_a_model_name_of_any_characters_gives_configs_that_triton_parses(
    model_config_pb2: ModuleType, name: str
) -> None:
    """The model is named after the --output folder: a quote in it wrote an ensemble config that Triton's schema
    rejected (the step's model name was written unescaped)."""
    signature = GraphSignature(
        inputs=(
            GraphTensor("input_ids", "int64", ("batch", "words", 50)),
            GraphTensor("attention_mask", "int64", ("batch", "words")),
        ),
        outputs=(GraphTensor("last_hidden_state", "float", ("batch", "words", 32)),),
    )
    encoder, ensemble = name + "_text_encoder", name + "_text"
    configs = {
        name: model_config(name, signature),
        encoder: text_encoder_config(encoder, signature),
        ensemble: ensemble_config(ensemble, encoder, name, signature),
    }
    parsed = {model: text_format.Parse(text, model_config_pb2.ModelConfig()) for model, text in configs.items()}
    assert {model: config.name for model, config in parsed.items()} == {model: model for model in configs}
    assert [step.model_name for step in parsed[ensemble].ensemble_scheduling.step] == [encoder, name]


_STALLED_EXPORT = """
import sys, time
from pathlib import Path
from elmo_transformers.serving import export_measurements

def stalled(*args, **kwargs):
    Path(sys.argv[1]).write_text("measuring", encoding="utf-8")
    time.sleep(600)

export_measurements.pytorch_parity = stalled
from elmo_transformers.conversion.cli import main
sys.exit(main(sys.argv[2:]))
"""


def test_a_sigterm_during_an_export_leaves_no_staging_folder_and_no_lock(
    fixture_model_folder: Path, tmp_path: Path
) -> None:
    """SIGTERM ended Python at once: each `elmo-convert onnx` killed so left its 12 MB `.partial` staging folders
    (the ONNX folder's and each Triton model's) and their locks, which no later run removed."""
    import signal
    import time

    work, ready = tmp_path / "work", tmp_path / "ready"
    work.mkdir()
    command = ["onnx", "--model", str(fixture_model_folder), "--output", str(work / "elmo")]
    command += ["--triton-repository", str(work / "models")]
    process = subprocess.Popen(
        [sys.executable, "-c", _STALLED_EXPORT, str(ready), *command], stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 120
        while not ready.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert ready.exists(), process.stderr.read() if process.poll() is not None else "no measurement in 120 s"
        assert any(path.name.endswith(".partial") for path in work.rglob("*"))  # (what the SIGTERM must remove)
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert (process.returncode, err.splitlines()[-1]) == (
        143,
        f"elmo-convert: interrupted: nothing was written: {work / 'elmo'} is as it was; run the command again",
    )
    assert _every_path(work) == []


def test_a_re_export_without_int8_removes_the_earlier_int8_models(
    fixture_model_folder: Path, tmp_path: Path, capsys
) -> None:
    """Re-exporting without --quantize left the earlier `_int8` models serving beside the new one."""
    repository = tmp_path / "models"
    _export(fixture_model_folder, tmp_path / "elmo", repository, "--quantize", "int8")
    shutil.rmtree(repository / "elmo")  # (only the int8 models in the way: refused without --overwrite)
    command = ["onnx", "--model", str(fixture_model_folder), "--output", str(tmp_path / "other" / "elmo")]
    assert main([*command, "--triton-repository", str(repository)]) == 2
    assert last_error_line(capsys) == (
        f"elmo-convert: error: {repository / 'elmo_int8'} is left by an earlier export with --quantize int8, and would"
        " go on serving beside the new models: pass --overwrite to remove it (or export with --quantize int8 again)"
    )
    _export(fixture_model_folder, tmp_path / "elmo", repository, "--overwrite")
    assert sorted(path.name for path in repository.iterdir()) == ["elmo", "elmo_text", "elmo_text_encoder"]
