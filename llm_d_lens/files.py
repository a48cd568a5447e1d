"""Writing a file a user asked for, without ever clobbering one they have or leaving half of one.

Shared by every command with an output file (``lens cluster snapshot -o``, ``lens deploy render -o``,
``lens evaluate config -o``, ``lens telemetry dashboard -o``): the payload goes to a temporary file
created exclusively (``mkstemp``: a random name, ``O_EXCL``, so a planted file or symlink is never
opened) beside the target, is synced, and is published in one step, so an interrupted write leaves
the old file (or none) behind and no temporary file; without ``replace`` a file that exists, or
appears meanwhile, is refused at the moment of publishing (a hard link fails on an existing name)
and left untouched.
"""

from __future__ import annotations

import os
import tempfile
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
