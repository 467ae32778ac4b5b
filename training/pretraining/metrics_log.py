"""The metrics log of a biLM training run (`metrics.jsonl`, one JSON object per logging or evaluation step) and
its plot of training and validation perplexity."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

__all__ = ["MetricsLog"]


class MetricsLog:
    """Appends records to `path`; only the main process writes (`enabled`)."""

    def __init__(self, path: Path, *, enabled: bool = True) -> None:
        self.path, self.enabled = path, enabled
        self.records: list[dict[str, Any]] = []

    def log_training(
        self, step: int, window_losses: list[tuple[float, float]], words_per_second: float, epoch: float
    ) -> dict[str, Any]:
        """Mean losses since the last record: training perplexity overall and per direction (of the sampled
        softmax when it is on, so not comparable with the validation figures)."""
        forward = sum(loss for loss, _ in window_losses) / len(window_losses)
        backward = sum(loss for _, loss in window_losses) / len(window_losses)
        record = {
            "step": step,
            "epoch": round(epoch, 4),
            "train_perplexity": math.exp(0.5 * (forward + backward)),
            "train_forward_perplexity": math.exp(forward),
            "train_backward_perplexity": math.exp(backward),
            "words_per_second": round(words_per_second, 1),
        }
        self._append(record)
        return record

    def log_evaluation(self, step: int, results: dict[str, float]) -> None:
        self._append({"step": step, **{f"eval_{key}": value for key, value in results.items()}})

    def last_evaluation(self) -> dict[str, float] | None:
        for record in reversed(self._read()):
            if "eval_perplexity" in record:
                return {key.removeprefix("eval_"): value for key, value in record.items() if key != "step"}
        return None

    def truncate_after(self, step: int) -> None:
        """Drop records past `step` (written by a run that went on after the checkpoint now resumed)."""
        if self.enabled and self.path.exists():
            kept = [record for record in self._read() if record["step"] <= step]
            self.path.write_text("".join(json.dumps(record) + "\n" for record in kept), encoding="utf-8")

    def plot(self, path: Path) -> None:
        """Training and validation perplexity against steps (log scale), as a PNG."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        records = self._read()
        figure, axes = plt.subplots(figsize=(6, 4))
        for key, label in (("train_perplexity", "training (per logging interval)"), ("eval_perplexity", "validation")):
            points = [(record["step"], record[key]) for record in records if key in record]
            if points:
                axes.plot(*zip(*points, strict=True), marker="o" if key.startswith("eval") else None, label=label)
        axes.set_xlabel("step")
        axes.set_ylabel("perplexity")
        axes.set_yscale("log")
        axes.grid(True, which="both", alpha=0.3)
        axes.legend()
        figure.tight_layout()
        figure.savefig(path, dpi=120)
        plt.close(figure)

    def _append(self, record: dict[str, Any]) -> None:
        if self.enabled:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as file:
                file.write(json.dumps(record) + "\n")

    def _read(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        return [json.loads(line) for line in self.path.read_text(encoding="utf-8").splitlines() if line.strip()]
