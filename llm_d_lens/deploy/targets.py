"""Which overlays upstream deploys, and which it only builds others on (building blocks).

"Another overlay includes it" alone does not make a building block: llm-d documents some bases as
deploy targets (a guide README's ``export INFRA_PROVIDER=base # base | <provider>``). The rule, applied
only to an overlay that another overlay of the same guide lists in ``resources``, is:

* the guide's Markdown documents ``kubectl apply -k`` paths under the guide and none of them
  reaches this overlay, or
* it renames nothing (no ``namePrefix``/``nameSuffix`` anywhere in its chain) while every overlay
  built on it does: its objects keep the recipe's bare names (``decode``), so it is not meant to
  be applied itself.

An overlay nothing builds on is a target. At render time one more sign is checked on the real
output (see :func:`placeholder_images`): a building block often keeps the recipe's placeholder
image (``REPLACE_MODEL_SERVER_IMAGE``) that the overlays above fill.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import msgspec

from llm_d_lens.deploy.discovery import Overlay
from llm_d_lens.deploy.kustomization import KustomizationReader
from llm_d_lens.deploy.source import LlmdSource
from llm_d_lens.deploy.workloads import all_pod_templates, is_placeholder_image

_APPLY_K = re.compile(r"(?:^|\s)-k\s+[\"']?([^\s\"'`)]+)")
_EXPORT = re.compile(r"^\s*export\s+([A-Z_][A-Z0-9_]*)=[\"']?([^\s\"'#]*)[\"']?\s*(?:#\s*(.*))?$")
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")
_LISTED = re.compile(r"`(modelserver/[^`\s]+)`")
_OPTION = re.compile(r"[a-z0-9][a-z0-9._/-]*")
#: How deep below the guide directory Markdown files are read (``modelserver/<variant>/<server>/README.md``).
MAX_DOC_DEPTH = 4


class Role(msgspec.Struct, frozen=True):
    """Whether an overlay is a deploy target, and why not when it is not."""

    building_block: bool
    reason: str = ""
    used_by: tuple[str, ...] = ()  # overlay names built on it


# -- what the guide's documentation deploys ---------------------------------------------------


def documented_patterns(source: LlmdSource, guide: str) -> tuple[re.Pattern[str], ...]:
    """Regexes of the paths the guide's Markdown applies with ``kubectl ... -k`` or lists as `` `modelserver/...` ``.

    Variables become the values the file exports for them, with the options its comment lists
    (``export INFRA_PROVIDER=base # base | <provider>``); a variable it does not export matches any path.
    """
    root = str(source.root)
    guide_dir = os.path.join(root, "guides", *guide.split("/"))
    patterns: list[re.Pattern[str]] = []
    for path in _markdown_files(guide_dir):
        try:
            text = Path(path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        options = _exports(text)
        here = os.path.relpath(os.path.dirname(path), root).replace(os.sep, "/")
        raws = [raw for line in text.splitlines() if "kubectl" in line for raw in _APPLY_K.findall(line)]
        raws += _LISTED.findall(text)
        for raw in raws:
            relative = _relative(raw.rstrip("/"), here)
            if relative is not None:
                patterns.append(re.compile(_as_regex(relative, options)))
    return tuple(dict.fromkeys(patterns))


def _markdown_files(top: str) -> Iterable[str]:
    base_depth = top.rstrip(os.sep).count(os.sep)
    for directory, dirs, files in os.walk(top):
        if directory.count(os.sep) - base_depth >= MAX_DOC_DEPTH:
            dirs[:] = []
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        yield from (os.path.join(directory, f) for f in sorted(files) if f.lower().endswith(".md"))


def _exports(text: str) -> dict[str, set[str]]:
    """Each exported variable's values: the one set and the options its comment lists (``# base | <provider>``)."""
    found: dict[str, set[str]] = {}
    for line in text.splitlines():
        matched = _EXPORT.match(line)
        if matched is None:
            continue
        name, value, comment = matched.groups()
        values = found.setdefault(name, set())
        if value and "$" not in value:
            values.add(value)
        if comment:
            values.update(_OPTION.findall(comment.replace("options:", " ")))
    return found


def _relative(raw: str, here: str) -> str | None:
    """A ``-k`` argument as a path relative to the source root (``${REPO_ROOT}/guides/...`` or relative to the file)."""
    for root_variable in ("${REPO_ROOT}/", "$REPO_ROOT/"):
        if raw.startswith(root_variable):
            return raw[len(root_variable):]
    if raw.startswith(("/", "$", "http")) or "://" in raw:
        return None
    if raw.startswith("guides/"):  # run from the top of the checkout
        return os.path.normpath(raw).replace(os.sep, "/")
    return os.path.normpath(os.path.join(here, raw)).replace(os.sep, "/")


def _as_regex(path: str, options: Mapping[str, set[str]]) -> str:
    parts, end = [], 0
    for matched in _VARIABLE.finditer(path):
        parts.append(re.escape(path[end:matched.start()]))
        values = sorted(options.get(matched.group(1) or matched.group(2), ()))
        parts.append("(?:" + "|".join(re.escape(v) for v in values) + ")" if values else "[^/]+(?:/[^/]+)*")
        end = matched.end()
    parts.append(re.escape(path[end:]))
    return "".join(parts) + "/?"


# -- the rule ---------------------------------------------------------------------------------


def roles(source: LlmdSource, overlays: list[Overlay], reader: KustomizationReader) -> dict[str, Role]:
    """Overlay path -> its role, for overlays of one source (the users of a base are looked for among them)."""
    by_directory = {os.path.normpath(o.directory): o for o in overlays}
    users: dict[str, list[Overlay]] = {}
    for overlay in overlays:
        for base in reader.bases(overlay.directory):
            used = by_directory.get(os.path.normpath(base))
            if used is not None and used.guide == overlay.guide:
                users.setdefault(used.path, []).append(overlay)
    documented: dict[str, tuple[re.Pattern[str], ...] | None] = {}
    result: dict[str, Role] = {}
    for overlay in overlays:
        built_on = users.get(overlay.path, [])
        if not built_on:
            result[overlay.path] = Role(False)
            continue
        if overlay.guide not in documented:
            patterns = documented_patterns(source, overlay.guide)
            in_guide = [o.path for o in overlays if o.guide == overlay.guide]
            # documentation that applies none of the guide's overlays says nothing about them
            documented[overlay.guide] = patterns if any(p.fullmatch(x) for p in patterns for x in in_guide) else None
        result[overlay.path] = _role(overlay, built_on, documented[overlay.guide], reader)
    return result


def _role(overlay: Overlay, users: list[Overlay], patterns: tuple[re.Pattern[str], ...] | None,
          reader: KustomizationReader) -> Role:
    names = tuple(sorted(u.name for u in users))
    if patterns is not None:
        if any(p.fullmatch(overlay.path) for p in patterns):
            return Role(False, used_by=names)
        return Role(True, f"a base for {', '.join(names)}; the guide's README applies other overlays, not this one", names)
    if not reader.renames(overlay.directory) and all(reader.renames(u.directory) for u in users):
        return Role(True, f"a base for {', '.join(names)}: it sets no name prefix, every overlay built on it does", names)
    return Role(False, used_by=names)


def placeholder_images(objects: list[dict[str, Any]]) -> list[str]:
    """Container images of the rendered pods that are recipe placeholders (``REPLACE_MODEL_SERVER_IMAGE``)."""
    found = []
    for pod in all_pod_templates(objects):
        for container in [*pod.containers(), *(c for c in pod.spec.get("initContainers") or [] if isinstance(c, dict))]:
            image = container.get("image")
            if isinstance(image, str) and is_placeholder_image(image):
                found.append(image)
    return sorted(set(found))
