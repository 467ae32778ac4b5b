"""AllenNLP 0.9's `cached_path` for `options_file` and `weight_file`: a local path as it is, an http(s) URL fetched
once into a cache and read from there afterwards.

The cache is `$ELMO_ALLENNLP_CACHE` (default `~/.cache/elmo-transformers/allennlp`), one file per URL named by the
URL's SHA-256. A file that AllenNLP itself fetched (`$ALLENNLP_CACHE_ROOT/cache`, default `~/.allennlp/cache`, named
`SHA256(url).SHA256(etag)`) is used as it is, so the 374 MB weights are not fetched again. A download goes to a
temporary file beside its place and is renamed when complete: an interrupted one leaves nothing behind.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlparse

from .checks import ConfigurationError

__all__ = ["DOWNLOAD_TIMEOUT_S", "cache_folder", "cached_path"]

# Seconds a server may stay silent (connecting, or between two reads) before the download is given up.
DOWNLOAD_TIMEOUT_S = 60.0
_CHUNK_BYTES = 1 << 20


def cache_folder() -> Path:
    """Where fetched files are kept: `$ELMO_ALLENNLP_CACHE`, default `~/.cache/elmo-transformers/allennlp`."""
    default = Path.home() / ".cache" / "elmo-transformers" / "allennlp"
    return Path(os.environ.get("ELMO_ALLENNLP_CACHE", default))


def _allennlp_cache_folder() -> Path:
    return Path(os.environ.get("ALLENNLP_CACHE_ROOT", Path.home() / ".allennlp")) / "cache"


def cached_path(url_or_filename: str | os.PathLike) -> Path:
    """The local file of `url_or_filename`: a path as it is (it must exist), an http(s) URL from the cache (fetched
    first when absent). Raises `ConfigurationError` in one line: no such file, another scheme (s3), a server that
    answers with an error or does not answer."""
    text = os.fspath(url_or_filename)
    scheme = urlparse(text).scheme
    if scheme in ("http", "https"):
        return _fetched(text)
    if os.path.exists(text):
        return Path(text)
    if scheme in ("", "file") or len(scheme) == 1:  # (a Windows drive letter reads as a scheme)
        raise ConfigurationError(f"{text}: no such file")
    raise ConfigurationError(f"{text}: only local paths and http(s) URLs are read (download {scheme}:// files first)")


def _fetched(url: str) -> Path:
    name = hashlib.sha256(url.encode("utf-8")).hexdigest()
    ours = cache_folder() / name
    if ours.is_file():
        return ours
    theirs = sorted(
        path for path in _allennlp_cache_folder().glob(f"{name}.*") if path.is_file() and path.suffix != ".json"
    )
    if theirs:
        return theirs[0]
    _download(url, ours)
    return ours


def _download(url: str, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, staging_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent)
    staging = Path(staging_name)
    try:
        with os.fdopen(handle, "wb") as staging_file, urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT_S) as answer:
            shutil.copyfileobj(answer, staging_file, _CHUNK_BYTES)
        os.replace(staging, target)
    except urllib.error.HTTPError as error:
        raise ConfigurationError(f"{url}: the server answered {error.code} {error.reason}") from None
    except (urllib.error.URLError, OSError) as error:  # TimeoutError, connection refused, reset, DNS
        reason = getattr(error, "reason", None) or error
        raise ConfigurationError(f"{url} did not answer ({reason})") from None
    finally:
        staging.unlink(missing_ok=True)
