"""Replays what a read-only command printed last time, when nothing it reads has changed.

Why: ``lens hardware list`` costs more in imports (Typer, pydantic, Rich, importlib.metadata) than
in work, so no lazy import alone brings it near bare Python. A few commands are pure functions of
what is installed: ``hardware list/show/resolve`` read only the registry, and ``--help`` reads only
the code. For those (:func:`eligible`) the first run stores its exit code, stdout and stderr; a
later run whose **key** is equal prints them again without importing any of that.

The key is everything such a command reads: its arguments; Python (executable, version,
``sys.path``); the size and modification time of every code and profile file of Lens itself (so
an edit of a bundled profile or of the code, in an editable install too, invalidates); every
installed distribution on ``sys.path`` (its name and the timestamps and sizes of its
``METADATA`` and ``entry_points.txt``, so installing, upgrading or removing a plugin invalidates);
every ``LENS_*``/``LLM_D_*`` variable (plugin settings among them); and how the output would be
shaped: which streams are terminals, their size, and the variables Rich and click read (``TERM``,
``COLUMNS``, ``NO_COLOR``, locale...). The stored file repeats the whole key and is used only
when it is equal, so a hash collision, a corrupt file or one from another version is ignored
and the command simply runs.

What is not in the key, so not seen: a plugin installed in development mode whose own files are
edited without reinstalling it (the plugin-load cache in ``hardware/isolation.py`` has the same
rule; ``lens hardware doctor`` always loads afresh and is never replayed). ``LENS_RESULT_CACHE=0``
turns replaying off. Files live beside the plugin-load cache (``LENS_CACHE_DIR``, default
``$XDG_CACHE_HOME/llm-d-lens``) and are safe to delete.

Only standard-library modules that Python has already loaded at start-up (plus ``zlib``) are
imported here: this module is the whole cost of a replay.
"""

from __future__ import annotations

import json
import os
import sys
import zlib
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

FORMAT = 2  # 2: the key's parts reordered (installed() is shared with hardware/snapshot.py)
#: commands of ``lens hardware`` whose output depends only on the registry and their arguments
PURE_HARDWARE = frozenset({"list", "show", "resolve"})
HELP = frozenset({"--help", "-h"})
#: variables that change how click and Rich shape the same result (colour, width, encoding)
SHAPE_VARIABLES = ("COLUMNS", "LINES", "TERM", "COLORTERM", "NO_COLOR", "FORCE_COLOR", "CLICOLOR", "CLICOLOR_FORCE",
                   "TTY_COMPATIBLE", "TTY_INTERACTIVE", "JUPYTER_COLUMNS", "JUPYTER_LINES", "LANG", "LC_ALL",
                   "LC_CTYPE", "PYTHONIOENCODING", "PYTHONUTF8", "PYTHONWARNINGS", "XDG_CACHE_HOME")
#: stored results kept; the oldest beyond this are removed when a new one is stored (a resized
#: terminal or new arguments make a new key, and stale keys are never read again)
KEEP = 100
SETTING_PREFIXES = ("LENS_", "LLM_D_")


def enabled(env: Mapping[str, str]) -> bool:
    """Off with ``LENS_RESULT_CACHE=0``, and while shell completion asks (``_LENS_COMPLETE``)."""
    if env.get("LENS_RESULT_CACHE", "1").strip().lower() in {"0", "false", "no", "off"}:
        return False
    return not any(name.startswith("_") and name.endswith("_COMPLETE") for name in env)


def eligible(args: Sequence[str], groups: Sequence[str]) -> bool:
    """Whether ``lens ARGS`` only reads what the key covers (help texts and pure hardware commands)."""
    if not args or (len(args) == 1 and args[0] in (*HELP, "--version")):
        return True  # the root help, the version
    if args[0] in groups and (len(args) == 1 or (len(args) == 2 and args[1] in HELP)):
        return True  # one group's help
    return len(args) >= 2 and args[0] == "hardware" and args[1] in PURE_HARDWARE


def cache_dir(env: Mapping[str, str] | None = None) -> str:
    """``LENS_CACHE_DIR``, else ``$XDG_CACHE_HOME/llm-d-lens``, else ``~/.cache/llm-d-lens``."""
    env = os.environ if env is None else env
    if env.get("LENS_CACHE_DIR"):
        return env["LENS_CACHE_DIR"]
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "llm-d-lens")


def tree(root: str, *, skip_tests: bool = True) -> list[list[Any]]:
    """(relative path, mtime, size) of every code and JSON file under ``root``.

    For Lens itself tests and test data are left out: they change no command's output.
    """
    found: list[list[Any]] = []
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            name = entry.name
            if entry.is_dir(follow_symlinks=False):
                if name != "__pycache__" and not name.startswith(".") and not (skip_tests and name == "testdata"):
                    stack.append(entry.path)
            elif name.endswith((".py", ".json")) and not (skip_tests and name.startswith(("test_", "conftest"))):
                try:
                    stat = entry.stat()
                except OSError:
                    continue
                found.append([os.path.relpath(entry.path, root), stat.st_mtime_ns, stat.st_size])
    return found


#: the entry-point groups whose plugins feed the registry
PLUGIN_GROUPS = ("llm_d_lens.hardware.profiles", "llm_d_lens.hardware.providers")


def _plugin_modules(entry_points_txt: str) -> list[str]:
    """Top-level modules that a distribution's Lens entry points name (``pkg.mod:attr`` gives ``pkg``)."""
    modules: list[str] = []
    section = ""
    for line in entry_points_txt.splitlines():
        line = line.strip()
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip()
        elif section in PLUGIN_GROUPS and "=" in line:
            top = line.partition("=")[2].strip().partition(":")[0].strip().partition(".")[0]
            if top and top not in modules:
                modules.append(top)
    return modules


def module_files(top: str, path: Sequence[str]) -> list[list[Any]]:
    """(path, mtime, size) of a plugin's own code and data where it is imported from, if it sits on ``path``.

    Covers plugins run from a folder (``PYTHONPATH``, ``pip install -e`` with a path entry): editing
    their profile JSON changes no installed metadata, only these stamps.
    """
    for entry_dir in path:
        folder = os.path.join(entry_dir or ".", top)
        if os.path.isdir(folder):
            return [[folder, *stamp] for stamp in tree(folder, skip_tests=False)]
        single = folder + ".py"
        try:
            stat = os.stat(single)
        except OSError:
            continue
        return [[single, "", stat.st_mtime_ns, stat.st_size]]
    return []


def distributions(path: Sequence[str]) -> list[list[Any]]:
    """Every installed distribution on ``path``, by folder name and metadata stamps (what pip changes),
    with the files of the Lens plugins it declares."""
    found: list[list[Any]] = []
    for entry_dir in path:
        try:
            entries = sorted(os.scandir(entry_dir or "."), key=lambda e: e.name)
        except OSError:  # a zip file or a missing folder: recorded as is, by the path list
            continue
        for entry in entries:
            if not entry.name.endswith((".dist-info", ".egg-info")):
                continue
            stamps: list[Any] = [entry_dir, entry.name]
            for meta in ("METADATA", "PKG-INFO", "entry_points.txt", "RECORD"):
                try:
                    stat = os.stat(os.path.join(entry.path, meta))
                    stamps += [stat.st_mtime_ns, stat.st_size]
                except OSError:
                    stamps += [None, None]
            try:
                with open(os.path.join(entry.path, "entry_points.txt"), encoding="utf-8", errors="replace") as handle:
                    declared = _plugin_modules(handle.read())
            except OSError:
                declared = []
            for top in declared:
                if top != "llm_d_lens":  # Lens's own files are keyed by :func:`tree`
                    stamps.append(module_files(top, path))
            found.append(stamps)
    return found


def _shape(env: Mapping[str, str]) -> list[Any]:
    shape: list[Any] = []
    for fd in (0, 1, 2):
        try:
            tty = os.isatty(fd)
            size = list(os.get_terminal_size(fd)) if tty else None
        except OSError:
            tty, size = False, None
        shape.append([tty, size])
    shape.append({name: env[name] for name in SHAPE_VARIABLES if name in env})
    return shape


def key(args: Sequence[str], env: Mapping[str, str]) -> str:
    """Everything an eligible command's output depends on, as one JSON text."""
    return json.dumps([FORMAT, list(args), _shape(env), *installed(env)], separators=(",", ":"), default=str)


_files: list[Any] | None = None


def installed(env: Mapping[str, str], *, ignore: Sequence[str] = ()) -> list[Any]:
    """What is installed and set, which every eligible command reads besides its arguments and the terminal.

    Lens's version, Python, ``sys.path``, the ``LENS_*``/``LLM_D_*`` settings (but those named in
    ``ignore``), and the stamps of Lens's files and of every distribution; those stamps, the costly
    part, are read once per process (the replay and the registry snapshot share them).
    """
    global _files
    from llm_d_lens import __version__

    if _files is None:
        package = os.path.dirname(os.path.abspath(__file__))
        _files = [tree(package), distributions(sys.path)]
    settings = {name: value for name, value in env.items() if name.startswith(SETTING_PREFIXES) and name not in ignore}
    cwd = os.getcwd() if "" in sys.path else None  # "" is the working directory, so what sits there counts
    return [__version__, sys.executable, sys.version, list(sys.path), sys.warnoptions, cwd, settings, *_files]


def _path(text: str, env: Mapping[str, str], prefix: str = "result") -> str:
    digest = f"{zlib.crc32(text.encode()):08x}{zlib.adler32(text.encode()):08x}"
    return os.path.join(cache_dir(env), f"{prefix}-{digest}.json")


def replay(text: str, env: Mapping[str, str], stdout: TextIO, stderr: TextIO) -> int | None:
    """Print the stored result for key ``text`` and return its exit code; None when there is none."""
    try:
        with open(_path(text, env), encoding="utf-8") as handle:
            stored = json.load(handle)
        if not isinstance(stored, dict) or stored.get("key") != text:
            return None
        out, err, code = stored["stdout"], stored["stderr"], stored["code"]
        if not (isinstance(out, str) and isinstance(err, str) and type(code) is int):
            return None
    except (OSError, ValueError, KeyError, TypeError, RecursionError):  # absent, corrupt, or another shape
        return None
    stdout.write(out)
    stdout.flush()
    stderr.write(err)
    stderr.flush()
    return code


def store(text: str, env: Mapping[str, str], stdout: str, stderr: str, code: int) -> None:
    """Best effort: a read-only or full disk only means the next run is not replayed."""
    write_keyed(_path(text, env), {"key": text, "stdout": stdout, "stderr": stderr, "code": code}, "result", KEEP)


def write_keyed(path: str, document: dict[str, Any], prefix: str, keep: int) -> None:
    """Write ``document`` to ``path`` whole or not at all, then keep only the newest ``keep`` ``PREFIX-*.json``.

    Best effort (the replay and ``hardware/snapshot.py`` share it): a failure leaves the cache as it was.
    """
    import tempfile

    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=f".{prefix}-")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(document, handle)
        os.replace(tmp, path)
        _prune(os.path.dirname(path), prefix, keep)
    except (OSError, TypeError, ValueError):
        pass


def _prune(folder: str, prefix: str, keep: int) -> None:
    """Only the ``PREFIX-*.json`` files, oldest first, beyond ``keep``."""
    results = []
    for entry in os.scandir(folder):
        if entry.name.startswith(f"{prefix}-") and entry.name.endswith(".json"):
            try:
                results.append((entry.stat().st_mtime_ns, entry.path))
            except OSError:
                continue
    for _, stale in sorted(results)[:-keep] if len(results) > keep else []:
        try:
            os.unlink(stale)
        except OSError:
            pass


def content_sums(root: str, relative_paths: Sequence[str]) -> dict[str, int] | None:
    """crc32 of each file's bytes (paths relative to ``root``); None when one cannot be read.

    For what ships with Lens (``help_snapshot.py``, ``hardware/snapshot.py``): by content, since an
    installed copy has other modification times than the checkout that recorded it.
    """
    sums = {}
    for rel in relative_paths:
        try:
            with open(os.path.join(root, rel), "rb") as handle:
                sums[rel] = zlib.crc32(handle.read())
        except OSError:
            return None
    return sums


def write_or_print(path: str, document: dict[str, Any], argv: Sequence[str]) -> int:
    """A recorder's command line: ``--write`` replaces ``path``; without it, print what would be written."""
    text = json.dumps(document, indent=1) + "\n"  # key order kept: it is the order commands print
    if list(argv) == ["--write"]:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
    else:
        sys.stdout.write(text)
    return 0


class Recorder:
    """Stands in for ``sys.stdout``/``sys.stderr``: passes every write on and keeps a copy.

    Anything that writes around it (through ``.buffer``) makes the copy incomplete, so it is
    marked and the result is not stored.
    """

    def __init__(self, real: TextIO):
        self._real = real
        self.parts: list[str] = []
        self.bypassed = False

    def write(self, text: str) -> int:
        written = self._real.write(text)  # first: click probes with ``write(b"")``, which a text stream refuses
        self.parts.append(text)
        return written

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def text(self) -> str:
        return "".join(self.parts)

    def __getattr__(self, name: str) -> Any:
        if name == "buffer":
            self.bypassed = True
        return getattr(self._real, name)
