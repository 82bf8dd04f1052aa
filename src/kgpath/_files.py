"""Raw writes that never go short silently, and paths checked before they are written to.

Every write of kgpath that goes through a file descriptor (``os.write`` / ``os.pwrite``)
goes through :func:`write_all`: the byte count each call returns is checked, and a write
that stops short (a full disk, a file size limit) or fails raises
:class:`~kgpath.errors.PersistenceError` naming what was written where, never leaving
zeros to be read back as data. :func:`user_path` turns a user's path argument into a
:class:`~pathlib.Path` the same way everywhere (``~`` expanded, ``""`` refused).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from kgpath.errors import ConfigError, PersistenceError, short

__all__ = ["atomic_write", "check_directory", "user_path", "write_all", "write_chunked",
           "write_file"]

_CHUNK = 1 << 26  # bytes per write call (Linux writes at most ~2 GiB per call)


def write_all(fd: int, data: bytes | memoryview, *, offset: int | None = None,
              what: str = "data") -> None:
    """Write every byte of ``data`` to ``fd`` (at ``offset`` with ``os.pwrite``) or raise.

    Raises
    ------
    PersistenceError
        If a call writes fewer bytes than it was given (a short write is an error: the
        rest would read back as zeros) or fails (``ENOSPC``, ``EFBIG``, ``EIO``, ...).

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryFile() as fh:
    ...     write_all(fh.fileno(), b"abc", offset=0)
    ...     os.pread(fh.fileno(), 3, 0)
    b'abc'
    """
    view = memoryview(data).cast("B")
    try:
        wrote = os.write(fd, view) if offset is None else os.pwrite(fd, view, offset)
    except OSError as exc:
        raise PersistenceError(
            f"writing {view.nbytes} bytes of {what} failed: {exc} (is the disk full?)"
        ) from exc
    if wrote != view.nbytes:
        raise PersistenceError(
            f"writing {view.nbytes} bytes of {what} wrote only {wrote} (is the disk full?)"
        )


def write_chunked(fd: int, data: bytes | memoryview, *, what: str = "data") -> None:
    """:func:`write_all` of ``data`` at the file position, in calls of at most 64 MB."""
    view = memoryview(data).cast("B")
    for a in range(0, view.nbytes, _CHUNK):
        write_all(fd, view[a:a + _CHUNK], what=what)


def write_file(fd: int, data: bytes | str, *, what: str = "data") -> None:
    """Write all of ``data`` (``str`` as UTF-8) to ``fd`` and fsync it."""
    write_chunked(fd, data.encode("utf-8") if isinstance(data, str) else data, what=what)
    try:
        os.fsync(fd)
    except OSError as exc:
        raise PersistenceError(f"flushing {what} to disk failed: {exc}") from exc


def atomic_write(path: Path, data: bytes | str, *, what: str = "data") -> None:
    """Write ``path`` whole or not at all: a temporary sibling, fsynced, then renamed.

    The temporary file is removed on any failure, so a failed write leaves the old file
    (or nothing), never a partial one.

    Raises
    ------
    PersistenceError
        If the directory cannot be created, a write fails or is short, or the rename fails
        (e.g. ``path`` is a directory).
    """
    check_directory(path.parent, f"the directory of {what}")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.tmp-", dir=path.parent)
    except OSError as exc:
        raise PersistenceError(f"cannot write {what} to {str(path)!r}: {exc}") from exc
    try:
        try:
            write_file(fd, data, what=f"{what} to {str(path)!r}")
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and not isinstance(exc, PersistenceError):
            raise PersistenceError(f"cannot write {what} to {str(path)!r}: {exc}") from exc
        raise


def user_path(path: str | os.PathLike[str], what: str) -> Path:
    """``path`` as a :class:`~pathlib.Path`, ``~`` expanded; an empty path is refused.

    Raises
    ------
    ConfigError
        If ``path`` is not a string or path-like, or is empty.

    Examples
    --------
    >>> user_path("~/kg", "save path") == Path.home() / "kg"
    True
    """
    if isinstance(path, bytes) or not isinstance(path, (str, os.PathLike)):
        raise ConfigError(f"{what} must be a str or os.PathLike, got {short(path)}")
    text = os.fspath(path)
    if not isinstance(text, str) or not text.strip():
        raise ConfigError(f"{what} must not be empty, got {short(path)}")
    return Path(text).expanduser()


def check_directory(path: Path, what: str) -> Path:
    """Create ``path`` as a directory (parents too) unless it is one; return it.

    Raises
    ------
    PersistenceError
        If ``path`` (or a parent) exists and is not a directory, or cannot be created.
    """
    if path.is_dir():
        return path
    if os.path.lexists(path):
        raise PersistenceError(f"{what} {str(path)!r} exists and is not a directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PersistenceError(f"{what} {str(path)!r} cannot be created: {exc}") from exc
    return path
