"""Generations of files published by one header: several files switch together, never torn.

The vector files (:mod:`~kgpath.backends.cypher.vectors`) and the name token index
(:mod:`~kgpath.backends.cypher.names`) are sets of files a reader must see from one write.
A writer (:class:`FileGeneration`) creates the data files of a new generation under new
names (stem ``<name>-<generation>-<random>``, created exclusively, never changed once
published), fsyncs them, and publishes them by replacing the one header ``<name>.json``
atomically (temporary sibling, fsync, rename); the other generations' files are then
unlinked. A reader opens the header and the files it names (:func:`open_generation`) and
keeps its descriptors: an unlinked generation stays readable to it, whole, until it closes
them. :class:`Published` re-opens when the header changed (one ``stat`` per access), so a
long-lived reader follows every rewrite. A write that fails or is interrupted leaves the
old header and files (and stray new files, which the next publish removes). One writer per
directory and name (:class:`~kgpath.backends.cypher.CypherSync` holds a lock).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Generic, TypeVar

import numpy as np

from kgpath._files import atomic_write, check_directory, write_chunked
from kgpath.errors import ConfigError, PersistenceError

__all__ = ["FileGeneration", "GenerationWriter", "Published", "open_generation", "read_header",
           "remove_generations"]

T = TypeVar("T")
_OPEN_ATTEMPTS = 5  # re-reads of the header when a newer generation removed the files


class FileGeneration:
    """The data files ``<stem>.<ext>`` of a new generation of ``<directory>/<name>``.

    The generation pattern of the module docstring, for any set of files that must switch
    together (the vector files here, the name token index of
    :mod:`~kgpath.backends.cypher.names`): the files are created under a new stem
    (``<name>-<generation>-<random>``, never an existing file), :meth:`finish` fsyncs and
    closes them, :meth:`publish` replaces the header ``<name>.json`` atomically (adding
    ``generation`` and ``stem`` to the caller's fields) and unlinks every other generation;
    :meth:`discard` removes them unpublished. ``ids``: the ``(offsets, blob)`` extensions
    that :meth:`append_ids` fills (``count + 1`` int64 offsets into the UTF-8 ids).

    Raises
    ------
    PersistenceError
        If the directory or a file cannot be created.

    Examples
    --------
    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> gen = FileGeneration(d, "words", ("txt",), what="word list")
    >>> gen.write("txt", b"hello")
    >>> gen.publish({"count": 1})
    >>> head, fds = open_generation(d, "words", ("txt",),
    ...                             lambda b, n: json.loads((b / f"{n}.json").read_text()),
    ...                             what="word list")
    >>> head["generation"], os.pread(fds["txt"], 5, 0)
    (1, b'hello')
    >>> os.close(fds["txt"])
    """

    def __init__(self, base: Path, name: str, exts: Sequence[str], *, what: str,
                 ids: tuple[str, str] | None = None) -> None:
        check_directory(base, f"the directory of {what}")
        self.base, self.name, self.exts, self.what, self._ids = base, name, tuple(exts), what, ids
        self.fds: dict[str, int] = {}
        self.generation = _generation(base, name) + 1
        self.stem = f"{name}-{self.generation}-{secrets.token_hex(4)}"
        self.published, self._pos = False, 0
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
        try:
            for ext in self.exts:
                self.fds[ext] = os.open(base / f"{self.stem}.{ext}", flags, 0o644)
            if ids is not None:
                write_chunked(self.fds[ids[0]], np.zeros(1, "<i8").tobytes(), what="id offsets")
        except BaseException as exc:
            self.discard()
            if isinstance(exc, OSError) and not isinstance(exc, PersistenceError):
                raise PersistenceError(f"cannot write {what} {name!r} in {str(base)!r}: {exc}"
                                       ) from exc
            raise

    def write(self, ext: str, data: bytes | memoryview) -> None:
        """Append ``data`` to the file ``ext``."""
        if not self.fds:
            raise ConfigError(f"the writer of {self.what} {self.stem!r} is finished")
        write_chunked(self.fds[ext], data, what=f"{self.stem}.{ext}")

    def append_ids(self, ids: Sequence[str]) -> None:
        """Append ids to the ``ids`` files (their offsets, then their UTF-8 bytes)."""
        assert self._ids is not None
        blobs = [str(i).encode("utf-8") for i in ids]
        ends = self._pos + np.cumsum([len(b) for b in blobs], dtype=np.int64)
        self.write(self._ids[0], ends.astype("<i8").tobytes())
        self.write(self._ids[1], b"".join(blobs))
        self._pos = int(ends[-1]) if len(ends) else self._pos

    def finish(self) -> None:
        """Flush and close the data files (not yet visible to readers)."""
        fds, self.fds = list(self.fds.values()), {}
        try:
            for fd in fds:
                os.fsync(fd)
        except OSError as exc:
            raise PersistenceError(f"flushing {self.what} {self.stem!r} failed: {exc}") from exc
        finally:
            for fd in fds:
                os.close(fd)

    def publish(self, header: Mapping[str, Any]) -> None:
        """Make this generation (``header`` and its stem) the one readers open; unlink others."""
        self.finish()
        atomic_write(self.base / f"{self.name}.json", json.dumps(
            {**header, "generation": self.generation, "stem": self.stem}),
            what=f"{self.what} header")
        self.published = True
        remove_generations(self.base, self.name, self.exts, keep=self.stem)

    def discard(self) -> None:
        """Remove this generation's data files (unless published); the old one stays."""
        for fd in self.fds.values():
            os.close(fd)
        self.fds = {}
        if not self.published:
            for ext in self.exts:
                try:
                    os.unlink(self.base / f"{self.stem}.{ext}")
                except OSError:
                    pass


W = TypeVar("W", bound="GenerationWriter")


class GenerationWriter:
    """The life of a writer of one :class:`FileGeneration` (``_gen``), shared by the writers.

    A subclass implements :meth:`publish` (finish, then publish its header). :meth:`close`
    publishes, :meth:`discard` removes the unpublished files; as a context manager the
    writer publishes when the block succeeds and discards when it raises.
    """

    _gen: FileGeneration

    def publish(self) -> None:
        """Make this generation the one readers open (the subclass's header)."""
        raise NotImplementedError

    def close(self) -> None:
        """:meth:`publish`."""
        self.publish()

    def discard(self) -> None:
        """Remove this generation's data files (unless published); the old one stays."""
        self._gen.discard()

    def __enter__(self: W) -> W:
        return self

    def __exit__(self, exc_type: Any, *exc: object) -> None:
        if exc_type is None:
            self.close()
        else:
            self.discard()


def read_header(base: Path, name: str, what: str, expect: Mapping[str, Any]) -> dict[str, Any]:
    """The header ``<base>/<name>.json`` of a ``what``, with the fields ``expect`` names.

    Raises
    ------
    PersistenceError
        If it is missing, unreadable, not a JSON object or a field differs from ``expect``
        (another format, version or tokenizer).
    """
    path = base / f"{name}.json"
    try:
        head = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise PersistenceError(f"cannot open the {what} {name!r} in {str(base)!r}: {exc}"
                               ) from exc
    if not isinstance(head, dict) or any(head.get(k) != v for k, v in expect.items()):
        raise PersistenceError(f"{str(path)!r} is not a {what} header "
                               f"({dict(expect)}): {head}")
    return head


def _generation(base: Path, name: str) -> int:
    """The generation the header ``<name>.json`` publishes (0: none, or unreadable)."""
    try:
        head = json.loads((base / f"{name}.json").read_text())
        return int(head.get("generation", 0)) if isinstance(head, dict) else 0
    except (OSError, ValueError, TypeError):
        return 0


def open_generation(base: Path, name: str, exts: Sequence[str],
                    header: Callable[[Path, str], dict[str, Any]], *, what: str
                    ) -> tuple[dict[str, Any], dict[str, int]]:
    """The header ``header(base, name)`` and read-only descriptors of its generation's files.

    A header without ``stem`` (written before generations) names ``<name>.<ext>``. When a
    newer generation removed the files between reading the header and opening them, the
    header is read again (a few times). The caller closes the descriptors.

    Raises
    ------
    PersistenceError
        If the header or a file is missing or unreadable.
    """
    for attempt in range(_OPEN_ATTEMPTS):
        head = header(base, name)
        stem, fds = str(head.get("stem", name)), {}
        try:
            for ext in exts:
                fds[ext] = os.open(base / f"{stem}.{ext}", os.O_RDONLY)
            return head, fds
        except OSError as exc:
            for fd in fds.values():
                os.close(fd)
            if (not isinstance(exc, FileNotFoundError) or attempt + 1 == _OPEN_ATTEMPTS
                    or header(base, name) == head):  # not a newer generation's doing
                raise PersistenceError(f"cannot open {what} {name!r} in {str(base)!r}: {exc}"
                                       ) from exc
    raise AssertionError("unreachable")  # pragma: no cover


def remove_generations(base: Path, name: str, exts: Sequence[str], *, keep: str) -> None:
    """Unlink the data files of ``name`` other than generation ``keep`` (open ones live on)."""
    pattern = re.compile(rf"{re.escape(name)}(-\d+-[0-9a-f]+)?\.({'|'.join(exts)})")
    for entry in os.scandir(base):
        if pattern.fullmatch(entry.name) and not entry.name.startswith(keep + "."):
            try:
                os.unlink(entry.path)
            except OSError:
                pass


class Published(Generic[T]):
    """What ``opener()`` makes of the header ``<directory>/<name>.json`` as it is now.

    :meth:`current` re-opens when the header was replaced (a new generation published) or
    removed (``None``), one ``stat`` per call; an object taken earlier keeps its own.
    """

    def __init__(self, directory: Path, name: str, opener: Callable[[], T]) -> None:
        self.path, self._opener = directory / f"{name}.json", opener
        self._lock = threading.Lock()
        self._held: tuple[Any, T | None] | None = None

    def current(self) -> T | None:
        """The object for the header now (``None`` when there is none)."""
        try:  # stat before opening: a swap in between only causes one more re-open
            st = os.stat(self.path)
            stamp: Any = (st.st_ino, st.st_mtime_ns, st.st_size)
        except FileNotFoundError:
            stamp = None
        held = self._held
        if held is not None and held[0] == stamp:
            return held[1]
        with self._lock:
            held = self._held
            if held is None or held[0] != stamp:
                held = self._held = (stamp, None if stamp is None else self._opener())
            return held[1]
