"""Writes tests/compat/data/simple_elmo_reference.npz: what simple_elmo 0.9.2 (bilm-tf on TensorFlow's compat.v1)
computes on the allennlp 0.9.0 wheel's tiny biLM, packed as an NLPL archive (`model.hdf5`, `options.json`), and
the substitutes of the language model of the checkpoint in tests/conversion/data/bilm_tf_checkpoint (`load(...,
full=True)`), for `tests/compat/test_simple_elmo.py` to hold `elmo_transformers.compat.simple_elmo` to, where
TensorFlow is absent.

Run it in a virtual environment of its own (TensorFlow and this package's torch do not share one well); simple_elmo
builds `tf.compat.v1.nn.rnn_cell.LSTMCell`, which TensorFlow 2.16+ has only with Keras 2 (tf-keras):

    python3 -m venv /tmp/venv-tf && /tmp/venv-tf/bin/pip install simple_elmo==0.9.2 tensorflow-cpu tf-keras
    TF_USE_LEGACY_KERAS=1 /tmp/venv-tf/bin/python tests/helpers/make_simple_elmo_reference.py FIXTURE_DIR

FIXTURE_DIR is the allennlp fixtures' `elmo/` folder (`conftest.py` caches it in
~/.cache/elmo-transformers-tests/allennlp-0.9.0-fixtures/elmo). The file it wrote was made with simple_elmo 0.9.2,
tensorflow-cpu 2.21.0, tf-keras 2.21.0, numpy 2.4.6 on Python 3.11. Nothing here imports this package.
"""

from __future__ import annotations

import json
import sys
import tempfile
import zipfile
from pathlib import Path

import numpy as np

# Awkward input: non-ASCII words, a word over 48 bytes (bilm-tf cuts it), an empty-string word, an empty sentence,
# mixed lengths; 8 sentences in batches of 3 (max_batch_size), so that the LSTM state is carried from batch to batch
# (rows 0-2 of each batch continue rows 0-2 of the one before) and the last batch is short.
SENTENCES = [
    ["The", "cat", "sat", "on", "the", "mat", "."],
    ["naïve", "café", "日本語"],
    ["a" * 47 + "é", "😀" * 13, ""],
    [],
    ["One"],
    ["Long", "sentences", "make", "the", "batch", "wider", "than", "the", "others", "in", "it", "."],
    ["Жизнь", "x"],
    ["last", "one"],
]
MAX_BATCH_SIZE = 3
# Strings split at whitespace: words outside the checkpoint's vocabulary, non-ASCII ones, an empty sentence; the
# last ones are still being read when the packing runs out, and are not reported (as simple_elmo drops them).
RAW_SENTENCES = [
    "The cat sat on the mat .",
    "naïve café 日本語",
    "good Why",
    "",
    "One",
    "Detroit over then one James skill",
    "Жизнь x",
    "last one",
]
CHECKPOINT = Path(__file__).resolve().parents[1] / "conversion" / "data" / "bilm_tf_checkpoint"
LAYERS = ("average", "top", "all")
OUTPUT = Path(__file__).resolve().parents[1] / "compat" / "data" / "simple_elmo_reference.npz"


def nlpl_archive(fixture: Path, folder: Path) -> Path:
    """The fixture model as the NLPL repository zips a bilm-tf model: model.hdf5 and options.json at the top."""
    archive = folder / "209.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.write(fixture / "lm_weights.hdf5", "model.hdf5")
        zipped.write(fixture / "options.json", "options.json")
    return archive


def reference_outputs(archive: Path) -> dict[str, np.ndarray]:
    from simple_elmo import ElmoModel

    model = ElmoModel()
    model.load(str(archive), max_batch_size=MAX_BATCH_SIZE)
    outputs = {}
    for layers in LAYERS:
        for warmup in (True, False):
            outputs[f"vectors_{layers}_warmup{int(warmup)}"] = model.get_elmo_vectors(
                SENTENCES, warmup=warmup, layers=layers
            )
        # an empty sentence has no word to average (simple_elmo divides 0 by 0): the rest of the sentences
        words = [sentence for sentence in SENTENCES if sentence]
        outputs[f"average_{layers}"] = model.get_elmo_vector_average(words, layers=layers)
    return outputs


def reference_substitutes() -> list:
    import tensorflow as tf
    from simple_elmo import ElmoModel

    with tf.Graph().as_default():
        model = ElmoModel()
        model.load(f"{CHECKPOINT}/", max_batch_size=MAX_BATCH_SIZE, full=True)
        return model.get_elmo_substitutes(RAW_SENTENCES, topn=3)


def main() -> None:
    fixture = Path(sys.argv[1])
    with tempfile.TemporaryDirectory() as folder:
        outputs = reference_outputs(nlpl_archive(fixture, Path(folder)))
    substitutes = reference_substitutes()
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(
        OUTPUT,
        sentences=np.array(json.dumps(SENTENCES)),
        max_batch_size=np.array(MAX_BATCH_SIZE),
        raw_sentences=np.array(json.dumps(RAW_SENTENCES)),
        substitutes=np.array(json.dumps(substitutes)),
        **outputs,
    )
    print(f"wrote {OUTPUT}: {', '.join(f'{name} {value.shape}' for name, value in outputs.items())}")


if __name__ == "__main__":
    main()
