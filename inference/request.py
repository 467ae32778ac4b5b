"""What an `elmo-embed` run asks for (`EmbedRequest`: its options and its model, resolved once) and the one check of
it (`check_request`), before anything is loaded, read or written, against what the model's backend serves
(`Backend`: `PYTORCH` for a model folder, `ONNX` for a folder of `elmo-convert onnx`).

This is where `--device`, `--layers` and `--dtype` are refused: the options only declare their choices (argparse and
`CommandOptions` refuse a value outside them), and the runners take what this check let through. Whether a PyTorch
model holds the mix that `--layers mix` reads is seen in its config.json and its weights' names (`mix_problem`),
before the weights load; a Hub model that is not yet downloaded is looked at once its load fetched it.
"""

from __future__ import annotations

import json
import os
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import modeling_elmo
from elmo_transformers.common.errors import EmbedError, first_line
from elmo_transformers.common.regular_files import read_regular
from elmo_transformers.serving.graph_embedder import LAYER_CHOICES as GRAPH_LAYER_CHOICES
from elmo_transformers.serving.graph_layout import HEAD_ARCHITECTURES, holds_graph

from .hdf5_output import check_output_path
from .lines import check_input
from .options import COMPUTE_DTYPES, LAYER_CHOICES, EmbedOptions

if TYPE_CHECKING:
    from accelerate import PartialState

    from elmo_transformers.common.processes import OneProcess

__all__ = [
    "ONNX",
    "PYTORCH",
    "Backend",
    "EmbedRequest",
    "check_request",
    "mix_problem",
    "process_device",
    "resolve_model",
]


@dataclass(frozen=True)
class Backend:
    """What runs a model folder (`name`, as the output's attributes record it) and what it serves: the `layers`
    (--layers), the `compute_dtypes` (--dtype) and the `device_types` (--device; None: every device torch has, but
    the meta device). `holds` is what such a folder holds and `provider` what runs it, as a refusal names them."""

    name: str
    layers: tuple[str, ...]
    compute_dtypes: tuple[str, ...]
    device_types: tuple[str, ...] | None
    holds: str
    provider: str


PYTORCH = Backend(
    "pytorch",
    layers=LAYER_CHOICES,
    compute_dtypes=COMPUTE_DTYPES,
    device_types=None,
    holds="a PyTorch model",
    provider="PyTorch",
)
# A graph computes in the dtype it was exported in (float32; the int8 graph's products take float32 in and out), and
# elmo-embed gives onnxruntime its CPU provider alone.
ONNX = Backend(
    "onnxruntime",
    layers=GRAPH_LAYER_CHOICES,
    compute_dtypes=("float32",),
    device_types=("cpu",),
    holds="an ONNX graph",
    provider="onnxruntime's CPU provider",
)


def resolve_model(model: str | None) -> str:
    """The model to load: `model`, or `modeling_elmo.DEFAULT_MODEL` when none is given (and one is defined)."""
    if model is not None:
        return model
    default = getattr(modeling_elmo, "DEFAULT_MODEL", None)
    if default is None:
        raise EmbedError("there is no default model yet: pass --model DIR, a model folder written by elmo-convert")
    return str(default)


@dataclass(frozen=True)
class EmbedRequest:
    """A run's `options` and its `model` (a folder, or a Hub name), resolved once (`EmbedRequest.of`), with the
    `backend` that runs it."""

    options: EmbedOptions
    model: str
    backend: Backend

    @classmethod
    def of(cls, options: EmbedOptions) -> EmbedRequest:
        """The request of `options`: the model they name (or the default one) and its backend, looked at once."""
        model = resolve_model(options.model)
        return cls(options, model, ONNX if holds_graph(model) else PYTORCH)


def check_request(request: EmbedRequest, processes: PartialState | OneProcess) -> str | None:
    """Refuse, in one line, a run that cannot start: its options together (each alone was checked as they were
    built), what its backend does not serve, its input, its output path, and its device, tried last (a PyTorch
    model's, by torch); returns this process's device (`process_device`), before anything is loaded, read or
    written."""
    options = request.options
    options.check_together()
    problem = _backend_problem(request)
    if problem:
        raise EmbedError(problem)
    device = process_device(options.device, processes)
    check_input(options.input)
    check_output_path(options.output, options.input, folder=options.output_format == "datasets")
    if request.backend is PYTORCH and device is not None:
        _try_torch_device(device)
    return device


def process_device(device: str | None, processes: PartialState | OneProcess) -> str | None:
    """The device of this process: `device`, or with several processes (`accelerate launch`) each its own,
    accelerate's (cuda:LOCAL_RANK where there are GPUs); None: the backend's default."""
    if processes.num_processes == 1 or device == "cpu":
        return device
    if device in (None, "cuda"):
        return str(processes.device)
    raise EmbedError(
        f"--device {device}: with {processes.num_processes} processes each uses a device of its own: pass --device"
        " cuda (or cpu), or no --device"
    )


def _backend_problem(request: EmbedRequest) -> str | None:
    """What `request.backend` does not serve of the options, in one line; None when it serves them all."""
    options, backend = request.options, request.backend
    holds = f"{request.model} holds {backend.holds}"
    device_type = None if options.device is None else options.device.split(":")[0]
    if device_type == "meta":  # (the model moves there without a word, and the first batch fails deep inside torch)
        return (
            f"--device {options.device}: the meta device holds no data, so nothing can be computed on it; pass"
            " --device cpu or cuda, or no --device"
        )
    if backend.device_types is not None and device_type is not None and device_type not in backend.device_types:
        runs_on = _one_of(backend.device_types)
        return (
            f"--device {options.device}: {holds}, which elmo-embed runs on {runs_on.upper()} ({backend.provider}):"
            f" pass --device {runs_on}, or no --device"
        )
    if options.layers not in backend.layers:
        return f"--layers {options.layers}: {holds}, which serves {_one_of(backend.layers)}"
    if options.layers == "mix":
        return mix_problem(request.model)
    if options.compute_dtype not in backend.compute_dtypes:
        where = f" (on {_one_of(backend.device_types).upper()})" if backend.device_types else ""
        return f"--dtype {options.compute_dtype}: {holds}, which runs in {_one_of(backend.compute_dtypes)}{where}"
    return None


def mix_problem(model: str) -> str | None:
    """Why `model` holds no mix that `--layers mix` can read, in one line: it reads the first mix of a task head
    fine-tuned with this package (`HEAD_ARCHITECTURES`), whose weights start with `FIRST_MIX_WEIGHTS_PREFIX` unless
    its mix mode has none. None when it holds one, or when its files cannot be looked at yet (a Hub model not yet
    downloaded, or files the load will refuse in its own words)."""
    folder = _local_files(model)
    names = None if folder is None else _weight_names(folder)
    if names is None:
        return None
    from modeling_elmo.mixing_elmo import MIX_MODES_WITH_WEIGHTS  # (the PyTorch backend: torch is imported anyway)
    from modeling_elmo.modeling_elmo import FIRST_MIX_WEIGHTS_PREFIX

    config = _settings(folder / "config.json")
    architectures = config.get("architectures") or [None]
    is_head = architectures[0] in HEAD_ARCHITECTURES
    if any(name.startswith(FIRST_MIX_WEIGHTS_PREFIX) for name in names) or (
        is_head and config.get("mix_mode", "scalar_mix") not in MIX_MODES_WITH_WEIGHTS
    ):
        return None
    foreign = sorted(name for name in names if "mix" in name.lower())
    if foreign:
        return (
            f"--layers mix is not available: {model} has mixing weights ({', '.join(foreign)})"
            f" but not those of a head fine-tuned with this package ({FIRST_MIX_WEIGHTS_PREFIX}*);"
            " use --layers all, top or average"
        )
    return (
        f"--layers mix is not available: the model {model} has no mixing weights (a task head fine-tuned with"
        " this package has them); use --layers all, top or average"
    )


def _local_files(model: str) -> Path | None:
    """The folder holding `model`'s files here: the model folder, or a Hub model's snapshot in the local cache."""
    if os.path.isdir(model):  # (False for a path it cannot look at, which the load refuses in one line)
        return Path(model)
    from huggingface_hub import try_to_load_from_cache

    try:
        config = try_to_load_from_cache(model, "config.json")
    except ValueError:  # (not a repository name)
        return None
    return Path(config).parent if isinstance(config, str) else None


def _settings(path: Path) -> dict:
    """The JSON object of a config file; {} for one that the load refuses in its own words."""
    from elmo_transformers.common.model_folder import MAX_SETTINGS_BYTES

    try:
        settings = json.loads(read_regular(path, MAX_SETTINGS_BYTES))
    except (OSError, ValueError):
        return {}
    return settings if isinstance(settings, dict) else {}


def _weight_names(folder: Path) -> list[str] | None:
    """The names of the weights stored in `folder` (its safetensors files, else its pytorch_model.bin, read without
    their tensors); None when it holds neither or one does not open (the load says why)."""
    from safetensors import SafetensorError, safe_open

    files = sorted(folder.glob("*.safetensors"))
    try:
        if files:
            names = []
            for path in files:
                with safe_open(path, framework="numpy") as weights:
                    names += weights.keys()
            return names
        if (folder / "pytorch_model.bin").is_file():
            import torch

            return list(torch.load(folder / "pytorch_model.bin", map_location="meta", weights_only=True))
    except (OSError, SafetensorError, RuntimeError, ValueError, pickle.UnpicklingError):
        return None
    return None


def _one_of(values: tuple[str, ...]) -> str:
    """The values as a sentence lists them: `a`, `a or b`, `a, b or c`."""
    return " or ".join(filter(None, [", ".join(values[:-1]), values[-1]]))


def _try_torch_device(device: str) -> None:
    """Refuse a device that torch cannot move a model to (no such device, or a build without it), trying one number
    before the model is loaded."""
    import torch  # (PyTorch runs the model: torch is imported anyway)

    try:
        torch.zeros(1).to(torch.device(device))
    except (RuntimeError, AssertionError) as error:
        raise EmbedError(f"--device {device}: {first_line(error)}") from None
