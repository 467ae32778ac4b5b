"""Whether a path is a usable ELMo model folder, and if not, one line that names the problem.

The converters, `elmo-embed` and pretraining all read model folders written by this package; they share this
check so the same folder gets the same verdict, and each raises it as its own error type.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from huggingface_hub.utils import HFValidationError, validate_repo_id
from safetensors import SafetensorError, safe_open

from elmo_transformers.common.errors import first_line
from modeling_elmo import ElmoConfig

__all__ = [
    "damaged_weights_problem",
    "is_repo_id",
    "model_folder_problem",
    "model_type_problem",
    "non_finite_weight_problem",
    "require_model_folder",
]


def is_repo_id(model: str) -> bool:
    """Whether `model` can name a Hub repository ("name" or "namespace/name"), rather than only a local path."""
    try:
        validate_repo_id(model)
    except HFValidationError:
        return False
    return True


def model_type_problem(model: str | Path, model_type: object) -> str | None:
    """The problem with a config's `model_type`, or None when it is ELMo's."""
    if model_type != ElmoConfig.model_type:
        return f"{model}: model_type is {model_type!r}, expected {ElmoConfig.model_type!r}"
    return None


def model_folder_problem(model: str | Path, *, hub: bool = False) -> str | None:
    """One line naming why `model` is not a usable ELMo model folder, or None when it is.

    The problems, in the order they are looked for: no such folder; no config.json; a config.json that is not a
    JSON object; a model_type other than ELMo's; a config field of the wrong type or out of range (`ElmoConfig`'s
    check, named with config.json); a safetensors weights file that does not open (truncated or damaged); a weight
    that holds a NaN or an infinity, which would make every output NaN in silence (a pass over the weights: 0.2 s
    for the 94M weights of the original ELMo, see `non_finite_weight_problem`). With
    `hub`, a path that does not exist but can name a Hub repository is not judged here: the caller loads it and
    checks what comes back (`model_type_problem`).
    """
    folder = Path(model)
    if not folder.exists():
        return None if hub and is_repo_id(str(model)) else f"{model}: no such model folder"
    config_file = folder / "config.json"
    if not config_file.is_file():
        return f"{model}: not a model folder (no config.json)"
    try:
        config = json.loads(config_file.read_text(encoding="utf-8"))
        model_type = config.get("model_type")
    except (json.JSONDecodeError, UnicodeDecodeError, AttributeError) as error:
        return f"{config_file}: not a JSON object: {error}"
    return (
        model_type_problem(model, model_type)
        or _config_problem(config_file, config)
        or _unreadable_weights_problem(folder)
        or non_finite_weight_problem(folder)
    )


def _config_problem(config_file: Path, config: dict) -> str | None:
    """`ElmoConfig`'s refusal of a config.json's fields, named with the file; the load itself would raise it
    from deep inside from_pretrained."""
    try:
        ElmoConfig.from_dict(config)
    except ValueError as error:
        return f"{config_file}: {error}"
    return None


def require_model_folder(model: str | Path, error_type: type[Exception], *, hub: bool = False) -> None:
    """Raise `error_type` with `model_folder_problem`'s line when `model` is not a usable ELMo model folder."""
    problem = model_folder_problem(model, hub=hub)
    if problem:
        raise error_type(problem)


def _unreadable_weights_problem(folder: Path) -> str | None:
    """The first safetensors file of `folder` whose header does not open: an interrupted download or copy."""
    for path in sorted(folder.glob("*.safetensors")):
        try:
            with safe_open(path, framework="pt"):
                pass
        except SafetensorError as error:
            return damaged_weights_problem(path, error)
    return None


# The elements checked at once: a 1.6 GB softmax is checked without a 400 MB mask.
_FINITE_CHECK_ELEMENTS = 1 << 24


def non_finite_weight_problem(folder: Path) -> str | None:
    """The first weight in `folder`'s safetensors files that holds a NaN or an infinity, with its index."""
    for path in sorted(folder.glob("*.safetensors")):
        with safe_open(path, framework="pt") as weights:
            for name in weights.keys():
                tensor = weights.get_tensor(name)
                position = _first_non_finite(tensor.reshape(-1))
                if position is not None:
                    index = [int(axis) for axis in torch.unravel_index(torch.tensor(position), tensor.shape)]
                    return (
                        f"{path}: {name} holds a non-finite value ({tensor.reshape(-1)[position].item()}) at index"
                        f" {index}: the weights are damaged (every output would be NaN); copy or convert them again"
                    )
    return None


def _first_non_finite(flat: torch.Tensor) -> int | None:
    """The position of the first NaN or infinity in the 1-d `flat`, or None (always for integers)."""
    if not flat.is_floating_point():
        return None
    for start in range(0, flat.numel(), _FINITE_CHECK_ELEMENTS):
        finite = torch.isfinite(flat[start : start + _FINITE_CHECK_ELEMENTS])
        if not finite.all():
            return start + int((~finite).nonzero()[0])
    return None


def damaged_weights_problem(path: str | Path, error: Exception) -> str:
    """The line for a weights file that safetensors cannot read."""
    return (
        f"{path}: the weights cannot be read ({first_line(error)}): the file is damaged or incomplete;"
        " copy or convert it again"
    )
