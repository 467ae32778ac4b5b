"""`elmo-embed`'s main() running `embed_file` with keywords of a test's choosing (`overlap`, on by default only on
a GPU; `limits`, the `EmbedLimits` the command line leaves at their defaults: a segment per batch, small windows,
chunks or shards), set through `run.embed_file`, the public entry point that main() calls."""

from __future__ import annotations

import functools

import pytest

import elmo_transformers.inference.run as run

__all__ = ["main_runs_with"]

_EMBED_FILE = run.embed_file


def main_runs_with(monkeypatch: pytest.MonkeyPatch, **keywords: object) -> None:
    """Make main() call `embed_file(options, **keywords)` until `monkeypatch` is undone."""
    monkeypatch.setattr(run, "embed_file", functools.partial(_EMBED_FILE, **keywords))
