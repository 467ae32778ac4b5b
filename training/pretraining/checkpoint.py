"""Checkpoints of a biLM training run that resume it exactly, written atomically.

A `checkpoint-N/` folder holds the model (safetensors, loadable with `from_pretrained`), its tokenizer and
vocabulary, the optimizer state (`optimizer.pt`, read back with `weights_only=True`), `trainer_state.json`
(step, metrics so far) and, for every process, `process-R.safetensors` (LSTM state, random generators: torch's,
the softmax sampler's and, on a GPU, the GPU's, which dropout draws from there) and
`process-R.json` (position of its two text streams). All processes write into one hidden temporary folder
that the main process renames to `checkpoint-N` only when everything is on disk, so a run killed during a
save leaves the previous checkpoints intact.

The main process records every file's sha256 in `SHA256SUMS` before it publishes the folder. A checkpoint damaged
afterwards (a truncated copy, a disk that failed, flipped bytes) is refused with one line naming the file and the
newest intact checkpoint before it; "intact" is: every file present, the JSON parsed and of the shape written, the
safetensors headers and the index at the end of `optimizer.pt` (a zip archive) readable, and every file as
SHA256SUMS records it. Every checkpoint is written with its record, which lists every file read: a checkpoint
without one, or whose record leaves out a file read, is damaged (it would resume from files compared with nothing).
"""

from __future__ import annotations

import json
import pickle
import re
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file, save_file
from transformers.utils import SAFE_WEIGHTS_NAME

from elmo_transformers.common.atomic_output import partial_path
from elmo_transformers.common.checksums import folder_checksum_problem
from elmo_transformers.common.errors import TrainingError, first_line
from elmo_transformers.common.regular_files import read_regular
from elmo_transformers.common.safe_load import holds_code

__all__ = [
    "OPTIMIZER_FILE",
    "TRAINER_STATE_FILE",
    "checkpoint_name",
    "latest_checkpoint",
    "load_optimizer_state",
    "load_process_state",
    "load_trainer_state",
    "load_weights",
    "refuse_damaged_checkpoint",
    "save_optimizer_state",
    "save_process_state",
    "staging_folder",
    "write_json",
]

OPTIMIZER_FILE = "optimizer.pt"
TRAINER_STATE_FILE = "trainer_state.json"
_CHECKPOINT_NAME = re.compile(r"^checkpoint-(\d+)$")
# A checkpoint's JSON files (the run's arguments, a process's text positions) take KiB: one over this is damaged.
_MAX_JSON_BYTES = 64 << 20
# What reading a truncated or damaged file raises: OSError (torch's reader of a truncated file, a missing file),
# ValueError (JSON that ends early, bytes that are not UTF-8), RuntimeError (torch's zip reader), SafetensorError,
# BadZipFile. Not pickle.UnpicklingError: a pickle that `weights_only` refuses is not damage but a file to distrust.
_DAMAGE = (OSError, ValueError, RuntimeError, SafetensorError, zipfile.BadZipFile)
Read = TypeVar("Read")


def checkpoint_name(step: int) -> str:
    return f"checkpoint-{step}"


def _checkpoints(output_dir: Path) -> list[tuple[int, Path]]:
    """The `checkpoint-N` folders of `output_dir` with their N, newest first."""
    found = [
        (int(m.group(1)), path)
        for path in output_dir.glob("checkpoint-*")
        if (m := _CHECKPOINT_NAME.match(path.name)) and path.is_dir()
    ]
    return sorted(found, reverse=True)


def latest_checkpoint(output_dir: Path) -> Path | None:
    """The `checkpoint-N` folder of `output_dir` with the highest N, if any (a file of that name is no checkpoint)."""
    found = _checkpoints(output_dir)
    return found[0][1] if found else None


def staging_folder(output_dir: Path, step: int) -> Path:
    """The hidden folder `.checkpoint-N.partial` that every process writes step N's checkpoint into; the main process
    publishes it with `elmo_transformers.common.atomic_output.publish_folder` once all are done."""
    return partial_path(output_dir / checkpoint_name(step), hidden=True)


def save_process_state(
    folder: Path,
    rank: int,
    *,
    lstm_state: tuple[torch.Tensor, torch.Tensor],
    sampler_generator: torch.Generator,
    data_state: dict[str, Any],
    device: torch.device | None = None,
) -> None:
    """This process's part of a checkpoint: LSTM state, torch's, the sampler's and (on a GPU `device`) the GPU's
    generators, data position."""
    h, c = lstm_state
    tensors = {
        "lstm_h": h.detach().cpu().contiguous(),
        "lstm_c": c.detach().cpu().contiguous(),
        "torch_rng": torch.get_rng_state(),
        "sampler_rng": sampler_generator.get_state(),
    }
    if device is not None and device.type == "cuda":
        tensors["cuda_rng"] = torch.cuda.get_rng_state(device)
    save_file(tensors, str(_process_file(folder, rank, ".safetensors")))
    _process_file(folder, rank, ".json").write_text(json.dumps(data_state), encoding="utf-8")


def save_optimizer_state(folder: Path, optimizer: torch.optim.Optimizer) -> None:
    """`optimizer.pt`. Through a Python file: torch's own file writer reports a full disk as "unexpected pos" only,
    a Python file's write raises the OSError (ENOSPC) that torch's error then carries."""
    with open(folder / OPTIMIZER_FILE, "wb") as file:
        torch.save(optimizer.state_dict(), file)


def _process_file(folder: Path, rank: int, suffix: str) -> Path:
    return folder / f"process-{rank}{suffix}"


class _DamagedFile(Exception):
    """A file of a checkpoint that does not read; the message names it."""


def _read(path: Path, read: Callable[[Path], Read]) -> Read:
    """`read(path)`; a file that cannot be read is a damaged checkpoint (`_DamagedFile`)."""
    try:
        return read(path)
    except FileNotFoundError:
        raise _DamagedFile(f"{path} is missing") from None
    except pickle.UnpicklingError:  # weights_only=True refused to build an object: not a file to trust
        raise _DamagedFile(holds_code(path)) from None
    except _DAMAGE as error:
        raise _DamagedFile(f"{path} is damaged ({first_line(error)})") from error


def _read_json(path: Path) -> Any:
    return json.loads(read_regular(path, _MAX_JSON_BYTES).decode("utf-8"))


def _open_safetensors(path: Path) -> None:
    with safe_open(path, framework="pt"):  # checks that the file covers what its header lists
        pass


def _open_zip(path: Path) -> None:
    zipfile.ZipFile(path).close()  # the index is at the end: a truncated archive has none


def _check_files(folder: Path) -> None:
    """Raise `_DamagedFile` for the first file of `folder` that is missing, shows damage without being read (JSON
    of the wrong shape among it) or differs from the folder's SHA256SUMS, which must be there and list every file
    read (looked for last: a truncated file is named as such)."""
    state_file = folder / TRAINER_STATE_FILE
    world_size = _world_size(state_file, _read(state_file, _read_json))
    _read(folder / SAFE_WEIGHTS_NAME, _open_safetensors)
    _read(folder / OPTIMIZER_FILE, _open_zip)
    read = [TRAINER_STATE_FILE, SAFE_WEIGHTS_NAME, OPTIMIZER_FILE]
    for rank in range(world_size):
        positions = _process_file(folder, rank, ".json")
        _data_state(positions, _read(positions, _read_json))
        _read(_process_file(folder, rank, ".safetensors"), _open_safetensors)
        read += [positions.name, _process_file(folder, rank, ".safetensors").name]
    problem = folder_checksum_problem(folder, required=read, record_required=True)
    if problem:
        raise _DamagedFile(problem)


def _world_size(path: Path, trainer_state: Any) -> int:
    """The number of processes that `trainer_state.json` says wrote the checkpoint; `_DamagedFile` for a file of
    another shape than `{"step": N, "world_size": N, ...}`."""
    if not isinstance(trainer_state, dict) or not all(
        type(trainer_state.get(key)) is int and trainer_state[key] >= minimum
        for key, minimum in (("step", 0), ("world_size", 1))
    ):
        raise _DamagedFile(
            f"{path} is damaged (expected a JSON object with a step and a world_size of at least 1, got"
            f" {_shown(trainer_state)})"
        )
    return trainer_state["world_size"]


def _data_state(path: Path, data_state: Any, packers: int | None = None) -> dict[str, Any]:
    """A process's text positions as `save_process_state` wrote them, `{"packers": [{"rows": [...], "finished":
    ..., "source": {...}}, ...]}` (`packers` of them, when given); `_DamagedFile` for another shape."""
    found = data_state.get("packers") if isinstance(data_state, dict) else None
    if not (
        isinstance(found, list)
        and all(isinstance(packer, dict) and {"rows", "finished", "source"} <= packer.keys() for packer in found)
        and (packers is None or len(found) == packers)
    ):
        expected = f"{packers} text positions" if packers is not None else "text positions"
        raise _DamagedFile(f"{path} is damaged (expected {expected} under 'packers', got {_shown(data_state)})")
    return data_state


def _shown(value: Any) -> str:
    """A JSON value in an error line, cut short."""
    text = json.dumps(value)
    return text if len(text) <= 80 else f"{text[:77]}..."


def _is_intact(folder: Path) -> bool:
    try:
        _check_files(folder)
    except _DamagedFile:
        return False
    return True


def _refusal(folder: Path, damage: _DamagedFile) -> TrainingError:
    """The one line for a damaged `folder`: which file, and the newest intact checkpoint before it to use instead."""
    step = int(m.group(1)) if (m := _CHECKPOINT_NAME.match(folder.name)) else None
    older = [path for number, path in _checkpoints(folder.parent) if step is None or number < step]
    intact = next((path for path in older if _is_intact(path)), None)
    instead = (
        f"the newest intact checkpoint is {intact}: resume with --resume_from_checkpoint {intact}"
        if intact
        else "there is no intact checkpoint before it: start again with --overwrite_output_dir"
    )
    return TrainingError(f"{damage}: the checkpoint {folder} cannot be resumed; {instead}")


def refuse_damaged_checkpoint(folder: Path) -> None:
    """Raise `TrainingError` when a file of the checkpoint `folder`, of any process, is missing or damaged. Every
    process checks every file, so that all refuse alike before any of them loads anything."""
    try:
        _check_files(folder)
    except _DamagedFile as damage:
        raise _refusal(folder, damage) from None


def _load(folder: Path, name: str, read: Callable[[Path], Read]) -> Read:
    """`read` of the file `name` of `folder`, with damage that `refuse_damaged_checkpoint` could not see (the
    tensors themselves) refused in the same one line."""
    try:
        return _read(folder / name, read)
    except _DamagedFile as damage:
        raise _refusal(folder, damage) from None


def load_weights(folder: Path) -> dict[str, torch.Tensor]:
    return _load(folder, SAFE_WEIGHTS_NAME, lambda path: load_file(str(path)))


def load_optimizer_state(folder: Path) -> dict[str, Any]:
    return _load(folder, OPTIMIZER_FILE, lambda path: torch.load(path, weights_only=True))


def load_trainer_state(folder: Path) -> dict[str, Any]:
    return _load(folder, TRAINER_STATE_FILE, _read_json)


def load_process_state(folder: Path, rank: int, world_size: int, packers: int) -> dict[str, Any]:
    """What `save_process_state` wrote for `rank`; a checkpoint written by another number of processes is refused,
    and so are text positions of another shape than `packers` of them (this run's number of text streams)."""
    saved = len(list(folder.glob("process-*.json")))
    if saved != world_size:
        raise ValueError(
            f"{folder} was written by {saved} processes, this run has {world_size}: resume with the same number "
            "of processes (each carries its own text streams and LSTM state)"
        )
    tensors = _load(folder, _process_file(folder, rank, ".safetensors").name, lambda path: load_file(str(path)))
    positions = _process_file(folder, rank, ".json")
    data_state = _load(folder, positions.name, lambda path: _data_state(path, _read_json(path), packers))
    return {**tensors, "data_state": data_state}


def write_json(path: Path, value: Any) -> None:
    """Write `value` as indented JSON; callers write into a staging folder that is renamed as a whole when complete."""
    path.write_text(json.dumps(value, indent=2) + "\n", encoding="utf-8")
