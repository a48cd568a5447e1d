"""Writing a file a user asked for, without ever clobbering one they have or leaving half of one.

Shared by every command with an output file (``lens cluster snapshot -o``, ``lens deploy render -o``,
``lens evaluate config -o``, ``lens telemetry dashboard -o``): the payload goes to a temporary file
created exclusively (``mkstemp``: a random name, ``O_EXCL``, so a planted file or symlink is never
opened) beside the target, is synced, and is published in one step, so an interrupted write leaves
the old file (or none) behind and no temporary file; without ``replace`` a file that exists, or
appears meanwhile, is refused at the moment of publishing (a hard link fails on an existing name)
and left untouched.

Reading one (:func:`read_text`): ``Path.read_text`` reads a file of any size whole and fails on a
byte that is not UTF-8 with a bare ``UnicodeDecodeError``. :func:`read_text` reads at most
``limit`` bytes (one more tells it the file is larger) and raises :class:`TextUnreadable` with a
sentence the caller puts in its own coded error beside the file's name: it cannot be read (and
why), it is larger than the limit, or which byte is not UTF-8. ``-`` reads stdin the same way.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from llm_d_lens.errors import LensError


class OutputInvalid(LensError):
    """The output path cannot take a file: a directory is in the way, its folder is missing, or the write failed."""

    code = "OUTPUT_INVALID"
    http_status = 400


def check_output_path(path: Path, *, replace: bool, exists: LensError) -> None:
    """Refuse a path that cannot be written, before any work is done for it."""
    if path.is_dir():
        raise OutputInvalid(f"{path}: is a directory; give a file name", details={"path": str(path)})
    if not path.parent.is_dir():
        raise OutputInvalid(f"{path}: the directory {path.parent} does not exist", details={"path": str(path)})
    if not replace and (path.exists() or path.is_symlink()):
        raise exists


def write_file(path: Path, payload: bytes, *, replace: bool, exists: LensError, mode: int | None = None) -> None:
    """Write ``payload`` to ``path`` in one step; ``mode`` defaults to what the umask gives a new file."""
    check_output_path(path, replace=replace, exists=exists)
    if mode is None:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    import tempfile  # only a command that writes a file pays for it (with shutil, bz2, lzma and random)

    try:
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent)
    except OSError as exc:
        raise OutputInvalid(f"{path}: cannot be written ({exc.strerror or exc})", details={"path": str(path)}) from None
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(payload)
            stream.flush()
            os.fsync(stream.fileno())  # on disk before it takes the name: a crash leaves the old file or the new
        os.chmod(temporary, mode)
        if replace:
            os.replace(temporary, path)  # replaces a symlink at ``path`` itself, never the file it points to
        else:
            _publish_without_replacing(temporary, path, payload, mode, exists)
        _sync_directory(path.parent)
    except OSError as exc:
        raise OutputInvalid(f"{path}: cannot be written ({exc.strerror or exc})", details={"path": str(path)}) from None
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)


def _sync_directory(directory: Path) -> None:
    """Make the new name durable too; a filesystem that cannot sync a directory is left as it is."""
    try:
        handle = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(handle)
    except OSError:
        pass
    finally:
        os.close(handle)


def _publish_without_replacing(temporary: str, path: Path, payload: bytes, mode: int, exists: LensError) -> None:
    try:
        os.link(temporary, path)  # fails, instead of replacing, if the file appeared meanwhile
        return
    except FileExistsError:
        raise exists from None
    except OSError:
        pass  # a filesystem without hard links: exclusive creation still refuses to replace
    try:
        with open(path, "xb") as stream:
            stream.write(payload)
    except FileExistsError:
        raise exists from None
    os.chmod(path, mode)


# -- reading -----------------------------------------------------------------------------------

#: bytes a file Lens reads may have unless its caller says otherwise (a rendered manifest of a
#: whole guide is well under a megabyte)
DEFAULT_LIMIT = 16 * 1024 * 1024


class TextUnreadable(ValueError):
    """Why a file's text was not read; ``problem`` is a sentence to follow the file's name."""

    def __init__(self, problem: str):
        super().__init__(problem)
        self.problem = problem


def decode(raw: bytes, *, limit: int = DEFAULT_LIMIT) -> str:
    """``raw`` as UTF-8 text (a leading byte-order mark dropped); :class:`TextUnreadable` if it is not."""
    if len(raw) > limit:
        raise TextUnreadable(f"is larger than {limit} bytes")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise TextUnreadable(f"is not UTF-8 text (byte {exc.start} is {raw[exc.start:exc.start + 1]!r}); "
                             "save it as UTF-8") from None


def read_text(path: str | Path, *, limit: int = DEFAULT_LIMIT) -> str:
    """The text of ``path`` (``-``: stdin), never more than ``limit`` bytes read."""
    try:
        if str(path) == "-":
            raw = sys.stdin.buffer.read(limit + 1)
        else:
            with open(path, "rb") as handle:
                raw = handle.read(limit + 1)
    except OSError as exc:
        raise TextUnreadable(f"cannot be read: {exc.strerror or exc}") from None
    return decode(raw, limit=limit)
