"""NLPL repository archives: `elmo-convert allennlp --archive MODEL.zip` reads one in a single step.

The NLPL vector repository (http://vectors.nlpl.eu/repository/, the largest public collection of ELMo models) ships
each ELMo model as a ZIP archive holding, at its top level, `model.hdf5` (the weights, bilm-tf's layout),
`options.json`, `vocab.txt` (words simple_elmo caches before inference; the biLM itself needs none), `meta.json`
(the repository's record of the model: its id, the corpus with its language, size and preprocessing, the
algorithm) and a README. The files are found by their roles, as simple_elmo finds them, wherever they lie in the
archive (an archive made by zipping an extracted folder holds them one folder down):

| role | member | needed |
| --- | --- | --- |
| weights | `model.hdf5`, else the one `*.hdf5` | yes |
| options | `options.json` | yes |
| metadata | `meta.json` | no: the model page then names only the archive |

Only the weights and the options are extracted (to a temporary folder, removed afterwards); an error about them
names the member inside the archive (`MODEL.zip:options.json: ...`), never the temporary copy.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from tqdm.auto import tqdm

from elmo_transformers.common.disk_space import check_free_space, is_disk_full
from elmo_transformers.common.errors import ConversionError

from .model_card import SourceDescription

__all__ = ["NlplArchive", "extracted_nlpl_archive"]

WEIGHTS_MEMBER = "model.hdf5"
OPTIONS_MEMBER = "options.json"
METADATA_MEMBER = "meta.json"
# Folders that archivers add beside the content (macOS's resource forks); never a model's file.
_IGNORED_FOLDERS = ("__MACOSX",)


@dataclass(frozen=True)
class NlplArchive:
    """An NLPL archive, its weights and options extracted: `weights_file` and `options_file` are the temporary
    copies, `members` the name of each role's member, `metadata` meta.json's object (None without one)."""

    path: Path
    weights_file: Path
    options_file: Path
    members: dict[str, str]
    metadata: dict[str, Any] | None

    def model_page_source(self, args: argparse.Namespace) -> SourceDescription:
        """What the model page says of the archive: its entry and corpus, the archive's and the options' checksums,
        the language of `--language`, else meta.json's, else en, and the whole meta.json in the page's metadata."""
        return SourceDescription(
            self.description(),
            (self.path,),
            args.license,
            args.language or self.language() or "en",
            self.training_data(),
            options_file=self.options_file,
            card_fields={"nlpl_metadata": self.metadata} if self.metadata else {},
        )

    def description(self) -> str:
        """What the model page calls the source: the repository entry's id, where meta.json gives one."""
        identifier = (self.metadata or {}).get("id")
        if identifier is None:
            return f"the ELMo model of the NLPL-style archive {self.path.name}"
        return f"the NLPL repository's ELMo model {identifier} ({self.path.name})"

    def language(self) -> str | None:
        """The corpus' language as meta.json records it (NLPL uses ISO 639 codes such as `eng`, `nob`)."""
        languages = [corpus["language"] for corpus in self._corpora() if corpus.get("language")]
        return ", ".join(dict.fromkeys(str(language) for language in languages)) or None

    def training_data(self) -> str:
        """The corpora meta.json describes, with their size and preprocessing."""
        corpora = [_describe_corpus(corpus) for corpus in self._corpora()]
        return "; ".join(corpora) if corpora else "the corpus its source was trained on (not recorded in the archive)"

    def _corpora(self) -> list[dict[str, Any]]:
        corpus = (self.metadata or {}).get("corpus") or []
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


def _model_members(archive: zipfile.ZipFile) -> list[zipfile.ZipInfo]:
    return [
        info
        for info in archive.infolist()
        if not info.is_dir() and not set(PurePosixPath(info.filename).parts) & set(_IGNORED_FOLDERS)
    ]


def _find_member(members: list[zipfile.ZipInfo], path: Path, name: str, *, required: bool) -> zipfile.ZipInfo | None:
    """The one member called `name` (in any folder); an error for none (where `required`) or several."""
    found = [info for info in members if PurePosixPath(info.filename).name == name]
    if len(found) > 1:
        listed = ", ".join(info.filename for info in found)
        raise ConversionError(f"{path} holds {len(found)} members named {name} ({listed}): one model per archive")
    if not found and required:
        listed = ", ".join(info.filename for info in members) or "nothing"
        raise ConversionError(f"{path} holds no {name} (it holds: {listed})")
    return found[0] if found else None


def _find_weights(members: list[zipfile.ZipInfo], path: Path) -> zipfile.ZipInfo:
    """`model.hdf5`, else the only `*.hdf5` member (simple_elmo's rule)."""
    named = _find_member(members, path, WEIGHTS_MEMBER, required=False)
    if named is not None:
        return named
    candidates = [info for info in members if info.filename.endswith(".hdf5")]
    if len(candidates) != 1:
        listed = ", ".join(info.filename for info in candidates)
        found = f"{len(candidates)} other .hdf5 members ({listed})" if candidates else "no .hdf5 member"
        raise ConversionError(f"{path} holds no {WEIGHTS_MEMBER} and {found}: cannot tell which holds the weights")
    return candidates[0]


def _read_member(archive: zipfile.ZipFile, path: Path, info: zipfile.ZipInfo) -> bytes:
    try:
        return archive.read(info)
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as error:
        raise ConversionError(f"{path}: member {info.filename} is damaged ({error})") from None


def _extract_member(archive: zipfile.ZipFile, path: Path, info: zipfile.ZipInfo, target: Path) -> None:
    """Copy a member out of the archive; the CRC check at its end catches a damaged one."""
    progress = tqdm(total=info.file_size, unit="B", unit_scale=True, desc=f"Extracting {info.filename}", leave=False)
    try:
        with archive.open(info) as source, open(target, "wb") as copy, progress:
            while block := source.read(1 << 20):
                copy.write(block)
                progress.update(len(block))
    except (zipfile.BadZipFile, zlib.error, EOFError) as error:
        raise ConversionError(f"{path}: member {info.filename} is damaged ({error})") from None
    except OSError as error:
        if not is_disk_full(error):
            raise
        raise ConversionError(
            f"{path}: extracting {info.filename} to {target.parent} filled the disk: free some space and run again"
        ) from None


def _read_metadata(archive: zipfile.ZipFile, path: Path, info: zipfile.ZipInfo | None) -> dict[str, Any] | None:
    if info is None:
        return None
    try:
        metadata = json.loads(_read_member(archive, path, info).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ConversionError(f"{path}: member {info.filename} is not a JSON file ({error})") from None
    if not isinstance(metadata, dict):
        raise ConversionError(f"{path}: member {info.filename} must hold a JSON object, got {type(metadata).__name__}")
    return metadata


def _open_zip(path: Path) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(path)
    except FileNotFoundError:
        raise ConversionError(f"{path}: no such archive") from None
    except (zipfile.BadZipFile, OSError) as error:
        raise ConversionError(f"{path} is not a ZIP archive ({error})") from None


@contextmanager
def extracted_nlpl_archive(path: str | Path, *, space_check: bool = True) -> Iterator[NlplArchive]:
    """The archive at `path` with its weights and options extracted to a temporary folder for the block (refused,
    unless `space_check` is off, where that folder's disk has too little room for them). A `ConversionError` raised
    in the block that names a temporary copy names the member in the archive instead."""
    path = Path(path)
    with _open_zip(path) as archive, tempfile.TemporaryDirectory(prefix="elmo-nlpl-") as temporary:
        members = _model_members(archive)
        weights = _find_weights(members, path)
        options = _find_member(members, path, OPTIONS_MEMBER, required=True)
        metadata = _read_metadata(archive, path, _find_member(members, path, METADATA_MEMBER, required=False))
        if space_check:
            needed = weights.file_size + options.file_size
            check_free_space(temporary, needed, what=f"the extracted {weights.filename}", error=ConversionError)
        extracted = NlplArchive(
            path,
            Path(temporary) / WEIGHTS_MEMBER,
            Path(temporary) / OPTIONS_MEMBER,
            {"weights": weights.filename, "options": options.filename},
            metadata,
        )
        _extract_member(archive, path, weights, extracted.weights_file)
        _extract_member(archive, path, options, extracted.options_file)
        try:
            yield extracted
        except ConversionError as error:
            message = str(error)
            for copy, member in ((extracted.weights_file, weights), (extracted.options_file, options)):
                message = message.replace(str(copy), f"{path}:{member.filename}")
            raise ConversionError(message) from None
