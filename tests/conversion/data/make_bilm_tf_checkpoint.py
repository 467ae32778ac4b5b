"""Write tests/conversion/data/bilm_tf_checkpoint/: a bilm-tf training checkpoint of the allennlp 0.9.0 fixture biLM,
written by TensorFlow itself, for `elmo-convert bilm-tf-checkpoint` and its checkpoint reader.

TensorFlow is needed only to regenerate these files, never by the tests. To regenerate (any scratch venv
outside the repository; tf-keras provides the TF1 `LSTMCell` that bilm-tf used):

    python -m venv /tmp/tfvenv
    /tmp/tfvenv/bin/pip install tensorflow-cpu==2.21.0 tf-keras==2.21.0 numpy h5py
    /tmp/tfvenv/bin/python tests/conversion/data/make_bilm_tf_checkpoint.py \\
        --fixture ~/.cache/elmo-transformers-tests/allennlp-0.9.0-fixtures/elmo

(the fixture folder is the one tests/conftest.py caches from the allennlp 0.9.0 wheel). The output is the
same on every run except the bytes TensorFlow itself varies (none, with TensorFlow 2.21).

What it writes into tests/conversion/data/bilm_tf_checkpoint/:
- model.ckpt-1.index, model.ckpt-1.data-00000-of-00001, checkpoint: what bilm-tf's `train` saves. The
  variables are created the way bilm-tf's training.py creates them (`tf.get_variable` under `lm/CNN`,
  `lm/CNN_high_k`, `lm/CNN_proj`; real TF1 `LSTMCell(num_proj=...)` cells in a `MultiRNNCell` run by
  `static_rnn` under `lm/RNN_d`; `lm/softmax/{W, b}`; `global_step` and `train_perplexity` outside `lm`),
  so TensorFlow chooses the LSTM variable names. The biLM holds the fixture's lm_weights.hdf5; the softmax
  is seeded random. One real `AdagradOptimizer(0.2, initial_accumulator_value=1.0)` step creates the
  `.../Adagrad` slots and advances `global_step` to 1; its gradient is random for the softmax and zero
  elsewhere, so the biLM keeps the fixture weights exactly and its accumulators keep their initial 1.0
  (constant, so git stores them nearly for free while the softmax slots still hold real values).
  The MetaGraph (model.ckpt-1.meta) is not kept: only the TensorBundle is read.
- options.json: the fixture's options plus the training keys bilm-tf's `train` writes (n_characters 261
  as bilm-tf trains, n_tokens_vocab = V).
- vocab.txt: `<S>`, `</S>`, `<UNK>`, then the other words of the fixture's vocab_test.txt in file order
  (V = 458 lines, no trailing newline, as vocab_test.txt).
- softmax_W.npy (V, 16) and softmax_b.npy (V,): the softmax as saved (after the Adagrad step), float32.
- two_shards/: a second, tiny checkpoint saved by `Saver(sharded=True)` from two CPU devices, with
  float32, float64, int32 and int64 variables (values in two_shards/expected.npz): the reader's test of
  data split over several `.data-0000i-of-00002` files and of the non-float dtypes.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
from pathlib import Path

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")  # the TF1 rnn_cell classes live in tf-keras under Keras 3
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import h5py
import numpy as np
import tensorflow as tf

v1 = tf.compat.v1
SPECIALS = ["<S>", "</S>", "<UNK>"]
SOFTMAX_SEED = 20180215
OUTPUT = Path(__file__).resolve().parent / "bilm_tf_checkpoint"

# What bilm-tf's `train` adds to the model options before writing options.json: its README's example values,
# except for fewer sampled-softmax candidates than the V = 458 words (bilm-tf's sampler needs fewer than V).
TRAINING_OPTIONS = {
    "bidirectional": True,
    "dropout": 0.1,
    "all_clip_norm_val": 10.0,
    "n_epochs": 10,
    "n_train_tokens": 768648884,
    "batch_size": 128,
    "unroll_steps": 20,
    "n_negative_samples_batch": 128,
}


def hdf5_name(variable: str) -> str:
    """bilm-tf's `dump_weights` naming (training.py `_get_outname`): checkpoint variable -> hdf5 dataset."""
    name = re.sub(":0$", "", variable).removeprefix("lm/")
    for tf_part, hdf5_part in (
        ("/rnn/", "/RNN/"),
        ("/multi_rnn_cell/", "/MultiRNNCell/"),
        ("/cell_", "/Cell"),
        ("/lstm_cell/", "/LSTMCell/"),
    ):
        name = name.replace(tf_part, hdf5_part)
    if "/RNN/" in name:
        name = name.replace("projection/kernel", "W_P_0").replace("/kernel", "/W_0").replace("/bias", "/B")
    return name


def read_fixture(folder: Path) -> tuple[dict, dict[str, np.ndarray], list[str]]:
    options = json.loads((folder / "options.json").read_text())
    with h5py.File(folder / "lm_weights.hdf5", "r") as file:
        weights: dict[str, np.ndarray] = {}
        file.visititems(
            lambda name, item: weights.update({name: item[...]}) if isinstance(item, h5py.Dataset) else None
        )
    words = (folder / "vocab_test.txt").read_text(encoding="utf-8").split("\n")
    vocabulary = SPECIALS + [word for word in words if word not in SPECIALS]
    return options, weights, vocabulary


def build_bilm_variables(options: dict, vocab_size: int) -> None:
    """Create the variables of bilm-tf's `LanguageModel` (char CNN inputs, bidirectional) under the scope `lm`."""
    cnn, lstm = options["char_cnn"], options["lstm"]
    filters, embedding_dim = cnn["filters"], cnn["embedding"]["dim"]
    n_filters, projection = sum(count for _, count in filters), lstm["projection_dim"]
    v1.get_variable("char_embed", [261, embedding_dim], dtype=tf.float32)
    with v1.variable_scope("CNN"):
        for index, (width, count) in enumerate(filters):
            v1.get_variable(f"W_cnn_{index}", [1, width, embedding_dim, count], dtype=tf.float32)
            v1.get_variable(f"b_cnn_{index}", [count], dtype=tf.float32)
    with v1.variable_scope("CNN_proj"):
        v1.get_variable("W_proj", [n_filters, projection], dtype=tf.float32)
        v1.get_variable("b_proj", [projection], dtype=tf.float32)
    for index in range(cnn["n_highway"]):
        with v1.variable_scope(f"CNN_high_{index}"):
            for name, shape in (
                ("W_carry", [n_filters, n_filters]),
                ("b_carry", [n_filters]),
                ("W_transform", [n_filters, n_filters]),
                ("b_transform", [n_filters]),
            ):
                v1.get_variable(name, shape, dtype=tf.float32)
    lstm_input = v1.placeholder(tf.float32, [1, 2, projection])
    for direction in range(2):
        cells = []
        for layer in range(lstm["n_layers"]):
            cell = v1.nn.rnn_cell.LSTMCell(
                lstm["dim"], num_proj=projection, cell_clip=lstm["cell_clip"], proj_clip=lstm["proj_clip"]
            )
            cells.append(v1.nn.rnn_cell.ResidualWrapper(cell) if layer and lstm["use_skip_connections"] else cell)
        cell = v1.nn.rnn_cell.MultiRNNCell(cells)
        with v1.variable_scope(f"RNN_{direction}"):
            v1.nn.static_rnn(cell, tf.unstack(lstm_input, axis=1), initial_state=cell.zero_state(1, tf.float32))
    with v1.variable_scope("softmax"):
        v1.get_variable("W", [vocab_size, projection], dtype=tf.float32)
        v1.get_variable("b", [vocab_size], dtype=tf.float32)


def write_bilm_checkpoint(fixture: Path, output: Path) -> None:
    options, weights, vocabulary = read_fixture(fixture)
    vocab_size, projection = len(vocabulary), options["lstm"]["projection_dim"]
    rng = np.random.default_rng(SOFTMAX_SEED)
    values = dict(weights)
    # bilm-tf's softmax initialisation scale; the bias random too, as after training.
    values["softmax/W"] = (rng.standard_normal((vocab_size, projection)) / np.sqrt(projection)).astype(np.float32)
    values["softmax/b"] = (rng.standard_normal(vocab_size) * 0.1).astype(np.float32)
    softmax_gradients = {
        "softmax/W": rng.standard_normal((vocab_size, projection)).astype(np.float32),
        "softmax/b": rng.standard_normal(vocab_size).astype(np.float32),
    }
    graph = tf.Graph()
    with graph.as_default():
        global_step = v1.get_variable("global_step", [], initializer=v1.constant_initializer(0), trainable=False)
        v1.get_variable("train_perplexity", [], initializer=v1.constant_initializer(0.0), trainable=False)
        with v1.variable_scope("lm"):
            build_bilm_variables(options, vocab_size)
        model_variables = {hdf5_name(variable.name): variable for variable in v1.trainable_variables()}
        if set(model_variables) != set(values):
            raise AssertionError(f"variables {sorted(model_variables)} != values {sorted(values)}")
        gradients = [
            (tf.constant(softmax_gradients.get(name, np.zeros(variable.shape, np.float32))), variable)
            for name, variable in model_variables.items()
        ]
        optimizer = v1.train.AdagradOptimizer(learning_rate=0.2, initial_accumulator_value=1.0)
        train_op = optimizer.apply_gradients(gradients, global_step=global_step)
        assignments = [variable.assign(values[name]) for name, variable in model_variables.items()]
        saver = v1.train.Saver(v1.global_variables(), max_to_keep=2, save_relative_paths=True)
        with v1.Session(graph=graph) as session:
            session.run(v1.global_variables_initializer())
            session.run(assignments)
            session.run(train_op)
            saved = session.run(model_variables)
            for name, array in weights.items():  # a zero gradient leaves a weight exactly as it was
                np.testing.assert_array_equal(saved[name], array, err_msg=name)
            output.mkdir(parents=True, exist_ok=True)
            saver.save(session, str(output / "model.ckpt"), global_step=global_step, write_meta_graph=False)
    np.save(output / "softmax_W.npy", saved["softmax/W"])
    np.save(output / "softmax_b.npy", saved["softmax/b"])
    options = json.loads(json.dumps(options))
    options["char_cnn"]["n_characters"] = 261
    options.update(TRAINING_OPTIONS, n_tokens_vocab=vocab_size)
    (output / "options.json").write_text(json.dumps(options))  # one line, as bilm-tf writes it
    (output / "vocab.txt").write_text("\n".join(vocabulary), encoding="utf-8")


SHARDED_VALUES = {
    "on_cpu0/weights": np.arange(12, dtype=np.float32).reshape(3, 4) / 8,
    "on_cpu0/counts": np.array([1, -2, 3], dtype=np.int64) * (1 << 40),
    "on_cpu1/double": np.linspace(-1, 1, 5, dtype=np.float64),
    "on_cpu1/ids": np.array([[7, -8], [9, 10]], dtype=np.int32),
    "on_cpu1/scalar": np.float32(2.5),
}


def write_two_shards(output: Path) -> None:
    """A `Saver(sharded=True)` checkpoint: one data file per device holding variables."""
    graph = tf.Graph()
    with graph.as_default():
        variables = {}
        for name, value in SHARDED_VALUES.items():
            with tf.device(f"/cpu:{name[len('on_cpu')]}"):
                variables[name] = v1.get_variable(name, initializer=tf.constant(value))
        saver = v1.train.Saver(sharded=True, save_relative_paths=True)
        config = v1.ConfigProto(device_count={"CPU": 2})
        with v1.Session(graph=graph, config=config) as session:
            session.run(v1.global_variables_initializer())
            output.mkdir(parents=True, exist_ok=True)
            saver.save(session, str(output / "model.ckpt"), write_meta_graph=False)
    np.savez(output / "expected.npz", **{name.replace("/", "."): value for name, value in SHARDED_VALUES.items()})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fixture", type=Path, required=True, help="allennlp 0.9.0's tests/fixtures/elmo folder")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args()
    v1.disable_eager_execution()
    shutil.rmtree(args.output, ignore_errors=True)
    write_bilm_checkpoint(args.fixture.expanduser(), args.output)
    write_two_shards(args.output / "two_shards")
    for path in sorted(args.output.rglob("*")):
        if path.is_file():
            print(f"{path.stat().st_size:>9,}  {path.relative_to(args.output)}")


if __name__ == "__main__":
    main()
