"""The text front end (`modeling_elmo/text_elmo.py`, numpy alone): the ids of `ElmoTokenizer` on every corpus of the
tests, the conformance file, the split's rules for lone marks and lone surrogates, `ElmoTextEncoder.from_folder`, and
a package that gives the front end without torch or transformers yet still registers the Auto classes."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
import textwrap
import unicodedata
from pathlib import Path

import numpy as np
import pytest
from awkward_words import AWKWARD_WORDS
from text_conformance import BATCH, CASES, CONFORMANCE_FILE, conformance_text
from without_the_package import PROJECT_PACKAGES, run_without_the_package

import modeling_elmo.text_elmo
from modeling_elmo import DEFAULT_MODEL, ElmoTextEncoder, ElmoTokenizer, split_words

ROOT = Path(__file__).resolve().parents[2]
# every file of raw text the tests hold, one sentence a line
CORPORA = [ROOT / "examples" / "sentences.txt", ROOT / "tests" / "model" / "data" / "heldout_sample.txt"]
# Unicode 14.0's marks, which the front end reads on every Python
MARKS = [chr(code) for first, last in modeling_elmo.text_elmo._MARK for code in range(first, last + 1)]


def _corpus_lines() -> list[str]:
    lines = [line for path in CORPORA for line in path.read_text(encoding="utf-8").splitlines()]
    awkward = [" ".join(AWKWARD_WORDS), "".join(AWKWARD_WORDS), *AWKWARD_WORDS]
    return [*lines, *awkward, *(line for _, line, _ in CASES), *BATCH, *(f" {mark} x{mark}" for mark in MARKS[::7])]


def _tokenizer_arrays(tokenizer: ElmoTokenizer, batch: list, **kwargs) -> dict[str, np.ndarray]:
    encoded = tokenizer(batch, padding=True, return_tensors="np", **kwargs)
    return {key: encoded[key] for key in ("input_ids", "attention_mask")}


def _assert_same(front_end: dict[str, np.ndarray], tokenizer: dict[str, np.ndarray]) -> None:
    assert front_end.keys() == tokenizer.keys()
    for key, value in front_end.items():
        assert value.dtype == np.int64 and value.shape == tokenizer[key].shape, key
        np.testing.assert_array_equal(value, tokenizer[key], err_msg=key)


@pytest.mark.parametrize("word_cache_size", [16_384, 5])  # 5: the cache starts over inside most batches
def test_front_end_gives_the_tokenizers_ids_on_every_corpus(word_cache_size: int) -> None:
    lines = _corpus_lines()
    assert len(lines) > 300
    encoder, tokenizer = ElmoTextEncoder(word_cache_size=word_cache_size), ElmoTokenizer()
    for _ in ("cold", "warm"):
        for start in range(0, len(lines), 64):
            batch = lines[start : start + 64]
            _assert_same(encoder.encode_text(batch), _tokenizer_arrays(tokenizer, batch))
            assert [encoder.split(line) for line in batch] == [tokenizer.tokenize(line) for line in batch]
    sentences = [AWKWARD_WORDS, [], AWKWARD_WORDS[::-2], [""]]
    _assert_same(encoder.encode_words(sentences), _tokenizer_arrays(tokenizer, sentences, is_split_into_words=True))


def test_front_end_of_no_sentence_and_of_empty_sentences() -> None:
    encoder = ElmoTextEncoder()
    assert encoder.encode_text([])["input_ids"].shape == (0, 0, 50)
    inputs = encoder.encode_text(["", "\u200e\x00"])
    assert inputs["input_ids"].shape == (2, 0, 50) and inputs["attention_mask"].shape == (2, 0)


def test_conformance_file_is_what_its_generator_writes() -> None:
    """The committed file is the generator's output (tests/helpers/text_conformance.py writes it again), small."""
    assert CONFORMANCE_FILE.read_text(encoding="ascii") == conformance_text()
    assert CONFORMANCE_FILE.stat().st_size < 64_000


# Each reading of the split rule that clients took two ways (issue 50), by a piece of a line that decides it.
OPEN_READINGS = {
    "rule 3's word boundary applies to rule 4's n't": "n'tx",
    "how many characters rule 9 takes after U+200D": "\U0001f468\u200d\u200d\U0001f469\U0001f467",
    "whether rule 1's letter includes numerals": "\u00bd.S. \u216b.\u2163.",
    "whether case-insensitive folds the long s": "it'\u017f",
    "whether tags must follow U+1F3F4 before dropping": "\U0001f3f4\u200e\U000e0067",
    "a word boundary at a chunk's end": "don't\u00a0it's",
    "a trailing U+200D": "\U0001f44d\u200d\u200d ",
    "the Greek iota beside a mark": "(\u0399\u03b1\u03bd",
    "a character assigned since Unicode 14.0": "a\U00011f04b",
}


@pytest.mark.parametrize("reading", OPEN_READINGS)
def test_the_conformance_file_decides_each_open_reading(reading: str) -> None:
    cases = json.loads(CONFORMANCE_FILE.read_text(encoding="ascii"))["cases"]
    assert any(OPEN_READINGS[reading] in case["line"] for case in cases), reading


def test_the_docs_state_the_split_rule_in_the_front_ends_words() -> None:
    """docs/onnx.md states `text_elmo.SPLIT_RULE` word for word (the page of an exported folder does too:
    tests/onnx/test_onnx_export.py), each reading the conformance file decides among it."""
    docs = (ROOT / "docs" / "onnx.md").read_text(encoding="utf-8")
    assert modeling_elmo.text_elmo.SPLIT_RULE in docs
    assert "onnxruntime-web" in docs and "externalData" in docs


def test_tokenizer_and_front_end_pass_the_conformance_file() -> None:
    document = json.loads(CONFORMANCE_FILE.read_text(encoding="ascii"))
    encoder, tokenizer = ElmoTextEncoder(document["max_characters_per_token"]), ElmoTokenizer()
    for case in document["cases"]:
        assert encoder.split(case["line"]) == tokenizer.tokenize(case["line"]) == case["words"], case["rule"]
        assert tokenizer(case["line"])["input_ids"] == case["input_ids"], case["rule"]
        if case["words"]:
            assert encoder.encode_text([case["line"]])["input_ids"][0].tolist() == case["input_ids"], case["rule"]
    batch = document["batch"]
    expected = {key: np.array(batch[key], dtype=np.int64) for key in ("input_ids", "attention_mask")}
    _assert_same(encoder.encode_text(batch["lines"]), expected)
    _assert_same(_tokenizer_arrays(tokenizer, batch["lines"]), expected)


def test_a_mark_with_nothing_to_combine_with_is_no_word() -> None:
    """--tokenize made a word of a lone U+0301 or U+FE0F between spaces. Every mark (Mn, Mc, Me) alone, after a
    control character or at a word's start is no word; after a letter it stays with it."""
    assert len(MARKS) > 2000
    for mark in MARKS:
        assert split_words(f" {mark} ") == [], ascii(mark)
        assert split_words(f"{mark}{mark}a\x00{mark}") == ["a"], ascii(mark)
        assert split_words(f"x{mark}") == [unicodedata.normalize("NFC", f"x{mark}")], ascii(mark)


def test_a_lone_surrogate_is_dropped_from_text_and_from_a_given_word() -> None:
    """A Python str can hold half of a UTF-16 pair, which has no UTF-8 bytes: it was a word of no bytes of its own."""
    assert split_words("wo\ud800rd \udc00 \ud83d") == ["word"]
    encoder, tokenizer = ElmoTextEncoder(), ElmoTokenizer()
    given = [["\ud800", "a\udfffb"]]
    expected = _tokenizer_arrays(tokenizer, [["", "ab"]], is_split_into_words=True)
    _assert_same(encoder.encode_words(given), expected)
    _assert_same(_tokenizer_arrays(tokenizer, given, is_split_into_words=True), expected)


def test_front_end_refuses_lines_given_as_words_and_words_that_are_not_strings() -> None:
    encoder = ElmoTextEncoder()
    with pytest.raises(TypeError, match="lists of words; for raw lines use encode_text"):
        encoder.encode_words(["a line"])
    with pytest.raises(TypeError, match="every word must be a str, got a int"):
        encoder.encode_words([["a", 3]])
    with pytest.raises(TypeError, match="a list of raw lines"):
        encoder.encode_text("one line")


def test_front_end_reads_an_iterator_of_lines_or_sentences_once() -> None:
    """An iterator is read once: its lines are encoded, not consumed by a type check and encoded as no batch."""
    encoder, lines = ElmoTextEncoder(), ["It's a test.", "", "e\u0301cole"]
    _assert_same(encoder.encode_text(iter(lines)), encoder.encode_text(lines))
    _assert_same(encoder.encode_text(line for line in lines), encoder.encode_text(lines))
    sentences = [split_words(line) for line in lines]
    _assert_same(encoder.encode_words(iter(sentences)), encoder.encode_words(sentences))
    with pytest.raises(TypeError, match="got a bytes among them"):
        encoder.encode_text(iter(["a line", b"bytes"]))


@pytest.mark.parametrize(("text", "kind"), [(None, "NoneType"), (b"a line", "bytes"), (["a line"], "list")])
def test_split_refuses_what_is_not_a_str(text: object, kind: str) -> None:
    message = f"^split_words takes one raw line, a str; got a {kind}$"
    with pytest.raises(TypeError, match=message):
        split_words(text)
    with pytest.raises(TypeError, match=message):
        ElmoTextEncoder().split(text)


@pytest.mark.parametrize("width", [2, 1025, 10**9, True, 50.0])
def test_a_word_width_outside_the_limits_is_refused_in_one_line(width: object) -> None:
    """One owner of the limits (text_elmo.MAX_CHARACTERS_PER_TOKEN): a width of 10**9 asked numpy for 7.45 GiB at the
    first word."""
    expected = f"max_characters_per_token must be an int from 3 to 1024, got {width!r}$"
    with pytest.raises(ValueError, match="^ElmoTextEncoder: " + expected):
        ElmoTextEncoder(width)
    with pytest.raises(ValueError, match="^ElmoTokenizer: " + expected):
        ElmoTokenizer(max_characters_per_token=width)


def test_encoder_from_folder_reads_the_tokenizers_settings(tmp_path: Path) -> None:
    assert ElmoTextEncoder.from_folder(DEFAULT_MODEL).max_characters_per_token == 50
    ElmoTokenizer(max_characters_per_token=7).save_pretrained(tmp_path)
    lines = ["a" * 10 + " naïve \u65e5\u672c", ""]
    _assert_same(
        ElmoTextEncoder.from_folder(tmp_path).encode_text(lines),
        _tokenizer_arrays(ElmoTokenizer.from_pretrained(tmp_path), lines),
    )


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({"tokenizer_config.json": "{"}, "tokenizer_config.json: cannot be read as JSON"),
        ({"tokenizer_config.json": "[]"}, "tokenizer_config.json: expected a JSON object, got a list"),
        ({"config.json": '{"max_characters_per_token": 2}'}, "config.json: max_characters_per_token must be an int"),
        (
            {"tokenizer_config.json": '{"max_characters_per_token": 1000000000}'},
            r"tokenizer_config.json: max_characters_per_token must be an int from 3 to 1024, got 1000000000$",
        ),
        ({"tokenizer_config.json": '{"pad_token": "<x>"}'}, "pad_token must be '<pad>'"),
        ({"tokenizer_config.json": "{}", "char_vocab.json": "{}"}, "char_vocab.json: this folder's tokenizer reads"),
        ({}, "neither tokenizer_config.json nor config.json is there"),
    ],
)
def test_encoder_from_folder_refuses_what_it_cannot_follow(tmp_path: Path, files: dict, message: str) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    with pytest.raises(ValueError, match=message):
        ElmoTextEncoder.from_folder(tmp_path)


def _added_token(content: str) -> dict:
    """A special token as transformers writes an AddedToken into tokenizer_config.json."""
    return {"content": content, "lstrip": False, "normalized": False, "rstrip": False, "single_word": False,
            "special": True}  # fmt: skip


def test_encoder_from_folder_reads_a_pad_token_written_as_an_object(tmp_path: Path) -> None:
    """transformers may write `pad_token` as an AddedToken object: its content is what is compared (the tests above
    give the string form only, which a check of the raw value would pass too)."""
    ElmoTokenizer(max_characters_per_token=7).save_pretrained(tmp_path)
    settings_file = tmp_path / "tokenizer_config.json"
    settings = json.loads(settings_file.read_text(encoding="utf-8"))
    settings_file.write_text(json.dumps({**settings, "pad_token": _added_token("<pad>")}), encoding="utf-8")
    assert ElmoTextEncoder.from_folder(tmp_path).max_characters_per_token == 7
    settings_file.write_text(json.dumps({**settings, "pad_token": _added_token("<x>")}), encoding="utf-8")
    with pytest.raises(ValueError) as refused:
        ElmoTextEncoder.from_folder(tmp_path)
    assert str(refused.value) == f"{settings_file}: pad_token must be '<pad>' (id 0, a row of no word), got '<x>'"


def test_text_elmo_imports_only_the_standard_library_and_numpy() -> None:
    """One file, copied alone beside a graph (an ONNX folder, a Triton python model): no relative import, no torch."""
    tree = ast.parse(Path(modeling_elmo.text_elmo.__file__).read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            assert node.level == 0 and node.module.split(".")[0] in {*sys.stdlib_module_names, "numpy"}, node.module
        elif isinstance(node, ast.Import):
            assert all(alias.name.split(".")[0] in {*sys.stdlib_module_names, "numpy"} for alias in node.names)


_ALONE_SCRIPT = """
    import importlib.util, json, sys

    import numpy as np

    spec = importlib.util.spec_from_file_location("text_elmo", sys.argv[1])
    text_elmo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(text_elmo)
    encoder = text_elmo.ElmoTextEncoder.from_folder(sys.argv[2])
    inputs = encoder.encode_text(json.loads(sys.argv[3]))
    expected = np.load(sys.argv[4])
    assert np.array_equal(inputs["input_ids"], expected), "ids differ"
    loaded = [name for name in ("torch", "transformers", "modeling_elmo") if sys.modules.get(name) is not None]
    print("alone OK", loaded)  # (a refused package is None in sys.modules)
    """


def test_the_copied_file_alone_encodes_where_neither_the_package_nor_torch_nor_transformers_is(tmp_path: Path) -> None:
    copied = shutil.copy(modeling_elmo.text_elmo.__file__, tmp_path / "text_elmo.py")
    lines = [line for _, line, _ in CASES if "\ud800" not in line and "\udc00" not in line]
    np.save(tmp_path / "expected.npy", _tokenizer_arrays(ElmoTokenizer(), lines)["input_ids"])
    arguments = (str(copied), DEFAULT_MODEL, json.dumps(lines), str(tmp_path / "expected.npy"))
    refuse = (*PROJECT_PACKAGES, "torch", "transformers")
    completed = run_without_the_package(_ALONE_SCRIPT, *arguments, work=tmp_path, refuse=refuse)
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert "alone OK []" in completed.stdout


def _run(script: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True, cwd=ROOT)


def test_the_front_end_imports_neither_torch_nor_transformers() -> None:
    completed = _run("""
        import sys
        import modeling_elmo.text_elmo
        from modeling_elmo import BILM_TF_CHAR_IDS, ElmoTextEncoder, split_words, word_to_char_ids
        ElmoTextEncoder().encode_text(["It's a test."])
        print("loaded", sorted(name for name in ("torch", "transformers", "accelerate") if name in sys.modules))
        """)
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert "loaded []" in completed.stdout


_REGISTERED = """
    from transformers import AutoConfig, AutoModel, AutoTokenizer
    from transformers.pipelines import PIPELINE_REGISTRY
    model = AutoModel.from_pretrained(modeling_elmo.DEFAULT_MODEL)
    tokenizer = AutoTokenizer.from_pretrained(modeling_elmo.DEFAULT_MODEL)
    assert type(model).__module__ == "modeling_elmo.modeling_elmo", type(model).__module__
    assert type(tokenizer).__module__ == "modeling_elmo.tokenization_elmo", type(tokenizer).__module__
    assert "elmo-substitutes" in PIPELINE_REGISTRY.get_supported_tasks()
    print("registered")
    """


@pytest.mark.slow
@pytest.mark.parametrize(
    "imports",
    [
        "import modeling_elmo",  # the documented way: transformers comes after
        "import transformers\nimport modeling_elmo",
        "import modeling_elmo.text_elmo\nimport transformers",
        "import modeling_elmo.modeling_elmo",  # transformers comes in halfway through the package's own module
        "from modeling_elmo import ElmoConfig",
    ],
)
def test_the_auto_classes_are_registered_whatever_comes_first(imports: str) -> None:
    completed = _run(f"{imports}\nimport modeling_elmo\n{textwrap.dedent(_REGISTERED)}")
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert "registered" in completed.stdout


def test_where_torch_is_not_installed_the_front_end_and_transformers_still_import(tmp_path: Path) -> None:
    script = """
        import sys
        sys.path.insert(0, sys.argv[1])
        import modeling_elmo.text_elmo
        import transformers
        from modeling_elmo import split_words
        assert split_words("It's") == ["It", "'s"]
        print("imported", sys.modules.get("torch") is not None)
        """
    completed = run_without_the_package(script, str(ROOT), work=tmp_path, refuse=("torch",))
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert "imported False" in completed.stdout
