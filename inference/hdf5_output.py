"""The output file, written as `OUT.partial` and renamed to `OUT` when complete, so that a run can be resumed.

The finished file has AllenNLP's `elmo` command layout: one float32 dataset per line, named by the line's
0-based index, and (unless forgotten) the dataset "sentence_to_index", a (1,) array of one variable-length
string: the JSON object mapping each stripped line to its index string. When the words are not simply the
line's whitespace-separated tokens (`--tokenize`), each line's dataset has the attribute "words": a JSON list
of the strings its vectors stand for, in order.

While the file is `OUT.partial`, a dataset named by a line index exists only once the line is complete; a line
embedded in several pieces fills a dataset in the group "elmo_embed_incomplete" first, moved to its name when
the last piece is written. The root attribute "elmo_embed_settings" records what the run computes, so that
`--resume` cannot mix the outputs of different settings. Both are removed when the file is finished.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from common.atomic_output import partial_path, publish_file, refuse_existing
from common.errors import EmbedError
from common.output_lock import lock_path

__all__ = ["SENTENCE_TO_INDEX", "WORDS", "EmbeddingFile", "check_output", "check_output_path"]

_SETTINGS = "elmo_embed_settings"
_INCOMPLETE = "elmo_embed_incomplete"
SENTENCE_TO_INDEX = "sentence_to_index"
WORDS = "words"


def check_output_path(output: str | Path, input_file: str | Path) -> None:
    """Refuse an `output` that is a folder, or whose file, `OUT.partial` or lock file is `input_file` (the same
    inode: a hard or symbolic link too): writing it, or replacing it with the finished file, would destroy the input.
    Checked before the output's lock is taken, as the lock file is created beside the output."""
    output = Path(output)
    if output.is_dir():
        raise EmbedError(f"{output} is a folder, expected a file path")
    for path in (output, partial_path(output), lock_path(output)):
        if path.exists() and path.samefile(input_file):
            raise EmbedError(f"{path} is the input file {input_file}: write the output to another path")


def check_output(output: str | Path, *, resume: bool, overwrite: bool) -> None:
    """Refuse an existing `output` without `overwrite`, and an interrupted run's file without `resume`/`overwrite`
    (checked while the output's lock is held: an `OUT.partial` is then not being written)."""
    output = Path(output)
    refuse_existing(output, overwrite=overwrite, error=EmbedError)
    partial = partial_path(output)
    if partial.exists() and not (resume or overwrite):
        raise EmbedError(
            f"{partial} exists (an interrupted run): pass --resume to continue it or --overwrite to start over"
        )


class EmbeddingFile:
    """The open `OUT.partial` of a run; a context manager that closes it (and keeps it) on any exit.

    `shape(words)` is the shape of one line's dataset. With `resume`, an existing `OUT.partial` is continued
    when it was started with the same `settings` (lines embedded in pieces and not finished start again);
    otherwise a new one is created.
    """

    def __init__(
        self,
        output: str | Path,
        *,
        settings: dict[str, Any],
        shape: Callable[[int], tuple[int, ...]],
        resume: bool,
    ) -> None:
        self.output = Path(output)
        self.partial = partial_path(output)
        self.shape = shape
        self._words_written: dict[int, int] = {}
        if resume and self.partial.exists():
            self._file = self._reopen(settings)
        else:
            self.output.parent.mkdir(parents=True, exist_ok=True)
            self._file = h5py.File(self.partial, "w")
            self._file.attrs[_SETTINGS] = json.dumps(settings, sort_keys=True)

    def _reopen(self, settings: dict[str, Any]) -> h5py.File:
        try:
            file = h5py.File(self.partial, "r+")
        except OSError as error:
            raise EmbedError(f"{self.partial} cannot be resumed ({error}): pass --overwrite to start over") from None
        if _SETTINGS not in file.attrs:
            file.close()
            raise EmbedError(f"{self.partial} was not written by elmo-embed: pass --overwrite to start over")
        started = json.loads(file.attrs[_SETTINGS])
        differences = [
            f"{key} {started.get(key)!r} (now {value!r})"
            for key, value in settings.items()
            if started.get(key) != value
        ]
        if differences:
            file.close()
            raise EmbedError(
                f"{self.partial} was started with {', '.join(differences)}: rerun with the same input and options,"
                " or pass --overwrite to start over"
            )
        if _INCOMPLETE in file:
            del file[_INCOMPLETE]
        return file

    def __enter__(self) -> EmbeddingFile:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def finished_lines(self) -> set[int]:
        """The lines (0-based) complete in the file."""
        return {int(name) for name in self._file if name.isdigit()}

    def write(
        self, line: int, start: int, vectors: np.ndarray, words: int, *, tokens: Sequence[str] | None = None
    ) -> None:
        """Write `vectors` (shape `self.shape(n)`) for words `start` to `start + n` of line `line` of `words` words.

        A line written in one piece (or an empty line: `words` = 0) gets its dataset at once; the pieces of a longer
        line fill a staging dataset, which takes the line's name when all `words` are written. `tokens`, the line's
        `words` words (given with any piece), become the dataset's attribute "words".
        """
        if start == 0 and vectors.shape == self.shape(words):
            self._label(self._file.create_dataset(str(line), data=vectors, dtype="float32"), tokens)
            return
        staging = f"{_INCOMPLETE}/{line}"
        if staging not in self._file:
            self._label(self._file.create_dataset(staging, shape=self.shape(words), dtype="float32"), tokens)
        word_axis = vectors.ndim - 2
        piece = (slice(None),) * word_axis + (slice(start, start + vectors.shape[word_axis]),)
        self._file[staging][piece] = vectors
        self._words_written[line] = self._words_written.get(line, 0) + vectors.shape[word_axis]
        if self._words_written[line] == words:
            self._file.move(staging, str(line))
            del self._words_written[line]

    @staticmethod
    def _label(dataset: h5py.Dataset, tokens: Sequence[str] | None) -> None:
        # One JSON string: any length fits an attribute (an array of strings over about 4,000 would not), and a
        # word may hold any character, NUL included.
        if tokens is not None:
            dataset.attrs[WORDS] = json.dumps(list(tokens))

    def flush(self) -> None:
        """Make everything written so far survive an interruption."""
        self._file.flush()

    def finish(self, sentence_to_index: dict[str, str] | None) -> None:
        """Write "sentence_to_index" (unless None), drop the bookkeeping, close and rename to the output path."""
        if SENTENCE_TO_INDEX in self._file:  # from a run interrupted while finishing
            del self._file[SENTENCE_TO_INDEX]
        if sentence_to_index is not None:
            index = self._file.create_dataset(SENTENCE_TO_INDEX, (1,), dtype=h5py.string_dtype())
            index[0] = json.dumps(sentence_to_index)
        if _INCOMPLETE in self._file:
            assert not len(self._file[_INCOMPLETE]), "a line was left incomplete"
            del self._file[_INCOMPLETE]
        del self._file.attrs[_SETTINGS]
        self.close()
        publish_file(self.partial, self.output)

    def close(self) -> None:
        """Close the file, keeping it as `OUT.partial` (a no-op once closed)."""
        if self._file.id.valid:
            self._file.close()
