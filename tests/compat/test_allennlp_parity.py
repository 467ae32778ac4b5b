"""compat.allennlp against AllenNLP 0.9.0's own modules, imported in this process from its wheel
(`allennlp_in_process.py`): the same vectors call after call with the LSTM state carried through batches of
changing sizes and lengths (1e-6), the same `Elmo` outputs (mixes, layer norm, 4-D inputs, kept boundaries), and a
state dict that AllenNLP's `Elmo` saved inside a model loading into one holding ours, with AllenNLP's outputs."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
import torch
from awkward_words import AWKWARD_WORDS
from original_files import small_options, write_original_model

from elmo_transformers.compat import allennlp as compat

# The bilm-tf fixture model: 1e-6. The random models (saturating by design, tests/helpers/original_files.py) put
# float32 itself further from the exact values: measured against this package in float64 over the sequence of
# calls below, AllenNLP is 1.3e-6 to 1.4e-6 off and this package 1.4e-6 to 2.7e-6, so the two are compared by
# AllenNLP's own criterion (its test_elmo_bilm: numpy.allclose, 1e-6 plus 1e-5 of the value).
TOLERANCE = 1e-6
RELATIVE = {"fixture": 0.0, "random": 1e-5}
# Batch sizes of a sequence of calls: growing, shrinking, one sentence, growing past every earlier size.
BATCH_SIZES = (3, 5, 2, 1, 4, 7, 2)


@pytest.fixture(scope="module")
def allennlp(allennlp_wheel: Path):
    from allennlp_in_process import import_allennlp

    import_allennlp(allennlp_wheel)
    import allennlp.commands.elmo
    import allennlp.modules.elmo

    return allennlp


@pytest.fixture(scope="module")
def random_model(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """A small random model with three LSTM layers, tanh and unclipped cells: another shape than the fixture's."""
    folder = tmp_path_factory.mktemp("random-model")
    options = small_options(n_layers=3, activation="tanh", cell_clip=None)
    return tuple(map(str, write_original_model(folder, options, seed=7)))


def sentence_batches(seed: int) -> list[list[list[str]]]:
    """Batches of BATCH_SIZES sentences of 0-12 words: English-like words, awkward words, an empty sentence."""
    rng = random.Random(seed)
    vocabulary = ["the", "cat", "sat", "on", "mat", ".", "ELMo", "helps", "disambiguate", *AWKWARD_WORDS]
    batches = []
    for size in BATCH_SIZES:
        batch = [[rng.choice(vocabulary) for _ in range(rng.randint(1, 12))] for _ in range(size)]
        if size > 2:
            batch[1] = []
        batches.append(batch)
    return batches


def model_files(name: str, elmo_fixture: Path, random_model: tuple[str, str]) -> tuple[str, str]:
    if name == "fixture":
        return str(elmo_fixture / "options.json"), str(elmo_fixture / "lm_weights.hdf5")
    return random_model


@pytest.mark.parametrize("model", ["fixture", "random"])
def test_embedder_matches_allennlp_call_after_call(allennlp, model, elmo_fixture, random_model) -> None:
    options, weights = model_files(model, elmo_fixture, random_model)
    theirs = allennlp.commands.elmo.ElmoEmbedder(options, weights)
    ours = compat.ElmoEmbedder(options, weights)
    worst = 0.0
    for call, batch in enumerate(sentence_batches(seed=1)):
        expected, actual = theirs.embed_batch(batch), ours.embed_batch(batch)
        for row, (want, got) in enumerate(zip(expected, actual, strict=True)):
            assert got.shape == want.shape, (call, row)
            if want.size:
                worst = max(worst, float(np.abs(got - want).max()))
                np.testing.assert_allclose(
                    got, want, rtol=RELATIVE[model], atol=TOLERANCE, err_msg=f"call {call} row {row}"
                )
    # the state mattered: a fresh embedder gives the last batch other vectors
    fresh = compat.ElmoEmbedder(options, weights).embed_batch(batch)
    assert max(float(np.abs(a - b).max()) for a, b in zip(fresh, actual, strict=True) if a.size) > 1e-3
    print(f"{model}: {len(BATCH_SIZES)} calls, max |ours - AllenNLP| = {worst:.3g}")


def test_embed_sentences_in_batches_matches_allennlp(allennlp, elmo_fixture, random_model) -> None:
    options, weights = model_files("random", elmo_fixture, random_model)
    sentences = [sentence for batch in sentence_batches(seed=2) for sentence in batch]
    expected = list(allennlp.commands.elmo.ElmoEmbedder(options, weights).embed_sentences(sentences, batch_size=4))
    actual = compat.ElmoEmbedder(options, weights).embed_sentences(sentences, batch_size=4)
    assert not isinstance(actual, list)  # lazy, as AllenNLP's generator
    for want, got in zip(expected, actual, strict=True):
        np.testing.assert_allclose(got, want, rtol=RELATIVE["random"], atol=TOLERANCE)


@pytest.mark.parametrize(
    "settings",
    [
        {"num_output_representations": 2},
        {"num_output_representations": 1, "do_layer_norm": True},
        {"num_output_representations": 1, "keep_sentence_boundaries": True},
        {"num_output_representations": 1, "scalar_mix_parameters": [0.5, -1.0, 2.0, 0.0]},
    ],
)
def test_elmo_matches_allennlp_call_after_call(allennlp, settings, elmo_fixture, random_model) -> None:
    options, weights = random_model
    torch.manual_seed(0)
    theirs = allennlp.modules.elmo.Elmo(options, weights, dropout=0.0, **settings)
    ours = compat.Elmo(options, weights, dropout=0.0, **settings)
    _perturb_mixes(theirs)
    ours.load_state_dict(theirs.state_dict())
    for call, batch in enumerate(sentence_batches(seed=3)):
        ids = allennlp.modules.elmo.batch_to_ids(batch)
        assert torch.equal(compat.batch_to_ids(batch), ids)
        _assert_same_output(ours(ids), theirs(ids), f"call {call}")
    four_d = torch.stack([allennlp.modules.elmo.batch_to_ids(batch) for batch in (batch[:2], batch[-2:])])
    if settings.get("keep_sentence_boundaries"):  # AllenNLP crashed on these (a view to the words' positions)
        assert ours(four_d)["elmo_representations"][0].shape == (2, 2, four_d.shape[2] + 2, ours.get_output_dim())
    else:
        _assert_same_output(ours(four_d), theirs(four_d), "4-D input")


def _perturb_mixes(elmo) -> None:
    """Mix weights and scales away from their initial values, as training leaves them."""
    with torch.no_grad():
        for name, parameter in elmo.named_parameters():
            if name.startswith("scalar_mix") and parameter.requires_grad:
                parameter.add_(torch.randn_like(parameter))


def _assert_same_output(ours: dict, theirs: dict, where: str) -> None:
    assert torch.equal(ours["mask"], theirs["mask"]), where
    for got, want in zip(ours["elmo_representations"], theirs["elmo_representations"], strict=True):
        assert got.shape == want.shape, where
        torch.testing.assert_close(got, want, rtol=RELATIVE["random"], atol=TOLERANCE, msg=where)


class Tagger(torch.nn.Module):
    """A model as users trained them: AllenNLP's (or our) `Elmo` inside, a head on top."""

    def __init__(self, elmo_class, options: str, weights: str) -> None:
        super().__init__()
        self.elmo = elmo_class(options, weights, 1, dropout=0.0, do_layer_norm=True, requires_grad=True)
        self.head = torch.nn.Linear(self.elmo.get_output_dim(), 5)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.head(self.elmo(ids)["elmo_representations"][0])


def test_a_state_dict_saved_by_allennlp_loads_and_gives_its_outputs(allennlp, random_model, tmp_path) -> None:
    options, weights = random_model
    theirs = Tagger(allennlp.modules.elmo.Elmo, options, weights)
    with torch.no_grad():  # fine-tuned: every weight moved
        for parameter in theirs.parameters():
            parameter.add_(0.01 * torch.randn_like(parameter))
    torch.save(theirs.state_dict(), tmp_path / "tagger.th")
    ours = Tagger(compat.Elmo, options, weights)
    checkpoint = torch.load(tmp_path / "tagger.th", weights_only=True)
    ours.load_state_dict(checkpoint)  # strict: every name matches
    saved = ours.state_dict()
    assert list(saved) == list(checkpoint) or set(saved) == set(checkpoint)
    for name, tensor in checkpoint.items():
        assert torch.equal(saved[name], tensor), f"{name} does not come back as it was loaded"
    for call, batch in enumerate(sentence_batches(seed=4)[:4]):
        ids = allennlp.modules.elmo.batch_to_ids(batch)
        torch.testing.assert_close(ours(ids), theirs(ids), rtol=RELATIVE["random"], atol=TOLERANCE, msg=f"call {call}")


def test_stateless_vectors_depend_on_the_sentence_alone(elmo_fixture) -> None:
    files = str(elmo_fixture / "options.json"), str(elmo_fixture / "lm_weights.hdf5")
    embedder = compat.ElmoEmbedder(*files, stateful=False)
    sentence = "ELMo helps disambiguate ELMo from Elmo .".split()
    alone = embedder.embed_sentence(sentence)
    for batch in sentence_batches(seed=5):
        embedder.embed_batch(batch)
    again = embedder.embed_batch([["a", "b"], sentence, ["c"] * 14])[1]
    np.testing.assert_allclose(again, alone, rtol=0, atol=TOLERANCE)
    stateful = compat.ElmoEmbedder(*files)
    stateful.embed_sentence(sentence)
    assert np.abs(stateful.embed_sentence(sentence) - alone).max() > 1e-3  # AllenNLP's default differs


def test_a_cached_vocabulary_matches_allennlp(allennlp, random_model) -> None:
    """`vocab_to_cache` with word ids, a word outside the cache falling back to the CNN, as AllenNLP's."""
    options, weights = random_model
    vocabulary = ["@@PADDING@@", "@@UNKNOWN@@", "the", "cat", "sat", "naïve", "x" * 60]
    theirs = allennlp.modules.elmo.Elmo(options, weights, 1, dropout=0.0, vocab_to_cache=vocabulary)
    ours = compat.Elmo(options, weights, 1, dropout=0.0, vocab_to_cache=vocabulary)
    batches = [[["the", "cat", "sat"], ["naïve"]], [["x" * 60, "the"], ["cat"], ["sat", "sat", "the", "cat"]]]
    for call, batch in enumerate(batches):
        ids = allennlp.modules.elmo.batch_to_ids(batch)
        words = torch.tensor([[vocabulary.index(word) for word in s] + [0] * (ids.shape[1] - len(s)) for s in batch])
        _assert_same_output(ours(ids, words), theirs(ids, words), f"call {call}")
    outside = torch.tensor([[2, 99]])  # id 99: not cached
    ids = allennlp.modules.elmo.batch_to_ids([["the", "dog"]])
    # AllenNLP fell back to the CNN on torch 1.x's RuntimeError; torch 2 raises an IndexError, which it let through:
    # its CNN path stands for its fallback
    _assert_same_output(ours(ids, outside), theirs(ids), "a word outside the cache")
    # the cached vectors are used: with word ids, the character ids do not matter
    stateless = compat.Elmo(options, weights, 1, dropout=0.0, vocab_to_cache=vocabulary, stateful=False)
    words = torch.tensor([[2, 3, 4]])
    cached = stateless(allennlp.modules.elmo.batch_to_ids([["the", "cat", "sat"]]), words)
    other_characters = stateless(allennlp.modules.elmo.batch_to_ids([["a", "b", "c"]]), words)
    torch.testing.assert_close(other_characters, cached, rtol=0, atol=0)
