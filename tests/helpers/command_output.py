"""What a command left behind: every file under a folder with its bytes (to see that nothing changed, no staging
folder or lock left), the line it ended with on stderr, its processes' messages, and its exit status after a
Ctrl-C."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

__all__ = ["exit_status_after_ctrl_c", "file_tree", "last_error_line", "messages"]


def file_tree(folder: Path) -> dict[str, bytes]:
    """Every file under `folder`, hidden ones included, by its path relative to `folder`."""
    return {str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


def last_error_line(capsys: pytest.CaptureFixture) -> str:
    """The line the command ended with on stderr (after any progress bars), once seen not to be a traceback."""
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    return err.splitlines()[-1]


def messages(stderr: str, prefix: str) -> list[str]:
    """Every message of the processes that wrote `stderr` that starts with `prefix` (`error: `), each from its
    prefix to the end of its line or to the next message. Several processes write to one stderr: a message can follow
    another process's progress bar (written without a newline) or message (Python prints a SystemExit message and its
    newline in two writes) on one line."""
    return [prefix + message for line in stderr.splitlines() for message in line.split(prefix)[1:]]


def exit_status_after_ctrl_c(command: Callable[[], int]) -> int:
    """`command()`'s exit status, where a Ctrl-C (KeyboardInterrupt) is raised inside it; one that escapes the
    command (a traceback for the user) fails the test rather than stopping pytest."""
    try:
        return command()
    except KeyboardInterrupt:
        pytest.fail("the KeyboardInterrupt escaped the command: the user sees a traceback")
