"""Helpers that write and read biLM files in the original (bilm-tf / AllenNLP) format for tests.

- ``small_options(**overrides)``: a small options.json dict.
- ``write_original_model(folder, options, seed=..., scale=...)``: options.json + weights.hdf5 with random weights.
- ``read_weights(path)``: every dataset of an hdf5 file as ``{full/dataset/path: np.ndarray}``.

The weights file follows the original layout exactly (float32 datasets, no attributes, ``char_embed`` with 261
rows, no softmax); see section 2 of /work/shared/ELMO_REFERENCE.md.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import h5py
import numpy as np

LSTM_KEYS = ("dim", "projection_dim", "n_layers", "cell_clip", "proj_clip", "use_skip_connections")
CHAR_CNN_KEYS = ("activation", "filters", "n_highway", "n_characters", "max_characters_per_token")


def small_options(**overrides) -> dict:
    """A small options dict (E=4, filters [[1,4],[2,8],[3,16]], 2 highway, C=32, P=8, 2 layers, clips 3, skip).

    Keyword overrides are routed by name:
    - lstm fields: ``dim``, ``projection_dim``, ``n_layers``, ``cell_clip``, ``proj_clip``, ``use_skip_connections``
    - char_cnn fields: ``activation``, ``filters``, ``n_highway``, ``n_characters``, ``max_characters_per_token``
    - ``char_embedding_dim``: char_cnn.embedding.dim
    - ``lstm={...}`` / ``char_cnn={...}``: dicts merged into those sections (use these to add arbitrary keys).
    A value of ``None`` is written as JSON null (e.g. ``cell_clip=None``).  To drop a key entirely (the "missing"
    case), pass the sentinel string ``"<missing>"`` (e.g. ``n_highway="<missing>"``).
    Any other keyword becomes a top-level key (e.g. ``n_tokens_vocab=100``).
    """
    options = {
        "lstm": {
            "dim": 32,
            "projection_dim": 8,
            "n_layers": 2,
            "cell_clip": 3,
            "proj_clip": 3,
            "use_skip_connections": True,
        },
        "char_cnn": {
            "activation": "relu",
            "embedding": {"dim": 4},
            "filters": [[1, 4], [2, 8], [3, 16]],
            "n_highway": 2,
            "n_characters": 262,
            "max_characters_per_token": 50,
        },
    }
    for key, value in overrides.items():
        if key in ("lstm", "char_cnn"):
            options[key].update(copy.deepcopy(value))
            continue
        if key in LSTM_KEYS:
            section, name = options["lstm"], key
        elif key in CHAR_CNN_KEYS:
            section, name = options["char_cnn"], key
        elif key == "char_embedding_dim":
            section, name = options["char_cnn"]["embedding"], "dim"
        else:
            section, name = options, key
        if isinstance(value, str) and value == "<missing>":
            section.pop(name, None)
        else:
            section[name] = copy.deepcopy(value)
    for section in (options["lstm"], options["char_cnn"]):
        for name in [k for k, v in section.items() if isinstance(v, str) and v == "<missing>"]:
            del section[name]
    return options


def random_weights(options: dict, *, seed: int, scale: float = 1.0) -> dict[str, np.ndarray]:
    """Random float32 weights for ``options``, keyed by the original hdf5 dataset names.

    Scales (with ``scale=1``) are chosen so that activations are non-trivial.  Measured with ``small_options()``
    (and 3 layers / C=64 / P=16, relu and tanh) over a 22-word sentence: ~70-85% of the max-pooled CNN outputs are
    positive before the activation, highway gates have 5%/50%/95% quantiles ~0.25/0.5/0.75, token vectors have
    std ~1, ~10-20% of the LSTM cell values exceed a cell clip of 3 before clipping and ~2-5% of the projected
    outputs exceed a proj clip of 3.  ``scale`` multiplies every standard deviation and the CNN bias offset.
    """
    rng = np.random.default_rng(seed)
    lstm = options["lstm"]
    cnn = options["char_cnn"]
    emb_dim = int(cnn["embedding"]["dim"])
    filters = [(int(w), int(n)) for w, n in cnn["filters"]]
    n_highway = int(cnn.get("n_highway") or 0)
    cell_dim = int(lstm["dim"])
    proj_dim = int(lstm["projection_dim"])
    n_layers = int(lstm["n_layers"])
    n_filters = sum(n for _, n in filters)

    def normal(shape, std):
        return (rng.standard_normal(shape) * std * scale).astype(np.float32)

    weights: dict[str, np.ndarray] = {"char_embed": normal((261, emb_dim), 1.0)}
    for i, (width, n) in enumerate(filters):
        weights[f"CNN/W_cnn_{i}"] = normal((1, width, emb_dim, n), 1.0 / np.sqrt(width * emb_dim))
        weights[f"CNN/b_cnn_{i}"] = normal((n,), 0.5) - np.float32(0.5 * scale)
    for k in range(n_highway):
        prefix = f"CNN_high_{k}/"
        weights[prefix + "W_carry"] = normal((n_filters, n_filters), 0.5 / np.sqrt(n_filters))
        weights[prefix + "b_carry"] = normal((n_filters,), 0.5)
        weights[prefix + "W_transform"] = normal((n_filters, n_filters), 1.0 / np.sqrt(n_filters))
        weights[prefix + "b_transform"] = normal((n_filters,), 0.5)
    weights["CNN_proj/W_proj"] = normal((n_filters, proj_dim), 1.5 / np.sqrt(n_filters))
    weights["CNN_proj/b_proj"] = normal((proj_dim,), 0.5)
    for d in range(2):
        for layer in range(n_layers):
            prefix = f"RNN_{d}/RNN/MultiRNNCell/Cell{layer}/LSTMCell/"
            weights[prefix + "W_0"] = normal((2 * proj_dim, 4 * cell_dim), 0.7 / np.sqrt(2 * proj_dim))
            # B ~ N(0, 1): with the run-time forget bias of +1 some cells keep their state for many steps.
            weights[prefix + "B"] = normal((4 * cell_dim,), 1.0)
            weights[prefix + "W_P_0"] = normal((cell_dim, proj_dim), 3.5 / np.sqrt(cell_dim))
    return weights


def write_original_model(folder: Path, options: dict, *, seed: int, scale: float = 1.0) -> tuple[Path, Path]:
    """Write ``options.json`` and ``weights.hdf5`` (random weights, see ``random_weights``) into ``folder``.

    Returns ``(options_path, weights_path)``.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    options_path = folder / "options.json"
    weights_path = folder / "weights.hdf5"
    options_path.write_text(json.dumps(options, indent=2))
    weights = random_weights(options, seed=seed, scale=scale)
    with h5py.File(weights_path, "w") as f:
        for name, value in weights.items():
            f.create_dataset(name, data=value)
    return options_path, weights_path


def read_weights(path) -> dict[str, np.ndarray]:
    """All datasets of an hdf5 file, keyed by their full path (e.g. ``"CNN/W_cnn_0"``)."""
    out: dict[str, np.ndarray] = {}

    def visit(name, obj):
        if isinstance(obj, h5py.Dataset):
            out[name] = obj[()]

    with h5py.File(path, "r") as f:
        f.visititems(visit)
    return out
