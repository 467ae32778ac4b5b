"""`elmo-convert onnx --triton-repository REPO`: each graph a Triton model whose config.pbtxt parses as Triton's
`ModelConfig` and declares the graph's own inputs and outputs, batched by Triton's dynamic batcher; written
atomically, an existing model refused without --overwrite."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip("onnxruntime")
import onnx
from command_output import file_tree, last_error_line
from google.protobuf import text_format

from elmo_transformers.common.onnx_layout import graph_weights
from elmo_transformers.conversion.cli import main
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
    assert {path.name for path in (repository / name).rglob("*")} == {"config.pbtxt", "1", "model.onnx", weights.name}


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


def test_a_triton_model_that_would_be_the_output_is_refused(fixture_model_folder: Path, tmp_path: Path, capsys) -> None:
    command = ["onnx", "--model", str(fixture_model_folder), "--output", str(tmp_path / "elmo")]
    assert main([*command, "--triton-repository", str(tmp_path)]) == 2
    assert last_error_line(capsys) == (
        f"elmo-convert: error: --triton-repository {tmp_path}: its model elmo would be {tmp_path / 'elmo'} or overlap"
        " it; name another repository or --output"
    )
    assert not any(tmp_path.iterdir())
