"""`GraphEmbedder`'s token cache (issue 52, item 3, on the graphs): the folder's graph split in memory at its token
layer (serving/token_graph.py) computes each distinct word's token vector once a run, and every output is the whole
graph's, to the bit, on the float and the int8 graph, for every layer choice, whatever the cache's size; a folder
exported before the cut was named runs the whole graph."""

from __future__ import annotations

import functools
import json
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import h5py
import numpy as np
import onnx
import pytest
from onnx.external_data_helper import uses_external_data

pytest.importorskip("onnxruntime")

from elmo_transformers.inference import onnx_runner
from elmo_transformers.inference.embed import main as embed
from elmo_transformers.inference.onnx_runner import OnnxEmbedder
from elmo_transformers.serving import GraphEmbedder, GraphError
from elmo_transformers.serving.graph_layout import (
    FLOAT_GRAPH,
    MARKER_CHAR_IDS,
    QUANTIZED_GRAPH,
    TOKEN_CHAR_IDS,
    TOKEN_VECTORS,
    graph_weights,
    save_graph,
)
from elmo_transformers.serving.token_graph import split_token_layer
from modeling_elmo.token_cache_elmo import DEFAULT_CACHED_WORDS, WordSlots

# Awkward on purpose: unicode (a decomposed é, an emoji), words over 48 bytes, empty-string words, an empty
# sentence, mixed lengths, repeated words within and across sentences.
WORDS = [
    ["The", "naïve", "Cafe\u0301", "owner", "said", "😀", "."],
    ["x" * 60, "", "Größe", "", "x" * 60],
    [],
    ["A", "longer", "sentence", "with", "several", "ordinary", "words", "and", "3.14", ".", "The", "owner"],
    ["the"],
]
LAYER_CHOICES = ["all", "top", "average", [0.5, 0.25, 0.25]]


def _corpus(sentences: int, seed: int) -> list[list[str]]:
    """Sentences of 0 to 30 words of a vocabulary of 400 (a few awkward): many batches that share words."""
    rng = np.random.default_rng(seed)
    vocabulary = [f"w{index}" for index in range(396)] + ["é", "", "y" * 70, "😀"]
    return [[vocabulary[i] for i in rng.integers(0, len(vocabulary), rng.integers(0, 31))] for _ in range(sentences)]


@pytest.fixture(scope="module")
def whole(default_folder: Path) -> dict[bool, GraphEmbedder]:
    return {
        quantized: GraphEmbedder(default_folder, quantized=quantized, cached_words=0) for quantized in (False, True)
    }


def _same(first: list[np.ndarray], second: list[np.ndarray]) -> bool:
    return len(first) == len(second) and all(np.array_equal(a, b) for a, b in zip(first, second, strict=True))


@pytest.mark.parametrize("quantized", [False, True], ids=["float32", "int8"])
@pytest.mark.parametrize("max_words", [1, 7, DEFAULT_CACHED_WORDS])
def test_every_layer_has_the_whole_graphs_bits(
    default_folder: Path, whole: dict[bool, GraphEmbedder], quantized: bool, max_words: int
) -> None:
    """Cached and uncached vectors are equal (np.array_equal) for every layer choice, over awkward sentences alone,
    in one batch and across many batches, with a cache small enough to forget words between batches (1, 7)."""
    cached = GraphEmbedder(default_folder, quantized=quantized, cached_words=max_words)
    corpus = _corpus(80, seed=max_words)
    runs = [("all", WORDS, 1), ("all", WORDS, 32), ("all", corpus, 32)]
    runs += [(layers, corpus, 5) for layers in LAYER_CHOICES]  # the others: "top" is another output of the graph
    for layers, sentences, batch_size in runs:
        expected = whole[quantized].embed(sentences, layers=layers, batch_size=batch_size)
        assert _same(cached.embed(sentences, layers=layers, batch_size=batch_size), expected), (layers, batch_size)
    cache = cached.token_cache
    assert 0 < len(cache.slots) <= max_words and cache._vectors.shape[0] <= max_words
    assert cache.misses >= len({word for sentence in [*WORDS, *corpus] for word in sentence}) > 0
    if max_words == DEFAULT_CACHED_WORDS:
        assert cache.hits > cache.misses  # each word was computed once, in its first batch


@pytest.mark.parametrize("quantized", [False, True], ids=["float32", "int8"])
def test_a_words_token_vector_is_the_same_in_any_number_of_rows(
    default_folder: Path, whole: dict[bool, GraphEmbedder], quantized: bool
) -> None:
    """The token graph's vector of a word is the same bits computed alone, among 2 to 70 rows, and in the whole
    graph (its layer 0 is the token vector twice): the products and the int8 graph's row quantisation read one row."""
    cached = GraphEmbedder(default_folder, quantized=quantized, cached_words=1)
    words = [word for sentence in _corpus(8, seed=3) for word in sentence][:70]
    words += ["x" * 60, "", "Größe"]
    ids = cached.encode([words]).inputs["input_ids"][0]
    session = cached.token_cache.token
    together = session.run(None, {TOKEN_CHAR_IDS: ids})[0]
    for rows in (*range(1, 18), 31, 32, 33, 47, 64, 70, len(ids)):
        assert np.array_equal(session.run(None, {TOKEN_CHAR_IDS: ids[-rows:]})[0], together[-rows:]), rows
    token_layer = whole[quantized].embed([words])[0][0]  # (words, 2P)
    assert np.array_equal(token_layer, np.concatenate([together, together], axis=1))


def test_threads_sharing_an_embedder_get_the_whole_graphs_bits(
    default_folder: Path, whole: dict[bool, GraphEmbedder]
) -> None:
    """Four threads embed through one embedder whose cache of 5 words moves words and grows under them all."""
    cached = GraphEmbedder(default_folder, cached_words=5)
    corpora = [_corpus(24, seed=seed) for seed in range(4)]
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda corpus: cached.embed(corpus, batch_size=4), corpora))
    for corpus, vectors in zip(corpora, results, strict=True):
        assert _same(vectors, whole[False].embed(corpus, batch_size=4))


def test_the_contextual_input_is_in_the_graphs_order(default_folder: Path, whole: dict[bool, GraphEmbedder]) -> None:
    """`encode` gives the rows longest first (ties in order), the order the graph runs them in: the graph's sort is
    the identity there. A batch in any other order (the graph sorts it itself) gets the whole graph's bits too."""
    cached = GraphEmbedder(default_folder, cached_words=8)
    batch = cached.encode(WORDS)
    lengths = batch.inputs["attention_mask"].sum(axis=1)
    assert np.array_equal(np.argsort(-lengths, kind="stable"), np.arange(len(WORDS)))
    shuffled = {name: tensor[[2, 4, 0, 3, 1]] for name, tensor in batch.inputs.items()}
    shuffled["attention_mask"][1, -1] = 1  # a mask word after padding: the graph's word mask stops at the first 0
    expected = whole[False].session.run(None, shuffled)
    token_vectors = cached.token_cache.contextual_input(shuffled["input_ids"], shuffled["attention_mask"])
    got = cached.session.run(None, {**shuffled, TOKEN_VECTORS: token_vectors})
    assert all(np.array_equal(a, b) for a, b in zip(got, expected, strict=True))


def test_the_parts_share_no_weight(default_folder: Path) -> None:
    """The token and contextual graphs refer to the graph's weights file for their weights, each weight of the file
    in one part: no copy of them in the parts, no weight of the file in both (only constants under the external data
    threshold, in the graph's own file, may be in both)."""
    model = onnx.load(str(default_folder / QUANTIZED_GRAPH), load_external_data=False)
    split = split_token_layer(model)
    assert len(split.token.graph) + len(split.contextual.graph) < 2 * model.ByteSize()
    assert not set(split.token.external) & set(split.contextual.external)
    in_file = {tensor.name for tensor in model.graph.initializer if uses_external_data(tensor)}
    assert {*split.token.external, *split.contextual.external} == in_file and len(in_file) > 10


@pytest.mark.parametrize(
    "renamed",
    [
        {TOKEN_CHAR_IDS: "flat_7", TOKEN_VECTORS: "gather_8"},
        {MARKER_CHAR_IDS["bos"]: "marker_5", MARKER_CHAR_IDS["eos"]: "marker_6"},
    ],
    ids=["no cut", "no markers"],
)
def test_a_folder_exported_before_the_cut_runs_the_whole_graph(
    renamed: dict[str, str], default_folder: Path, tmp_path: Path
) -> None:
    """A graph without the names (an export of before) opens without a cache, and gives the same vectors."""
    folder = tmp_path / "before"
    shutil.copytree(default_folder, folder)
    (folder / FLOAT_GRAPH).unlink()
    graph_weights(folder / FLOAT_GRAPH).unlink()
    model = onnx.load(str(default_folder / FLOAT_GRAPH))
    for node in model.graph.node:
        node.input[:] = [renamed.get(name, name) for name in node.input]
        node.output[:] = [renamed.get(name, name) for name in node.output]
    for tensor in model.graph.initializer:
        tensor.name = renamed.get(tensor.name, tensor.name)
    save_graph(model, folder / FLOAT_GRAPH)
    before = GraphEmbedder(folder)
    assert before.token_cache is None
    assert _same(before.embed(WORDS), GraphEmbedder(default_folder).embed(WORDS))


def test_the_markers_are_the_graphs_whatever_config_json_says(
    default_folder: Path, whole: dict[bool, GraphEmbedder], tmp_path: Path
) -> None:
    """The cache's <S> and </S> are the graph's own weights: a config.json edited after the export (its marker ids
    are no size of the graph, which `open_graph` checks) changes nothing."""
    folder = tmp_path / "edited"
    shutil.copytree(default_folder, folder)
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    config["bos_char_id"], config["eos_char_id"] = 1, 2
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    cached = GraphEmbedder(folder)
    assert cached.token_cache is not None
    assert _same(cached.embed(WORDS), whole[False].embed(WORDS))


def test_elmo_embeds_onnx_backend_caches_by_default(default_folder: Path) -> None:
    embedder = OnnxEmbedder(str(default_folder), layers="all", quantized=True)
    assert embedder.graph.token_cache.slots.max_words == DEFAULT_CACHED_WORDS


def test_elmo_embed_writes_the_same_file_with_and_without_the_cache(
    default_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """elmo-embed on an ONNX folder, over many batches of raw lines: the same datasets as the whole graph's."""
    source = tmp_path / "in.txt"
    lines = ["The cat's mat .", "", "Cafe\u0301 ☃ 😀 , ça va ?", "x" * 60 + " is long", "a"]
    lines += [" ".join(words) for words in _corpus(60, seed=5)]
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    made: list[GraphEmbedder] = []

    def embedder(*args, **kwargs) -> GraphEmbedder:
        made.append(GraphEmbedder(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(onnx_runner, "GraphEmbedder", embedder)
    options = ["--model", str(default_folder), "--batch-size", "8"]
    assert embed([str(source), str(tmp_path / "cached.hdf5"), *options]) == 0
    assert made[-1].token_cache.hits > 0
    monkeypatch.setattr(onnx_runner, "GraphEmbedder", functools.partial(GraphEmbedder, cached_words=0))
    assert embed([str(source), str(tmp_path / "whole.hdf5"), *options]) == 0
    with h5py.File(tmp_path / "cached.hdf5", "r") as cached, h5py.File(tmp_path / "whole.hdf5", "r") as whole:
        assert set(cached) == set(whole) == {*map(str, range(len(lines))), "sentence_to_index"}
        for name in cached:
            assert np.array_equal(cached[name][()], whole[name][()]), name


@pytest.mark.parametrize("cached_words", [-1, 1.5, True, "8"])
def test_a_bad_cache_size_is_refused_in_one_line(default_folder: Path, cached_words: object) -> None:
    with pytest.raises(GraphError, match=r"^cached_words must be 0 \(no cache\) or a positive integer, got ") as error:
        GraphEmbedder(default_folder, cached_words=cached_words)
    assert "\n" not in str(error.value)


def test_word_slots_keep_the_most_recently_used_words() -> None:
    """The LRU both runtimes' caches keep (`WordSlots`): rows 0..len - 1 in use, the least recently used word's row
    given to a new word, only the last `max_words` of too many new words kept."""
    slots = WordSlots(3)
    assert slots.take([b"a", b"b"]) == (0, [0, 1]) and slots.grown(0) == 2 and slots.grown(2) == 2
    assert slots.find([b"b", b"c", b"a"]) == ([0, 2], [1, 0], [1])  # b then a used now: c is new
    assert slots.take([b"c", b"d"]) == (0, [2, 1])  # c takes the free row, d the row of b (least recently used)
    assert slots.find([b"a", b"b", b"c", b"d"]) == ([0, 2, 3], [0, 2, 1], [1]) and len(slots) == 3
    assert slots.take([b"e", b"f", b"g", b"h"]) == (1, [0, 2, 1])  # e dropped; f, g, h in the rows of a, c, d
    with pytest.raises(ValueError, match="at least 1 word, got max_words=0"):
        WordSlots(0)


@pytest.mark.parametrize("cached_words", [DEFAULT_CACHED_WORDS, 0])
def test_a_fifo_in_place_of_the_weights_is_refused_without_waiting(
    default_folder: Path, tmp_path: Path, cached_words: int
) -> None:
    """The split maps the weights file itself (onnxruntime opens it for the whole graph): a FIFO there (no writer)
    is refused in one line that names it, not waited on."""
    import os

    folder = tmp_path / "fifo"
    shutil.copytree(default_folder, folder)
    weights = graph_weights(folder / FLOAT_GRAPH)
    weights.unlink()
    os.mkfifo(weights)
    with pytest.raises(GraphError) as error:
        GraphEmbedder(folder, cached_words=cached_words)
    assert str(error.value).startswith(f"{weights}: not a regular file but a FIFO"), error.value
    assert "\n" not in str(error.value)
