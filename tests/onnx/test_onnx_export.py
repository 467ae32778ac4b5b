"""`elmo-convert onnx`: one graph serving any batch and sentence length equals PyTorch float32, for the biLM and
the task heads; its int8 copy keeps the per-word cosine and has 8-bit weights in its large products; clients without
this package can feed it; bad folders and a missing extra get one line."""

from __future__ import annotations

import errno
import json
import os
import random
import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from huggingface_hub import ModelCard

pytest.importorskip("onnxruntime")
import onnx
import onnxruntime
from command_output import exit_status_after_ctrl_c, file_tree, last_error_line
from onnx import numpy_helper
from transformers.dynamic_module_utils import get_relative_import_files
from without_the_package import run_without_the_package

from elmo_transformers.common.checksums import file_sha256, record_checksums
from elmo_transformers.common.errors import EmbedError
from elmo_transformers.common.parity_sentences import PARITY_SENTENCES
from elmo_transformers.conversion.cli import main
from elmo_transformers.inference.onnx_runner import OnnxEmbedder
from elmo_transformers.serving import export_measurements, int8_graph, onnx_model_page
from elmo_transformers.serving.export_measurements import INT8_BATCH_BAR, batch_difference, per_word_cosine
from elmo_transformers.serving.graph_layout import LAYOUT_KEY, graph_bytes, graph_weights, open_graph
from elmo_transformers.serving.int8_graph import product_node_names
from modeling_elmo import (
    DEFAULT_MODEL,
    ElmoForSequenceClassification,
    ElmoForTokenClassification,
    ElmoModel,
    ElmoTokenizer,
)
from modeling_elmo.text_elmo import SPLIT_RULE

TOLERANCE = 1e-5
AWKWARD = [
    ["a", "bb"],
    [],
    ["", "x" * 60, "é", "日本語", "emoji🙂"],
    ["The", "café", "is", "open", "."],
    ["<S>", "</S>", "<s>", "<S>x", "a\ud800b", "\udfff"],  # the literal markers; lone surrogates
]


def _random_sentences(count: int, seed: int, longest: int = 30) -> list[list[str]]:
    """`count` sentences of 0..`longest` words of random bytes-worth of letters (some over 48 bytes)."""
    rng = random.Random(seed)
    alphabet = "abcdefghijklmnopqrstuvwxyzéü日"
    return [
        [
            "".join(rng.choice(alphabet) for _ in range(rng.choice([1, 2, 3, 5, 8, 30])))
            for _ in range(rng.randint(0, longest))
        ]
        for _ in range(count)
    ]


# Awkward batches: empty sentences, one word, 60-byte words, 200 words, batch 1 and 64.
BATCHES = {
    "awkward": AWKWARD,
    "one empty sentence": [[]],
    "only empty sentences": [[], [], []],
    "one word": [["word"]],
    "a 60-byte word alone": [["y" * 60]],
    "200 words": [[f"w{index % 17}" for index in range(200)], ["short"]],
    "batch 64": _random_sentences(64, seed=1),
}


def _export(model: str | Path, output: Path, *extra: str) -> Path:
    assert main(["onnx", "--model", str(model), "--output", str(output), *extra]) == 0
    return output


@pytest.fixture(scope="module")
def bilm_folder(fixture_model_folder: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _export(fixture_model_folder, tmp_path_factory.mktemp("onnx") / "elmo-fixture-onnx")


def _encode(sentences: list[list[str]], width: int = 50) -> dict[str, np.ndarray]:
    """The graph's inputs by the model page's rule, written here without the package: each word its bytes + 1
    (a lone surrogate has none) framed by begin-of-word 259 and end-of-word 260, padded with 261 to `width`, the
    literal `<S>` and `</S>` the markers 257 and 258 so framed; all-zero rows after a sentence's words, where the
    attention mask is 0."""
    ids = np.zeros((len(sentences), max(map(len, sentences), default=0), width), dtype=np.int64)
    mask = np.zeros(ids.shape[:2], dtype=np.int64)
    for row, words in enumerate(sentences):
        mask[row, : len(words)] = 1
        for column, word in enumerate(words):
            body = {"<S>": [257], "</S>": [258]}.get(word) or [
                byte + 1 for byte in word.encode("utf-8", "ignore")[: width - 2]
            ]
            ids[row, column] = [259, *body, 260] + [261] * (width - 2 - len(body))
    return {"input_ids": ids, "attention_mask": mask}


def _torch(inputs: dict[str, np.ndarray]) -> dict[str, torch.Tensor]:
    return {name: torch.from_numpy(array) for name, array in inputs.items()}


@pytest.mark.parametrize("model_name", ["fixture", "bundled"])
@pytest.mark.parametrize("name", BATCHES)
def test_the_float_graph_equals_pytorch_at_every_layer(
    bilm_folder: Path, default_folder: Path, fixture_model_folder: Path, name: str, model_name: str
) -> None:
    source, exported = (
        (fixture_model_folder, bilm_folder) if model_name == "fixture" else (DEFAULT_MODEL, default_folder)
    )
    model = ElmoModel.from_pretrained(source).eval()
    session = onnxruntime.InferenceSession(str(exported / "model.onnx"))
    inputs = _encode(BATCHES[name])
    with torch.no_grad():
        expected = model(**_torch(inputs), output_hidden_states=True)
    last, layers, mask = session.run(None, inputs)
    batch, words = inputs["attention_mask"].shape
    assert layers.shape == (batch, model.config.num_hidden_layers + 1, words, 2 * model.config.projection_dim)
    assert np.array_equal(mask, expected.word_mask.numpy())
    assert np.abs(layers - torch.stack(expected.hidden_states, dim=1).numpy()).max(initial=0.0) <= TOLERANCE
    assert np.array_equal(last, layers[:, -1])
    assert not layers.transpose(1, 0, 2, 3)[:, ~mask].any()  # zero at padding


def test_one_graph_serves_two_batch_sizes_and_lengths_without_unrolling(
    bilm_folder: Path, fixture_model_folder: Path
) -> None:
    graph = onnx.load(str(bilm_folder / "model.onnx"))
    assert [node.op_type for node in graph.graph.node].count("Scan") == 4  # a loop per biLSTM layer and direction
    session = onnxruntime.InferenceSession(str(bilm_folder / "model.onnx"))
    model = ElmoModel.from_pretrained(fixture_model_folder).eval()
    # Sentences of 1, 4 and 2 words (unicode, a word of 62 bytes cut to 48), and 17 of up to 30.
    short = _encode([["naïve"], ["日本語", "é" * 31, "the", "🙂"], ["Hello", "wörld"]])
    sentences = _random_sentences(17, seed=3)
    long = _encode(sentences)
    assert short["input_ids"].shape[:2] == (3, 4) and long["input_ids"].shape[:2] != short["input_ids"].shape[:2]
    for inputs in (short, long):
        with torch.no_grad():
            expected = model(**_torch(inputs), output_hidden_states=True).hidden_states
        (layers,) = session.run(["hidden_states"], inputs)
        assert layers.shape == torch.stack(expected, dim=1).shape
        assert np.abs(layers - torch.stack(expected, dim=1).numpy()).max() <= TOLERANCE
    # A sentence gets the same vectors whatever batch it is in.
    alone = session.run(["hidden_states"], _encode(sentences[5:6]))[0]
    together = session.run(["hidden_states"], long)[0]
    assert np.abs(together[5, :, : alone.shape[2]] - alone[0]).max(initial=0.0) <= TOLERANCE


def test_plain_numpy_char_ids_are_the_tokenizers(bilm_folder: Path) -> None:
    """The rule on the model page (written in the test without the package) is what the tokenizer gives."""
    tokenizer = ElmoTokenizer.from_pretrained(bilm_folder)
    expected = tokenizer(AWKWARD, is_split_into_words=True, padding=True, return_tensors="np")
    assert expected.keys() == _encode(AWKWARD).keys()
    for name, array in _encode(AWKWARD).items():
        assert np.array_equal(array, expected[name]), name
    assert "b1 + 1" in (bilm_folder / "README.md").read_text(encoding="utf-8")


def test_the_model_page_states_the_split_rule_and_the_browsers_option(bilm_folder: Path) -> None:
    """The page states the split rule (the front end's own words), names the conformance file beside it, and says
    that onnxruntime-web needs the weights named in `externalData`."""
    page = (bilm_folder / "README.md").read_text(encoding="utf-8")
    assert SPLIT_RULE in page
    assert (
        "`text_elmo_conformance.json` (in this folder)" in page
        and (bilm_folder / "text_elmo_conformance.json").is_file()
    )
    assert 'externalData: [{ path: "model.onnx_data", data: "model.onnx_data" }]' in page


def test_the_model_pages_code_runs(bilm_folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Both ways the model page feeds the graph, run as a reader runs them (the numpy function after the folder's
    text front end, with its session), give the graph's outputs."""
    page = (bilm_folder / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", page, re.DOTALL)
    monkeypatch.chdir(bilm_folder.parent)
    session = onnxruntime.InferenceSession(str(bilm_folder / "model.onnx"))
    sentences = [[["Hello", "world", "."], ["Hi", "!"]], [["Hello", "world", "."], []]]
    assert len(blocks) == len(sentences)
    namespace = {}
    for block, words in zip(blocks, sentences, strict=True):
        exec(block, namespace)
        for actual, expected in zip(namespace["outputs"], session.run(None, _encode(words)), strict=True):
            assert np.array_equal(actual, expected)
    tokenizer = ElmoTokenizer.from_pretrained(bilm_folder)
    expected = tokenizer(AWKWARD, is_split_into_words=True, padding=True, return_tensors="np")
    for name, array in namespace["encode"](AWKWARD).items():  # the page's numpy function: the literal <S>, a surrogate
        assert np.array_equal(array, expected[name]), name


def test_the_folder_is_a_model_folder(bilm_folder: Path) -> None:
    names = {path.name for path in bilm_folder.iterdir()}
    assert {"model.onnx", "model.onnx_data", "config.json", "README.md", "tokenizer_config.json"} <= names
    assert not any(name.endswith(".safetensors") for name in names)


def test_the_folder_holds_the_tokenizers_code_not_the_models(default_folder: Path) -> None:
    """The folder carried the whole model code (modeling_elmo.py, lstm_elmo.py, ...) only so that its tokenizer
    loads: now the tokenizer's module and what it imports relatively, as transformers' remote code copies them (the
    folder's tokenizer loads from them alone: `test_the_tokenizers_output_goes_into_each_graph_without_the_package`)."""
    import modeling_elmo

    code = {path.name for path in default_folder.glob("*.py")}
    package = Path(modeling_elmo.__file__).parent
    tokenizer = package / "tokenization_elmo.py"
    assert code == {tokenizer.name, *(Path(name).name for name in get_relative_import_files(str(tokenizer)))}
    assert "text_elmo.py" in code  # the numpy front end, which a client without transformers runs
    conformance = default_folder / "text_elmo_conformance.json"  # for a client in another language
    assert conformance.read_bytes() == (package / conformance.name).read_bytes()
    assert not code & {"modeling_elmo.py", "lstm_elmo.py", "mixing_elmo.py", "softmax_elmo.py", "onednn_elmo.py"}
    for name in code:
        assert (default_folder / name).read_bytes() == (package / name).read_bytes(), name


def _head(kind: type, source: Path, folder: Path, **config) -> Path:
    """A head over the fixture biLM with random (non-default) mix and classifier weights, saved."""
    torch.manual_seed(0)
    model = kind.from_pretrained(source, num_labels=4, **config).eval()
    with torch.no_grad():
        for mix in model.mixes:
            for parameter in mix.parameters():
                parameter.normal_()
    model.save_pretrained(folder)
    ElmoTokenizer.from_pretrained(source).save_pretrained(folder)
    return folder


HEADS = {
    "token, scalar mix with layer norm": (ElmoForTokenClassification, {"mix_layer_norm": True}),
    "token, per-token mix, two layers of task LSTM": (
        ElmoForTokenClassification,
        {"mix_mode": "per_token", "task_num_layers": 2},
    ),
    "token, concat, no task encoder, two representations": (
        ElmoForTokenClassification,
        {"mix_mode": "concat", "task_encoder": "none", "num_output_representations": 2},
    ),
    "sequence, scalar mix of the lower layers": (ElmoForSequenceClassification, {"mix_layers": [0, 1]}),
    "sequence, average": (ElmoForSequenceClassification, {"mix_mode": "average"}),
}


@pytest.mark.parametrize("name", HEADS)
def test_a_heads_logits_equal_pytorch(fixture_model_folder: Path, tmp_path: Path, name: str) -> None:
    kind, config = HEADS[name]
    folder = _head(kind, fixture_model_folder, tmp_path / "head", **config)
    exported = _export(folder, tmp_path / "head-onnx")
    model = kind.from_pretrained(folder).eval()
    session = onnxruntime.InferenceSession(str(exported / "model.onnx"))
    for sentences in (AWKWARD, [[], []], _random_sentences(9, seed=4)):
        inputs = _encode(sentences)
        with torch.no_grad():
            expected = model(**_torch(inputs)).logits.numpy()
        (logits,) = session.run(["logits"], inputs)
        assert logits.shape == expected.shape
        assert np.abs(logits - expected).max(initial=0.0) <= TOLERANCE, name


# Text as a client sends it: mixed lengths, unicode, a word of 58 bytes (cut to 48), an empty line.
TEXTS = [
    "The café on the corner is open until nine .",
    "日本語 の 文 and an emoji 🙂 !",
    "Llanfairpwllgwyngyllgogerychwyrndrobwllllantysiliogogogoch is in Wales .",
    "",
    "Hello",
]

_CLIENT = """
    import importlib.util
    import sys

    import numpy as np
    import onnxruntime
    from transformers import AutoTokenizer

    folder, texts = sys.argv[1], sys.argv[2].split("\\n")
    assert importlib.util.find_spec("modeling_elmo") is None  # this package cannot be imported
    tokenizer = AutoTokenizer.from_pretrained(folder, trust_remote_code=True)
    assert type(tokenizer).__module__.startswith("transformers_modules"), type(tokenizer).__module__
    for graph in ("model.onnx", "model_quantized.onnx"):
        session = onnxruntime.InferenceSession(f"{folder}/{graph}")
        outputs = session.run(None, dict(tokenizer(texts, padding=True, return_tensors="np")))
        np.savez(f"{graph}.npz", **dict(zip([output.name for output in session.get_outputs()], outputs)))
    """


@pytest.mark.slow
def test_the_tokenizers_output_goes_into_each_graph_without_the_package(default_folder: Path, tmp_path: Path) -> None:
    """`session.run(None, dict(tokenizer(texts, padding=True, return_tensors="np")))` failed on both graphs with
    "Invalid input name: attention_mask"; now the folder's tokenizer (remote code) feeds them, in a Python where
    this package cannot be imported, and the float32 graph gives PyTorch's vectors."""
    completed = run_without_the_package(_CLIENT, str(default_folder), "\n".join(TEXTS), work=tmp_path)
    assert completed.returncode == 0, completed.stderr[-3000:]
    model = ElmoModel.from_pretrained(DEFAULT_MODEL).eval()
    with torch.no_grad():
        inputs = ElmoTokenizer.from_pretrained(DEFAULT_MODEL)(TEXTS, padding=True, return_tensors="pt")
        expected = model(**inputs, output_hidden_states=True)
    layers = torch.stack(expected.hidden_states, dim=1).numpy()
    mask = expected.word_mask.numpy()
    assert mask.shape[0] == len(TEXTS) and mask.sum(1)[3] == 0  # the empty line
    for graph in ("model.onnx", "model_quantized.onnx"):
        outputs = np.load(tmp_path / f"{graph}.npz")
        assert np.array_equal(outputs["word_mask"], mask), graph
        assert np.array_equal(outputs["last_hidden_state"], outputs["hidden_states"][:, -1]), graph
        if graph == "model.onnx":
            assert np.abs(outputs["hidden_states"] - layers).max() <= TOLERANCE
        else:
            cosine = per_word_cosine(outputs["hidden_states"], layers, mask)
            assert cosine.mean() >= 0.99 and cosine.min() >= 0.9, (cosine.mean(), cosine.min())


def _with_mask(inputs: dict[str, np.ndarray], row: int, mask: list[int]) -> dict[str, np.ndarray]:
    changed = inputs["attention_mask"].copy()
    changed[row] = mask
    return {**inputs, "attention_mask": changed}


@pytest.mark.parametrize("graph", ["model.onnx", "model_quantized.onnx"])
def test_a_batch_of_no_words_padded_to_a_bucket(default_folder: Path, graph: str) -> None:
    """Every sentence empty but padded to a few words (a Triton client's fixed bucket): no loop step has a running
    row, so the products see no rows (onnxruntime before 1.32 failed on the int8 graph's per-row ops there); the
    outputs are all padding: zeros, and no word in `word_mask`."""
    session = onnxruntime.InferenceSession(str(default_folder / graph))
    inputs = _encode([["The", "café"], []])
    inputs = {**inputs, "attention_mask": np.zeros_like(inputs["attention_mask"])}
    layers, mask = session.run(["hidden_states", "word_mask"], inputs)
    assert layers.shape == (2, 3, 2, layers.shape[-1]) and mask.shape == (2, 2)
    assert not mask.any() and not layers.any()


@pytest.mark.parametrize("graph", ["model.onnx", "model_quantized.onnx"])
@pytest.mark.parametrize("char_id", [-1, -262, -300, 262])
def test_character_ids_outside_the_table_fail_the_run(default_folder: Path, graph: str, char_id: int) -> None:
    """Gather reads a negative index from the end of its table: -1 ran as character 261 where `ElmoModel` refuses
    it. The graph fails on it as on an id over 261 (onnxruntime's error names the character embedding's Gather),
    and, as in `ElmoModel`, ids at padding are not read."""
    session = onnxruntime.InferenceSession(str(default_folder / graph))
    inputs = _encode([["The", "café"], ["x"]])
    inputs["input_ids"][0, 1, 3] = char_id
    with pytest.raises(Exception, match=r"Gather.*out of data bounds, idx=262"):
        session.run(None, inputs)
    inputs["input_ids"][0, 1, 3] = 100
    inputs["input_ids"][1, 1, 3] = char_id  # padding
    session.run(None, inputs)


def test_the_mask_decides_the_words(bilm_folder: Path, fixture_model_folder: Path) -> None:
    """The words are the positions before the first 0 of the mask, whatever the ids say (as `ElmoModel` with the
    same mask), and a mask that goes on after a 0 is cut there; a mask of another shape than the ids' fails."""
    model = ElmoModel.from_pretrained(fixture_model_folder).eval()
    session = onnxruntime.InferenceSession(str(bilm_folder / "model.onnx"))
    inputs = _encode([["The", "café", "is", "open"], ["Hello", "wörld"]])

    def pytorch(inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
        with torch.no_grad():
            output = model(**_torch(inputs), output_hidden_states=True)
        return [torch.stack(output.hidden_states, dim=1).numpy(), output.word_mask.numpy()]

    def assert_graph_gives(inputs: dict[str, np.ndarray], expected: dict[str, np.ndarray]) -> None:
        layers, mask = session.run(["hidden_states", "word_mask"], inputs)
        expected_layers, expected_mask = pytorch(expected)
        assert np.array_equal(mask, expected_mask)
        assert np.abs(layers - expected_layers).max() <= TOLERANCE

    # Ids past the mask are not read: row 0 is its first two words (ElmoModel with the same mask).
    short = _with_mask(inputs, 0, [1, 1, 0, 0])
    assert_graph_gives(short, short)
    (cut,) = session.run(["hidden_states"], _encode([["The", "café"], ["Hello", "wörld"]]))
    assert np.abs(session.run(["hidden_states"], short)[0][:, :, :2] - cut).max() <= TOLERANCE
    # Any non-zero value is a word; a zero row inside the mask is a word (of no characters), as for ElmoModel.
    assert_graph_gives(_with_mask(inputs, 0, [3, 1, -1, 1]), inputs)
    zero_row = _with_mask(inputs, 1, [1, 1, 1, 0])
    assert not zero_row["input_ids"][1, 2].any()
    assert_graph_gives(zero_row, zero_row)
    # A 1 after a 0 (ElmoModel refuses it): cut at the first 0, the later 1 is padding.
    assert_graph_gives(_with_mask(inputs, 0, [1, 0, 1, 1]), _with_mask(inputs, 0, [1, 0, 0, 0]))
    # A mask of one row would have been broadcast to every row, a mask of one word read as every row's length.
    for mask in (inputs["attention_mask"][:1], inputs["attention_mask"][:, :1]):
        with pytest.raises(Exception, match="Non concat axis dimensions must match"):
            session.run(None, {**inputs, "attention_mask": mask})


@pytest.fixture(scope="module")
def every_graph(default_folder: Path, fixture_model_folder: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Every kind of graph the export writes: the biLM's and each head's, float32 and int8."""
    graphs = {}
    folders = {"biLM": default_folder}
    for kind in (ElmoForTokenClassification, ElmoForSequenceClassification):
        work = tmp_path_factory.mktemp("head")
        folders[kind.__name__] = _export(
            _head(kind, fixture_model_folder, work / "head"), work / "onnx", "--quantize", "int8"
        )
    for name, folder in folders.items():
        graphs[f"{name} float32"] = folder / "model.onnx"
        graphs[f"{name} int8"] = folder / "model_quantized.onnx"
    return graphs


GRAPHS = [
    f"{name} {kind}"
    for name in ("biLM", "ElmoForTokenClassification", "ElmoForSequenceClassification")
    for kind in ("float32", "int8")
]


@pytest.mark.parametrize("graph", GRAPHS)
def test_every_output_of_every_graph_is_batch_first(every_graph: dict, graph: str) -> None:
    """Triton's dynamic batching needs the batch first in every input and output (`hidden_states` was layers-first):
    each is declared batch-first and has the batch first at batch 2 and 5 (neither the 3 layers), and row i is
    sentence i: alone and in the batch, the same to 1e-5 on float32 graphs and to `INT8_BATCH_BAR` = 1e-4 on int8
    graphs (measured: 0 on both; onnxruntime's dynamic quantisation, one activation scale per call, gave 2.3e-2 on
    the biLM and 3.2e-4 / 1.2e-4 on the heads' logits)."""
    session = onnxruntime.InferenceSession(str(every_graph[graph]))
    tokenizer = ElmoTokenizer.from_pretrained(every_graph[graph].parent)
    declared = {tensor.name: tensor.shape for tensor in (*session.get_inputs(), *session.get_outputs())}
    assert all(shape[0] == "batch" for shape in declared.values()), declared
    names = [tensor.name for tensor in session.get_outputs()]

    def run(texts: list[str]) -> dict[str, np.ndarray]:
        return dict(
            zip(names, session.run(None, dict(tokenizer(texts, padding=True, return_tensors="np"))), strict=True)
        )

    assert len(run(TEXTS)["hidden_states" if "biLM" in graph else "logits"]) == 5
    for size in (2, 5):
        assert {name: len(value) for name, value in run(TEXTS[:size]).items()} == dict.fromkeys(names, size)
    together, worst = run(TEXTS), 0.0
    for row, text in enumerate(TEXTS):
        for name, alone in run([text]).items():
            words = declared[name].index("words") if "words" in declared[name] else None
            mine = together[name][row : row + 1]
            if words is not None:
                mine = mine.take(range(alone.shape[words]), axis=words)
            worst = max(worst, float(np.abs(mine.astype(np.float32) - alone).max(initial=0.0)))
    assert worst <= (TOLERANCE if graph.endswith("float32") else INT8_BATCH_BAR), worst


def _held_out_sentences(elmo_fixture: Path) -> list[list[str]]:
    """bilm-tf's test sentences (news text the bundled model never saw), split on spaces."""
    batches = json.loads((elmo_fixture / "sentences.json").read_text(encoding="utf-8"))
    return [sentence.split() for batch in batches for sentence in batch]


def test_the_int8_graph_has_8_bit_lstm_weights_and_keeps_the_cosine(default_folder: Path, elmo_fixture: Path) -> None:
    from elmo_transformers.serving.export_measurements import graph_cosine

    folder = default_folder
    assert "\nlicense: cc-by-sa-4.0\nlanguage: en\n" in (folder / "README.md").read_text(
        encoding="utf-8"
    )  # the source's
    quantized = onnx.load(str(folder / "model_quantized.onnx"))
    # Every LSTM product became an integer product with 8-bit weights (MatMulInteger, a default-domain operator;
    # int8, by 7-bit activations: serving/int8_graph.py says why); none is left in float32.
    graphs, integer_weights, float_products = [quantized.graph], [], []
    initializers, products = {}, set(product_node_names(quantized))
    while graphs:
        graph = graphs.pop()
        initializers.update((tensor.name, tensor) for tensor in graph.initializer)  # a loop's weights are its own
        for node in graph.node:
            graphs.extend(attribute.g for attribute in node.attribute if attribute.HasField("g"))
            if node.op_type == "MatMulInteger":
                integer_weights.append(initializers[node.input[1]])
            elif node.op_type == "MatMul" and node.name in products:
                float_products.append(node.name)
    assert not float_products
    config = ElmoModel.config_class.from_pretrained(DEFAULT_MODEL)
    # The input, state and output products of 2 layers x 2 directions, 2 per highway layer, the token projection.
    assert len(integer_weights) == 3 * 2 * 2 + 2 * config.num_highway_layers + 1
    assert {weight.data_type for weight in integer_weights} == {onnx.TensorProto.INT8}
    assert graph_bytes(folder / "model_quantized.onnx") < 0.5 * graph_bytes(folder / "model.onnx")
    mean, minimum = graph_cosine(
        open_graph(folder / "model.onnx", EmbedError),
        open_graph(folder / "model_quantized.onnx", EmbedError),
        ElmoTokenizer.from_pretrained(folder),
        _held_out_sentences(elmo_fixture),
    )
    assert mean >= 0.99, (mean, minimum)
    assert minimum >= 0.9, (mean, minimum)


def _initializers(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    """Every weight of a graph and of its loops, by name."""
    graphs, weights = [model.graph], {}
    while graphs:
        graph = graphs.pop()
        weights.update((tensor.name, numpy_helper.to_array(tensor)) for tensor in graph.initializer)
        graphs.extend(attribute.g for node in graph.node for attribute in node.attribute if attribute.HasField("g"))
    return weights


def test_the_int8_weights_are_quantised_per_output_column(default_folder: Path) -> None:
    """Each output column of each product has its own scale (a scale for the whole matrix would waste the 8 bits
    of every column smaller than the largest), symmetric (in [-127, 127] steps, stored as int8), and its 8-bit values
    are the float graph's weights to half a step."""
    floats = _initializers(onnx.load(str(default_folder / "model.onnx")))
    quantized = _initializers(onnx.load(str(default_folder / "model_quantized.onnx")))
    products = [name.removesuffix("_int8") for name in quantized if name.endswith("_int8")]
    assert len(products) == 15  # the products of test_the_int8_graph_has_8_bit_lstm_weights_and_keeps_the_cosine
    for name in products:
        weight, scale, values = floats[name], quantized[f"{name}_scale"], quantized[f"{name}_int8"]
        assert name not in quantized and values.dtype == np.int8 and values.min() >= -127, name
        assert scale.shape == (weight.shape[1],), name
        assert (np.abs(values * scale - weight) <= scale / 2 * (1 + 1e-5)).all(), name


def test_a_folder_without_a_graph_is_one_line(fixture_model_folder: Path) -> None:
    with pytest.raises(EmbedError, match=r"no ONNX graph model\.onnx \(write one with elmo-convert onnx\)$"):
        open_graph(fixture_model_folder / "model.onnx", EmbedError)


def _copied_folder(folder: Path, target: Path) -> Path:
    """A copy of `folder` without its SHA256SUMS: the files changed below are not refused as damaged, so that the
    check under test is the one that speaks."""
    shutil.copytree(folder, target)
    (target / "SHA256SUMS").unlink()
    return target


def _set_metadata(graph_file: Path, key: str, value: str | None) -> None:
    """Set (or with None remove) a metadata entry of the graph in `graph_file`."""
    graph = onnx.load(str(graph_file))
    kept = [entry for entry in graph.metadata_props if entry.key != key]
    del graph.metadata_props[:]
    graph.metadata_props.extend(kept)
    if value is not None:
        graph.metadata_props.add(key=key, value=value)
    onnx.save(graph, graph_file)


@pytest.mark.parametrize(
    ("layout", "found"), [("1", "ELMo graph layout 1"), ("3", "ELMo graph layout 3"), (None, "no ELMo graph layout")]
)
def test_a_graph_of_another_layout_is_one_line(bilm_folder: Path, tmp_path: Path, layout, found: str) -> None:
    """An older layout (1: input_ids alone, hidden_states layers-first), a newer one (a later version's export), and
    a graph without the key are all refused."""
    folder = _copied_folder(bilm_folder, tmp_path / "graph")
    _set_metadata(folder / "model.onnx", LAYOUT_KEY, layout)
    record_checksums(folder)  # (as the export that wrote such a graph would have)
    with pytest.raises(EmbedError) as refused:
        open_graph(folder / "model.onnx", EmbedError)
    assert str(refused.value) == (
        f"{folder / 'model.onnx'}: {found}, this version of elmo-transformers reads layout 2: export the model again"
        " with elmo-convert onnx"
    )


def _edit_json(path: Path, **changes) -> None:
    path.write_text(json.dumps({**json.loads(path.read_text(encoding="utf-8")), **changes}), encoding="utf-8")


def _another_models_graph(folder: Path, default_folder: Path) -> None:
    for graph in (default_folder / "model.onnx", graph_weights(default_folder / "model.onnx")):
        shutil.copyfile(graph, folder / graph.name)


def _another_models_config(folder: Path, default_folder: Path) -> None:
    shutil.copyfile(default_folder / "config.json", folder / "config.json")


def _fewer_layers(folder: Path, default_folder: Path) -> None:
    _edit_json(folder / "config.json", num_hidden_layers=1)


def _shorter_words(folder: Path, default_folder: Path) -> None:
    for name in ("config.json", "tokenizer_config.json"):  # (they must agree: model_folder_problem)
        _edit_json(folder / name, max_characters_per_token=40)


def _a_heads_config(folder: Path, default_folder: Path) -> None:
    _edit_json(folder / "config.json", architectures=["ElmoForTokenClassification"], id2label={"0": "A", "1": "B"})


def _no_config(folder: Path, default_folder: Path) -> None:
    (folder / "config.json").unlink()


def _no_architecture(folder: Path, default_folder: Path) -> None:
    _set_metadata(folder / "model.onnx", "elmo_architecture", None)


# What is done to a copy of the fixture biLM's graph folder, and the end of the line that refuses it.
MISMATCHES = {
    "another model's graph": (
        _another_models_graph,
        "its output last_hidden_state is float [batch, words, 256], but {config} makes it float [batch, words, 32]"
        " (projection_dim): the graph and config.json are of different models; export the model again with"
        " elmo-convert onnx",
    ),
    "another model's config.json": (
        _another_models_config,
        "its output last_hidden_state is float [batch, words, 32], but {config} makes it float [batch, words, 256]"
        " (projection_dim): the graph and config.json are of different models; export the model again with"
        " elmo-convert onnx",
    ),
    "a config.json of fewer layers": (
        _fewer_layers,
        "its output hidden_states is float [batch, 3, words, 32], but {config} makes it float [batch, 2, words, 32]"
        " (num_hidden_layers, projection_dim): the graph and config.json are of different models; export the model"
        " again with elmo-convert onnx",
    ),
    "a config.json of shorter words": (
        _shorter_words,
        "its input input_ids is int64 [batch, words, 50], but {config} makes it int64 [batch, words, 40]"
        " (max_characters_per_token): the graph and config.json are of different models; export the model again"
        " with elmo-convert onnx",
    ),
    "a head's config.json": (
        _a_heads_config,
        "its elmo_architecture is 'ElmoModel', but {config} makes it 'ElmoForTokenClassification' (architectures):"
        " the graph and config.json are of different models; export the model again with elmo-convert onnx",
    ),
    "no architecture in the graph": (
        _no_architecture,
        "its elmo_architecture is None, but {config} makes it 'ElmoModel' (architectures): the graph and"
        " config.json are of different models; export the model again with elmo-convert onnx",
    ),
}


@pytest.mark.parametrize("name", [*MISMATCHES, "no config.json"])
def test_a_graph_that_does_not_match_its_folder_is_one_line_before_any_output(
    bilm_folder: Path, default_folder: Path, tmp_path: Path, capsys, name: str
) -> None:
    """A graph beside another model's config.json ran until h5py refused its vectors ("Can't broadcast"), was then
    told as a write fault to resume, and left OUT.partial; a folder without config.json embedded with default sizes."""
    from elmo_transformers.inference.embed import main as embed

    folder = _copied_folder(bilm_folder, tmp_path / "graph")
    source = tmp_path / "in.txt"
    source.write_text("a bb\n", encoding="utf-8")
    if name == "no config.json":
        _no_config(folder, default_folder)
        expected = f"{folder}: not a model folder (no config.json)"  # as for a PyTorch folder
    else:
        change, problem = MISMATCHES[name]
        change(folder, default_folder)
        record_checksums(folder)  # recorded as it is: the mismatch, not the record, is what is refused
        expected = f"{folder / 'model.onnx'}: {problem.format(config=folder / 'config.json')}"
    before = sorted(tmp_path.iterdir())
    assert embed([str(source), str(tmp_path / "out.hdf5"), "--model", str(folder)]) == 2
    assert capsys.readouterr().err == f"elmo-embed: error: {expected}\n"
    assert sorted(tmp_path.iterdir()) == before, "no OUT, no OUT.partial, no lock"


def test_a_missing_extra_is_one_line(fixture_model_folder: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # (an import of it raises ModuleNotFoundError)
    assert main(["onnx", "--model", str(fixture_model_folder), "--output", str(tmp_path / "out")]) == 2
    error = capsys.readouterr().err.strip()
    assert error == (
        "elmo-convert: error: elmo-convert onnx needs onnxruntime, which comes with an extra: "
        "pip install 'elmo-transformers[onnx]'"
    )
    assert not (tmp_path / "out").exists()


def test_the_embedder_on_the_graph_equals_pytorch(bilm_folder: Path, fixture_model_folder: Path) -> None:
    from elmo_transformers.inference.torch_runner import TorchEmbedder

    for layers in ("all", "top", "average"):
        graph = OnnxEmbedder(str(bilm_folder), layers=layers)
        model = TorchEmbedder(str(fixture_model_folder), layers=layers)
        sentences = AWKWARD[:1] + AWKWARD[2:]  # TorchEmbedder takes non-empty sentences
        for actual, expected in zip(graph.embed(sentences), model.embed(sentences), strict=True):
            assert actual.shape == expected.shape
            assert np.abs(actual - expected).max() <= TOLERANCE


def test_the_embedder_gives_the_graph_its_batch_longest_first(bilm_folder: Path) -> None:
    """`OnnxEmbedder.prepare` sorts the rows as the graph runs them; each sentence gets back its own vectors, the
    same to the bit as alone."""
    embedder = OnnxEmbedder(str(bilm_folder), layers="all")
    sentences = [["a"], ["the", "café", "is", "open"], ["x" * 60, "é"], ["b", "c", "d", "e"]]
    assert embedder.prepare(sentences).tensors["attention_mask"].sum(1).tolist() == [4, 4, 2, 1]
    for sentence, vectors in zip(sentences, embedder.embed(sentences), strict=True):
        (alone,) = embedder.embed([sentence])
        assert np.array_equal(vectors, alone)


def test_elmo_embed_on_the_graph_equals_the_pytorch_run(
    bilm_folder: Path, fixture_model_folder: Path, tmp_path
) -> None:
    import h5py

    from elmo_transformers.inference.embed import main as embed

    source = tmp_path / "in.txt"
    source.write_text("a bb\n\nthe café is open .\n" + "x" * 60 + " é\n", encoding="utf-8")
    outputs, weights = {}, {}
    for name, model in (("graph", bilm_folder), ("torch", fixture_model_folder)):
        assert embed([str(source), str(tmp_path / f"{name}.hdf5"), "--model", str(model), "--batch-size", "2"]) == 0
        with h5py.File(tmp_path / f"{name}.hdf5", "r") as file:
            outputs[name] = {key: file[key][()] for key in file if key.isdigit()}
            assert file.attrs["elmo_embed_backend"] == {"graph": "onnxruntime", "torch": "pytorch"}[name]
            weights[name] = file.attrs["elmo_embed_model_sha256"]
    # The graph's weights (a re-exported graph does not resume)
    assert weights["graph"] == file_sha256(graph_weights(bilm_folder / "model.onnx"))
    assert weights["torch"] == file_sha256(fixture_model_folder / "model.safetensors")
    assert outputs["graph"].keys() == outputs["torch"].keys() == {"0", "1", "2", "3"}
    for key, expected in outputs["torch"].items():
        assert outputs["graph"][key].shape == expected.shape
        assert np.abs(outputs["graph"][key] - expected).max(initial=0.0) <= TOLERANCE


def test_a_folder_holding_only_the_int8_graph_is_run_with_a_notice(
    default_folder: Path, tmp_path: Path, capsys
) -> None:
    """elmo-embed took model_quantized.onnx in silence where a folder held no model.onnx: now one line says so
    (vectors near float32's, not equal to them), and a folder with both graphs runs the float32 one without it.
    `OnnxEmbedder` runs the graph it is asked for: without model.onnx, the float32 graph is refused in one line."""
    import h5py

    from elmo_transformers.inference.embed import main as embed

    folder = tmp_path / "int8-only"
    shutil.copytree(default_folder, folder)
    (folder / "model.onnx").unlink()
    record_checksums(folder)  # (the record of both graphs names a missing model.onnx)
    source = tmp_path / "in.txt"
    source.write_text("the café is open .\n", encoding="utf-8")
    for model, graph in ((folder, "model_quantized.onnx"), (default_folder, "model.onnx")):
        output = tmp_path / f"{model.name}.hdf5"
        assert embed([str(source), str(output), "--model", str(model)]) == 0
        notices = [line for line in capsys.readouterr().err.splitlines() if "notice" in line]
        assert notices == (
            [
                f"elmo-embed: notice: {folder} holds no model.onnx: embedding with its int8 graph model_quantized.onnx"
                " (8-bit products: vectors near float32's, not equal to them)"
            ]
            if model == folder
            else []
        )
        with h5py.File(output, "r") as file:
            assert file.attrs["elmo_embed_model_sha256"] == file_sha256(graph_weights(model / graph))
    with pytest.raises(EmbedError, match=r"no ONNX graph model\.onnx \(write one with elmo-convert onnx\)$"):
        OnnxEmbedder(str(folder), layers="all")


@pytest.mark.parametrize("layer", [0, 1, 2])
def test_elmo_embed_refuses_a_non_finite_vector_from_a_graph_in_one_line(
    bilm_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys, layer: int
) -> None:
    """As for PyTorch's vectors: a NaN the graph computed in any one layer (the token layer too) names the line and
    the dataset, never reaches the file."""
    from elmo_transformers.inference.embed import main as embed

    run = OnnxEmbedder.run

    def with_a_nan(self: OnnxEmbedder, prepared):
        pending = run(self, prepared)
        assert pending.vectors.shape[:2] == (1, 3)  # (batch, layers, words, width)
        pending.vectors[0, layer, 1, 5] = float("nan")
        return pending

    monkeypatch.setattr(OnnxEmbedder, "run", with_a_nan)
    source = tmp_path / "in.txt"
    source.write_text("a bb\n", encoding="utf-8")
    assert embed([str(source), str(tmp_path / "out.hdf5"), "--model", str(bilm_folder)]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("elmo-embed: error: line 1 (dataset 0) has a vector holding nan computed in float32:")
    assert "\n" not in error and not (tmp_path / "out.hdf5").exists()


def test_elmo_embed_refuses_another_dtype_for_a_graph(bilm_folder: Path, tmp_path: Path, capsys) -> None:
    from elmo_transformers.inference.embed import main as embed

    source = tmp_path / "in.txt"
    source.write_text("a bb\n", encoding="utf-8")
    assert embed([str(source), str(tmp_path / "out.hdf5"), "--model", str(bilm_folder), "--dtype", "bfloat16"]) == 2
    assert capsys.readouterr().err.strip().endswith("holds an ONNX graph, which runs in float32 (on CPU)")


def test_elmo_embed_refuses_a_heads_graph_in_one_line(fixture_model_folder: Path, tmp_path: Path) -> None:
    folder = _head(ElmoForTokenClassification, fixture_model_folder, tmp_path / "head")
    exported = _export(folder, tmp_path / "head-onnx")
    with pytest.raises(EmbedError, match=r"the graph of a task head \(logits\), not of the biLM: export the biLM$"):
        OnnxEmbedder(str(exported), layers="all")


def test_a_model_with_a_word_embedding_is_refused_in_one_line(tmp_path: Path, capsys) -> None:
    config = ElmoModel.config_class(
        char_cnn_filters=[[1, 4]], char_embedding_dim=4, num_highway_layers=1, cell_size=8, projection_dim=4,
        word_vocab_size=10, word_embedding_dim=3, bos_word_id=1, eos_word_id=2,
    )  # fmt: skip
    ElmoModel(config).save_pretrained(tmp_path / "many-langs")
    assert main(["onnx", "--model", str(tmp_path / "many-langs"), "--output", str(tmp_path / "out")]) == 2
    error = capsys.readouterr().err.strip()
    assert error.endswith("many-langs: models with a word embedding (ELMoForManyLangs') are not exported to ONNX")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "stage",
    [
        (export_measurements, "pytorch_parity"),
        (int8_graph, "quantize_graph"),
        (export_measurements, "graph_cosine"),
        (onnx_model_page, "write_model_page"),
    ],
    ids=lambda stage: stage[1],
)
def test_ctrl_c_during_the_export_is_one_line_and_leaves_the_old_output(
    fixture_model_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys, stage: tuple
) -> None:
    """Ctrl-C printed a traceback of 34-79 lines; now one line, as elmo-embed's, and the staging folder is gone."""
    output = _export(fixture_model_folder, tmp_path / "out")
    capsys.readouterr()
    before = file_tree(tmp_path)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(*stage, interrupted)
    command = ["onnx", "--model", str(fixture_model_folder), "--output", str(output), "--quantize", "int8"]
    assert exit_status_after_ctrl_c(lambda: main([*command, "--overwrite"])) == 130
    assert last_error_line(capsys) == (
        f"elmo-convert: interrupted: nothing was written: {output} is as it was; run the command again"
    )
    assert file_tree(tmp_path) == before


def test_a_failure_of_the_quantiser_is_one_line_and_leaves_the_old_output(
    fixture_model_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    output = _export(fixture_model_folder, tmp_path / "out")
    capsys.readouterr()
    before = file_tree(tmp_path)

    def failing(*args, **kwargs):
        raise RuntimeError("[ONNXRuntimeError] : 1 : FAIL : a failure of its own\nand its details")

    monkeypatch.setattr(int8_graph, "quantize_rows", failing)
    command = ["onnx", "--model", str(fixture_model_folder), "--output", str(output), "--quantize", "int8"]
    assert main([*command, "--overwrite"]) == 2
    assert last_error_line(capsys) == (
        f"elmo-convert: error: {output}: onnxruntime's quantiser failed ([ONNXRuntimeError] : 1 : FAIL : a failure"
        " of its own): nothing was written; export without --quantize"
    )
    assert file_tree(tmp_path) == before


# A measurement that misses its bar, as the export would get it, and the end of the line that refuses it.
MISSED_BARS = {
    "float32 parity 1e-2": (
        "pytorch_parity",
        (1e-2, 0.5),
        "the float32 graph differs from PyTorch float32 by 1.00e-02 on the parity sentences, above the bar of 1e-05:"
        " nothing was written; the graph does not compute this model, report it with the model folder",
    ),
    "float32 parity 1e-2 at values of 100": (
        "pytorch_parity",
        (1e-2, 100.0),
        "the float32 graph differs from PyTorch float32 by 1.00e-02 on the parity sentences, above the bar of"
        " 1.00e-03 (1e-05 x the largest |value|, 1.00e+02): nothing was written; the graph does not compute this"
        " model, report it with the model folder",
    ),
    "float32 parity NaN": (
        "pytorch_parity",
        (float("nan"), 0.5),
        "the float32 graph differs from PyTorch float32 by nan on the parity sentences, above the bar of 1e-05:"
        " nothing was written; the graph does not compute this model, report it with the model folder",
    ),
    "int8 cosine 0.98": (
        "graph_cosine",
        (0.98, 0.5),
        "the int8 graph's mean per-word cosine to float32 is 0.9800, below the bar of 0.99: nothing was written;"
        " export without --quantize",
    ),
    "int8 alone vs in a batch 2.3e-2": (
        "batch_difference",
        2.3e-2,
        "the int8 graph's outputs for a sentence alone and in a batch differ by 2.30e-02 on the parity sentences,"
        " above the bar of 1e-04: nothing was written; export without --quantize",
    ),
}


class _BatchDependentGraph:
    """A stand-in for a graph whose outputs move with the batch, as onnxruntime's dynamic quantisation's did: each
    value is shifted by 1e-3 per sentence of the batch."""

    def run(self, names, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
        mask = inputs["attention_mask"].astype(np.float32)
        return [mask[:, None, :] * (1 + 1e-3 * len(mask)), mask > 0]


def test_batch_difference_measures_a_sentence_alone_against_its_batch(bilm_folder: Path) -> None:
    """The export's measurement for `INT8_BATCH_BAR`: a graph that shifts every value with the batch size is caught
    (5 sentences: 1.005 against 1.001), at each sentence's own words; the float32 graph gives 0."""
    tokenizer = ElmoTokenizer.from_pretrained(bilm_folder)
    difference = batch_difference(_BatchDependentGraph(), tokenizer, [*PARITY_SENTENCES, ["one"]])
    assert difference == pytest.approx(4e-3, rel=1e-4)
    assert batch_difference(open_graph(bilm_folder / "model.onnx", EmbedError), tokenizer, PARITY_SENTENCES) == 0


@pytest.mark.parametrize("existing", [False, True], ids=["new output", "existing output"])
@pytest.mark.parametrize("name", MISSED_BARS)
def test_a_graph_that_misses_its_bar_is_refused_in_one_line_keeping_nothing(
    fixture_model_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys, name: str, existing: bool
) -> None:
    """The export measured its graphs but kept them whatever it measured: a parity of 1e-2 went to the model page."""
    output = tmp_path / "out"
    if existing:
        _export(fixture_model_folder, output)
    capsys.readouterr()
    before = file_tree(tmp_path)
    stage, measured, refusal = MISSED_BARS[name]
    monkeypatch.setattr(export_measurements, stage, lambda *args, **kwargs: measured)
    command = ["onnx", "--model", str(fixture_model_folder), "--output", str(output), "--quantize", "int8"]
    assert main([*command, "--overwrite", "--triton-repository", str(tmp_path / "triton")]) == 2
    assert last_error_line(capsys) == f"elmo-convert: error: {output}: {refusal}"
    assert file_tree(tmp_path) == before  # no staging folder left, an old output as it was, no Triton model


def test_the_float_bar_scales_with_the_values(fixture_model_folder: Path, tmp_path: Path, capsys) -> None:
    """The bar was absolute: a head whose logits reach 1e5 (its classifier scaled), computed to a few float32 steps
    (1e-2 here), was refused as a graph that does not compute the model. It scales with the largest |value|."""
    torch.manual_seed(0)
    head = ElmoForTokenClassification.from_pretrained(fixture_model_folder, num_labels=4).eval()
    with torch.no_grad():
        head.classifier.weight.mul_(1e5)
        head.classifier.bias.mul_(1e5)
    head.save_pretrained(tmp_path / "head")
    ElmoTokenizer.from_pretrained(fixture_model_folder).save_pretrained(tmp_path / "head")
    _export(tmp_path / "head", tmp_path / "onnx")
    parity = float(re.search(r"max \|onnxruntime - PyTorch\| (\S+)\)", capsys.readouterr().out)[1])
    inputs = ElmoTokenizer.from_pretrained(tmp_path / "head")(
        PARITY_SENTENCES, is_split_into_words=True, padding=True, return_tensors="pt"
    )
    with torch.no_grad():
        largest = float(head(**inputs).logits.abs().max())
    print(f"logits up to {largest:.3g}: max |onnxruntime - PyTorch| {parity:.2e}, bar {1e-5 * largest:.2e}")
    assert parity > 1e-5 and largest > 1e4 and parity <= 1e-5 * largest


def test_the_pages_say_what_the_folder_holds(every_graph: dict) -> None:
    """A head's page was tagged feature-extraction and its config named the source's architecture; the bundled
    model's pretraining records (its language model's perplexity, which the graph has no softmax for) were copied
    along unexplained."""
    for architecture, tag in (
        ("biLM", "feature-extraction"),
        ("ElmoForTokenClassification", "token-classification"),
        ("ElmoForSequenceClassification", "text-classification"),
    ):
        folder = every_graph[f"{architecture} float32"].parent
        assert ModelCard.load(folder / "README.md").data.pipeline_tag == tag
        expected = "ElmoModel" if architecture == "biLM" else architecture
        assert json.loads((folder / "config.json").read_text(encoding="utf-8"))["architectures"] == [expected]
        open_graph(folder / "model.onnx", EmbedError)  # the graph still matches what its config makes
    bundled = every_graph["biLM float32"].parent
    assert (Path(DEFAULT_MODEL) / "eval_results.json").is_file() and (Path(DEFAULT_MODEL) / "perplexity.png").is_file()
    assert not {"eval_results.json", "perplexity.png", "training_args.json"} & {path.name for path in bundled.iterdir()}
    page = (bundled / "README.md").read_text(encoding="utf-8")
    assert "| `SOURCES.md` | the source's: the corpus its biLM was trained on" in page
    assert "within\n1e-05 of PyTorch float32" in page and "at least 0.99" in page


def test_a_full_disk_while_quantising_is_one_line(
    fixture_model_folder: Path, tmp_path: Path, small_disk, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    """The space check counts the int8 graph as half the float graph: the fixture's export (0.44 MB graph, 0.07 MB of
    files: config, tokenizer files and code; 0.12 MB int8 graph) needs 732 KB by that count, more than a disk of
    700 KB. Past the check
    (--no-space-check) the float graph and the files fit and the int8 graph does not: the full disk is one line, and
    nothing is left. On a disk of 1.2 MB it exports."""
    disk = small_disk("700k")
    if disk is None:
        disk = tmp_path / "disk"
        disk.mkdir()
        monkeypatch.setattr(shutil, "disk_usage", lambda _: shutil._ntuple_diskusage(7e5, 0, 7e5))
    output = disk / "out"
    command = ["onnx", "--model", str(fixture_model_folder), "--output", str(output), "--quantize", "int8"]
    assert main(command) == 2
    refusal = re.fullmatch(
        rf"elmo-convert: error: {output}: the ONNX graph and its int8 copy need about (?P<needed>\d+\.\d) KB, but \S+"
        r" has \d+\.\d KB free: free some space, write elsewhere, or pass --no-space-check to try anyway",
        last_error_line(capsys),
    )
    assert refusal and 710 < float(refusal["needed"]) < 900  # 1.5 float graphs and the files: more than 700 KB
    assert not any(disk.iterdir())

    if not os.path.ismount(disk):  # what the full disk does: the int8 graph cannot be written
        save = onnx.save

        def full(model, target, *args, **kwargs) -> None:
            if Path(target).name == "model_quantized.onnx":
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            save(model, target, *args, **kwargs)

        monkeypatch.setattr(onnx, "save", full)
    assert main([*command, "--no-space-check"]) == 2
    assert last_error_line(capsys) == (
        f"elmo-convert: error: {output}: the disk is full: nothing was written; free some space or write elsewhere"
    )
    assert not any(disk.iterdir())
    monkeypatch.undo()

    roomy = small_disk("1200k") or tmp_path / "roomy"
    _export(fixture_model_folder, roomy / "out", "--quantize", "int8")
    assert {"model.onnx", "model_quantized.onnx"} <= {path.name for path in (roomy / "out").iterdir()}


def test_a_folder_of_linked_files_as_the_hubs_cache_holds_it_embeds(default_folder: Path, tmp_path: Path) -> None:
    """The Hub's cache holds a folder's files as symbolic links into its blobs (and a copy may hard-link them):
    onnxruntime 1.32 refused the loops' weights in a linked file ("it is a symbolic link", "it has multiple hard
    links"); now every weight is the main graph's, which it reads through a link. Both graphs embed, as from the
    folder itself."""
    snapshot, blobs = tmp_path / "snapshot", tmp_path / "blobs"
    snapshot.mkdir()
    blobs.mkdir()
    for path in default_folder.iterdir():
        shutil.copyfile(path, blobs / path.name)
        (snapshot / path.name).symlink_to(blobs / path.name)
    sentences = [["The", "café", "is", "open", "."], ["x" * 60]]
    for quantized in (False, True):
        linked = OnnxEmbedder(str(snapshot), layers="all", quantized=quantized).embed(sentences)
        direct = OnnxEmbedder(str(default_folder), layers="all", quantized=quantized).embed(sentences)
        assert all(np.array_equal(a, b) for a, b in zip(linked, direct, strict=True))


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (
            {"max_characters_per_token": 40},
            "{folder}: tokenizer_config.json frames words of 40 characters, but the graph reads 50"
            " (max_characters_per_token): the model and its tokenizer must frame words alike",
        ),
        (
            {"pad_token": "[PAD]"},
            "{folder}/tokenizer_config.json: pad_token must be '<pad>' (id 0, a row of no word), got '[PAD]'",
        ),
    ],
)
def test_a_front_end_that_does_not_fit_the_graph_is_one_line_before_any_output(
    bilm_folder: Path, tmp_path: Path, capsys, change: dict, problem: str
) -> None:
    """The graph path reads the folder's tokenizer_config.json with the numpy front end, not the tokenizer (whose
    agreement with config.json `model_folder_problem` checked): a framing the graph does not read, or a file the
    front end refuses, is one line, and nothing is written."""
    from elmo_transformers.inference.embed import main as embed

    folder = _copied_folder(bilm_folder, tmp_path / "graph")
    _edit_json(folder / "tokenizer_config.json", **change)
    source = tmp_path / "in.txt"
    source.write_text("a bb\n", encoding="utf-8")
    before = sorted(tmp_path.iterdir())
    assert embed([str(source), str(tmp_path / "out.hdf5"), "--model", str(folder)]) == 2
    assert capsys.readouterr().err == f"elmo-embed: error: {problem.format(folder=folder)}\n"
    assert sorted(tmp_path.iterdir()) == before


def test_a_graph_without_its_weights_file_names_the_missing_file(bilm_folder: Path, tmp_path: Path) -> None:
    """A graph whose weights lie beside it (model.onnx_data), copied without them: onnxruntime's paragraph named
    neither file."""
    folder = _copied_folder(bilm_folder, tmp_path / "graph")
    (folder / "model.onnx_data").unlink()
    with pytest.raises(EmbedError) as refused:
        open_graph(folder / "model.onnx", EmbedError)
    assert str(refused.value) == (
        f"{folder / 'model.onnx'}: its weights file model.onnx_data is missing (the graph keeps its weights beside it,"
        f" in {folder / 'model.onnx_data'}): copy the whole folder, or export the model again with elmo-convert onnx"
    )
