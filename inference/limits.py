"""The sizes an `elmo-embed` run works in (`EmbedLimits`): how much input it reads at a time, and how big the pieces
of its output grow. They bound memory and the work a failure loses; the stored values are those of the batches the
windows form, so a run resumes with the limits it started with (the command line's are always the defaults).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

__all__ = ["EmbedLimits"]


@dataclass(frozen=True)
class EmbedLimits:
    """The run's sizes, given to `run.embed_file` (the command line runs with these defaults).

    A window of the input ends at `window_lines` lines to embed (at least a batch) or `window_words` words, whichever
    comes first: the window is sorted by length into batches, so memory does not grow with the corpus (a larger
    window batches more similar lengths together).

    A segment of `OUT.partial` is closed at the first batch boundary after it holds `segment_bytes` of vectors: a
    failed write loses at most about this much work, and the merge reads from few files.

    A chunk of a compressed dataset holds at most `chunk_bytes` (and at least one word): well under HDF5's default
    chunk cache (1 MiB per dataset), so that a line written in pieces updates its chunks in the cache instead of
    reading and recompressing them for every piece; big enough for gzip's 32 KB window.

    A shard of `--format datasets` holds about `shard_bytes` of vectors, as `save_to_disk`'s default
    `max_shard_size`.
    """

    window_lines: int = 4096
    window_words: int = 200_000
    segment_bytes: int = 64 * 1000**2
    chunk_bytes: int = 256 * 1024
    shard_bytes: int = 500 * 1000**2

    def __post_init__(self) -> None:
        for size in fields(self):
            value = getattr(self, size.name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"EmbedLimits.{size.name} must be a positive int, got {value!r}")
