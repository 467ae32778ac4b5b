"""A line over --max-words is embedded in pieces (docs/elmo-embed.md): its vectors are those of its pieces embedded as
lines of their own, concatenated. Its pieces run in one batch, whose distinct words the character CNN encodes a
bounded number at a time: one line of 10,000 words took 1.4 GB (946 MB more than a line of 500 words) when the CNN
held the convolution outputs of all of them at once."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest
import torch

from elmo_transformers.inference.embed import main

# Words that a character path can get wrong: non-ASCII, over 48 bytes, emoji beyond the cut.
WORDS = ["the", "naïve", "日本語", "x" * 60, "😀" * 13, "a" * 47 + "é", ",", "Größe"]

# elmo-embed in a process of its own, printing its peak resident memory (ru_maxrss, KB on Linux) once done.
_EMBED_PEAK_MEMORY = """
import resource, sys
from elmo_transformers.inference.embed import main
code = main(sys.argv[1:])
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
sys.exit(code)
"""

# The bundled model's character encoder over the distinct words of argv[1], likewise.
_ENCODER_PEAK_MEMORY = """
import resource, sys, torch
from modeling_elmo import DEFAULT_MODEL, ElmoModel, ElmoTokenizer
model, tokenizer = ElmoModel.from_pretrained(DEFAULT_MODEL).eval(), ElmoTokenizer.from_pretrained(DEFAULT_MODEL)
words = open(sys.argv[1], encoding="utf-8").read().split()
with torch.no_grad():
    model.char_encoder(tokenizer([words], is_split_into_words=True, return_tensors="pt")["input_ids"][0])
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def _line(words: int, seed: int) -> str:
    rng = random.Random(seed)
    return " ".join(f"{index}{rng.choice(WORDS)}" for index in rng.sample(range(10 * words), words))  # distinct


def _peak_megabytes(tmp_path: Path, script: str, words: int) -> float:
    """The peak resident memory of `script` in a process of its own, given a line of `words` distinct words."""
    source = tmp_path / f"{words}.txt"
    source.write_text(_line(words, seed=words) + "\n", encoding="utf-8")
    command = [sys.executable, "-c", script, str(source), str(tmp_path / f"{words}.hdf5")]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert completed.returncode == 0, completed.stderr[-2000:]
    return int(completed.stdout.split()[-1]) / 1024


@pytest.mark.slow
def test_one_long_line_takes_about_the_memory_of_a_short_one(tmp_path: Path) -> None:
    """elmo-embed with the bundled model and --max-words 1000 (the default): a line of 10,000 distinct words against
    one of 500. Its own vectors are 31 MB (10,000 x 3 x 256 float32), written piece by piece."""
    short = _peak_megabytes(tmp_path, _EMBED_PEAK_MEMORY, 500)
    long = _peak_megabytes(tmp_path, _EMBED_PEAK_MEMORY, 10_000)
    assert long - short < 200, f"peak memory {long:.0f} MB for 10,000 words, {short:.0f} MB for 500"


@pytest.mark.slow
def test_the_character_cnn_takes_bounded_memory_for_any_number_of_words(tmp_path: Path) -> None:
    """The bundled model's character encoder over 10,000 distinct words against 500: 64 MB of convolution outputs at
    a time (1 GB more at once)."""
    short = _peak_megabytes(tmp_path, _ENCODER_PEAK_MEMORY, 500)
    long = _peak_megabytes(tmp_path, _ENCODER_PEAK_MEMORY, 10_000)
    assert long - short < 150, f"peak memory {long:.0f} MB for 10,000 words, {short:.0f} MB for 500"


def test_the_character_cnn_gives_each_word_the_same_vector_in_chunks_or_not(monkeypatch) -> None:
    from modeling_elmo import DEFAULT_MODEL, ElmoModel, ElmoTokenizer

    model, tokenizer = ElmoModel.from_pretrained(DEFAULT_MODEL).eval(), ElmoTokenizer.from_pretrained(DEFAULT_MODEL)
    words = _line(2000, seed=3).split()
    char_ids = tokenizer([words], is_split_into_words=True, return_tensors="pt")["input_ids"][0]
    with torch.no_grad():
        chunked = model.char_encoder(char_ids)
        monkeypatch.setattr(model.char_encoder, "elements_per_chunk", 1 << 40)  # (all 2,000 words at once)
        whole = model.char_encoder(char_ids)
    assert torch.equal(chunked, whole)


def test_a_line_over_max_words_is_its_pieces_embedded_as_lines(tmp_path: Path, capsys) -> None:
    """2,300 words at --max-words 500: pieces of 500, 500, 500, 500 and 300 words, beside a short line, give the
    vectors of those pieces written as lines of their own (uncut), concatenated, bit for bit."""
    long, short = _line(2300, seed=1).split(), _line(7, seed=2)
    pieces = [" ".join(long[start : start + 500]) for start in range(0, len(long), 500)]
    cut, uncut = tmp_path / "cut.txt", tmp_path / "uncut.txt"
    cut.write_text(f"{short}\n{' '.join(long)}\n", encoding="utf-8")
    uncut.write_text("".join(piece + "\n" for piece in pieces), encoding="utf-8")
    for source in (cut, uncut):
        assert main([str(source), str(source.with_suffix(".hdf5")), "--max-words", "500"]) == 0
    capsys.readouterr()
    with h5py.File(cut.with_suffix(".hdf5")) as cut_file, h5py.File(uncut.with_suffix(".hdf5")) as uncut_file:
        whole = cut_file["1"][()]
        assert whole.shape[1] == 2300
        np.testing.assert_array_equal(whole, np.concatenate([uncut_file[str(i)][()] for i in range(5)], axis=1))
