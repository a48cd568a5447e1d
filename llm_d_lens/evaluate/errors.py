"""Errors of the evaluate domain, each with a stable code the CLI and API render once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from llm_d_lens.errors import LensError


@dataclass(frozen=True)
class Issue:
    """One problem in one workload profile: a dotted field path and what is wrong there."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "message": self.message}


class WorkloadProfileInvalid(LensError):
    """A workload profile that fails validation; every problem is listed, not just the first."""

    code = "WORKLOAD_PROFILE_INVALID"
    http_status = 422

    def __init__(self, name: str, source: str, issues: list[Issue]):
        self.name, self.source, self.issues = name, source, issues
        count = f"{len(issues)} problem{'s' if len(issues) != 1 else ''}"
        lines = [f"workload profile {name!r} ({source}): {count}", *(f"  {issue}" for issue in issues)]
        super().__init__("\n".join(lines), details={"profile": name, "source": source,
                                                    "issues": [i.to_dict() for i in issues]})


class WorkloadProfileNotFound(LensError):
    code = "WORKLOAD_PROFILE_NOT_FOUND"
    http_status = 404

    def __init__(self, name: str, found: list[str], searched: list[str]):
        self.name, self.found = name, found
        names = ", ".join(found) if found else "none"
        super().__init__(
            f"no workload profile named {name!r}; profiles found: {names} (searched: {', '.join(searched)})",
            details={"name": name, "found": found, "searched": searched},
        )


class ProfileDirMissing(LensError):
    code = "PROFILE_DIR_MISSING"
    http_status = 400


class BenchmarkUnsupported(LensError):
    """The hardware or access mode has nothing llm-d-benchmark can be told about it."""

    code = "BENCHMARK_PROFILE_MISSING"
    http_status = 422


class AccessModeUnknown(LensError):
    code = "ACCESS_MODE_UNKNOWN"
    http_status = 422


class HardwareNotInferred(LensError):
    """A rendered manifest whose hardware could not be told; Lens never guesses a default."""

    code = "HARDWARE_NOT_INFERRED"
    http_status = 422

    def __init__(self, message: str, evidence: list[dict[str, Any]] | None = None):
        super().__init__(message, details={"evidence": evidence or []})


class ManifestInvalid(LensError):
    code = "MANIFEST_INVALID"
    http_status = 422


class OutputExists(LensError):
    code = "OUTPUT_EXISTS"
    http_status = 409


class OutputUnwritable(LensError):
    code = "OUTPUT_UNWRITABLE"
    http_status = 409
