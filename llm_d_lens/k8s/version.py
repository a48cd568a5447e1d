"""Kubernetes versions: the server's from ``kubectl version -o json``, and the text form of one."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from llm_d_lens.runner import CommandOutputInvalid

KUBE_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?")


def parse_version(text: str) -> tuple[int, int, int] | None:
    """``v1.34.2-eks-113cf36`` -> (1, 34, 2); None when it is not a Kubernetes version."""
    found = KUBE_VERSION.match(text.strip())
    if not found:
        return None
    major, minor, patch = found.groups()
    return int(major), int(minor), int(patch or 0)


def format_version(version: tuple[int, int, int]) -> str:
    return ".".join(str(part) for part in version)


def server_version_of(document: Any, argv: list[str]) -> tuple[tuple[int, int, int], str]:
    """The server's version from ``kubectl version -o json``: gitVersion first, major/minor as fallback.

    Managed clusters decorate both (``v1.33.5-<provider>.1080000``, minor ``"33+"``), so only the leading
    numbers count.
    """
    server = document.get("serverVersion") if isinstance(document, Mapping) else None
    if not isinstance(server, Mapping):
        raise CommandOutputInvalid(argv, "no serverVersion: kubectl could not reach the API server")
    git_version = str(server.get("gitVersion", ""))
    parsed = parse_version(git_version)
    if parsed is None:
        major = re.match(r"\d+", str(server.get("major", "")))
        minor = re.match(r"\d+", str(server.get("minor", "")))
        if not (major and minor):
            raise CommandOutputInvalid(argv, f"serverVersion {dict(server)!r} carries no version")
        parsed = (int(major.group()), int(minor.group()), 0)
        git_version = format_version(parsed)
    return parsed, git_version
