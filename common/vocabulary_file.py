"""bilm-tf's vocabulary file: one word per line, its id the line's index, starting with the special words
`<S>`, `</S>`, `<UNK>` (`modeling_elmo.text_elmo.BILM_TF_SPECIAL_WORDS`). Read here, one way, for every use:
the converters (the softmax of a checkpoint, the token layer of a vocabulary) and pretraining (`LmVocabulary`),
each of which checks what else it needs of the words."""

from __future__ import annotations

from pathlib import Path

from elmo_transformers.common.errors import ElmoError

__all__ = ["read_vocabulary"]


def read_vocabulary(path: str | Path, *, error: type[ElmoError]) -> list[str]:
    """Every line of a vocabulary file, surrounding whitespace stripped, as bilm-tf reads them (a blank line is an
    empty word: lines are softmax rows). Raises `error` naming the file, or the line that is not UTF-8, and for a file
    without a line."""
    path = Path(path)
    try:
        lines = path.read_bytes().splitlines()
    except FileNotFoundError:
        raise error(f"{path}: no such vocabulary file") from None
    except OSError as problem:
        raise error(f"cannot read the vocabulary {path}: {problem}") from None
    words = []
    for number, line in enumerate(lines, start=1):
        try:
            words.append(line.decode("utf-8").strip())
        except UnicodeDecodeError as problem:
            raise error(f"{path}, line {number}: not UTF-8 ({problem.reason} at byte {problem.start})") from None
    if not words:
        raise error(f"{path}: the vocabulary is empty")
    return words
