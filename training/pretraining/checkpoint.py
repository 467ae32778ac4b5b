"""Checkpoints of a biLM training run that resume it exactly, written atomically.

A `checkpoint-N/` folder holds the model (safetensors, loadable with `from_pretrained`), its tokenizer and
vocabulary, the optimizer state (`optimizer.pt`, read back with `weights_only=True`), `trainer_state.json`
(step, metrics so far) and, for every process, `process-R.safetensors` (LSTM state, random generators: torch's,
the softmax sampler's and, on a GPU, the GPU's, which dropout draws from there) and
`process-R.json` (position of its two text streams). All processes write into one hidden temporary folder
that the main process renames to `checkpoint-N` only when everything is on disk, so a run killed during a
save leaves the previous checkpoints intact.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file

from common.atomic_output import partial_path

__all__ = [
    "latest_checkpoint",
    "load_process_state",
    "save_process_state",
    "staging_folder",
    "write_json",
]

_CHECKPOINT_NAME = re.compile(r"^checkpoint-(\d+)$")


def latest_checkpoint(output_dir: Path) -> Path | None:
    """The `checkpoint-N` folder of `output_dir` with the highest N, if any."""
    found = [
        (int(m.group(1)), path) for path in output_dir.glob("checkpoint-*") if (m := _CHECKPOINT_NAME.match(path.name))
    ]
    return max(found)[1] if found else None


def staging_folder(output_dir: Path, step: int) -> Path:
    """The hidden folder `.checkpoint-N.partial` that every process writes step N's checkpoint into; the main process
    publishes it with `common.atomic_output.publish_folder` once all are done."""
    return partial_path(output_dir / f"checkpoint-{step}", hidden=True)


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
    save_file(tensors, str(folder / f"process-{rank}.safetensors"))
    (folder / f"process-{rank}.json").write_text(json.dumps(data_state), encoding="utf-8")


def load_process_state(folder: Path, rank: int, world_size: int) -> dict[str, Any]:
    """What `save_process_state` wrote for `rank`; a checkpoint written by another number of processes is refused."""
    saved = len(list(folder.glob("process-*.json")))
    if saved != world_size:
        raise ValueError(
            f"{folder} was written by {saved} processes, this run has {world_size}: resume with the same number "
            "of processes (each carries its own text streams and LSTM state)"
        )
    tensors = load_file(str(folder / f"process-{rank}.safetensors"))
    data_state = json.loads((folder / f"process-{rank}.json").read_text(encoding="utf-8"))
    return {**tensors, "data_state": data_state}


def write_json(path: Path, value: Any) -> None:
    """Write `value` as indented JSON; callers write into a staging folder that is renamed as a whole when complete."""
    path.write_text(json.dumps(value, indent=2) + "\n", encoding="utf-8")
