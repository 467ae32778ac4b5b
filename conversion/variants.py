"""The options of the four ELMo models AllenNLP released, so `--variant NAME` needs no options file."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from modeling_elmo import ORIGINAL_CHAR_CNN_FILTERS

__all__ = ["VARIANTS", "Variant"]

_FILTERS = [list(width_and_count) for width_and_count in ORIGINAL_CHAR_CNN_FILTERS]
_ONE_BILLION_WORD = "the 1 Billion Word Benchmark (about 800M tokens of news text)"


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


@dataclass(frozen=True)
class Variant:
    """A released model: its file stem, its options.json and the text it was trained on."""

    release: str
    _options: dict[str, Any]
    training_data: str

    @property
    def options(self) -> dict[str, Any]:
        return copy.deepcopy(self._options)


VARIANTS: dict[str, Variant] = {
    "small": Variant(
        "elmo_2x1024_128_2048cnn_1xhighway", _options(cells=1024, projection=128, highway=1), _ONE_BILLION_WORD
    ),
    "medium": Variant(
        "elmo_2x2048_256_2048cnn_1xhighway", _options(cells=2048, projection=256, highway=1), _ONE_BILLION_WORD
    ),
    "original": Variant(
        "elmo_2x4096_512_2048cnn_2xhighway", _options(cells=4096, projection=512, highway=2), _ONE_BILLION_WORD
    ),
    # The original's shape, trained on 5.5B tokens.
    "original-5.5b": Variant(
        "elmo_2x4096_512_2048cnn_2xhighway_5.5B",
        _options(cells=4096, projection=512, highway=2),
        "5.5B tokens: Wikipedia (1.9B) and the WMT 2008-2012 news crawl (3.6B)",
    ),
}
