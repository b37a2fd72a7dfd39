"""Writing the files a command leaves behind (``--out``) without ever losing data.

A file is written under a temporary name in its own directory and renamed over its final
name only once complete (:func:`replacing`), so a write that fails (a full disk, an interrupt)
leaves the earlier file, if any, as it was, and never a truncated file under the final name.
The temporary file is fsynced before the rename and the directory after it, so a power cut
leaves either the old file or the new one, not an empty one (some file systems, XFS among
them, may otherwise persist the rename before the data).
Files named after a scenario take :func:`file_stem` of its name, and a command that fails leaves
no empty output directory behind (:func:`no_empty_directory`).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from collections.abc import Iterator
from pathlib import Path

from pfstune.errors import UserError

#: The longest file name, in bytes, that Linux file systems take (NAME_MAX).
MAX_NAME_BYTES = 255
#: Characters of the final name kept in the temporary one, which adds a prefix and a suffix:
#: a final name close to :data:`MAX_NAME_BYTES` must still give a temporary name that fits.
_KEPT = 64
#: How the temporary names of :func:`replacing` end.
PARTIAL_SUFFIX = ".partial"


def file_stem(name: str) -> str:
    """The stem of the files named after a scenario: its name, with '_' for what a file name should not hold."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)


def check_file_name(name: str, what: str) -> None:
    """Raise :class:`UserError` if ``name`` is too long for a file name (``what`` names its scenario)."""
    size = len(name.encode())
    if size > MAX_NAME_BYTES:
        raise UserError(
            f"{what}: the file name {name[:40]}... would be {size} bytes, over the {MAX_NAME_BYTES} "
            "a file system takes; give the scenario a shorter name"
        )


@contextlib.contextmanager
def no_empty_directory(path: Path) -> Iterator[None]:
    """Run the block; if it raises, remove ``path`` and its parents that were missing before it, if empty.

    A command creates its output directory before its long work, so that a bad path costs no
    work; this keeps a failed run from leaving that directory behind, empty.
    """
    missing = []
    while not path.exists() and path != path.parent:
        missing.append(path)  # deepest first
        path = path.parent
    try:
        yield
    except BaseException:
        for directory in missing:
            with contextlib.suppress(OSError):
                directory.rmdir()  # only if still empty
        raise


@contextlib.contextmanager
def replacing(path: Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path`` to write; rename it over ``path`` if the block succeeds.

    If the block (or the rename) raises, the temporary file is removed and ``path`` is left as
    it was.  Several files entered in one :class:`contextlib.ExitStack` are replaced together:
    no rename happens before every file is written.
    """
    tmp = partial_path(path)
    try:
        yield tmp
        fsync_file(tmp)
        os.replace(tmp, path)
    finally:
        # an error here (a directory gone) must not hide the one that brought us here
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
    fsync_directory(path.parent)


def partial_path(path: Path) -> Path:
    """The temporary name :func:`replacing` writes ``path`` under: ``.NAME.PID.partial`` beside it."""
    name = path.name
    if len(name) > _KEPT:  # shortened, with a digest of the whole name to keep it unique
        name = f"{name[:_KEPT]}~{hashlib.sha256(name.encode()).hexdigest()[:12]}"
    return path.with_name(f".{name}.{os.getpid()}{PARTIAL_SUFFIX}")


def fsync_file(path: Path) -> None:
    """Flush ``path``'s data to its disk (any descriptor of the file will do for fsync)."""
    _fsync(path, os.O_RDONLY | os.O_CLOEXEC)


def fsync_directory(directory: Path) -> None:
    """Flush ``directory``'s entries (a rename or an unlink in it) to its disk."""
    _fsync(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)


def _fsync(path: Path, flags: int) -> None:
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
