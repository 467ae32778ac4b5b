"""What `elmo-embed`'s segment checksums cost: the sha256 of one segment (taken when it is stored, compared when a
run resumes and when the merge first reads it) against reading the segment's datasets with h5py, which the merge
does anyway.

    python benchmarks/speed/bench_segment_checksum.py --megabytes 64 --repeats 3

The segment holds lines of 5 to 40 words of (3, words, --width) float32 vectors, contiguous, as `elmo-embed` writes
them (about `SEGMENT_BYTES`, 64 MB, by default); it is read once first, so both timings read from the page cache, as
just after it was written.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import h5py
import numpy as np
from harness_embed import read_every_dataset
from harness_timing import median_seconds

from elmo_transformers.common.checksums import file_sha256


def write_segment(path: Path, megabytes: int, width: int) -> int:
    """A segment of about `megabytes` MB of vectors; returns its number of lines."""
    generator = np.random.default_rng(0)
    stored, lines = 0, 0
    with h5py.File(path, "w") as file:
        while stored < megabytes * 1000**2:
            vectors = generator.standard_normal((3, int(generator.integers(5, 41)), width), dtype=np.float32)
            file.create_dataset(str(lines), data=vectors)
            stored, lines = stored + vectors.nbytes, lines + 1
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--megabytes", type=int, default=64, help="the segment's vectors (default %(default)s MB)")
    parser.add_argument("--width", type=int, default=1024, help="2P, the vectors' width (default %(default)s)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        segment = Path(folder) / "segment.hdf5"
        lines = write_segment(segment, args.megabytes, args.width)
        size = segment.stat().st_size
        read_every_dataset(segment)  # into the page cache
        checksum = median_seconds(lambda: file_sha256(segment), args.repeats)
        reading = median_seconds(lambda: read_every_dataset(segment), args.repeats)
    print(f"segment: {size / 1e6:.1f} MB, {lines} lines of (3, words, {args.width}) float32")
    print(f"sha256: {checksum:.3f} s ({size / checksum / 1e9:.2f} GB/s); h5py reading its datasets: {reading:.3f} s")
    print(f"checksum / reading: {checksum / reading:.2f} (median of {args.repeats})")


if __name__ == "__main__":
    main()
