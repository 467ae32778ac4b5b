"""`elmo_transformers.compat.simple_elmo` against simple_elmo 0.9.2 on TensorFlow: the outputs it computed
(`data/simple_elmo_reference.npz`, written by tests/helpers/make_simple_elmo_reference.py) always, and simple_elmo
itself where it imports. Awkward input (non-ASCII words, a word over 48 bytes, an empty-string word, an empty
sentence, mixed lengths) in batches of 3, so that the LSTM state is carried from batch to batch."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest

from elmo_transformers.common.errors import ConversionError
from elmo_transformers.compat.simple_elmo import LAYER_CHOICES, ElmoModel, tokenize

REFERENCE = np.load(Path(__file__).parent / "data" / "simple_elmo_reference.npz")
SENTENCES = json.loads(str(REFERENCE["sentences"]))
RAW_SENTENCES = json.loads(str(REFERENCE["raw_sentences"]))
BATCH = int(REFERENCE["max_batch_size"])
CHECKPOINT = Path(__file__).parents[1] / "conversion" / "data" / "bilm_tf_checkpoint"
CHECKPOINT_FILES = ("checkpoint", "model.ckpt-1.index", "model.ckpt-1.data-00000-of-00001", "options.json", "vocab.txt")
TOLERANCE = 1e-5  # the target; measured: 1e-6 (get_elmo_vectors), 1e-7 (averages)


@pytest.fixture(scope="module")
def nlpl_zip(elmo_fixture: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny bilm-tf model as the NLPL repository zips one (the reference's input)."""
    archive = tmp_path_factory.mktemp("nlpl") / "209.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.write(elmo_fixture / "lm_weights.hdf5", "model.hdf5")
        zipped.write(elmo_fixture / "options.json", "options.json")
    return archive


@pytest.fixture(scope="module")
def loaded(nlpl_zip: Path) -> ElmoModel:
    model = ElmoModel()
    assert model.load(str(nlpl_zip), max_batch_size=BATCH) == "The model is now loaded."
    return model


@pytest.fixture(scope="module")
def checkpoint_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The checkpoint TensorFlow wrote (tests/conversion/data), alone in its folder, as simple_elmo read it."""
    folder = tmp_path_factory.mktemp("checkpoint")
    for name in CHECKPOINT_FILES:
        shutil.copy(CHECKPOINT / name, folder / name)
    return folder


@pytest.mark.parametrize("layers", LAYER_CHOICES)
@pytest.mark.parametrize("warmup", [True, False])
def test_get_elmo_vectors_matches_simple_elmo(loaded: ElmoModel, layers: str, warmup: bool) -> None:
    ours = loaded.get_elmo_vectors(SENTENCES, warmup=warmup, layers=layers)
    theirs = REFERENCE[f"vectors_{layers}_warmup{int(warmup)}"]
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype == np.float64
    difference = float(np.abs(ours - theirs).max())
    print(f"get_elmo_vectors layers={layers} warmup={warmup}: max |ours - simple_elmo| {difference:.1e}")
    assert difference < TOLERANCE


def test_the_state_and_the_padding_are_simple_elmos(loaded: ElmoModel) -> None:
    """What the reference holds, and a stateless model would not give: warmup changes the first batch, the state
    changes later batches, and a short sentence's positions past its end carry the padding word's token layer."""
    warm, cold = REFERENCE["vectors_average_warmup1"], REFERENCE["vectors_average_warmup0"]
    assert np.abs(warm[0] - cold[0]).max() > 1e-3
    alone = loaded.get_elmo_vectors([SENTENCES[4]], warmup=False)[0]  # sentence 4 is read after batch 0 carried
    assert np.abs(alone - cold[4, : len(SENTENCES[4])]).max() > 1e-3
    words, batch_longest = len(SENTENCES[1]), max(len(sentence) for sentence in SENTENCES[:BATCH])
    assert np.abs(cold[1, words:batch_longest]).sum(axis=-1).min() > 0.1  # the padding word, up to the batch's end
    assert not cold[1, batch_longest:].any()
    assert not REFERENCE["vectors_top_warmup0"][1, words:].any()


@pytest.mark.parametrize("layers", LAYER_CHOICES)
def test_get_elmo_vector_average_matches_simple_elmo(loaded: ElmoModel, layers: str) -> None:
    ours = loaded.get_elmo_vector_average([sentence for sentence in SENTENCES if sentence], layers=layers)
    theirs = REFERENCE[f"average_{layers}"]
    assert ours.shape == theirs.shape
    assert float(np.abs(ours - theirs).max()) < TOLERANCE


def test_get_elmo_substitutes_matches_simple_elmo(checkpoint_folder: Path) -> None:
    """The same sentences reported, in the same order, the same words and candidates in argpartition's order;
    the logits rounded to 4 decimals, so one can differ by a unit of the last place."""
    model = ElmoModel()
    model.load(str(checkpoint_folder), max_batch_size=BATCH, full=True)
    ours = model.get_elmo_substitutes(RAW_SENTENCES, topn=3)
    theirs = json.loads(str(REFERENCE["substitutes"]))
    assert [[word["word"] for word in sentence] for sentence in ours] == [
        [word["word"] for word in sentence] for sentence in theirs
    ]
    for our_sentence, their_sentence in zip(ours, theirs, strict=True):
        for our_word, their_word in zip(our_sentence, their_sentence, strict=True):
            for direction in ("forward", "backward"):
                mine, reference = our_word[direction], their_word[direction]
                assert mine["candidates"] == reference["candidates"]
                assert mine["candidate_words"] == reference["candidate_words"]
                np.testing.assert_allclose(mine["logp"], reference["logp"], atol=1e-4 + 1e-9)
    # full=True loads the language model; its biLM still gives the vectors
    assert model.get_elmo_vectors([["good", "Why"]]).shape == (1, 2, model.vector_size)


def test_every_layout_we_read_loads(nlpl_zip: Path, loaded: ElmoModel, tmp_path: Path) -> None:
    """The unzipped folder, and the archive re-packed one folder down, give the zip's numbers."""
    unzipped = tmp_path / "209"
    with zipfile.ZipFile(nlpl_zip) as archive:
        archive.extractall(unzipped)
    down = tmp_path / "down.zip"
    with zipfile.ZipFile(down, "w") as archive:
        for name in ("model.hdf5", "options.json"):
            archive.write(unzipped / name, f"209/{name}")
    expected = loaded.get_elmo_vectors(SENTENCES)
    for path in (unzipped, down):
        model = ElmoModel()
        model.load(path, max_batch_size=BATCH)
        np.testing.assert_array_equal(model.get_elmo_vectors(SENTENCES), expected)


def test_attributes_are_simple_elmos(loaded: ElmoModel) -> None:
    assert (loaded.batch_size, loaded.max_chars, loaded.vector_size, loaded.n_layers) == (BATCH, 50, 32, 3)


def test_tokenize_is_simple_elmos() -> None:
    assert tokenize("Hello, wörld! 42 times_two ...") == ["Hello", "wörld", "42", "times_two"]
    assert tokenize("a b c", limit=2) == ["a", "b"]
    assert tokenize("") == []


def _one_line(error: pytest.ExceptionInfo) -> str:
    message = str(error.value)
    assert "\n" not in message
    return message


def test_bad_input_is_one_line(loaded: ElmoModel, nlpl_zip: Path, tmp_path: Path) -> None:
    cases = [
        (lambda: loaded.get_elmo_vectors(SENTENCES, layers="bottom"), "layers must be one of average, top, all"),
        (lambda: loaded.get_elmo_vectors(SENTENCES, session=object()), "session= is a TensorFlow session"),
        (lambda: loaded.get_elmo_vectors([]), "texts is empty"),
        (lambda: loaded.get_elmo_vectors(["The cat sat"]), "texts[0] must be a list of words, got str"),
        (lambda: loaded.get_elmo_vectors([["a", None]]), "texts[0] holds None, not a string"),
        (lambda: loaded.get_elmo_vector_average([["a"], []]), "texts[1] has no words"),
        (lambda: loaded.get_elmo_substitutes(RAW_SENTENCES), "get_elmo_substitutes needs the language model"),
        (lambda: ElmoModel().get_elmo_vectors(SENTENCES), "no model is loaded"),
        (lambda: ElmoModel().load(nlpl_zip, max_batch_size=0), "max_batch_size must be a positive integer, got 0"),
        (lambda: ElmoModel().load(nlpl_zip, limit=-1), "limit must be a non-negative integer or None, got -1"),
    ]
    for call, problem in cases:
        with pytest.raises(ValueError) as error:
            call()
        assert problem in _one_line(error)
    with pytest.raises(ConversionError) as error:
        ElmoModel().load(tmp_path / "absent.zip")
    assert _one_line(error) == f"{tmp_path / 'absent.zip'}: no such archive or folder"
    with pytest.raises(ConversionError) as error:
        ElmoModel().load(nlpl_zip, full=True)
    assert "holds a biLM without its softmax" in _one_line(error)


def test_substitutes_need_a_batch_of_sentences(checkpoint_folder: Path) -> None:
    model = ElmoModel()
    model.load(checkpoint_folder, max_batch_size=BATCH, full=True)
    with pytest.raises(ValueError) as error:
        model.get_elmo_substitutes(RAW_SENTENCES[: BATCH - 1])
    assert "needs at least max_batch_size (3) sentences, got 2" in _one_line(error)
    with pytest.raises(ValueError) as error:
        model.get_elmo_substitutes(RAW_SENTENCES, topn=0)
    assert "topn must lie in 1..458" in _one_line(error)


def test_against_simple_elmo_itself(nlpl_zip: Path, loaded: ElmoModel, monkeypatch: pytest.MonkeyPatch) -> None:
    """Live, where simple_elmo imports (it needs TensorFlow; from 2.16 on with tf-keras, TF_USE_LEGACY_KERAS=1)."""
    monkeypatch.setenv("TF_USE_LEGACY_KERAS", "1")  # read when TensorFlow is first imported
    simple_elmo = pytest.importorskip("simple_elmo", reason="simple_elmo (and TensorFlow) not installed here")
    theirs = simple_elmo.ElmoModel()
    try:
        theirs.load(str(nlpl_zip), max_batch_size=BATCH)
    except AttributeError as error:  # `LSTMCell` is not available with Keras 3
        pytest.skip(f"simple_elmo cannot build its graph on this TensorFlow ({error}): pip install tf-keras")
    for layers in LAYER_CHOICES:
        expected = theirs.get_elmo_vectors(SENTENCES, layers=layers)
        assert float(np.abs(loaded.get_elmo_vectors(SENTENCES, layers=layers) - expected).max()) < TOLERANCE
