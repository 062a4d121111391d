"""The one door for files bfcl-safe reads that a user, a model or a run left behind.

Every read of an untrusted file goes through here (``tests/test_io_doors_policy.py``
fails if shipped code opens, reads or decodes a file anywhere else): result files
(``evaluate``, ``explain``, ``generate``'s resume), option files (``--model-map``,
``--run-ids``), score files read back, wheels and their members, files of an unpacked
dataset folder.

- **Regular files only.** A path is opened with ``O_NONBLOCK`` (a FIFO never blocks the
  open) and ``fstat`` decides: a folder, FIFO, device or socket is refused before a byte
  is read (a symlink to ``/dev/zero`` too). ``follow=False`` also refuses a symlink as the
  last component (``O_NOFOLLOW``: for files bfcl-safe will write back).
- **A size cap per kind** (:class:`Kind`, limits in :mod:`bfcl_safe.interp.limits`),
  checked on the size ``fstat`` reports and again while reading (a file that grows).
- **Zip members**: the declared inflated size and the compression ratio are checked
  before inflating, and the bytes inflated are counted while reading (a header that lies
  about the size gives at most the cap, then the CRC check fails).
- **JSON** is decoded with a depth bound (:func:`bfcl_safe.checker.codec.loads_bounded`).

Every failure is an :class:`UnreadableFile` (a :class:`~bfcl_safe.interp.errors.BfclSafeError`)
whose message starts with the path, escaped for a terminal (:func:`shown_path`): the
command line shows it as one ``Error:`` line, or a run skips that file with it as a warning.
"""

from __future__ import annotations

import io
import os
import stat
import zipfile
import zlib
from pathlib import Path
from typing import IO, Any, NamedTuple

from bfcl_safe.checker.codec import NotJSON, TooDeep, loads_bounded
from bfcl_safe.checker.terminal import shown
from bfcl_safe.interp.errors import BfclSafeError
from bfcl_safe.interp.limits import (
    MAX_DATASET_FILE_BYTES,
    MAX_OPTION_FILE_BYTES,
    MAX_OPTION_FILE_DEPTH,
    MAX_RESULT_FILE_BYTES,
    MAX_SCORE_FILE_BYTES,
    MAX_WHEEL_BYTES,
    MAX_WHEEL_MEMBER_RATIO,
)


class Kind(NamedTuple):
    """A kind of file read: what it is called in messages, and its size cap in bytes."""

    name: str
    limit: int


RESULT_FILE = Kind("result file", MAX_RESULT_FILE_BYTES)
OPTION_FILE = Kind("option file", MAX_OPTION_FILE_BYTES)
SCORE_FILE = Kind("score file", MAX_SCORE_FILE_BYTES)
WHEEL = Kind("wheel", MAX_WHEEL_BYTES)
#: A file of the dataset: a wheel member (inflated) or a file of an unpacked package folder.
DATASET_FILE = Kind("dataset file", MAX_DATASET_FILE_BYTES)


class UnreadableFile(BfclSafeError, OSError):
    """A file that is not read: ``path``, and ``reason`` in a few words."""

    def __init__(self, path: Any, reason: str, detail: str | None = None):
        self.path = path
        self.reason = reason
        #: The underlying error in a few words, where there is one (e.g. the zip module's).
        self.detail = reason if detail is None else detail
        super().__init__(f"{shown_path(path)}: {reason}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.path, self.reason, self.detail))





def shown_path(path: Any) -> str:
    """A path as one line of text, through the one cell rule (:func:`terminal.shown`):
    control and bidi characters escaped visibly, undecodable bytes of a non-UTF-8 name
    as ``\\xNN``."""
    return shown(path)


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symlink")):
        if test(mode):
            return name
    return "not a regular file"


def _cannot(exc: OSError) -> str:
    return f"cannot read it ({exc.strerror or type(exc).__name__})"


def open_regular(path: str | os.PathLike, limit: int | None = None, *, follow: bool = True,
                 dir_fd: int | None = None) -> io.BufferedReader:
    """Open ``path`` for reading if it is a regular file of at most ``limit`` bytes
    (default: a result file's cap), else raise :class:`UnreadableFile`. The open itself
    never blocks (``O_NONBLOCK``; a FIFO is refused by ``fstat`` right after, and a
    ``stat`` before it keeps devices and FIFOs from being opened at all). With
    ``follow=False`` a symlink as the last component is refused too. ``dir_fd``: ``path``
    is a name in that folder."""
    limit = MAX_RESULT_FILE_BYTES if limit is None else limit
    try:  # (a device is not even opened: opening some has effects of its own)
        before = os.stat(path, dir_fd=dir_fd, follow_symlinks=follow)
    except OSError:
        before = None  # (the open below says why)
    if before is not None and not stat.S_ISREG(before.st_mode):
        reason = "a symlink; not read" if stat.S_ISLNK(before.st_mode) else \
            f"not a regular file ({_kind(before.st_mode)}); not read"
        raise UnreadableFile(path, reason)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | (0 if follow else getattr(os, "O_NOFOLLOW", 0))
    try:
        fd = os.open(path, flags, dir_fd=dir_fd)
    except OSError as exc:
        if not follow and _is_link(path, dir_fd):
            raise UnreadableFile(path, "a symlink; not read") from None
        try:  # (a socket cannot be opened: say what it is)
            mode = os.stat(path, dir_fd=dir_fd).st_mode
        except OSError:
            mode = stat.S_IFREG
        if not stat.S_ISREG(mode):
            raise UnreadableFile(path, f"not a regular file ({_kind(mode)}); not read") from None
        raise UnreadableFile(path, _cannot(exc)) from None
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            raise UnreadableFile(path, f"not a regular file ({_kind(status.st_mode)}); not read")
        if status.st_size > limit:
            raise UnreadableFile(path, f"{status.st_size:,} bytes, more than the {limit:,} a file may have; not read")
        os.set_blocking(fd, True)
        return open(fd, "rb", closefd=True)
    except BaseException:
        os.close(fd)
        raise


def _is_link(path: Any, dir_fd: int | None) -> bool:
    try:
        return stat.S_ISLNK(os.stat(path, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def exists_at(name: str, dir_fd: int) -> bool:
    """Whether anything (a symlink included) is at ``name`` in the folder ``dir_fd``."""
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


def _read_all(handle: IO[bytes], path: Any, limit: int) -> bytes:
    data = handle.read(limit + 1)
    if len(data) > limit:  # (it grew after fstat)
        raise UnreadableFile(path, f"more than the {limit:,} bytes a file may have; not read")
    return data


def read_bytes(path: str | os.PathLike, kind: Kind, *, follow: bool = True, dir_fd: int | None = None) -> bytes:
    """The bytes of a regular file of ``kind`` (see :func:`open_regular`)."""
    with open_regular(path, kind.limit, follow=follow, dir_fd=dir_fd) as handle:
        try:
            return _read_all(handle, path, kind.limit)
        except OSError as exc:
            raise UnreadableFile(path, _cannot(exc)) from None


def read_text(path: str | os.PathLike, kind: Kind) -> str:
    """The UTF-8 text of a regular file of ``kind``; not UTF-8: :class:`UnreadableFile`."""
    try:
        return read_bytes(path, kind).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UnreadableFile(path, f"not UTF-8 text (byte {exc.start:,})") from None


def read_json(path: str | os.PathLike, kind: Kind = OPTION_FILE, depth: int = MAX_OPTION_FILE_DEPTH) -> Any:
    """The JSON value of a regular file of ``kind``, nested at most ``depth`` levels."""
    text = read_text(path, kind)
    try:
        return loads_bounded(text, depth)
    except (TooDeep, NotJSON) as exc:
        raise UnreadableFile(path, str(exc)) from None


def sha256(path: str | os.PathLike, kind: Kind = WHEEL) -> str:
    """The sha256 of a regular file of ``kind`` (read in blocks, at most its cap)."""
    import hashlib  # (only when a digest is needed: not on the scoring path)

    digest = hashlib.sha256()
    with open_regular(path, kind.limit) as handle:
        read = 0
        try:
            while block := handle.read(1 << 20):
                read += len(block)
                if read > kind.limit:
                    raise UnreadableFile(path, f"more than the {kind.limit:,} bytes a {kind.name} may have; not read")
                digest.update(block)
        except OSError as exc:
            raise UnreadableFile(path, _cannot(exc)) from None
    return digest.hexdigest()


class Lines:
    """The lines of a regular file, streamed as text (UTF-8, undecodable bytes replaced),
    each at most ``max_chars`` characters: a longer one comes as None, skipped without
    being held in memory. ``errors``: how undecodable bytes are handled (``"strict"``:
    ``UnicodeDecodeError``). ``newline``: as for ``open()`` (``None``: universal newlines;
    ``"\\n"``: split at ``\\n`` only, line ends kept)."""

    def __init__(self, path: str | os.PathLike, kind: Kind, max_chars: int, *, newline: str | None = None,
                 follow: bool = True, errors: str = "replace"):
        self.path = path
        self.max_chars = max_chars
        raw = open_regular(path, kind.limit, follow=follow)
        self._handle = io.TextIOWrapper(raw, encoding="utf-8", errors=errors, newline=newline)

    def __enter__(self) -> "Lines":
        return self

    def __exit__(self, *exc: object) -> None:
        self._handle.close()

    def __iter__(self) -> "Lines":
        return self

    def __next__(self) -> str | None:
        handle = self._handle
        try:
            line = handle.readline(self.max_chars + 1)
            if not line:
                raise StopIteration
            if len(line) > self.max_chars and not line.endswith("\n"):
                while (rest := handle.readline(1 << 20)) and not rest.endswith("\n"):
                    pass
                return None
            return line
        except OSError as exc:
            raise UnreadableFile(self.path, _cannot(exc)) from None


# --------------------------------------------------------------------------- zip archives


class Archive:
    """A zip archive (a wheel) opened through :func:`open_regular` (regular, at most
    :data:`WHEEL` bytes), its members read by :meth:`read` with their inflated size and
    ratio checked first and the inflated bytes counted."""

    def __init__(self, path: str | os.PathLike):
        self.path = path
        handle = open_regular(path, WHEEL.limit)
        try:
            self._zip = zipfile.ZipFile(handle)
        except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
            handle.close()
            raise UnreadableFile(path, f"not a readable zip archive ({_reason(exc)})", _reason(exc)) from None
        self.names = frozenset(self._zip.namelist())

    def close(self) -> None:
        self._zip.close()
        fp = getattr(self._zip, "fp", None)
        if fp is not None:
            fp.close()

    def read(self, name: str, kind: Kind = DATASET_FILE) -> bytes:
        """One member's bytes. :class:`UnreadableFile` (naming ``archive!member``) when it
        is absent, declares more than ``kind.limit`` bytes or a ratio above
        :data:`~bfcl_safe.interp.limits.MAX_WHEEL_MEMBER_RATIO`, inflates to more than it
        declares, or is corrupt."""
        where = f"{os.fspath(self.path)}!{name}"
        try:
            info = self._zip.getinfo(name)
        except KeyError:
            raise UnreadableFile(where, "no such member") from None
        if info.file_size > kind.limit:
            raise UnreadableFile(where, f"declares {info.file_size:,} bytes inflated, more than the {kind.limit:,} "
                                        f"a {kind.name} may have; not read")
        if info.file_size > MAX_WHEEL_MEMBER_RATIO * max(info.compress_size, 1):
            raise UnreadableFile(where, f"inflates {info.file_size:,} bytes from {info.compress_size:,}, a ratio above "
                                        f"{MAX_WHEEL_MEMBER_RATIO:,}; not read")
        try:
            with self._zip.open(info) as member:
                # One read of at most one byte more than it declares: the decompressor
                # inflates no further (zipfile passes the length on), and a member that
                # declared less than it holds shows itself by that byte.
                data = member.read(min(kind.limit, info.file_size) + 1)
        except (zipfile.BadZipFile, zlib.error, OSError, ValueError, EOFError, NotImplementedError) as exc:
            raise UnreadableFile(where, f"corrupt ({_reason(exc)})") from None
        if len(data) > info.file_size:
            raise UnreadableFile(where, f"inflates to more than the {info.file_size:,} bytes it declares; not read")
        return data


def _reason(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text[:120]}" if text else type(exc).__name__


def read_dataset_file(path: Path) -> bytes:
    """A file of an unpacked dataset folder (:data:`DATASET_FILE`)."""
    return read_bytes(path, DATASET_FILE)
