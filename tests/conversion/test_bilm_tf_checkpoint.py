"""`elmo-convert bilm-tf-checkpoint` and the TensorFlow checkpoint reader, against a checkpoint TensorFlow wrote.

data/bilm_tf_checkpoint/ beside this file (made by data/make_bilm_tf_checkpoint.py, which says how to regenerate
it) holds a bilm-tf training checkpoint of the allennlp fixture biLM with a seeded random softmax, Adagrad slots,
global_step and train_perplexity, saved by TensorFlow 2.21's `tf.compat.v1.train.Saver`. TensorFlow is not
needed here.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from huggingface_hub import ModelCard
from transformers import AutoModel, AutoModelForPreTraining, AutoTokenizer

from elmo_transformers.common.checksums import file_sha256
from elmo_transformers.common.errors import ConversionError
from elmo_transformers.common.options_json import config_from_options
from elmo_transformers.conversion import tf_crc32c
from elmo_transformers.conversion.allennlp_hdf5 import weight_mappings
from elmo_transformers.conversion.bilm_tf_checkpoint import tf_variable_name
from elmo_transformers.conversion.cli import main
from elmo_transformers.conversion.tf_checkpoint import list_tf_checkpoint, read_tf_checkpoint, resolve_checkpoint_prefix
from elmo_transformers.conversion.tf_crc32c import crc32c
from elmo_transformers.conversion.tf_sstable import block_entries, decode_block_handle, read_block, table_entries
from modeling_elmo import ElmoForBidirectionalLM, ElmoModel

DATA = Path(__file__).parent / "data" / "bilm_tf_checkpoint"
PREFIX = DATA / "model.ckpt-1"
DATA_FILE = DATA / "model.ckpt-1.data-00000-of-00001"
VOCAB_SIZE = 458


def _convert(capsys: pytest.CaptureFixture, folder: Path, output: Path, *extra: str, **files: Path) -> tuple[int, str]:
    """Run the command on the checkpoint in `folder`; returns the exit code and the last line of any error."""
    paths = {"checkpoint": folder, "options": folder / "options.json", "vocab": folder / "vocab.txt", **files}
    arguments = [f"--{name}={path}" for name, path in paths.items()]
    code = main(["bilm-tf-checkpoint", *arguments, f"--output={output}", *extra])
    return code, capsys.readouterr().err.strip().splitlines()[-1] if code else ""


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    output = tmp_path_factory.mktemp("bilm-tf") / "elmo-lm"
    arguments = ["--checkpoint", PREFIX, "--options", DATA / "options.json", "--vocab", DATA / "vocab.txt"]
    assert main(["bilm-tf-checkpoint", *map(str, arguments), "--output", str(output)]) == 0
    return output


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    """A copy of the checkpoint folder, to damage."""
    return Path(shutil.copytree(DATA, tmp_path / "checkpoint"))


def test_bilm_equals_the_hdf5_route_bit_for_bit(converted: Path, fixture_model_folder: Path) -> None:
    from_hdf5 = ElmoModel.from_pretrained(fixture_model_folder).state_dict()
    from_checkpoint = ElmoForBidirectionalLM.from_pretrained(converted).elmo.state_dict()
    assert set(from_checkpoint) == set(from_hdf5)
    for name, tensor in from_hdf5.items():
        assert torch.equal(from_checkpoint[name], tensor), name


def test_softmax_is_the_one_tensorflow_saved(converted: Path) -> None:
    model = ElmoForBidirectionalLM.from_pretrained(converted)
    weight = np.load(DATA / "softmax_W.npy", allow_pickle=False)
    bias = np.load(DATA / "softmax_b.npy", allow_pickle=False)
    assert weight.shape == (VOCAB_SIZE, 16) and bias.shape == (VOCAB_SIZE,)
    assert torch.equal(model.softmax.weight, torch.from_numpy(weight))
    assert torch.equal(model.softmax.bias, torch.from_numpy(bias))
    assert model.config.vocab_size == VOCAB_SIZE


def test_folder_loads_as_language_model_and_as_bilm(converted: Path) -> None:
    language_model = AutoModelForPreTraining.from_pretrained(converted)
    bilm = AutoModel.from_pretrained(converted)
    assert type(language_model) is ElmoForBidirectionalLM and type(bilm) is ElmoModel
    bilm_tensors = bilm.state_dict()
    assert bilm_tensors.keys() == language_model.elmo.state_dict().keys()
    for name, tensor in language_model.elmo.state_dict().items():
        assert torch.equal(bilm_tensors[name], tensor), name
    assert (converted / "vocab.txt").read_bytes() == (DATA / "vocab.txt").read_bytes()
    options = json.loads((DATA / "options.json").read_text())
    assert language_model.config.dropout == options["dropout"]
    assert language_model.config.training_options["n_negative_samples_batch"] == options["n_negative_samples_batch"]


def _full_softmax_losses(hidden: np.ndarray, targets: list[int]) -> np.ndarray:
    """Negative log-likelihood of each target word `(tokens,)` for top-layer vectors `(tokens, P)`, in float64 from
    the softmax TensorFlow saved."""
    weight = np.load(DATA / "softmax_W.npy", allow_pickle=False).astype(np.float64)
    bias = np.load(DATA / "softmax_b.npy", allow_pickle=False).astype(np.float64)
    logits = hidden.astype(np.float64) @ weight.T + bias
    top = logits.max(axis=-1)
    log_normaliser = top + np.log(np.exp(logits - top[:, None]).sum(axis=-1))
    return log_normaliser - logits[np.arange(len(targets)), targets]


def test_language_model_loss_is_the_checkpoints_softmax_over_the_bilm(converted: Path) -> None:
    """Two sentences of vocabulary words as one window per direction: `<S> w1 ... w6` predicting `w1 ... w6 </S>`
    and `</S> w6 ... w1` predicting `w6 ... w1 <S>`. After reading word j the forward LSTM's top layer is the
    biLM's forward half at word j (predicting w(j+1), or </S> after w6), the backward LSTM's its backward half
    (predicting w(j-1), or <S> before w1): the language model's token losses there are the float64 full softmax
    of the checkpoint's W and b over those vectors. (The first position, reading only the marker, has no word of
    the biLM's output to compare with.)"""
    language_model = ElmoForBidirectionalLM.from_pretrained(converted).eval()
    bilm = ElmoModel.from_pretrained(converted).eval()
    tokenizer = AutoTokenizer.from_pretrained(converted)
    vocabulary = (DATA / "vocab.txt").read_text().split("\n")
    rng = random.Random(0)
    ids = [rng.sample(range(3, VOCAB_SIZE), 6) for _ in range(2)]  # past <S>, </S>, <UNK>
    sentences = [[vocabulary[i] for i in row] for row in ids]
    bos, eos = vocabulary.index("<S>"), vocabulary.index("</S>")

    def char_ids(rows: list[list[str]]) -> torch.Tensor:
        return torch.tensor([[tokenizer.word_char_ids(word) for word in row] for row in rows])

    forward_ids = char_ids([["<S>", *words] for words in sentences])
    backward_ids = char_ids([["</S>", *reversed(words)] for words in sentences])
    labels = torch.tensor([[*row, eos] for row in ids])
    backward_labels = torch.tensor([[*reversed(row), bos] for row in ids])
    with torch.no_grad():
        output = language_model(forward_ids, backward_ids, labels=labels, backward_labels=backward_labels)
        top = bilm(**tokenizer(sentences, is_split_into_words=True, return_tensors="pt")).last_hidden_state.numpy()
    forward_losses, backward_losses = output.forward_token_losses.view(2, 7), output.backward_token_losses.view(2, 7)
    for row in range(2):
        forward, backward = top[row, :, :16], top[row, :, 16:]
        expected_forward = _full_softmax_losses(forward, labels[row, 1:].tolist())
        expected_backward = _full_softmax_losses(backward, [bos, *ids[row][:-1]])  # word j predicts w(j-1)
        np.testing.assert_allclose(forward_losses[row, 1:].numpy(), expected_forward, rtol=0, atol=1e-5)
        np.testing.assert_allclose(backward_losses[row, 1:].flip(0).numpy(), expected_backward, rtol=0, atol=1e-5)
    halves = (forward_losses.mean(), backward_losses.mean())
    assert output.loss.item() == pytest.approx(0.5 * (halves[0] + halves[1]).item(), abs=1e-6)


def test_model_page_names_the_checkpoint_and_the_parity(converted: Path) -> None:
    card = ModelCard.load(converted / "README.md")
    index, data = PREFIX.with_name("model.ckpt-1.index"), DATA_FILE
    assert card.data.source_weights == [
        {"file": index.name, "sha256": file_sha256(index)},
        {"file": data.name, "sha256": file_sha256(data)},
    ]
    assert card.data.source_options == {"file": "options.json", "sha256": file_sha256(DATA / "options.json")}
    assert 0 < card.data.parity_max_abs_difference < 5e-6
    assert "the bilm-tf training checkpoint model.ckpt-1" in card.text
    assert f"{card.data.parity_max_abs_difference:.2e}" in card.text


def test_summary_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert _convert(capsys, DATA, tmp_path / "lm", checkpoint=PREFIX)[0] == 0
    summary = capsys.readouterr().out
    assert summary.startswith(f"Converted {PREFIX} (")
    assert "max |float32 - float64 source| at any layer:" in summary
    assert summary.rstrip().endswith(f"with its softmax of {VOCAB_SIZE} words and vocab.txt")


def test_reader_lists_every_variable_with_its_slots_and_global_step() -> None:
    entries = list_tf_checkpoint(PREFIX)
    model_variables = [name for name in entries if name.startswith("lm/") and not name.endswith("/Adagrad")]
    config = config_from_options(json.loads((DATA / "options.json").read_text()))
    assert len(model_variables) == len(weight_mappings(config)) + 2 == 35  # the hdf5's datasets + softmax W and b
    slots = {f"{variable}/Adagrad" for variable in model_variables}
    assert set(entries) == {*model_variables, *slots, "global_step", "train_perplexity"}
    assert entries["global_step"].dtype == "float32" and entries["global_step"].shape == ()  # bilm-tf's own dtype
    assert entries["lm/softmax/W"].shape == (VOCAB_SIZE, 16)
    tensors = read_tf_checkpoint(PREFIX, ["global_step", "lm/CNN/W_cnn_4/Adagrad", "lm/softmax/W/Adagrad"])
    assert tensors["global_step"] == 1.0
    # The one Adagrad step had a zero gradient except at the softmax: initial accumulator 1 there, 1 + g^2 here.
    assert (tensors["lm/CNN/W_cnn_4/Adagrad"] == 1.0).all()
    accumulator = tensors["lm/softmax/W/Adagrad"]
    assert (accumulator >= 1.0).all() and (accumulator > 1.0).mean() > 0.99
    assert len(read_tf_checkpoint(PREFIX)) == len(entries)  # every tensor here is numeric


def test_prefix_from_the_folder_or_either_file() -> None:
    for path in (DATA, PREFIX, DATA / "model.ckpt-1.index", DATA_FILE):
        assert resolve_checkpoint_prefix(path) == PREFIX


def test_prefix_of_a_moved_training_folder(copy: Path) -> None:
    """TensorFlow may record an absolute path in the `checkpoint` file; the folder may have moved since."""
    (copy / "checkpoint").write_text('model_checkpoint_path: "/elsewhere/train/model.ckpt-1"\n')
    assert resolve_checkpoint_prefix(copy) == copy / "model.ckpt-1"


def test_compressed_index_blocks_are_refused(copy: Path) -> None:
    index = copy / "model.ckpt-1.index"
    table = bytearray(index.read_bytes())
    footer = bytes(table[-48:])  # the footer's second block handle locates the index block
    _, position = decode_block_handle(footer, 0, 40)
    index_handle, _ = decode_block_handle(footer, position, 40)
    index_block = read_block(bytes(table), index_handle, "index block")
    ((_, handle),) = block_entries(index_block, "index block")  # one data block
    (offset, size), _ = decode_block_handle(handle, 0, len(handle))
    assert offset == 0
    table[size] = 1  # the block trailer's compression type: Snappy, with a checksum that matches it
    crc = crc32c(bytes(table[: size + 1]))
    masked = (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF
    table[size + 1 : size + 5] = masked.to_bytes(4, "little")
    index.write_bytes(bytes(table))
    with pytest.raises(ConversionError, match="data block at byte 0 is Snappy-compressed, which this reader does not"):
        list_tf_checkpoint(copy)


def test_reader_joins_shards_and_reads_other_dtypes() -> None:
    folder = DATA / "two_shards"
    entries = list_tf_checkpoint(folder)
    assert {entry.shard_id for entry in entries.values()} == {0, 1}
    tensors = read_tf_checkpoint(folder)
    with np.load(folder / "expected.npz", allow_pickle=False) as expected:
        assert set(tensors) == {name.replace(".", "/") for name in expected.files}
        for name in expected.files:
            actual = tensors[name.replace(".", "/")]
            assert actual.dtype == expected[name].dtype and actual.shape == expected[name].shape, name
            np.testing.assert_array_equal(actual, expected[name])


def _bitwise_crc32c(data: bytes) -> int:
    register = 0xFFFFFFFF
    for byte in data:
        register ^= byte
        for _ in range(8):
            register = (register >> 1) ^ (0x82F63B78 if register & 1 else 0)
    return register ^ 0xFFFFFFFF


def test_crc32c(monkeypatch: pytest.MonkeyPatch) -> None:
    assert crc32c(b"") == 0 and crc32c(b"123456789") == 0xE3069283  # the standard check value
    rng = random.Random(5)
    samples = [bytes(rng.getrandbits(8) for _ in range(size)) for size in (1, 63, 64, 65, 1000, 3001)]
    # Small lanes and pieces make the short samples go through the lane joining and the piece chaining.
    for lanes, piece in ((1 << 16, 1 << 26), (4, 100), (8, 7)):
        monkeypatch.setattr(tf_crc32c, "_MAX_LANES", lanes)
        monkeypatch.setattr(tf_crc32c, "_MIN_LANE_BYTES", 2)
        monkeypatch.setattr(tf_crc32c, "_PIECE_BYTES", piece)
        for sample in samples:
            assert crc32c(sample) == _bitwise_crc32c(sample), (len(sample), lanes, piece)


def _dump_weights_name(variable: str) -> str:
    """bilm-tf's `_get_outname` (training.py), written out again here to check `tf_variable_name` against it."""
    name = variable.removeprefix("lm/")
    renames = {"/rnn/": "/RNN/", "/multi_rnn_cell/": "/MultiRNNCell/", "/cell_": "/Cell", "/lstm_cell/": "/LSTMCell/"}
    for tf_part, hdf5_part in renames.items():
        name = name.replace(tf_part, hdf5_part)
    if "/RNN/" in name:
        name = name.replace("projection/kernel", "W_P_0").replace("/kernel", "/W_0").replace("/bias", "/B")
    return name


def test_tf_variable_names_invert_dump_weights() -> None:
    config = config_from_options(json.loads((DATA / "options.json").read_text()))
    for mapping in weight_mappings(config):
        assert _dump_weights_name(tf_variable_name(mapping.dataset, config.num_hidden_layers)) == mapping.dataset
    # A one-layer bilm-tf model has no MultiRNNCell around its cell.
    one_layer = tf_variable_name("RNN_1/RNN/MultiRNNCell/Cell0/LSTMCell/W_P_0", 1)
    assert one_layer == "lm/RNN_1/rnn/lstm_cell/projection/kernel"


def test_options_without_n_tokens_vocab_take_the_softmax_size(copy: Path, tmp_path: Path, capsys) -> None:
    options = json.loads((copy / "options.json").read_text())
    del options["n_tokens_vocab"]
    (copy / "options.json").write_text(json.dumps(options))
    code, _ = _convert(capsys, copy, tmp_path / "out")
    assert code == 0
    assert json.loads((tmp_path / "out" / "config.json").read_text())["vocab_size"] == VOCAB_SIZE


def test_existing_output_is_refused_then_replaced_with_overwrite(tmp_path: Path, capsys) -> None:
    output = tmp_path / "out"
    output.mkdir()
    (output / "keep.txt").write_text("mine")
    code, error = _convert(capsys, DATA, output)
    assert code == 2 and "already exists" in error and "--overwrite" in error
    assert (output / "keep.txt").read_text() == "mine"
    assert _convert(capsys, DATA, output, "--overwrite")[0] == 0
    assert (output / "model.safetensors").is_file() and not (output / "keep.txt").exists()
    assert [path.name for path in tmp_path.iterdir()] == ["out"], "no temporary leftovers"


def test_missing_data_shard(copy: Path, tmp_path: Path, capsys) -> None:
    (copy / DATA_FILE.name).unlink()
    code, error = _convert(capsys, copy, tmp_path / "out")
    assert code == 2 and f"{DATA_FILE.name}: no such data shard" in error and "holding tensor lm/" in error
    assert not (tmp_path / "out").exists()


def test_truncated_index(copy: Path, tmp_path: Path, capsys) -> None:
    index = copy / "model.ckpt-1.index"
    index.write_bytes(index.read_bytes()[:1000])
    code, error = _convert(capsys, copy, tmp_path / "out")
    assert code == 2 and "model.ckpt-1.index: not a readable TensorFlow checkpoint index" in error
    assert "truncated" in error


def test_truncated_data_file_names_the_tensor(copy: Path, capsys) -> None:
    data_file = copy / DATA_FILE.name
    entry = list_tf_checkpoint(copy)["lm/softmax/W"]
    data_file.write_bytes(data_file.read_bytes()[: entry.offset + 100])
    with pytest.raises(ConversionError, match=r"tensor lm/softmax/W lies at bytes .* it is truncated"):
        read_tf_checkpoint(copy, ["lm/softmax/W"])


def test_corrupt_bytes_fail_the_checksums(copy: Path) -> None:
    data_file, index = copy / DATA_FILE.name, copy / "model.ckpt-1.index"
    entry = list_tf_checkpoint(copy)["lm/softmax/b"]
    data = bytearray(data_file.read_bytes())
    data[entry.offset + 7] ^= 0x10
    data_file.write_bytes(bytes(data))
    with pytest.raises(ConversionError, match=r"tensor lm/softmax/b fails its checksum .* the file is corrupt"):
        read_tf_checkpoint(copy, ["lm/softmax/b"])
    table = bytearray(index.read_bytes())
    table[200] ^= 0x01  # inside the data block of tensor entries
    index.write_bytes(bytes(table))
    with pytest.raises(ConversionError, match="data block at byte 0 fails its checksum"):
        list_tf_checkpoint(copy)


def test_missing_index(tmp_path: Path) -> None:
    with pytest.raises(ConversionError, match=r"model.ckpt-2.index: no such checkpoint index \(found model.ckpt-1"):
        list_tf_checkpoint(DATA / "model.ckpt-2")
    with pytest.raises(ConversionError, match="without TensorFlow's 'checkpoint' file"):
        list_tf_checkpoint(tmp_path)


def test_vocabulary_of_another_size(copy: Path, tmp_path: Path, capsys) -> None:
    vocab = tmp_path / "short.txt"
    vocab.write_text("\n".join((DATA / "vocab.txt").read_text().split("\n")[:-1]))
    code, error = _convert(capsys, copy, tmp_path / "out", vocab=vocab)
    assert code == 2 and "has 457 words, but the softmax (lm/softmax/W) has 458 rows" in error


def test_vocabulary_without_the_special_words_first(copy: Path, tmp_path: Path, capsys) -> None:
    words = (DATA / "vocab.txt").read_text().split("\n")
    vocab = tmp_path / "swapped.txt"
    vocab.write_text("\n".join([words[1], words[0], *words[2:]]))
    code, error = _convert(capsys, copy, tmp_path / "out", vocab=vocab)
    assert code == 2 and "starts with the lines <S>, </S>, <UNK>" in error and "starts with </S>, <S>, <UNK>" in error


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda options: options["lstm"].update(dim=32),
            "lm/RNN_0/rnn/multi_rnn_cell/cell_0/lstm_cell/kernel has shape (32, 256), the options imply (32, 128)",
        ),
        (
            lambda options: options.update(n_tokens_vocab=500),
            "tensor lm/softmax/W has shape (458, 16), the options imply (500, 16)",
        ),
        (
            lambda options: options["char_cnn"].update(n_highway=1),
            "tensor lm/CNN_high_1/W_carry is not described by the options (and 3 more)",
        ),
        (
            lambda options: options["lstm"].update(n_layers=3),
            "tensor lm/RNN_0/rnn/multi_rnn_cell/cell_2/lstm_cell/kernel is missing (and 5 more)",
        ),
    ],
)
def test_options_that_do_not_match_the_checkpoint(copy: Path, tmp_path: Path, capsys, change, message: str) -> None:
    options = json.loads((copy / "options.json").read_text())
    change(options)
    (copy / "options.json").write_text(json.dumps(options))
    code, error = _convert(capsys, copy, tmp_path / "out")
    assert code == 2 and message in error and "model.ckpt-1.index" in error


def test_help_has_an_example() -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "elmo_transformers.conversion.cli", "bilm-tf-checkpoint", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "elmo-convert bilm-tf-checkpoint --checkpoint" in completed.stdout and "--overwrite" in completed.stdout


def _varint(number: int) -> bytes:
    out = bytearray()
    while True:
        out.append((number & 0x7F) | (0x80 if number > 0x7F else 0))
        number >>= 7
        if not number:
            return bytes(out)


def _block(entries: list[tuple[bytes, bytes]]) -> bytes:
    """An uncompressed SSTable block holding every key whole (one restart point), with its trailer."""
    body = b"".join(_varint(0) + _varint(len(key)) + _varint(len(value)) + key + value for key, value in entries)
    body += (0).to_bytes(4, "little") + (1).to_bytes(4, "little")
    crc = crc32c(body + b"\x00")
    masked = (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF
    return body + b"\x00" + masked.to_bytes(4, "little")


def _table(entries: list[tuple[bytes, bytes]], data_block_size: int | None = None) -> bytes:
    """An SSTable of one data block holding `entries`, then the index block and the footer, as TensorFlow lays
    them out; `data_block_size` is the size the index gives the data block (by default its true size)."""
    data = _block(entries)
    size = len(data) - 5 if data_block_size is None else data_block_size
    index = _block([(entries[-1][0], _varint(0) + _varint(size))])
    handles = _varint(0) + _varint(0) + _varint(len(data)) + _varint(len(index) - 5)
    return data + index + handles.ljust(40, b"\x00") + (0xDB4775248B80FB57).to_bytes(8, "little")


def test_an_index_with_a_tensor_name_twice_is_refused(copy: Path) -> None:
    index = copy / "model.ckpt-1.index"
    entries = table_entries(index.read_bytes())
    index.write_bytes(_table(entries))
    assert set(list_tf_checkpoint(copy)) == set(list_tf_checkpoint(DATA)), "the rebuilt index reads as the original"
    twice = next(position for position, (key, _) in enumerate(entries) if key == b"lm/softmax/W")
    index.write_bytes(_table([*entries[: twice + 1], *entries[twice:]]))
    with pytest.raises(ConversionError, match="the key 'lm/softmax/W' appears twice") as refusal:
        list_tf_checkpoint(copy)
    assert "model.ckpt-1.index: not a readable TensorFlow checkpoint index" in str(refusal.value)


def test_a_block_handle_into_the_footer_is_refused(copy: Path) -> None:
    """The data block's handle reaches 10 bytes into the 48-byte footer: refused as running past the blocks, before
    any checksum is read from the footer's bytes."""
    index = copy / "model.ckpt-1.index"
    entries = table_entries(index.read_bytes())
    blocks = len(_table(entries)) - 48
    index.write_bytes(_table(entries, data_block_size=blocks + 10 - 5))
    assert len(index.read_bytes()) == blocks + 48, "the handle's varints kept their length"
    with pytest.raises(ConversionError, match=f"data block \\(bytes 0 to {blocks + 10}\\) runs past the blocks, which"):
        list_tf_checkpoint(copy)
