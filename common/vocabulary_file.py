"""bilm-tf's vocabulary file: one word per line, its id the line's index, starting with the special words
`<S>`, `</S>`, `<UNK>` (`modeling_elmo.text_elmo.BILM_TF_SPECIAL_WORDS`). Read here, one way, for every use:
the converters (the softmax of a checkpoint, the token layer of a vocabulary) and pretraining (`LmVocabulary`),
each of which checks what else it needs of the words."""

from __future__ import annotations

from pathlib import Path

from elmo_transformers.common.errors import ElmoError
from elmo_transformers.common.regular_files import NotARegularFile, TooBig, read_regular

__all__ = ["MAX_VOCABULARY_BYTES", "read_vocabulary"]

# bilm-tf's vocabulary of 793,471 words is 6.6 MB; a file over this is no vocabulary (and /dev/zero is never read
# whole: reading it would take memory until none is left).
MAX_VOCABULARY_BYTES = 1 << 30


def read_vocabulary(path: str | Path, *, error: type[ElmoError]) -> list[str]:
    """Every line of a vocabulary file, surrounding whitespace stripped, as bilm-tf reads them (a blank line is an
    empty word: lines are softmax rows). Raises `error` naming the file, or the line that is not UTF-8, for a file
    without a line, and for one that is not a regular file (a FIFO, a device, a folder: refused without waiting on
    it) or is over `MAX_VOCABULARY_BYTES`."""
    path = Path(path)
    try:
        lines = read_regular(path, MAX_VOCABULARY_BYTES).splitlines()
    except FileNotFoundError:
        raise error(f"{path}: no such vocabulary file") from None
    except (NotARegularFile, TooBig) as problem:
        raise error(f"{problem}: name the vocabulary file itself (one word a line)") from None
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
