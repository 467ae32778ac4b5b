"""The last steps every converter shares: write the model folder atomically, reload it, measure its parity
against the float64 source and write its model page; and the one line that says what was converted."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import torch

from elmo_transformers.common.atomic_output import atomic_output_folder
from elmo_transformers.common.checksums import record_checksums
from elmo_transformers.common.disk_space import require_room
from modeling_elmo import ElmoModel, ElmoPreTrainedModel, ElmoTokenizer

from .convert_options import UploadOptions
from .converted_model_card import SourceDescription, measure_parity, write_model_card

__all__ = ["conversion_summary", "output_options", "save_converted_folder", "weight_bytes"]

Model = TypeVar("Model", bound=ElmoPreTrainedModel)


def _bytes_tokenizer(model: ElmoPreTrainedModel, folder: Path) -> ElmoTokenizer:
    """bilm-tf's tokenizer (UTF-8 bytes), for the model's word length."""
    return ElmoTokenizer(max_characters_per_token=model.config.max_characters_per_token)


def weight_bytes(model: torch.nn.Module) -> int:
    """The bytes of the model's tensors as saved (model.safetensors, or a weights.hdf5 of the same float32 values)."""
    return sum(tensor.numel() * tensor.element_size() for tensor in model.state_dict().values())


def save_converted_folder(
    convert: Callable[[], Model],
    output: str | Path,
    *,
    source: SourceDescription,
    repo_id: str | None = None,
    overwrite: bool = False,
    space_check: bool = True,
    tokenizer: Callable[[Model, Path], ElmoTokenizer] = _bytes_tokenizer,
    copies: Mapping[str, Path] | None = None,
) -> tuple[Model, float]:
    """Run `convert` (the slow part, only once `output` is locked and known to be free) and save its model to the
    folder `output`, atomically: weights, config and code, the tokenizer `tokenizer(model, folder)` builds (it may
    write vocabulary files into the folder), the files `copies` (name in the folder -> source file), the model page
    and the files' sha256 (SHA256SUMS). Unless `space_check` is off, a disk too small for the weights and copies is
    refused before they are written.

    Returns the saved model, reloaded, and its parity: the largest difference at any biLM layer between the saved
    float32 model and a float64 computation with the source weights. `repo_id` (default: the folder name) is what
    the model page's snippets load.
    """
    inputs = (*source.source_files, *(copies or {}).values())
    if source.options_file is not None:
        inputs += (source.options_file,)
    with atomic_output_folder(output, overwrite=overwrite, inputs=inputs) as folder:
        model = convert()
        copied = (copies or {}).values()
        require_room(
            output,
            weight_bytes(model) + sum(path.stat().st_size for path in copied),
            f"the {sum(parameter.numel() for parameter in model.parameters()):,} weights"
            + "".join(f" and {path.name}" for path in copied),
            space_check=space_check,
        )
        model.save_pretrained(folder)
        folder_tokenizer = tokenizer(model, folder)
        folder_tokenizer.save_pretrained(folder)
        for name, path in (copies or {}).items():
            shutil.copyfile(path, folder / name)
        saved = type(model).from_pretrained(folder).eval()
        _check_saved(saved, model, folder)
        parity = measure_parity(saved.base_model, model.base_model.double(), folder_tokenizer)
        write_model_card(folder, saved.base_model, source, parity=parity, repo_id=repo_id or Path(output).name)
        record_checksums(folder)
    return saved, parity


def _check_saved(saved: ElmoPreTrainedModel, model: ElmoPreTrainedModel, folder: Path) -> None:
    """The reloaded folder holds exactly the converted tensors (guards the save, not the user's input)."""
    expected = model.state_dict()
    for name, tensor in saved.state_dict().items():
        if not torch.equal(tensor, expected[name]):
            raise AssertionError(f"{folder}: {name} changed on save")


def output_options(options: UploadOptions) -> dict[str, Any]:
    """The keyword arguments of a converter that every `elmo-convert` command takes the same way: the Hub
    repository (--push-to-hub), --overwrite and the space check (--no-space-check)."""
    return {"repo_id": options.push_to_hub, "overwrite": options.overwrite, "space_check": options.space_check}


def conversion_summary(source: Path, output: str | Path, model: ElmoModel, parity: float) -> str:
    """The one line `elmo-convert` prints for a converted biLM."""
    config = model.config
    parameters = sum(parameter.numel() for parameter in model.parameters())
    return (
        f"Converted {source} ({parameters:,} parameters, {config.num_hidden_layers} biLSTM layers of"
        f" {config.cell_size} cells, projection {config.projection_dim}) -> {output};"
        f" max |float32 - float64 source| at any layer: {parity:.2e}"
    )
