"""`elmo-convert allennlp --archive MODEL.zip`: NLPL repository archives, built here in the three layouts the
repository serves (bilm-tf weights, from the bilm-tf fixture; bilm-tf TensorFlow checkpoints, from the checkpoint
TensorFlow wrote in `data/`; ELMoForManyLangs models, from `elmoformanylangs_files`), each as NLPL ships it and as
its users re-pack it (one folder down, with macOS's `__MACOSX/` and `._*` entries, names in upper case, unzipped),
convert to the same tensors as the converter of the layout's format given the same files, with the archive's
meta.json on the model page; a bad archive is one line naming the member, with its folder, and the way on."""

from __future__ import annotations

import ast
import json
import shutil
import tracemalloc
import zipfile
from pathlib import Path

import pytest
import torch
from bad_inputs import RunsAShellCommand
from elmoformanylangs_files import BAD_NETWORK_CONFIGS, write_small_model
from huggingface_hub import ModelCard
from safetensors.torch import load_file

import elmo_transformers.conversion.nlpl_archive  # (imported before memory is measured)
from elmo_transformers.common import disk_space
from elmo_transformers.common.checksums import file_sha256
from elmo_transformers.common.disk_space import format_bytes
from elmo_transformers.conversion.cli import main
from elmo_transformers.conversion.nlpl_archive import SMALL_MEMBER_BYTES

CHECKPOINT = Path(__file__).parent / "data" / "bilm_tf_checkpoint"
CHECKPOINT_FILES = ("model.ckpt-1.index", "model.ckpt-1.data-00000-of-00001", "checkpoint", "options.json", "vocab.txt")
ELMOFORMANYLANGS_FILES = ("config.json", "cnn_small.json", "char.dic", "word.dic", "encoder.pkl", "token_embedder.pkl")

# A meta.json as the NLPL repository (version 2.0) writes it for an ELMo entry: the entry's id and persistent
# handle, the algorithm, the corpus list (each with its ISO 639-3 language), the creators, the vector size (2 x
# the projection) and the vocabulary.
META = {
    "algorithm": {
        "command": "python3 bin/train_elmo.py --train_prefix corpus/* --vocab_file vocab.txt --save_dir checkpoints",
        "id": 8,
        "name": "ELMo",
        "tool": "TensorFlow",
        "url": "https://github.com/allenai/bilm-tf",
        "version": "1.15",
    },
    "contents": [
        {"filename": "model.hdf5", "format": "ELMo"},
        {"filename": "options.json", "format": "ELMo"},
        {"filename": "vocab.txt", "format": "ELMo"},
    ],
    "corpus": [
        {
            "NER": False,
            "case preserved": True,
            "description": "Test fixture corpus",
            "id": 110,
            "language": "nob",
            "lemmatized": False,
            "public": False,
            "stop words removal": None,
            "tagger": None,
            "tagset": None,
            "tokens": 1234567,
        }
    ],
    "creators": [{"email": "creator@example.org", "name": "A. Creator"}],
    "dimensions": 32,
    "documentation": "https://github.com/ltgoslo/simple_elmo",
    "handle": "http://vectors.nlpl.eu/repository/20/209.zip",
    "id": 209,
    "vocabulary": {"size": 458},
}


def _archive(
    path: Path, members: dict[str, bytes | Path], *, marked: str | None = None, flag_bits: int = 0, method: int = 0
) -> Path:
    """A ZIP of `members`; the member `marked` is recorded as having the `flag_bits` (0x1: encrypted) and, where
    given, the compression `method` (readers go by the central directory, written from these records on close)."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, content in members.items():
            archive.writestr(name, content.read_bytes() if isinstance(content, Path) else content)
        if marked is not None:
            info = archive.getinfo(marked)
            info.flag_bits |= flag_bits
            info.compress_type = method or info.compress_type
    return path


def _unzipped(archive: Path, folder: Path) -> Path:
    with zipfile.ZipFile(archive) as opened:
        opened.extractall(folder)
    return folder


def _nlpl_members(elmo_fixture: Path, folder: str = "", weights_name: str = "model.hdf5") -> dict[str, bytes | Path]:
    return {
        f"{folder}{weights_name}": elmo_fixture / "lm_weights.hdf5",
        f"{folder}options.json": elmo_fixture / "options.json",
        f"{folder}vocab.txt": elmo_fixture / "vocab_test.txt",
        f"{folder}meta.json": json.dumps(META, indent=2).encode(),
        f"{folder}README": b"ELMo model 209 of the NLPL repository.\n",
    }


def _error(capsys: pytest.CaptureFixture, *arguments: str) -> str:
    """The one error line (above it at most progress bars, which end before it), with no traceback."""
    assert main(["allennlp", *arguments]) == 2
    error = capsys.readouterr().err
    assert "Traceback" not in error and error.count("elmo-convert: error:") == 1, error
    last = error.strip().splitlines()[-1]
    assert last.startswith("elmo-convert: error: "), error
    return last


def _assert_same_tensors(converted: Path, expected: Path) -> None:
    ours, theirs = load_file(converted / "model.safetensors"), load_file(expected / "model.safetensors")
    assert ours.keys() == theirs.keys()
    assert all(torch.equal(ours[name], theirs[name]) for name in theirs)


def _source_weights(archive: Path) -> list[dict[str, str]]:
    return [{"file": archive.name, "sha256": file_sha256(archive)}]


@pytest.mark.parametrize(
    "layout",
    ["nlpl", "one folder down, macOS", "other weights name, resource fork, no metadata", "upper-case names"],
)
def test_archive_converts_to_the_weights_of_its_files(
    layout: str, elmo_fixture: Path, fixture_model_folder: Path, tmp_path: Path
) -> None:
    members = {
        "nlpl": _nlpl_members(elmo_fixture),
        # macOS's zip puts each file's resource fork under __MACOSX/: never a second model.
        "one folder down, macOS": {"__MACOSX/209/._model.hdf5": b"\0", **_nlpl_members(elmo_fixture, folder="209/")},
        # ... and copies to other file systems put it beside the file: never a second *.hdf5.
        "other weights name, resource fork, no metadata": {
            "._elmo_weights.hdf5": b"\0",
            **{
                name: content
                for name, content in _nlpl_members(elmo_fixture, weights_name="elmo_weights.hdf5").items()
                if name != "meta.json"
            },
        },
        "upper-case names": {name.upper(): content for name, content in _nlpl_members(elmo_fixture).items()},
    }[layout]
    archive = _archive(tmp_path / "209.zip", members)
    output = tmp_path / "converted"
    assert main(["allennlp", "--archive", str(archive), "--output", str(output)]) == 0

    _assert_same_tensors(output, fixture_model_folder)
    card = ModelCard.load(output / "README.md")
    assert card.data.source_weights == _source_weights(archive)
    assert card.data.source_options == {"file": "options.json", "sha256": file_sha256(elmo_fixture / "options.json")}
    assert 0 < card.data.parity_max_abs_difference < 5e-6
    if "no metadata" in layout:
        assert card.data.language == "en" and card.data.get("nlpl_metadata") is None
        assert "NLPL-style archive 209.zip" in card.text
    else:
        assert card.data.language == ["nob"]
        assert card.data.nlpl_metadata == META
        assert "the NLPL repository's ELMo model 209 (209.zip)" in card.text
        assert "Test fixture corpus (1,234,567 tokens, not lemmatized, case preserved)" in card.text
    assert sorted(path.name for path in tmp_path.iterdir()) == ["209.zip", "converted"], "no temporary leftovers"


def test_unzipped_archive_converts_as_its_zip(elmo_fixture: Path, fixture_model_folder: Path, tmp_path: Path) -> None:
    members = {"__MACOSX/209/._model.hdf5": b"\0", **_nlpl_members(elmo_fixture, folder="209/")}
    folder = _unzipped(_archive(tmp_path / "209.zip", members), tmp_path / "unzipped")
    output = tmp_path / "converted"
    assert main(["allennlp", "--archive", str(folder), "--output", str(output)]) == 0

    _assert_same_tensors(output, fixture_model_folder)
    card = ModelCard.load(output / "README.md")
    assert card.data.source_weights == [{"file": "model.hdf5", "sha256": file_sha256(elmo_fixture / "lm_weights.hdf5")}]
    assert card.data.language == ["nob"] and card.data.nlpl_metadata == META
    unchanged = sorted(Path(name).name for name in _nlpl_members(elmo_fixture))
    assert sorted(path.name for path in (folder / "209").iterdir()) == unchanged, "the folder is read, not changed"


@pytest.fixture(scope="module")
def checkpoint_converted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The checkpoint converted with `elmo-convert bilm-tf-checkpoint`."""
    output = tmp_path_factory.mktemp("bilm-tf") / "elmo-lm"
    files = ["--checkpoint", CHECKPOINT / "model.ckpt-1", "--options", CHECKPOINT / "options.json"]
    files += ["--vocab", CHECKPOINT / "vocab.txt"]
    assert main(["bilm-tf-checkpoint", *map(str, files), "--output", str(output)]) == 0
    return output


@pytest.mark.parametrize("unzipped", [False, True], ids=["zip", "folder"])
def test_checkpoint_archive_converts_as_bilm_tf_checkpoint(
    unzipped: bool, checkpoint_converted: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    members: dict[str, bytes | Path] = {f"212/{name}": CHECKPOINT / name for name in CHECKPOINT_FILES}
    members["212/meta.json"] = json.dumps({**META, "id": 212}).encode()
    archive = _archive(tmp_path / "212.zip", members)
    source = _unzipped(archive, tmp_path / "unzipped") if unzipped else archive
    output = tmp_path / "converted"
    assert main(["allennlp", "--archive", str(source), "--output", str(output)]) == 0

    assert "with its softmax of 458 words and vocab.txt" in capsys.readouterr().out
    _assert_same_tensors(output, checkpoint_converted)
    assert (output / "vocab.txt").read_bytes() == (CHECKPOINT / "vocab.txt").read_bytes()
    card = ModelCard.load(output / "README.md")
    if not unzipped:
        assert card.data.source_weights == _source_weights(archive)
    else:
        assert [record["file"] for record in card.data.source_weights] == list(CHECKPOINT_FILES[:2])
    assert card.data.nlpl_metadata["id"] == 212 and "the NLPL repository's ELMo model 212" in card.text


def _elmoformanylangs_model(folder: Path, *, separate_config: bool) -> Path:
    """A small model in their format; with `separate_config`, the network config lies in `configs/` beside the
    model folder, and config.json names it by a relative path (as in their repository)."""
    model = write_small_model(folder / "144")
    if separate_config:
        (folder / "configs").mkdir()
        shutil.move(model / "cnn_small.json", folder / "configs" / "cnn_small.json")
        (model / "config.json").write_text(json.dumps({"config_path": "../configs/cnn_small.json"}))
    return model


@pytest.mark.parametrize("separate_config", [False, True], ids=["config beside", "config in another folder"])
def test_elmoformanylangs_archive_converts_as_elmoformanylangs(separate_config: bool, tmp_path: Path) -> None:
    model = _elmoformanylangs_model(tmp_path / "theirs", separate_config=separate_config)
    assert main(["elmoformanylangs", "--model", str(model), "--output", str(tmp_path / "expected")]) == 0
    members = {path.relative_to(model.parent).as_posix(): path for path in sorted(model.parent.rglob("*.*"))}
    archive = _archive(tmp_path / "144.zip", {**members, "144/meta.json": json.dumps({"id": 144}).encode()})
    output = tmp_path / "converted"
    assert main(["allennlp", "--archive", str(archive), "--output", str(output)]) == 0

    _assert_same_tensors(output, tmp_path / "expected")
    for vocabulary in ("char_vocab.json", "word_vocab.json"):
        assert (output / vocabulary).read_bytes() == (tmp_path / "expected" / vocabulary).read_bytes()
    card = ModelCard.load(output / "README.md")
    assert card.data.source_weights == _source_weights(archive) and card.data.get("source_options") is None


def test_elmoformanylangs_archive_pickle_that_holds_code(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    model = write_small_model(tmp_path / "144")
    ran = tmp_path / "the-code-ran"
    torch.save({"weight": RunsAShellCommand(ran)}, model / "encoder.pkl")
    archive = _archive(tmp_path / "144.zip", {f"144/{name}": model / name for name in ELMOFORMANYLANGS_FILES})
    error = _error(capsys, "--archive", str(archive), "--output", str(tmp_path / "out"))
    assert error == f"elmo-convert: error: {archive}:144/encoder.pkl: the file holds code (Python objects other" + (
        " than tensors), which is not loaded"
    )
    assert not ran.exists() and not (tmp_path / "out").exists()


@pytest.mark.parametrize("case", ["no encoder", "no filters", "projection_dim abc", "n_layers -1"])
def test_elmoformanylangs_archive_with_a_bad_network_config(case: str, tmp_path: Path, capsys) -> None:
    """The archive gave a `KeyError: 'encoder'` traceback; now the converter's line, naming the archive's member."""
    model = write_small_model(tmp_path / "144")
    change, problem = BAD_NETWORK_CONFIGS[case]
    network = json.loads((model / "cnn_small.json").read_text())
    change(network)
    (model / "cnn_small.json").write_text(json.dumps(network))
    archive = _archive(tmp_path / "144.zip", {f"144/{name}": model / name for name in ELMOFORMANYLANGS_FILES})
    error = _error(capsys, "--archive", str(archive), "--output", str(tmp_path / "out"))
    assert error == f"elmo-convert: error: {archive}:144/cnn_small.json: {problem}"
    assert not (tmp_path / "out").exists()


def test_members_come_from_one_folder(
    elmo_fixture: Path, fixture_model_folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    output = str(tmp_path / "out")
    members = _nlpl_members(elmo_fixture)
    not_paired = _archive(tmp_path / "a.zip", {"a/model.hdf5": members["model.hdf5"], "b/options.json": b"{}"})
    assert _error(capsys, "--archive", str(not_paired), "--output", output) == (
        f"elmo-convert: error: {not_paired}:a/ holds no options.json beside model.hdf5, which it needs (it holds:"
        " a/model.hdf5)"
    )
    two_models = _archive(tmp_path / "b.zip", {**members, **_nlpl_members(elmo_fixture, folder="b/")})
    assert _error(capsys, "--archive", str(two_models), "--output", output) == (
        f"elmo-convert: error: {two_models} holds ELMo models in 2 folders (the top level, b/): one model at a time,"
        " unzip it and pass one folder to --archive"
    )
    folder = _unzipped(two_models, tmp_path / "b")
    assert _error(capsys, "--archive", str(folder), "--output", output).endswith("pass one of them to --archive")

    # Another folder's options.json is no part of the model (it is not read: it is not JSON at all).
    with_stray_options = _archive(tmp_path / "c.zip", {**members, "docs/options.json": b"not json"})
    assert main(["allennlp", "--archive", str(with_stray_options), "--output", output]) == 0
    _assert_same_tensors(Path(output), fixture_model_folder)


def test_a_meta_json_of_512_mb_is_refused_unread(elmo_fixture: Path, tmp_path: Path) -> None:
    """meta.json is a record of a few KB: one that inflates to 512 MB (an archive of 2.3 MB) is refused before a
    byte of it is read (141 KB traced; read whole, it took 1.4 GB)."""
    archive = tmp_path / "209.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as opened:
        for name, content in _nlpl_members(elmo_fixture).items():
            if name != "meta.json":
                opened.writestr(name, content.read_bytes() if isinstance(content, Path) else content)
        with opened.open("meta.json", "w", force_zip64=True) as meta:
            for _ in range(512):
                meta.write(bytes(1 << 20))
    assert archive.stat().st_size < 3_000_000
    tracemalloc.start()
    try:
        code = main(["allennlp", "--archive", str(archive), "--output", str(tmp_path / "out")])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert code == 2
    assert peak < 400_000_000, f"peak {peak:,} bytes"


def _with_a_nul_in_a_name(archive: Path, placeholder: str) -> Path:
    """The archive with the member name `placeholder`'s "#" made a NUL byte (zipfile cannot write one: it cuts a name
    at a NUL), in its local header and in the central directory (no checksum covers names)."""
    content = archive.read_bytes()
    named = placeholder.encode()
    assert content.count(named) == 2
    archive.write_bytes(content.replace(named, named.replace(b"#", b"\0")))
    return archive


@pytest.mark.parametrize("twin", [True, False], ids=["beside model.hdf5", "alone"])
def test_a_member_name_cut_at_a_nul_is_refused(
    twin: bool, elmo_fixture: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """`209/model.hdf5\\0.txt` reads as `209/model.hdf5`: beside the real one, the last of the two was taken in
    silence (twins of another case get "2 members named"); alone, it was converted as the weights."""
    members = _nlpl_members(elmo_fixture, folder="209/", weights_name="model.hdf5" if twin else "weights.hdf5")
    members["209/model.hdf5#.txt"] = b"not the weights"
    archive = _with_a_nul_in_a_name(_archive(tmp_path / "209.zip", members), "209/model.hdf5#.txt")
    twins = ", beside 1 other member(s) of that name" if twin else ""
    assert _error(capsys, "--archive", str(archive), "--output", str(tmp_path / "out")) == (
        f"elmo-convert: error: {archive}: the member name '209/model.hdf5\\x00.txt' holds a NUL character, at which "
        f"zipfile cuts it to 209/model.hdf5{twins}: the archive is damaged or misleading; remake it without that member"
    )
    assert not (tmp_path / "out").exists()


def test_two_entries_of_one_name_are_refused(elmo_fixture: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """A ZIP may hold one name twice (an archive appended to): zipfile's last entry was taken in silence."""
    archive = _archive(tmp_path / "209.zip", _nlpl_members(elmo_fixture, folder="209/"))
    with pytest.warns(UserWarning, match="Duplicate name"), zipfile.ZipFile(archive, "a") as opened:
        opened.writestr("209/model.hdf5", b"not the weights")
    assert _error(capsys, "--archive", str(archive), "--output", str(tmp_path / "out")) == (
        f"elmo-convert: error: {archive} holds 2 members named 209/model.hdf5: remake the archive with one of them"
    )


@pytest.mark.parametrize("name", ["META.JSON", "Options.Json"])
def test_the_cap_on_json_members_ignores_case(
    name: str, elmo_fixture: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """The names are matched without regard to case, and so is the cap on a JSON member's size (a record padded
    with spaces past it: valid JSON, a few KB compressed)."""
    members = _nlpl_members(elmo_fixture, folder="209/")
    record = members.pop(f"209/{name.lower()}")
    members[f"209/{name}"] = (record.read_bytes() if isinstance(record, Path) else record) + b" " * SMALL_MEMBER_BYTES
    archive = _archive(tmp_path / "209.zip", members)
    size = zipfile.ZipFile(archive).getinfo(f"209/{name}").file_size
    assert _error(capsys, "--archive", str(archive), "--output", str(tmp_path / "out")) == (
        f"elmo-convert: error: {archive}:209/{name} is {format_bytes(size)} uncompressed; {name} is a JSON record of"
        f" a few KB (at most {format_bytes(SMALL_MEMBER_BYTES)} is read): not an ELMo model's file"
    )


@pytest.mark.parametrize("kind", ["encrypted", "Deflate64"])
def test_members_zipfile_cannot_read_are_one_line(
    kind: str, elmo_fixture: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    members, marked = _nlpl_members(elmo_fixture, folder="209/"), "209/model.hdf5"
    if kind == "encrypted":
        archive = _archive(tmp_path / "209.zip", members, marked=marked, flag_bits=0x1)
        expected = f"{archive}:209/model.hdf5 is encrypted (password-protected): unzip it with its password"
    else:
        archive = _archive(tmp_path / "209.zip", members, marked=marked, method=9)
        expected = f"{archive}:209/model.hdf5 uses compression method 9 (Deflate64), which Python's zipfile cannot"
    error = _error(capsys, "--archive", str(archive), "--output", str(tmp_path / "out"))
    assert error.startswith(f"elmo-convert: error: {expected}"), error
    assert error.endswith("and pass the unzipped folder to --archive"), error
    assert not (tmp_path / "out").exists()


def _damaged(archive: Path, member: str) -> None:
    """Flip bytes in the middle of a member's compressed data: its CRC (or inflate) check fails when read."""
    with zipfile.ZipFile(archive) as opened:
        info = opened.getinfo(member)
    data = bytearray(archive.read_bytes())
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    middle = start + info.compress_size // 2
    data[middle : middle + 16] = bytes(byte ^ 0xFF for byte in data[middle : middle + 16])
    archive.write_bytes(bytes(data))


def test_bad_archives_are_one_line_naming_the_member_with_its_folder(
    elmo_fixture: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    output = str(tmp_path / "out")
    members = _nlpl_members(elmo_fixture, folder="209/")

    def convert(name: str, archive_members: dict[str, bytes | Path]) -> str:
        return _error(capsys, "--archive", str(_archive(tmp_path / name, archive_members)), "--output", output)

    no_options = convert("a.zip", {name: content for name, content in members.items() if "options" not in name})
    assert "a.zip:209/ holds no options.json beside model.hdf5, which it needs (it holds: 209/model.hdf5," in no_options
    no_model = convert("b.zip", {name: content for name, content in members.items() if "model" not in name})
    assert no_model.endswith(
        "b.zip holds no ELMo model: no model.hdf5 (or other *.hdf5), TensorFlow checkpoint (*.index) or"
        " ELMoForManyLangs encoder.pkl (it holds: 209/options.json, 209/vocab.txt, 209/meta.json, 209/README)"
    )
    two_weights = {**members, "209/a.hdf5": b"", "209/b.hdf5": b""}
    del two_weights["209/model.hdf5"]
    assert "c.zip:209/ holds no model.hdf5 and 2 other .hdf5 members (209/a.hdf5, 209/b.hdf5)" in convert(
        "c.zip", two_weights
    )
    assert "d.zip holds 2 members named options.json (209/options.json, 209/OPTIONS.JSON)" in convert(
        "d.zip", {**members, "209/OPTIONS.JSON": b"{}"}
    )
    bad_meta = convert("e.zip", {**members, "209/meta.json": b"{not json"})
    assert "e.zip:209/meta.json is not a JSON file (Expecting property name" in bad_meta
    assert "e.zip:209/meta.json must hold a JSON object, got list" in convert(
        "e.zip", {**members, "209/meta.json": b"[]"}
    )
    bad_options = convert("f.zip", {**members, "209/options.json": b'{"lstm": {"dim": 32}, "char_cnn": {}}'})
    assert f"{tmp_path / 'f.zip'}:209/options.json: missing required option" in bad_options
    truncated_weights = convert("g.zip", {**members, "209/model.hdf5": b"not hdf5"})
    assert f"{tmp_path / 'g.zip'}:209/model.hdf5 is not an HDF5 weights file" in truncated_weights
    big_options = convert("h.zip", {**members, "209/options.json": b" " * 2_000_000})
    assert "h.zip:209/options.json is 2.0 MB uncompressed; options.json is a JSON record" in big_options

    damaged = _archive(tmp_path / "i.zip", members)
    _damaged(damaged, "209/model.hdf5")
    assert "i.zip: member 209/model.hdf5 is damaged" in _error(capsys, "--archive", str(damaged), "--output", output)
    damaged = _archive(tmp_path / "i.zip", members)
    _damaged(damaged, "209/meta.json")
    assert "i.zip: member 209/meta.json is damaged" in _error(capsys, "--archive", str(damaged), "--output", output)
    not_zip = tmp_path / "j.zip"
    not_zip.write_bytes(b"PK but not really a zip")
    assert "j.zip is not a ZIP archive" in _error(capsys, "--archive", str(not_zip), "--output", output)
    absent = _error(capsys, "--archive", str(tmp_path / "absent.zip"), "--output", output)
    assert "absent.zip: no such archive or folder" in absent
    assert not (tmp_path / "out").exists()


def test_bad_checkpoint_archives_name_the_member_with_its_folder(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    output = str(tmp_path / "out")
    members: dict[str, bytes | Path] = {f"212/{name}": CHECKPOINT / name for name in CHECKPOINT_FILES}

    def convert(name: str, archive_members: dict[str, bytes | Path]) -> str:
        return _error(capsys, "--archive", str(_archive(tmp_path / name, archive_members)), "--output", output)

    no_data = convert("a.zip", {name: path for name, path in members.items() if ".data-" not in name})
    assert f"{tmp_path / 'a.zip'}:212/model.ckpt-1.data-00000-of-00001: no such data shard" in no_data
    no_vocabulary = convert("b.zip", {name: path for name, path in members.items() if "vocab" not in name})
    assert "b.zip:212/ holds no vocab.txt beside model.ckpt-1.index, which it needs" in no_vocabulary
    two = convert("c.zip", {**members, "212/model.ckpt-2.index": b""})
    assert "c.zip:212/ holds 2 TensorFlow checkpoints (212/model.ckpt-1, 212/model.ckpt-2): unzip it" in two
    assert two.endswith("elmo-convert bilm-tf-checkpoint --checkpoint PREFIX")


def _free_space(monkeypatch: pytest.MonkeyPatch, free: int) -> None:
    usage = shutil.disk_usage("/")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage._replace(free=free))


def test_extraction_counts_the_uncompressed_sizes(
    elmo_fixture: Path, tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = _archive(tmp_path / "209.zip", _nlpl_members(elmo_fixture))
    with zipfile.ZipFile(archive) as opened:
        extracted = [opened.getinfo(name) for name in ("model.hdf5", "options.json")]
    compressed, uncompressed = (
        sum(getattr(info, size) for info in extracted) for size in ("compress_size", "file_size")
    )
    assert uncompressed - compressed > 10_000
    _free_space(monkeypatch, (compressed + uncompressed) // 2)
    error = _error(capsys, "--archive", str(archive), "--output", str(tmp_path / "out"))
    assert f"the members extracted from {archive} need about {disk_space.format_bytes(uncompressed)}" in error


@pytest.mark.parametrize(
    ("language", "expected"),
    [([{"language": "eng"}, {"language": "nob"}, {"language": "eng"}], ["eng", "nob"]), ({"language": "nno"}, ["nno"])],
    ids=["two corpora, three entries", "one corpus, not a list"],
)
def test_the_page_languages_are_the_corpora_codes(
    language: object, expected: list[str], elmo_fixture: Path, tmp_path: Path
) -> None:
    members = {**_nlpl_members(elmo_fixture), "meta.json": json.dumps({"id": 209, "corpus": language}).encode()}
    output = tmp_path / "converted"
    assert main(["allennlp", "--archive", str(_archive(tmp_path / "209.zip", members)), "--output", str(output)]) == 0
    assert ModelCard.load(output / "README.md").data.language == expected


def test_a_language_that_is_no_code_is_refused_unless_given(
    elmo_fixture: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    meta = {"id": 209, "corpus": [{"language": "nob"}, {"language": "Norwegian Nynorsk"}]}
    archive = _archive(tmp_path / "209.zip", {**_nlpl_members(elmo_fixture), "meta.json": json.dumps(meta).encode()})
    output = tmp_path / "converted"
    assert _error(capsys, "--archive", str(archive), "--output", str(output)) == (
        f'elmo-convert: error: {archive}:meta.json: corpus 1\'s language is "Norwegian Nynorsk", not an ISO 639 code'
        " (such as nob): pass the model page's language with --language"
    )
    assert main(["allennlp", "--archive", str(archive), "--output", str(output), "--language", "nn"]) == 0
    assert ModelCard.load(output / "README.md").data.language == "nn"


def test_archive_and_weights_go_separately(elmo_fixture: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    archive = str(_archive(tmp_path / "209.zip", _nlpl_members(elmo_fixture)))
    weights, output = str(elmo_fixture / "lm_weights.hdf5"), str(tmp_path / "out")
    assert "holds its weights" in _error(capsys, "--archive", archive, "--weights", weights, "--output", output)
    options = str(elmo_fixture / "options.json")
    assert "--weights is needed with --options" in _error(capsys, "--options", options, "--output", output)


def test_no_converter_imports_the_archive_module() -> None:
    """The archive's module hands its model to the converters of the three formats; `allennlp --archive` reaches it
    from the command table (`command`), above both, so no module of conversion/ imports it back (an import cycle)."""
    folder = Path(elmo_transformers.conversion.nlpl_archive.__file__).parent
    importers = [
        module.name
        for module in sorted(folder.glob("*.py"))
        for node in ast.walk(ast.parse(module.read_text()))
        if isinstance(node, ast.Import | ast.ImportFrom)
        for name in [getattr(node, "module", None) or "", *(alias.name for alias in node.names)]
        if name.split(".")[-1] == "nlpl_archive"
    ]
    assert importers == []
