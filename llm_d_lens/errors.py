"""Errors Lens reports to a user.

Every error a user can meet is a :class:`LensError` with a stable ``code``. Domains raise them;
the edges (CLI, API) render them once, as a message with a non-zero exit code or as
``application/problem+json``, never as a traceback.
"""

from __future__ import annotations

from typing import Any


class LensError(Exception):
    """Base for every error Lens shows to a user."""

    code: str = "LENS_ERROR"
    #: HTTP status the API answers with when this error reaches it.
    http_status: int = 400

    def __init__(self, message: str, *, code: str | None = None, details: dict[str, Any] | None = None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.details: dict[str, Any] = details or {}

    def __str__(self) -> str:
        return self.message

    def to_problem(self) -> dict[str, Any]:
        """The RFC 9457 problem document the API returns for this error."""
        problem: dict[str, Any] = {
            "type": f"urn:llm-d-lens:error:{self.code}",
            "title": self.code,
            "status": self.http_status,
            "detail": self.message,
            "code": self.code,
        }
        if self.details:
            problem["details"] = self.details
        return problem


class ServerNotConfigured(LensError):
    """The API server lacks a setting it needs: the operator's to fix, not the caller's."""

    code = "SERVER_NOT_CONFIGURED"
    http_status = 503
