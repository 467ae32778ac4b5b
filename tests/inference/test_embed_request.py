"""`elmo-embed`'s request (`inference.request`): the model folder resolved once, and --device, --layers and --dtype
checked against what the folder's backend serves before anything is loaded, read or written."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import elmo_transformers.inference.request as request_module
from elmo_transformers.common.errors import EmbedError
from elmo_transformers.common.processes import OneProcess
from elmo_transformers.inference.embed import main
from elmo_transformers.inference.onnx_runner import OnnxEmbedder
from elmo_transformers.inference.options import EmbedOptions
from elmo_transformers.inference.request import ONNX, EmbedRequest, check_request
from elmo_transformers.inference.torch_runner import TorchEmbedder


def _graph_folder(tmp_path: Path) -> Path:
    """A folder that holds a graph by its name alone: any refusal that reads it would fail on its empty bytes."""
    graph = tmp_path / "graph"
    graph.mkdir()
    (graph / "model.onnx").write_bytes(b"")
    return graph


@pytest.fixture
def loads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The models the run starts to load (PyTorch's or a graph), recorded and refused."""
    loaded: list[str] = []

    def load(self: object, model: str, *args: object, **kwargs: object) -> None:
        loaded.append(str(model))
        raise AssertionError("the model was loaded")

    monkeypatch.setattr(TorchEmbedder, "__init__", load)
    monkeypatch.setattr(OnnxEmbedder, "__init__", load)
    return loaded


def _refusal(capsys: pytest.CaptureFixture, tmp_path: Path, model: Path, *flags: str) -> str:
    """The one line `elmo-embed` refuses `flags` with, for a run that wrote nothing."""
    source = tmp_path / "in.txt"
    source.write_text("a bb\n", encoding="utf-8")
    code = main([str(source), str(tmp_path / "out.hdf5"), "--model", str(model), *flags])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert not (tmp_path / "out.hdf5").exists() and not (tmp_path / "out.hdf5.partial").exists()
    return err.removeprefix("elmo-embed: error: ").rstrip("\n")


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--device", "cuda:1"],
            "--device cuda:1: {graph} holds an ONNX graph, which elmo-embed runs on CPU (onnxruntime's CPU provider):"
            " pass --device cpu, or no --device",
        ),
        (["--layers", "mix"], "--layers mix: {graph} holds an ONNX graph, which serves all, top or average"),
        (["--dtype", "float16"], "--dtype float16: {graph} holds an ONNX graph, which runs in float32 (on CPU)"),
        (
            ["--device", "meta"],
            "--device meta: the meta device holds no data, so nothing can be computed on it; pass --device cpu or"
            " cuda, or no --device",
        ),
    ],
    ids=["device", "layers", "dtype", "meta device"],
)
def test_what_a_graph_does_not_serve_is_refused_before_it_is_read(
    flags: list[str], message: str, loads: list[str], tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    graph = _graph_folder(tmp_path)
    assert _refusal(capsys, tmp_path, graph, *flags) == message.format(graph=graph)
    assert loads == []


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--device", "meta:0"],
            "--device meta:0: the meta device holds no data, so nothing can be computed on it; pass --device cpu or"
            " cuda, or no --device",
        ),
        # torch's own refusal of the name, tried on one number before the model loads.
        (["--device", "nowhere"], "--device nowhere: Expected one of cpu, cuda"),
    ],
    ids=["meta device", "no such device"],
)
def test_a_device_torch_cannot_use_is_refused_before_the_model_loads(
    flags: list[str], message: str, fixture_model_folder: Path, loads: list[str], tmp_path: Path, capsys
) -> None:
    assert _refusal(capsys, tmp_path, fixture_model_folder, *flags).startswith(message)
    assert loads == []


def test_a_run_resolves_its_model_folder_once(
    fixture_model_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """The request resolves the folder and names its backend once; the run passes them down instead of looking
    again (it looked three times)."""
    looked_at: list[str] = []
    for name in ("resolve_model", "holds_graph"):
        looked = getattr(request_module, name)
        monkeypatch.setattr(request_module, name, lambda model, looked=looked: looked_at.append(model) or looked(model))
    source = tmp_path / "in.txt"
    source.write_text("a bb\n", encoding="utf-8")
    assert main([str(source), str(tmp_path / "out.hdf5"), "--model", str(fixture_model_folder)]) == 0, (
        capsys.readouterr()
    )
    assert looked_at == [str(fixture_model_folder)] * 2
    assert EmbedRequest.of(EmbedOptions("in.txt", "out.hdf5", model=str(_graph_folder(tmp_path)))).backend is ONNX


def test_a_checked_request_gives_this_process_its_device(fixture_model_folder: Path, tmp_path: Path) -> None:
    source = tmp_path / "in.txt"
    source.write_text("a\n", encoding="utf-8")
    options = EmbedOptions(source, tmp_path / "out.hdf5", model=str(fixture_model_folder), device="cpu")
    assert check_request(EmbedRequest.of(options), OneProcess()) == "cpu"
    graph = EmbedRequest.of(EmbedOptions(source, tmp_path / "out.hdf5", model=str(_graph_folder(tmp_path))))
    assert check_request(graph, OneProcess()) is None
    with pytest.raises(EmbedError, match=r"^--resume and --overwrite contradict each other"):
        check_request(EmbedRequest.of(EmbedOptions(source, "o", resume=True, overwrite=True)), OneProcess())


def test_a_model_without_a_mix_is_refused_before_it_loads(
    fixture_model_folder: Path, loads: list[str], tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    assert _refusal(capsys, tmp_path, fixture_model_folder, "--layers", "mix") == (
        f"--layers mix is not available: the model {fixture_model_folder} has no mixing weights (a task head"
        " fine-tuned with this package has them); use --layers all, top or average"
    )
    assert loads == []


def test_a_hub_models_mix_is_looked_for_in_the_local_cache(
    fixture_model_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Hub model already downloaded is looked at before it loads; one not yet downloaded once its load fetched it
    (`mix_problem` says nothing of it before)."""
    from huggingface_hub import constants

    cache = tmp_path / "hub"
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    assert request_module.mix_problem("someone/elmo") is None  # (not downloaded: nothing to look at yet)
    repository = cache / "models--someone--elmo"
    (repository / "refs").mkdir(parents=True)
    (repository / "refs" / "main").write_text("0" * 40)
    shutil.copytree(fixture_model_folder, repository / "snapshots" / ("0" * 40))
    assert request_module.mix_problem("someone/elmo") == (
        "--layers mix is not available: the model someone/elmo has no mixing weights (a task head fine-tuned with"
        " this package has them); use --layers all, top or average"
    )


def test_the_mix_is_looked_for_in_a_pytorch_model_bin(fixture_model_folder: Path, tmp_path: Path) -> None:
    """A folder whose weights are a pytorch_model.bin: their names are read without their tensors."""
    import torch
    from safetensors.torch import load_file

    folder = tmp_path / "bin"
    shutil.copytree(fixture_model_folder, folder)
    weights = load_file(folder / "model.safetensors")
    (folder / "model.safetensors").unlink()
    torch.save({**weights, "scalar_mix.gamma": torch.ones(1)}, folder / "pytorch_model.bin")
    assert "has mixing weights (scalar_mix.gamma) but not those of a head" in request_module.mix_problem(str(folder))
    torch.save({**weights, "mixes.0.gamma": torch.ones(1)}, folder / "pytorch_model.bin")
    assert request_module.mix_problem(str(folder)) is None
