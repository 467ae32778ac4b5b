"""`elmo_transformers.compat.simple_elmo` against simple_elmo 0.9.2 on TensorFlow: the same NLPL archive, the same
sentences, `get_elmo_vectors(sentences, layers=...)`, in one run; prints each side's seconds, the ratio and the
largest difference of the vectors.

simple_elmo needs TensorFlow, which lives in a virtual environment of its own (`--tf-python`), made once with

    python3 -m venv /tmp/venv-tf && /tmp/venv-tf/bin/pip install simple_elmo==0.9.2 tensorflow-cpu tf-keras

Run from the repository root with the package's environment (about a minute with the defaults on a shared 2-core
machine; `--shape original` is the released model's size, minutes)::

    python benchmarks/speed/bench_compat_simple_elmo.py --tf-python /tmp/venv-tf/bin/python
    python benchmarks/speed/bench_compat_simple_elmo.py --tf-python /tmp/venv-tf/bin/python --shape original

What it does:

1. Writes (once, under `--work-dir`) random weights of a released shape (`harness_backends.ensure_weights`) and
   zips them as the NLPL repository does (`model.hdf5`, `options.json`).
2. Makes `--sentences` sentences of 10-30 words (`harness_corpora.make_sentences`: Zipf-distributed words, one in
   20 awkward).
3. Runs simple_elmo in a process of the TensorFlow environment (this file, `--worker`): `load` once, then
   `get_elmo_vectors` `--repeats` times, each call timed (wall and CPU seconds of the process), with one thread
   (TF_NUM_INTRAOP_THREADS, TF_NUM_INTEROP_THREADS); the vectors of the last call come back in a file.
4. Does the same here with `compat.simple_elmo.ElmoModel`, one torch thread.
5. Prints the median seconds of each side, their ratio (simple_elmo / ours: above 1, ours is faster) and the
   largest difference of the vectors. CPU seconds are the measure to trust on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

LAYERS = "average"


def timed_calls(call, repeats: int) -> tuple[list[float], list[float], object]:
    """Wall and CPU seconds of `repeats` calls of `call()`, and the last call's result."""
    walls, cpus, result = [], [], None
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        result = call()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return walls, cpus, result


def worker(archive: str, sentences_file: str, batch_size: int, repeats: int, output: str) -> None:
    """simple_elmo's side, in the TensorFlow environment: prints its timings as JSON, writes the vectors."""
    import numpy as np
    from simple_elmo import ElmoModel

    sentences = json.loads(Path(sentences_file).read_text(encoding="utf-8"))
    model = ElmoModel()
    load_wall = time.perf_counter()
    model.load(archive, max_batch_size=batch_size)
    load_wall = time.perf_counter() - load_wall
    walls, cpus, vectors = timed_calls(lambda: model.get_elmo_vectors(sentences, layers=LAYERS), repeats)
    np.save(output, vectors)
    print(json.dumps({"load": load_wall, "wall": walls, "cpu": cpus}))


def nlpl_archive(work_dir: Path, shape: str) -> Path:
    """The random weights of `shape` zipped as an NLPL archive (options with 262 characters, as simple_elmo needs)."""
    from harness_backends import ensure_weights

    options_path, weights_path = ensure_weights(work_dir, seed=0, shape=shape)
    archive = options_path.parent / "nlpl.zip"
    if not archive.is_file():
        options = json.loads(options_path.read_text())
        options["char_cnn"]["n_characters"] = 262
        with zipfile.ZipFile(archive.with_suffix(".partial"), "w") as zipped:
            zipped.write(weights_path, "model.hdf5")
            zipped.writestr("options.json", json.dumps(options))
        archive.with_suffix(".partial").rename(archive)
    return archive


def theirs(args: argparse.Namespace, archive: Path, sentences_file: Path, output: Path) -> dict:
    environment = {
        **os.environ,
        "TF_USE_LEGACY_KERAS": "1",
        "TF_NUM_INTRAOP_THREADS": "1",
        "TF_NUM_INTEROP_THREADS": "1",
        "TF_CPP_MIN_LOG_LEVEL": "3",
    }
    command = [args.tf_python, __file__, "--worker", str(archive), str(sentences_file), str(args.batch_size)]
    command += [str(args.repeats), str(output)]
    finished = subprocess.run(command, env=environment, capture_output=True, text=True, check=False)
    if finished.returncode != 0:
        sys.exit(f"simple_elmo's worker failed ({args.tf_python}):\n{finished.stderr[-3000:]}")
    return json.loads(finished.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tf-python", required=True, help="python of an environment with simple_elmo 0.9.2 and TF")
    parser.add_argument("--shape", default="small", help="released shape of the random weights (default small)")
    parser.add_argument("--sentences", type=int, default=256, help="sentences per call (default 256)")
    parser.add_argument("--batch-size", type=int, default=32, help="max_batch_size (simple_elmo's default 32)")
    parser.add_argument("--repeats", type=int, default=3, help="timed calls of each side (default 3)")
    parser.add_argument("--work-dir", default=Path(tempfile.gettempdir()) / "elmo-bench", type=Path)
    args = parser.parse_args()

    import numpy as np
    import torch
    from harness_corpora import make_sentences

    from elmo_transformers.compat.simple_elmo import ElmoModel

    torch.set_num_threads(1)
    archive = nlpl_archive(args.work_dir, args.shape)
    sentences = make_sentences(0, args.batch_size, args.sentences, 10, 30)
    with tempfile.TemporaryDirectory() as folder:
        sentences_file, vectors_file = Path(folder) / "sentences.json", Path(folder) / "theirs.npy"
        sentences_file.write_text(json.dumps(sentences), encoding="utf-8")
        reference = theirs(args, archive, sentences_file, vectors_file)
        their_vectors = np.load(vectors_file)
    model = ElmoModel()
    load_wall = time.perf_counter()
    model.load(archive, max_batch_size=args.batch_size)
    load_wall = time.perf_counter() - load_wall
    walls, cpus, ours = timed_calls(lambda: model.get_elmo_vectors(sentences, layers=LAYERS), args.repeats)
    words = sum(len(sentence) for sentence in sentences)
    print(f"{args.shape} shape, {len(sentences)} sentences ({words} words), max_batch_size {args.batch_size}, 1 thread")
    print(f"load (s, wall): simple_elmo {reference['load']:.2f}, ours {load_wall:.2f} (converts the archive)")
    for measure, mine in (("cpu", cpus), ("wall", walls)):
        their_median, our_median = statistics.median(reference[measure]), statistics.median(mine)
        print(
            f"get_elmo_vectors median {measure} s: simple_elmo {their_median:.3f}, ours {our_median:.3f}, "
            f"ratio {their_median / our_median:.2f}x"
        )
    print(f"max |ours - simple_elmo|: {float(np.abs(ours - their_vectors).max()):.2e}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6])
    else:
        main()
