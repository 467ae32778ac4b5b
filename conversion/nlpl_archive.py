"""NLPL repository archives: `elmo-convert allennlp --archive MODEL.zip` converts the ELMo model of one, or of its
unzipped folder, in a single step.

The NLPL vector repository (http://vectors.nlpl.eu/repository/, the largest public collection of ELMo models) ships
each model as a ZIP archive of one folder's files, in one of three layouts, each converted by the converter of its
format:

| layout | its files (the weights first) | converted as `elmo-convert` |
| --- | --- | --- |
| bilm-tf weights | `model.hdf5` (else the folder's one `*.hdf5`), `options.json` | `allennlp` |
| bilm-tf checkpoint | `PREFIX.index`, `PREFIX.data-*-of-*`, `options.json`, `vocab.txt` | `bilm-tf-checkpoint` |
| ELMoForManyLangs | `encoder.pkl`, `token_embedder.pkl`, `config.json`, `char.dic` (`word.dic`) | `elmoformanylangs` |

beside `meta.json` (optional: the repository's record of the model, for the model page) and a README. The files
of a model are taken from one folder of the archive, whichever it is (an archive made by zipping an extracted
folder holds them one folder down), their names matched without regard to case; macOS's resource forks (`._*`, in
`__MACOSX/` or beside their files) are never members. A folder with both `*.hdf5` weights and a checkpoint is
converted from the weights, as simple_elmo loads it by default. ELMoForManyLangs' network config is the member
its `config.json`'s `config_path` names (relative to that folder), else the one of that name beside it, else the
released one.

The members a layout needs are extracted to a temporary folder (removed afterwards; a folder's files are linked
there, not copied) under the names the converters expect; an error about them names the member in the archive
(`MODEL.zip:209/options.json: ...`), never the temporary copy. JSON members are records of a few KB and are read
only up to `SMALL_MEMBER_BYTES`, so no archive, whatever it declares, makes the converter read gigabytes into
memory.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import zipfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO

from tqdm.auto import tqdm

from elmo_transformers.common.disk_space import check_free_space, format_bytes, is_disk_full
from elmo_transformers.common.errors import ConversionError
from elmo_transformers.common.options_json import read_options
from modeling_elmo.text_elmo import VOCABULARY_FILE

from . import allennlp, bilm_tf_checkpoint, elmoformanylangs
from .convert_options import AllennlpOptions
from .converted_model_card import SourceDescription

__all__ = ["SMALL_MEMBER_BYTES", "convert_archive"]

OPTIONS, METADATA = "options.json", "meta.json"
WEIGHTS, WEIGHTS_SUFFIX = "model.hdf5", ".hdf5"
TRAINING_CONFIG, CHARACTERS, WORDS = "config.json", "char.dic", "word.dic"
ENCODER, TOKEN_EMBEDDER = "encoder.pkl", "token_embedder.pkl"
INDEX_SUFFIX = ".index"
_DATA_SHARD = re.compile(r"(?P<prefix>.+)\.data-\d{5}-of-\d{5}")
SMALL_MEMBER_BYTES = 1_000_000  # meta.json, options.json, config.json: a few KB each
_LISTED = 12  # members named in an error that lists what an archive holds
_ENCRYPTED = 0x1  # the ZIP general-purpose flag bit of an encrypted member
_LANGUAGE_CODE = re.compile(r"[a-z]{2,3}")  # ISO 639-1, -2 or -3, as NLPL (`eng`, `nob`) and the Hub write them


@dataclass(frozen=True)
class _Member:
    """A file of an archive: its '/'-separated path inside it and its (uncompressed) size."""

    name: str
    size: int

    @property
    def folder(self) -> str:
        parent = str(PurePosixPath(self.name).parent)
        return "" if parent == "." else parent

    @property
    def basename(self) -> str:
        return PurePosixPath(self.name).name


def _is_member(name: str) -> bool:
    """Whether an archive's file is content: not one of macOS's resource forks, `._NAME` (which its zip puts under
    `__MACOSX/`, and copies to other file systems beside `NAME`)."""
    return not PurePosixPath(name).name.startswith("._")


class _Source:
    """What an archive and its unzipped folder share: the members, and how an error names one."""

    separator = "/"  # between the archive's path and a member's name in an error

    def __init__(self, path: Path, members: list[_Member]) -> None:
        self.path, self.members = path, members

    def where(self, name: str) -> str:
        """How an error names the file or folder `name` of the archive ('/'-separated)."""
        return f"{self.path}{self.separator}{name}"

    def where_folder(self, folder: str) -> str:
        return self.where(f"{folder}/") if folder else str(self.path)


class _ZipArchive(_Source):
    """A ZIP archive: its members are read from it, and extracted where a converter needs a file."""

    separator = ":"
    needs_room = True
    way_on = "unzip it and pass one folder to --archive"

    def __init__(self, path: Path, archive: zipfile.ZipFile) -> None:
        self._zip = archive
        infos = [info for info in archive.infolist() if not info.is_dir()]
        _refuse_twin_entries(path, infos)
        self._infos = {info.filename: info for info in infos}
        super().__init__(
            path, [_Member(name, info.file_size) for name, info in self._infos.items() if _is_member(name)]
        )

    @contextmanager
    def _open(self, member: _Member) -> Iterator[BinaryIO]:
        """The member's bytes; one line for a member zipfile cannot read (encrypted, an unsupported compression
        method such as Deflate64) and for a damaged one (a bad header, inflate error or CRC mismatch)."""
        info = self._infos[member.name]
        try:
            opened = self._zip.open(info)
        except RuntimeError:  # "password required"; NotImplementedError, a RuntimeError, for the method
            if info.flag_bits & _ENCRYPTED:
                reason = "is encrypted (password-protected)"
                tool = "unzip it with its password (unzip, 7z x)"
            else:
                deflate64 = " (Deflate64)" if info.compress_type == 9 else ""
                reason = f"uses compression method {info.compress_type}{deflate64}, which Python's zipfile cannot read"
                tool = f"unzip it with a tool that can (7z x {self.path.name}, or unzip)"
            raise ConversionError(
                f"{self.where(member.name)} {reason}: {tool} and pass the unzipped folder to --archive"
            ) from None
        except zipfile.BadZipFile as error:
            raise self._damaged(member, error) from None
        try:
            with opened:
                yield opened
        except (zipfile.BadZipFile, zlib.error, EOFError) as error:
            raise self._damaged(member, error) from None

    def _damaged(self, member: _Member, error: Exception) -> ConversionError:
        return ConversionError(f"{self.path}: member {member.name} is damaged ({error})")

    def source_files(self, folder: Path, weights: tuple[str, ...]) -> tuple[Path, ...]:
        """The files the model page names with their checksums: the archive itself."""
        return (self.path,)

    def check_readable(self, member: _Member) -> None:
        """Refuse, before anything is extracted, a member that zipfile cannot read."""
        with self._open(member):
            pass

    def read(self, member: _Member) -> bytes:
        with self._open(member) as source:
            return source.read()

    def place(self, member: _Member, target: Path) -> None:
        """Extract the member to `target`; the CRC check at its end catches a damaged one."""
        progress = tqdm(total=member.size, unit="B", unit_scale=True, desc=f"Extracting {member.name}", leave=False)
        try:
            with self._open(member) as source, open(target, "wb") as copy, progress:
                while block := source.read(1 << 20):
                    copy.write(block)
                    progress.update(len(block))
        except OSError as error:
            if not is_disk_full(error):
                raise
            raise ConversionError(
                f"{self.path}: extracting {member.name} to {target.parent} filled the disk: free some space (or set"
                " TMPDIR to a larger disk) and run again"
            ) from None


def _refuse_twin_entries(path: Path, infos: list[zipfile.ZipInfo]) -> None:
    """Refuse entries that zipfile reads under one name, and a name it cuts at a NUL character (`model.hdf5\\0.txt`
    reads as `model.hdf5`, which other tools may not): members are looked up by name, and one of the twins (or the
    cut name) would be taken in silence, as `_Folder.named` refuses twins of another case."""
    by_name: dict[str, list[str]] = {}
    for info in infos:
        by_name.setdefault(info.filename, []).append(info.orig_filename)
    for name, entries in by_name.items():
        cut = [entry for entry in entries if "\0" in entry]
        if cut:
            twins = f", beside {len(entries) - 1} other member(s) of that name" if len(entries) > 1 else ""
            raise ConversionError(
                f"{path}: the member name {cut[0]!r} holds a NUL character, at which zipfile cuts it to {name}"
                f"{twins}: the archive is damaged or misleading; remake it without that member"
            )
        if len(entries) > 1:
            raise ConversionError(
                f"{path} holds {len(entries)} members named {name}: remake the archive with one of them"
            )


class _FolderArchive(_Source):
    """An unzipped archive: its files are read in place, and linked where a converter needs a file."""

    needs_room = False
    way_on = "pass one of them to --archive"

    def __init__(self, path: Path) -> None:
        names = (file.relative_to(path).as_posix() for file in sorted(path.rglob("*")) if file.is_file())
        super().__init__(path, [_Member(name, (path / name).stat().st_size) for name in names if _is_member(name)])

    def source_files(self, folder: Path, weights: tuple[str, ...]) -> tuple[Path, ...]:
        """The files the model page names with their checksums: the weight files, linked in the model `folder`."""
        return tuple(folder / name for name in weights)

    def check_readable(self, member: _Member) -> None:
        """A folder's files are read as any file is."""

    def read(self, member: _Member) -> bytes:
        return (self.path / member.name).read_bytes()

    def place(self, member: _Member, target: Path) -> None:
        target.symlink_to((self.path / member.name).absolute())


_Archive = _ZipArchive | _FolderArchive


@contextmanager
def _opened(path: Path) -> Iterator[_Archive]:
    if path.is_dir():
        yield _FolderArchive(path)
        return
    try:
        archive = zipfile.ZipFile(path)
    except FileNotFoundError:
        raise ConversionError(f"{path}: no such archive or folder") from None
    except (zipfile.BadZipFile, OSError) as error:
        raise ConversionError(f"{path} is not a ZIP archive ({error}), nor an unzipped archive's folder") from None
    with archive:
        yield _ZipArchive(path, archive)


def _listing(members: list[_Member]) -> str:
    names = [member.name for member in members]
    more = f", and {len(names) - _LISTED} more" if len(names) > _LISTED else ""
    return ", ".join(names[:_LISTED]) + more if names else "nothing"


def _refuse_large_record(archive: _Archive, member: _Member) -> None:
    """A JSON member (options, configs, metadata) larger than any such record is, refused before it is read."""
    if member.basename.lower().endswith(".json") and member.size > SMALL_MEMBER_BYTES:
        raise ConversionError(
            f"{archive.where(member.name)} is {format_bytes(member.size)} uncompressed; {member.basename} is a JSON"
            f" record of a few KB (at most {format_bytes(SMALL_MEMBER_BYTES)} is read): not an ELMo model's file"
        )


def _read_small(archive: _Archive, member: _Member) -> Any:
    """A JSON member, read whole once it is known to be small."""
    _refuse_large_record(archive, member)
    try:
        return json.loads(archive.read(member).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ConversionError(f"{archive.where(member.name)} is not a JSON file ({error})") from None


class _Folder:
    """The members of one folder of an archive, found by name without regard to case."""

    def __init__(self, archive: _Archive, name: str, members: list[_Member]) -> None:
        self.archive, self.name, self.members = archive, name, members

    def named(self, name: str, *, required_beside: str | None = None) -> _Member | None:
        """The member called `name`; an error where several are, or (naming the weights `required_beside`) none."""
        found = [member for member in self.members if member.basename.lower() == name]
        if len(found) > 1:
            listed = ", ".join(member.name for member in found)
            raise ConversionError(f"{self.archive.path} holds {len(found)} members named {name} ({listed})")
        if not found and required_beside:
            raise ConversionError(
                f"{self.archive.where_folder(self.name)} holds no {name} beside {required_beside}, which it needs"
                f" (it holds: {_listing(self.members)})"
            )
        return found[0] if found else None

    def required(self, name: str, beside: str) -> _Member:
        member = self.named(name, required_beside=beside)
        assert member is not None
        return member

    def ending(self, suffix: str) -> list[_Member]:
        return [member for member in self.members if member.basename.lower().endswith(suffix)]

    def layout(self) -> str | None:
        """Which model the folder holds, by its weights (None for none)."""
        if self.ending(WEIGHTS_SUFFIX):
            return "hdf5"
        if any(member.basename.endswith(INDEX_SUFFIX) for member in self.members):
            return "checkpoint"
        if self.named(ENCODER) or self.named(TOKEN_EMBEDDER):
            return "elmoformanylangs"
        return None


@dataclass(frozen=True)
class _Model:
    """The model of an archive: its layout, its folder, the members its converter reads (by the name each gets in
    the model folder) and the names of its weight files there."""

    layout: str
    folder: _Folder
    files: dict[str, _Member]
    weights: tuple[str, ...]


def _hdf5_model(folder: _Folder) -> _Model:
    """`model.hdf5`, else the folder's only `*.hdf5` (simple_elmo's rule), and `options.json`."""
    weights = folder.named(WEIGHTS)
    if weights is None:
        candidates = folder.ending(WEIGHTS_SUFFIX)
        if len(candidates) > 1:
            listed = ", ".join(member.name for member in candidates)
            raise ConversionError(
                f"{folder.archive.where_folder(folder.name)} holds no {WEIGHTS} and {len(candidates)} other .hdf5"
                f" members ({listed}): cannot tell which holds the weights"
            )
        weights = candidates[0]
    options = folder.required(OPTIONS, beside=weights.basename)
    return _Model("hdf5", folder, {OPTIONS: options, weights.basename: weights}, (weights.basename,))


def _checkpoint_model(folder: _Folder) -> _Model:
    """The folder's one TensorFlow checkpoint (index and data shards), `options.json` and `vocab.txt`."""
    indexes = [member for member in folder.members if member.basename.endswith(INDEX_SUFFIX)]
    if len(indexes) > 1:
        listed = ", ".join(member.name.removesuffix(INDEX_SUFFIX) for member in indexes)
        raise ConversionError(
            f"{folder.archive.where_folder(folder.name)} holds {len(indexes)} TensorFlow checkpoints ({listed}):"
            " unzip it and convert the one you want with elmo-convert bilm-tf-checkpoint --checkpoint PREFIX"
        )
    prefix = indexes[0].basename.removesuffix(INDEX_SUFFIX)
    shards = [m for m in folder.members if (match := _DATA_SHARD.fullmatch(m.basename)) and match["prefix"] == prefix]
    files = {member.basename: member for member in (indexes[0], *shards)}
    weights = tuple(files)
    for name in (OPTIONS, VOCABULARY_FILE):
        files[name] = folder.required(name, beside=indexes[0].basename)
    return _Model("checkpoint", folder, files, weights)


def _network_config(folder: _Folder, training_config: _Member) -> dict[str, _Member]:
    """The member the training config's `config_path` names, as ELMoForManyLangs looks for it: that path from the
    folder, else its file name in the folder (none: the converter takes the released network config)."""
    config_path = _read_small(folder.archive, training_config)
    config_path = config_path.get("config_path") if isinstance(config_path, dict) else None
    if not isinstance(config_path, str) or not config_path:
        return {}  # the converter's own line names what is wrong
    name = PurePosixPath(config_path).name
    if not name.lower().endswith(".json"):
        return {}
    relative = os.path.normpath(PurePosixPath(folder.name, config_path).as_posix())
    for wanted in (relative, PurePosixPath(folder.name, name).as_posix()):
        for member in folder.archive.members:
            if member.name.lower() == wanted.lower():
                _read_small(folder.archive, member)  # their loader parses it unchecked: a non-JSON one is told here
                return {name: member}
    return {}


def _elmoformanylangs_model(folder: _Folder) -> _Model:
    """The pickles, the training config, the dictionaries and the network config it names."""
    weights = folder.named(TOKEN_EMBEDDER) or folder.named(ENCODER)
    assert weights is not None
    files = {name: folder.required(name, beside=weights.basename) for name in (TOKEN_EMBEDDER, ENCODER)}
    for name in (TRAINING_CONFIG, CHARACTERS):
        files[name] = folder.required(name, beside=weights.basename)
    words = folder.named(WORDS)
    if words is not None:
        files[WORDS] = words
    files.update(_network_config(folder, files[TRAINING_CONFIG]))
    return _Model("elmoformanylangs", folder, files, (TOKEN_EMBEDDER, ENCODER))


_MODELS: dict[str, Callable[[_Folder], _Model]] = {
    "hdf5": _hdf5_model,
    "checkpoint": _checkpoint_model,
    "elmoformanylangs": _elmoformanylangs_model,
}


def _find_model(archive: _Archive) -> _Model:
    """The model of the archive's one folder that holds weights; an error for none or several."""
    grouped: dict[str, list[_Member]] = {}
    for member in archive.members:
        grouped.setdefault(member.folder, []).append(member)
    folders = [_Folder(archive, name, members) for name, members in grouped.items()]
    with_models = [folder for folder in folders if folder.layout()]
    if not with_models:
        raise ConversionError(
            f"{archive.path} holds no ELMo model: no {WEIGHTS} (or other *.hdf5), TensorFlow checkpoint (*.index) or"
            f" ELMoForManyLangs {ENCODER} (it holds: {_listing(archive.members)})"
        )
    if len(with_models) > 1:
        listed = ", ".join(f"{folder.name}/" if folder.name else "the top level" for folder in with_models)
        raise ConversionError(
            f"{archive.path} holds ELMo models in {len(with_models)} folders ({listed}): one model at a time,"
            f" {archive.way_on}"
        )
    folder = with_models[0]
    model = _MODELS[folder.layout()](folder)
    for member in model.files.values():
        _refuse_large_record(archive, member)
        archive.check_readable(member)
    return model


class _Metadata:
    """What `meta.json` (NLPL's record of the entry) gives the model page: its `id`, the languages and descriptions
    of its `corpus` list; the whole record is kept in the page's metadata."""

    def __init__(self, record: dict[str, Any] | None, where: str) -> None:
        self.record, self.where = record, where

    def description(self, archive: Path) -> str:
        identifier = (self.record or {}).get("id")
        if identifier is None:
            return f"the ELMo model of the NLPL-style archive {archive.name}"
        return f"the NLPL repository's ELMo model {identifier} ({archive.name})"

    def languages(self) -> list[str]:
        """The corpora's languages (ISO 639 codes such as `eng`, `nob`), each once; an error for another value."""
        codes = []
        for index, corpus in enumerate(self._corpora()):
            language = corpus.get("language")
            if language is None:
                continue
            if not isinstance(language, str) or not _LANGUAGE_CODE.fullmatch(language):
                raise ConversionError(
                    f"{self.where}: corpus {index}'s language is {json.dumps(language)}, not an ISO 639 code (such"
                    " as nob): pass the model page's language with --language"
                )
            codes.append(language)
        return list(dict.fromkeys(codes))

    def training_data(self) -> str:
        """The corpora, with their size and preprocessing."""
        corpora = [_describe_corpus(corpus) for corpus in self._corpora()]
        return "; ".join(corpora) if corpora else "the corpus its source was trained on (not recorded in the archive)"

    def card_fields(self) -> dict[str, Any]:
        return {"nlpl_metadata": self.record} if self.record else {}

    def _corpora(self) -> list[dict[str, Any]]:
        corpus = (self.record or {}).get("corpus") or []
        corpora = corpus if isinstance(corpus, list) else [corpus]
        return [entry for entry in corpora if isinstance(entry, dict)]


def _describe_corpus(corpus: dict[str, Any]) -> str:
    text = str(corpus.get("description") or "an unnamed corpus")
    details = []
    if isinstance(corpus.get("tokens"), int):
        details.append(f"{corpus['tokens']:,} tokens")
    if "lemmatized" in corpus:
        details.append("lemmatized" if corpus["lemmatized"] else "not lemmatized")
    if "case preserved" in corpus:
        details.append("case preserved" if corpus["case preserved"] else "lowercased")
    return f"{text} ({', '.join(details)})" if details else text


def _metadata(model: _Model) -> _Metadata:
    member = model.folder.named(METADATA)
    if member is None:
        return _Metadata(None, str(model.folder.archive.path))
    record = _read_small(model.folder.archive, member)
    if not isinstance(record, dict):
        raise ConversionError(
            f"{model.folder.archive.where(member.name)} must hold a JSON object, got {type(record).__name__}"
        )
    return _Metadata(record, model.folder.archive.where(member.name))


@contextmanager
def _model_folder(model: _Model, *, space_check: bool) -> Iterator[Path]:
    """A temporary folder holding the model's members under the names the converter reads (extracted from a ZIP,
    refused unless `space_check` is off where the disk has too little room for them; linked from a folder). A
    `ConversionError` raised in the block that names a file there names the member in the archive instead."""
    archive = model.folder.archive
    with tempfile.TemporaryDirectory(prefix="elmo-nlpl-") as temporary:
        folder = Path(temporary)
        if space_check and archive.needs_room:
            needed = sum(member.size for member in model.files.values())
            check_free_space(folder, needed, what=f"the members extracted from {archive.path}", error=ConversionError)
        for name, member in model.files.items():
            archive.place(member, folder / name)
        try:
            yield folder
        except ConversionError as error:
            message = str(error)
            for name, member in model.files.items():
                message = message.replace(str(folder / name), archive.where(member.name))
            # A file the converter looked for in vain (a data shard) is named as it would lie in the model's folder.
            inner = f"{model.folder.name}/" if model.folder.name else ""
            message = message.replace(f"{folder}/", archive.where(inner))
            message = message.replace(str(folder), archive.where_folder(model.folder.name))
            raise ConversionError(message) from None


def _source_description(
    model: _Model, folder: Path, metadata: _Metadata, license: str, language: str | list[str]
) -> SourceDescription:
    """What the model page says of the archive: its entry and corpus, the checksums of the archive (of a folder:
    the weight files) and of the options, and the whole meta.json in the page's metadata."""
    archive = model.folder.archive
    return SourceDescription(
        metadata.description(archive.path),
        archive.source_files(folder, model.weights),
        license,
        language,
        metadata.training_data(),
        options_file=folder / OPTIONS if OPTIONS in model.files else None,
        card_fields=metadata.card_fields(),
    )


def _convert(model: _Model, folder: Path, source: SourceDescription, options: AllennlpOptions) -> str:
    """Convert the model in `folder` with its layout's converter; returns the summary line."""
    archive = model.folder.archive
    if model.layout == "elmoformanylangs":
        return elmoformanylangs.run_conversion(options, folder, source, archive.path)
    options_json, options_source = read_options(folder / OPTIONS), archive.where(model.files[OPTIONS].name)
    if model.layout == "checkpoint":
        prefix = folder / model.weights[0].removesuffix(INDEX_SUFFIX)
        return bilm_tf_checkpoint.run_conversion(
            options, prefix, options_json, options_source, folder / VOCABULARY_FILE, source, archive.path
        )
    return allennlp.run_conversion(
        options, options_json, folder / model.weights[0], source, options_source, archive.path
    )


def convert_archive(options: AllennlpOptions) -> str:
    """`elmo-convert allennlp --archive`: convert the model of the archive (or folder) `options.archive` to
    `options.output`; returns the summary line."""
    if options.weights:
        raise ConversionError(
            f"--archive {options.archive} holds its weights: --weights goes with --options or --variant"
        )
    with _opened(Path(options.archive)) as archive:
        model = _find_model(archive)
        metadata = _metadata(model)
        language = options.language or metadata.languages() or "en"  # checked before anything is extracted
        with _model_folder(model, space_check=options.space_check) as folder:
            source = _source_description(model, folder, metadata, options.license, language)
            return _convert(model, folder, source, options)
