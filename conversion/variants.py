"""The options of the four ELMo models AllenNLP released, so `--variant NAME` needs no options file."""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["VARIANTS", "variant_options"]

_FILTERS = [[1, 32], [2, 32], [3, 64], [4, 128], [5, 256], [6, 512], [7, 1024]]


def _options(*, cells: int, projection: int, highway: int) -> dict[str, Any]:
    return {
        "lstm": {
            "dim": cells,
            "projection_dim": projection,
            "n_layers": 2,
            "cell_clip": 3,
            "proj_clip": 3,
            "use_skip_connections": True,
        },
        "char_cnn": {
            "activation": "relu",
            "embedding": {"dim": 16},
            "filters": _FILTERS,
            "n_highway": highway,
            "n_characters": 262,
            "max_characters_per_token": 50,
        },
    }


# name -> (released file stem, options). "original-5.5b" has the original's shape, trained on 5.5B tokens.
VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "small": ("elmo_2x1024_128_2048cnn_1xhighway", _options(cells=1024, projection=128, highway=1)),
    "medium": ("elmo_2x2048_256_2048cnn_1xhighway", _options(cells=2048, projection=256, highway=1)),
    "original": ("elmo_2x4096_512_2048cnn_2xhighway", _options(cells=4096, projection=512, highway=2)),
    "original-5.5b": ("elmo_2x4096_512_2048cnn_2xhighway_5.5B", _options(cells=4096, projection=512, highway=2)),
}


def variant_options(name: str) -> dict[str, Any]:
    """A copy of the options.json of the released variant `name` (see `VARIANTS`)."""
    return copy.deepcopy(VARIANTS[name][1])
