"""The llm-d source overlays are read from: a local checkout, optionally at a git revision.

A revision is read with git alone (no network): its tree is archived into a private temporary
directory that is removed afterwards, so the user's checkout, index and working tree are never
touched. Every name that becomes part of a path is checked here first, so a guide, model server
or overlay name can never lead outside the source.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import msgspec

from llm_d_lens import settings
from llm_d_lens.deploy.errors import SourceInvalid, SourceNotFound, UnsafeName
from llm_d_lens.runner import CommandFailed, Runner

#: Environment variable naming the llm-d checkout when no path is given (``LENS_*`` like every other).
ROOT_ENV = "LENS_LLM_D_ROOT"
#: The older name, still accepted; ROOT_ENV wins when both are set.
LEGACY_ROOT_ENV = "LLM_D_ROOT"


class LlmdSource(msgspec.Struct, frozen=True):
    """A directory holding an llm-d tree, and what the user named to get it."""

    root: Path  # resolved directory that is read (the checkout, or a private copy of a revision)
    origin: str  # the checkout as the user named it
    revision: str | None = None
    commit: str | None = None

    def describe(self) -> str:
        if self.revision is None:
            return self.origin
        return f"{self.origin} at {self.revision} (commit {self.commit[:12] if self.commit else '?'})"

    def display(self, path: Path | str) -> str:
        """A path as the user should read it: relative to the source, never the private copy."""
        text = str(path)
        root = str(self.root)
        if text == root:
            return "."
        if text.startswith(root + os.sep):
            return text[len(root) + 1:]
        return text

    def to_dict(self) -> dict[str, str | None]:
        return {"root": self.origin, "revision": self.revision, "commit": self.commit}


def check_name(what: str, value: str, *, nested: bool = False) -> str:
    """``value`` if it names a directory (or, when ``nested``, a relative path) inside the source."""
    if not value or value.strip() != value:
        raise UnsafeName(what, value, "it is empty or has surrounding spaces")
    if "\0" in value or "\\" in value:
        raise UnsafeName(what, value, "it contains a NUL or a backslash")
    if any(c in value for c in "*{}"):
        raise UnsafeName(what, value, "it contains *, { or }, which overlay_root templates reserve")
    if value.startswith("/"):
        raise UnsafeName(what, value, "it is an absolute path")
    parts = value.split("/")
    if not nested and len(parts) > 1:
        raise UnsafeName(what, value, "it must be a single directory name")
    for part in parts:
        if part in ("", ".", ".."):
            raise UnsafeName(what, value, "it must not contain '..', '.' or empty path segments")
    return value


def resolve_root(root: str | os.PathLike[str] | None, env: Mapping[str, str] | None = None) -> Path:
    """The checkout named by ``root``, ``$LENS_LLM_D_ROOT`` or ``$LLM_D_ROOT``; an error naming what to fix."""
    env = os.environ if env is None else env
    given, origin = (os.fspath(root), "--llm-d-root") if root is not None else (None, "")
    for name in (ROOT_ENV, LEGACY_ROOT_ENV):
        if given is None and settings.text(name, env):
            given, origin = settings.text(name, env), name
    if given is None:
        raise SourceNotFound(f"no llm-d source: pass --llm-d-root or set {ROOT_ENV} (or {LEGACY_ROOT_ENV}) "
                             f"to an llm-d checkout")
    path = Path(given).expanduser()
    if not path.is_dir():
        raise SourceNotFound(f"llm-d source {given} (from {origin}) is not a directory; point {origin} at an llm-d checkout",
                             details={"root": given, "from": origin})
    return path.resolve()


@contextmanager
def open_source(
    root: str | os.PathLike[str] | None,
    revision: str | None = None,
    *,
    runner: Runner | None = None,
    env: Mapping[str, str] | None = None,
) -> Iterator[LlmdSource]:
    """The source to read; for a revision, a private copy that disappears when the block ends."""
    directory = resolve_root(root, env)
    origin = os.fspath(root) if root is not None else str(directory)
    if revision is None:
        yield LlmdSource(directory, origin)
        return
    if runner is None:
        from llm_d_lens.runner import CommandRunner

        runner = CommandRunner()
    commit, prefix, top = _commit_of(runner, directory, revision, origin)
    import tarfile  # only a render at a --revision unpacks an archive
    import tempfile

    with tempfile.TemporaryDirectory(prefix="lens-llm-d-") as scratch:
        tree = Path(scratch) / "tree"
        tree.mkdir()
        archive = Path(scratch) / "source.tar"
        treeish = f"{commit}:{prefix}" if prefix else commit
        _git(runner, top, ["archive", "--format=tar", f"--output={archive}", treeish], origin, revision)
        try:
            with tarfile.open(archive) as handle:
                handle.extractall(tree, filter="data")
        except tarfile.FilterError as exc:  # a link or path in the revision that points outside its tree
            raise SourceInvalid(f"revision {revision!r} of llm-d source {origin} holds an unsafe entry: {exc}",
                                details={"root": origin, "revision": revision}) from None
        archive.unlink()
        yield LlmdSource(tree.resolve(), origin, revision, commit)


def _commit_of(runner: Runner, directory: Path, revision: str, origin: str) -> tuple[str, str, Path]:
    """The commit a revision names, the checkout's path inside its repository, and the repository top."""
    if revision.startswith("-") or not revision.strip():
        raise SourceInvalid(f"revision {revision!r} is not a git revision", details={"revision": revision})
    top = Path(_git(runner, directory, ["rev-parse", "--show-toplevel"], origin, revision).strip())
    prefix = _git(runner, directory, ["rev-parse", "--show-prefix"], origin, revision).strip()
    commit = _resolve(runner, directory, revision)
    if commit is None:
        # a fresh clone has origin/main but no local main: a branch name is found on the remotes too
        remote = sorted(r for r in _lines(_git(runner, directory, ["for-each-ref", "--format=%(refname:short)",
                                                                   f"refs/remotes/*/{revision}"], origin, revision))
                        if not r.endswith("/HEAD"))
        preferred = [r for r in remote if r == f"origin/{revision}"] or remote
        if len(preferred) > 1:
            raise SourceInvalid(f"revision {revision!r} of llm-d source {origin} is a branch of several remotes "
                                f"({', '.join(preferred)}); name one, e.g. --revision {preferred[0]}",
                                details={"root": origin, "revision": revision, "candidates": preferred})
        commit = _resolve(runner, directory, preferred[0]) if preferred else None
    if commit is None:
        shallow = _git(runner, directory, ["rev-parse", "--is-shallow-repository"], origin, revision).strip() == "true"
        hint = (f"; {origin} is a shallow clone, which may lack it: `git -C {origin} fetch --unshallow` "
                f"(or `git fetch origin {revision}`) brings it") if shallow else ""
        raise SourceInvalid(f"cannot read revision {revision!r} of llm-d source {origin}: no commit named "
                            f"{revision!r} in {origin}{hint}", details={"root": origin, "revision": revision,
                                                                       "shallow": shallow})
    return commit, prefix, top


def _resolve(runner: Runner, directory: Path, revision: str) -> str | None:
    """The commit ``revision`` names in the repository, or None."""
    argv = ["git", "-C", str(directory), "rev-parse", "--verify", "--quiet", "--end-of-options", f"{revision}^{{commit}}"]
    try:
        return runner.run(argv).stdout.strip() or None
    except CommandFailed:
        return None


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def _git(runner: Runner, directory: Path, args: list[str], origin: str, revision: str, *, unknown: str | None = None) -> str:
    try:
        return runner.run(["git", "-C", str(directory), *args]).stdout
    except CommandFailed as exc:
        reason = exc.stderr.strip() or unknown or f"git exited with code {exc.returncode}"
        raise SourceInvalid(
            f"cannot read revision {revision!r} of llm-d source {origin}: {reason}",
            details={"root": origin, "revision": revision},
        ) from None
