"""The options of the four ELMo models AllenNLP released, so `--variant NAME` needs no options file.

Argument parsing reads `VARIANTS` (for `--variant`'s choices), so this module imports nothing heavy: a variant's
options.json is built from `ElmoConfig` only when asked for.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["VARIANTS", "Variant"]

_ONE_BILLION_WORD = "the 1 Billion Word Benchmark (about 800M tokens of news text)"


@dataclass(frozen=True)
class Variant:
    """A released model: its file stem, its sizes, and the text it was trained on."""

    release: str
    cells: int
    projection: int
    highway: int
    training_data: str = _ONE_BILLION_WORD

    @property
    def options(self) -> dict[str, Any]:
        """Its options.json: `ElmoConfig`'s defaults (the original model's) but for the sizes of this variant."""
        # Imported here: they bring transformers, which `elmo-convert --help` must not load.
        from elmo_transformers.common.options_json import options_from_config
        from modeling_elmo import ElmoConfig

        return options_from_config(
            ElmoConfig(cell_size=self.cells, projection_dim=self.projection, num_highway_layers=self.highway)
        )


VARIANTS: dict[str, Variant] = {
    "small": Variant("elmo_2x1024_128_2048cnn_1xhighway", cells=1024, projection=128, highway=1),
    "medium": Variant("elmo_2x2048_256_2048cnn_1xhighway", cells=2048, projection=256, highway=1),
    "original": Variant("elmo_2x4096_512_2048cnn_2xhighway", cells=4096, projection=512, highway=2),
    # The original's shape, trained on 5.5B tokens.
    "original-5.5b": Variant(
        "elmo_2x4096_512_2048cnn_2xhighway_5.5B",
        cells=4096,
        projection=512,
        highway=2,
        training_data="5.5B tokens: Wikipedia (1.9B) and the WMT 2008-2012 news crawl (3.6B)",
    ),
}
