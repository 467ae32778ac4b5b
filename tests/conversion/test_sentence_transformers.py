"""`elmo-convert sentence-transformers`: the folder `SentenceTransformer` loads, whose `encode()` is the mean over
real words of the mixed biLM layers (checked against `AutoModel` by hand), with every `--layers` choice, the
features sentence-transformers users expect, a save/load round trip, remote code where the package is absent,
multi-process encoding (sentence-transformers' spawned pool), and one-line errors."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from elmoformanylangs_files import write_small_model
from huggingface_hub import ModelCard
from sentence_transformers import SentenceTransformer
from transformers import AutoModel, AutoTokenizer
from without_the_package import run_without_the_package

from elmo_transformers.common.model_card import file_sha256
from elmo_transformers.conversion.cli import main
from elmo_transformers.conversion.sentence_embeddings import SOURCE_CARD
from modeling_elmo import DEFAULT_MODEL
from modeling_elmo.sentence_elmo import ElmoSentenceEncoder

PACKAGE = Path(__file__).resolve().parents[2] / "modeling_elmo"

# Awkward on purpose: non-ASCII words, words over 48 UTF-8 bytes (one cut inside a 2-byte character), an empty
# and a blank sentence, and lengths from 1 to 26 words, so that every batch pads. (Text never yields an
# empty-string word: split_words drops empty chunks, and encode() takes text.)
AWKWARD = [
    "The naïve café owner said « bonjour » .",
    "Größe 日本語 emoji🙂 " + "x" * 60 + " y" + "é" * 30,
    "",
    "Hi",
    "A much longer sentence , with several ordinary words , numbers like 3.14 and 1,000 , an abbreviation "
    "like U.S. and clitics : it's what they don't say .",
    " \t ",
]


def _convert(model: Path, output: Path, *extra: str) -> Path:
    assert main(["sentence-transformers", "--model", str(model), "--output", str(output), *extra]) == 0
    return output


def _load(folder: Path) -> SentenceTransformer:
    return SentenceTransformer(str(folder), trust_remote_code=True, local_files_only=True, device="cpu")


@pytest.fixture(scope="module")
def sentence_folder(fixture_model_folder: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture model converted with the default --layers (average)."""
    return _convert(fixture_model_folder, tmp_path_factory.mktemp("st") / "fixture-st")


@pytest.fixture(scope="module")
def sentence_model(sentence_folder: Path) -> SentenceTransformer:
    return _load(sentence_folder)


def manual_sentence_vectors(model_folder: Path, texts: list[str], layers: str = "average") -> torch.Tensor:
    """The package's own AutoModel, every layer, mixed by hand and averaged over each sentence's real words."""
    model = AutoModel.from_pretrained(model_folder).eval()
    batch = AutoTokenizer.from_pretrained(model_folder)(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        hidden = model(**batch, output_hidden_states=True).hidden_states
    if layers == "average":
        words = torch.stack(hidden).mean(dim=0)
    elif layers == "first-two":
        words = (hidden[0] + hidden[1]) / 2
    elif layers == "concat":
        words = torch.cat(hidden, dim=-1)
    else:
        words = hidden[int(layers)]
    mask = batch["attention_mask"].bool()
    sums = torch.stack([words[row][mask[row]].sum(dim=0) for row in range(len(texts))])
    counts = mask.sum(dim=1, keepdim=True)
    return torch.where(counts > 0, sums / counts.clamp(min=1), torch.zeros_like(sums))


def test_converted_folder_holds_what_sentence_transformers_reads(
    sentence_folder: Path, fixture_model_folder: Path
) -> None:
    modules = json.loads((sentence_folder / "modules.json").read_text())
    assert [(module["path"], module["type"]) for module in modules] == [
        ("", "sentence_elmo.ElmoSentenceEncoder"),  # the file in this folder, not the package's module path
        ("1_Pooling", "sentence_transformers.sentence_transformer.modules.pooling.Pooling"),
    ]
    assert json.loads((sentence_folder / "sentence_bert_config.json").read_text()) == {"layers": "average"}
    pooling = json.loads((sentence_folder / "1_Pooling" / "config.json").read_text())
    assert (pooling["pooling_mode"], pooling["embedding_dimension"]) == ("mean", 32)
    names = {path.name for path in sentence_folder.iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer_config.json", "config_sentence_transformers.json"} <= names
    weights_sha256 = file_sha256(sentence_folder / "model.safetensors")
    assert (sentence_folder / "SHA256SUMS").read_text() == f"{weights_sha256}  model.safetensors\n", (
        "elmo-embed checks it"
    )
    assert not any(name.endswith((".bin", ".pt", ".pkl")) for name in names)
    model_code = ("sentence_elmo.py", "modeling_elmo.py", "mixing_elmo.py", "text_elmo.py")
    for code_file in (*model_code, "tokenization_elmo.py"):
        assert (sentence_folder / code_file).read_bytes() == (PACKAGE / code_file).read_bytes(), code_file
    card = ModelCard.load(sentence_folder / "README.md")
    assert (card.data.library_name, card.data.pipeline_tag) == ("sentence-transformers", "sentence-similarity")
    assert {"sentence-transformers", "elmo"} <= set(card.data.tags) and card.data.license == "apache-2.0"
    assert "the mean of all 3 layers (the token layer and the 2 biLSTM layers)" in card.text
    assert "mean over the sentence's words (padding excluded)" in card.text
    assert 'SentenceTransformer("fixture-st", trust_remote_code=True)' in card.text
    assert "words = torch.stack(layers).mean(dim=0)" in card.text
    assert "{{" not in card.text and "}}" not in card.text, "every template variable is filled"
    assert (sentence_folder / SOURCE_CARD).read_text() == (fixture_model_folder / "README.md").read_text()


def test_encode_equals_the_manual_mean_on_awkward_batches(
    sentence_model: SentenceTransformer, fixture_model_folder: Path
) -> None:
    expected = manual_sentence_vectors(fixture_model_folder, AWKWARD).numpy()
    assert not expected[2].any() and not expected[5].any()  # empty and blank sentences: the zero vector
    for batch_size in (2, 64):  # sorted by length into batches of mixed lengths, or all in one
        vectors = sentence_model.encode(AWKWARD, batch_size=batch_size)
        assert vectors.shape == (len(AWKWARD), 32) and vectors.dtype == np.float32
        np.testing.assert_allclose(vectors, expected, rtol=0, atol=1e-6)
    only_empty = sentence_model.encode(["", " "])
    assert only_empty.shape == (2, 32) and not only_empty.any()


@pytest.mark.parametrize(
    ("layers", "width", "mix_depth"),
    [("average", 32, 2), ("first-two", 32, 1), ("concat", 96, 2), ("0", 32, 0), ("1", 32, 1), ("2", 32, 2)],
)
def test_each_layers_choice_gives_its_documented_vectors(
    layers: str, width: int, mix_depth: int, fixture_model_folder: Path, tmp_path: Path
) -> None:
    model = _load(_convert(fixture_model_folder, tmp_path / f"fixture-st-{layers}", "--layers", layers))
    assert model.get_embedding_dimension() == width
    assert model[0].model.config.mix_depth == mix_depth  # no biLSTM layer above the mixed ones runs
    texts = AWKWARD[:4]
    np.testing.assert_allclose(
        model.encode(texts), manual_sentence_vectors(fixture_model_folder, texts, layers).numpy(), rtol=0, atol=1e-6
    )


def test_a_model_with_a_word_embedding_gets_its_word_ids(tmp_path: Path) -> None:
    """An ELMoForManyLangs model (code-point characters, a word embedding) through the same route."""
    source = write_small_model(tmp_path / "many-langs", word_dim=3)
    assert main(["elmoformanylangs", "--model", str(source), "--output", str(tmp_path / "elmo-zh")]) == 0
    model = _load(_convert(tmp_path / "elmo-zh", tmp_path / "elmo-zh-st"))
    texts = ["the naïve cat .", "жизнь 中文 unknown-word", "", "café"]
    expected = manual_sentence_vectors(tmp_path / "elmo-zh", texts).numpy()
    np.testing.assert_allclose(model.encode(texts, batch_size=2), expected, rtol=0, atol=1e-6)


def test_what_sentence_transformers_users_expect(sentence_model: SentenceTransformer, capsys) -> None:
    texts = AWKWARD[:2] + AWKWARD[3:5]
    vectors = sentence_model.encode(texts, convert_to_tensor=True, device="cpu", batch_size=3, show_progress_bar=True)
    assert isinstance(vectors, torch.Tensor) and vectors.shape == (4, 32) and vectors.device.type == "cpu"
    assert "Batches" in capsys.readouterr().err  # the progress bar
    normalized = sentence_model.encode(texts, normalize_embeddings=True)
    np.testing.assert_allclose(np.linalg.norm(normalized, axis=1), 1.0, atol=1e-6)
    np.testing.assert_allclose(normalized, (vectors / vectors.norm(dim=1, keepdim=True)).numpy(), atol=1e-6)
    similarity = sentence_model.similarity(vectors, vectors)
    torch.testing.assert_close(similarity, torch.from_numpy(normalized @ normalized.T), rtol=0, atol=1e-6)
    single = sentence_model.encode(texts[0])
    np.testing.assert_allclose(single, vectors[0].numpy(), rtol=0, atol=1e-6)


def test_save_and_reload_give_the_same_vectors(fixture_model_folder: Path, tmp_path: Path) -> None:
    loaded = _load(_convert(fixture_model_folder, tmp_path / "fixture-st-1", "--layers", "1"))  # not the default
    loaded.save(str(tmp_path / "saved-st"))
    modules = json.loads((tmp_path / "saved-st" / "modules.json").read_text())
    assert modules[0]["type"] == "sentence_elmo.ElmoSentenceEncoder"
    assert json.loads((tmp_path / "saved-st" / "sentence_bert_config.json").read_text()) == {"layers": 1}
    reloaded = _load(tmp_path / "saved-st")
    np.testing.assert_array_equal(reloaded.encode(AWKWARD), loaded.encode(AWKWARD))


# Loads the folder with SentenceTransformer in a Python where this package cannot be imported; checks encode().
_REMOTE_SCRIPT = """
    import json, sys

    import numpy as np
    from sentence_transformers import SentenceTransformer

    folder, texts, expected = sys.argv[1], json.loads(sys.argv[2]), np.load(sys.argv[3])
    model = SentenceTransformer(folder, trust_remote_code=True, device="cpu")
    assert type(model[0]).__module__.startswith("transformers_modules."), type(model[0]).__module__
    vectors = model.encode(texts, batch_size=2)
    assert np.allclose(vectors, expected, rtol=0, atol=1e-6), np.abs(vectors - expected).max()
    print("remote code OK", type(model[0]).__name__, vectors.shape)
    """


@pytest.mark.slow
def test_folder_loads_as_remote_code_where_the_package_is_not_installed(
    sentence_folder: Path, fixture_model_folder: Path, tmp_path: Path
) -> None:
    np.save(tmp_path / "expected.npy", manual_sentence_vectors(fixture_model_folder, AWKWARD).numpy())
    completed = run_without_the_package(
        _REMOTE_SCRIPT, str(sentence_folder), json.dumps(AWKWARD), str(tmp_path / "expected.npy"), work=tmp_path
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert "remote code OK ElmoSentenceEncoder (6, 32)" in completed.stdout


# For the 2-process pool: every AWKWARD case and more sentences than one chunk of POOL_CHUNK_SIZE, so that both
# workers get chunks; each chunk is sorted by length into batches on its own, unlike the single-process run.
POOL_SENTENCES = AWKWARD + [f"Sentence {index} : {text}" for index, text in enumerate(AWKWARD * 3)]
POOL_CHUNK_SIZE = 5


@pytest.fixture(scope="module")
def default_sentence_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled default model converted: small, and with oneDNN-packed weights on CPU (the fixture's too)."""
    return _convert(Path(DEFAULT_MODEL), tmp_path_factory.mktemp("st-pool") / "default-st")


@pytest.mark.slow
def test_multi_process_encode_equals_encode_in_order(
    default_sentence_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`encode(device=["cpu", "cpu"])`: sentence-transformers pickles the whole model to 2 spawned workers, which
    import its classes by name (the folder's code, `transformers_modules....sentence_elmo`) and encode chunks."""
    model = _load(default_sentence_folder)
    # First, so that the parent holds the derived (oneDNN-packed) weights and tokenizer word cache that must not
    # travel to the workers.
    single = model.encode(POOL_SENTENCES)
    assert len(np.unique(single.round(5), axis=0)) == len(POOL_SENTENCES) - 1  # only "" and " \t " share a row

    # Spies on the class, not the instance: the instance is what gets pickled to the workers.
    pools, parent_batches = [], []
    start_pool, inference = SentenceTransformer.start_multi_process_pool, SentenceTransformer._inference

    def spy_start(self: SentenceTransformer, target_devices: list[str]) -> dict:
        pools.append(start_pool(self, target_devices))
        return pools[-1]

    def spy_inference(self: SentenceTransformer, inputs: list, **kwargs) -> object:
        parent_batches.append(inputs)
        return inference(self, inputs, **kwargs)

    monkeypatch.setattr(SentenceTransformer, "start_multi_process_pool", spy_start)
    monkeypatch.setattr(SentenceTransformer, "_inference", spy_inference)
    multi = model.encode(POOL_SENTENCES, device=["cpu", "cpu"], chunk_size=POOL_CHUNK_SIZE)

    assert len(pools) == 1 and len(pools[0]["processes"]) == 2  # the pool encode() started, and stopped
    assert not parent_batches, "the parent encoded nothing itself: every chunk came from a worker"
    assert multi.shape == single.shape and multi.dtype == np.float32
    np.testing.assert_allclose(multi, single, rtol=0, atol=1e-6)


# The same where the package cannot be imported, in the script nor in the pool's workers: what Hub users get.
_REMOTE_POOL_SCRIPT = """
    import json, sys

    import numpy as np
    from sentence_transformers import SentenceTransformer

    folder, texts, chunk_size = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
    model = SentenceTransformer(folder, trust_remote_code=True, device="cpu")
    assert type(model[0]).__module__.startswith("transformers_modules."), type(model[0]).__module__
    single = model.encode(texts)
    pool = model.start_multi_process_pool(["cpu", "cpu"])
    try:
        multi = model.encode(texts, pool=pool, chunk_size=chunk_size)
        workers = sorted({process.pid for process in pool["processes"] if process.is_alive()})
    finally:
        model.stop_multi_process_pool(pool)
    assert len(workers) == 2, workers
    assert np.allclose(multi, single, rtol=0, atol=1e-6), np.abs(multi - single).max()
    print("remote pool OK", multi.shape)
    """


@pytest.mark.slow
def test_multi_process_encode_of_remote_code_where_the_package_is_not_installed(
    default_sentence_folder: Path, tmp_path: Path
) -> None:
    completed = run_without_the_package(
        _REMOTE_POOL_SCRIPT,
        str(default_sentence_folder),
        json.dumps(POOL_SENTENCES),
        str(POOL_CHUNK_SIZE),
        work=tmp_path,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert f"remote pool OK ({len(POOL_SENTENCES)}, 256)" in completed.stdout


def _conversion_error(capsys: pytest.CaptureFixture, *arguments: str) -> str:
    assert main(["sentence-transformers", *arguments]) == 2
    stderr = capsys.readouterr().err
    assert "Traceback" not in stderr and stderr.endswith("\n"), stderr
    last_line = stderr.strip().splitlines()[-1]  # after any progress bar of the weights being read
    assert last_line.startswith("elmo-convert: error: "), stderr
    return last_line


def test_bad_configurations_get_one_line_errors(
    fixture_model_folder: Path, sentence_folder: Path, tmp_path: Path, capsys
) -> None:
    model = ["--model", str(fixture_model_folder)]
    output = ["--output", str(tmp_path / "out")]
    for layers in ("3", "top", "-1"):
        message = _conversion_error(capsys, *model, *output, "--layers", layers)
        assert "layers must be one of average, first-two, concat or a layer index in 0..2" in message, message
        assert repr(layers) in message
    assert "missing: no such model folder" in _conversion_error(capsys, "--model", str(tmp_path / "missing"), *output)
    (tmp_path / "empty").mkdir()
    assert "empty: not a model folder (no config.json)" in _conversion_error(
        capsys, "--model", str(tmp_path / "empty"), *output
    )
    (tmp_path / "bert").mkdir()
    (tmp_path / "bert" / "config.json").write_text('{"model_type": "bert"}')
    message = _conversion_error(capsys, "--model", str(tmp_path / "bert"), *output)
    assert "model_type is 'bert', expected 'elmo'" in message
    (tmp_path / "no-weights").mkdir()
    (tmp_path / "no-weights" / "config.json").write_text((fixture_model_folder / "config.json").read_text())
    message = _conversion_error(capsys, "--model", str(tmp_path / "no-weights"), *output)
    assert "cannot load the ELMo model" in message
    message = _conversion_error(capsys, *model, "--output", str(sentence_folder))
    assert "already exists: pass --overwrite" in message
    assert not (tmp_path / "out").exists()

    broken = tmp_path / "broken-st"
    broken.mkdir()
    for path in sentence_folder.rglob("*"):
        if path.is_file():
            (broken / path.relative_to(sentence_folder)).parent.mkdir(exist_ok=True)
            (broken / path.relative_to(sentence_folder)).write_bytes(path.read_bytes())
    (broken / "sentence_bert_config.json").write_text('{"layers": 7}')
    with pytest.raises(ValueError, match=r"layer index in 0\.\.2 .*got 7$"):
        _load(broken)
    with pytest.raises(ValueError, match="encodes text \\(str\\), got int"):
        ElmoSentenceEncoder(str(fixture_model_folder)).preprocess([3])


def test_the_plain_package_never_imports_sentence_transformers() -> None:
    """modeling_elmo must work without sentence-transformers: only sentence_elmo.py imports it, and no other
    module imports sentence_elmo.py (nor does save_pretrained copy it into plain model folders)."""
    for path in PACKAGE.glob("*.py"):
        if path.name == "sentence_elmo.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom):
                names = [node.module or "", *(alias.name for alias in node.names)]
            assert not any(name.split(".")[0] in ("sentence_transformers", "sentence_elmo") for name in names), path


def test_help_names_every_layers_choice(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["sentence-transformers", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())  # argparse wraps lines to the terminal's width
    for choice in ("(default average): average (mean of all layers)", "first-two", "concat", "0 = token layer"):
        assert choice in help_text
    assert "elmo-convert sentence-transformers --model elmo-original" in help_text and "--overwrite" in help_text
