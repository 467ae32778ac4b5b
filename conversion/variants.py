"""The options of the four ELMo models AllenNLP released, so `--variant NAME` needs no options file."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from common.options import options_from_config
from modeling_elmo import ElmoConfig

__all__ = ["VARIANTS", "Variant"]

_ONE_BILLION_WORD = "the 1 Billion Word Benchmark (about 800M tokens of news text)"


def _options(*, cells: int, projection: int, highway: int) -> dict[str, Any]:
    """A released model's options.json: `ElmoConfig`'s defaults (the original model's) but for the sizes given."""
    return options_from_config(ElmoConfig(cell_size=cells, projection_dim=projection, num_highway_layers=highway))


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
