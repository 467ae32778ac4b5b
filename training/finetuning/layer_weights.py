"""The learned layer weights of a head's scalar mixes: `layer_weights.json` and a bar chart `layer_weights.png`
(one panel per output representation, like Figure 2 of Peters et al., 2018)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import torch
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from modeling_elmo.modeling_elmo import ElmoTaskModel

__all__ = ["layer_weights", "write_layer_weights"]

JSON_NAME = "layer_weights.json"
PLOT_NAME = "layer_weights.png"
# What each output representation feeds (ElmoTaskModel): the first the task encoder, a second joins its output.
REPRESENTATION_NAMES = ("task encoder input", "task encoder output")


def layer_weights(model: ElmoTaskModel) -> dict[str, Any]:
    """The head's mixing, as written to `layer_weights.json`: `mix_mode`, the mixed `layers` and their names, and
    for scalar_mix per representation the softmax-normalised `weights` (one per layer, summing to 1), the scale
    `gamma` and the raw parameters; other modes have no learned per-layer weights and get a `note` instead."""
    config = model.config
    layers = config.mixed_layers
    summary: dict[str, Any] = {
        "mix_mode": config.mix_mode,
        "layers": layers,
        "layer_names": ["token" if layer == 0 else f"biLSTM {layer}" for layer in layers],
        "trainable": config.mix_trainable,
    }
    if config.mix_mode != "scalar_mix":
        summary["note"] = f"mix_mode {config.mix_mode!r} has no per-layer weights to show (only scalar_mix has them)"
        return summary
    summary["representations"] = [
        {
            "name": REPRESENTATION_NAMES[index] if index < len(REPRESENTATION_NAMES) else f"representation {index}",
            "weights": torch.softmax(mix.mix_weights.detach().float(), dim=0).tolist(),
            "gamma": float(mix.mix_gamma.detach()),
            "raw_weights": mix.mix_weights.detach().float().tolist(),
        }
        for index, mix in enumerate(model.mixes)
    ]
    return summary


def write_layer_weights(model: ElmoTaskModel, output_dir: str | os.PathLike, title: str) -> dict[str, Any]:
    """Write `layer_weights.json` (always) and `layer_weights.png` (scalar_mix only; a stale one is removed) to
    `output_dir`; `title` heads the chart (the task). Returns what was written to the JSON file."""
    output_dir = Path(output_dir)
    summary = layer_weights(model)
    (output_dir / JSON_NAME).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    plot = output_dir / PLOT_NAME
    plot.unlink(missing_ok=True)
    if "representations" in summary:
        _plot(summary, title).savefig(plot, dpi=120)
    return summary


def _plot(summary: dict[str, Any], title: str) -> Figure:
    """One bar chart per representation: the softmax weight of each layer."""
    representations = summary["representations"]
    figure = Figure(figsize=(2.2 + 1.6 * len(representations), 3.2), layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.subplots(1, len(representations), sharey=True, squeeze=False)[0]
    for axis, representation in zip(axes, representations, strict=True):
        axis.bar(summary["layer_names"], representation["weights"], color="tab:blue")
        axis.set_title(f"{representation['name']}\n(gamma {representation['gamma']:.2f})", fontsize=9)
        axis.set_ylim(0, 1)
        axis.tick_params(axis="x", labelsize=8, labelrotation=30)
    axes[0].set_ylabel("softmax weight")
    figure.suptitle(title, fontsize=10)
    return figure
