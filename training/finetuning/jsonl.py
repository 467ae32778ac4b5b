"""Reading the training scripts' JSON lines files, with errors that name the file and the line."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from elmo_transformers.common.errors import DataFileError

__all__ = ["JsonLine", "label_names", "read_json_lines"]


class JsonLine(dict):
    """One row of a JSON lines file: the object itself, plus where it came from (`path`, `line`)."""

    def __init__(self, values: dict[str, Any], path: Path, line: int) -> None:
        super().__init__(values)
        self.path = path
        self.line = line

    def error(self, message: str) -> DataFileError:
        """A `DataFileError` naming this row's file and line."""
        return DataFileError(f"{self.path}, line {self.line}: {message}")

    def column(self, name: str, option: str) -> Any:
        """The value of column `name`; a missing column is an error that names `option`, which sets the name."""
        if name not in self:
            raise self.error(f"no {name!r} column (its columns: {', '.join(self) or 'none'}); set {option}")
        return self[name]


def read_json_lines(path: str | os.PathLike) -> list[JsonLine]:
    """The rows of a JSON lines file: one JSON object per line; blank lines are skipped."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise DataFileError(f"cannot read {path}: {error}") from error
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as error:
            raise DataFileError(f"{path}, line {number}: not JSON ({error.msg}, column {error.colno})") from None
        if not isinstance(value, dict):
            raise DataFileError(f"{path}, line {number}: expected a JSON object, got {type(value).__name__}")
        rows.append(JsonLine(value, path, number))
    if not rows:
        raise DataFileError(f"{path}: no rows (expected one JSON object per line)")
    return rows


def label_names(labels: Iterable[Any]) -> list[str]:
    """The sorted distinct label names (`str` of each JSON value) of the training data."""
    return sorted({str(label) for label in labels})
