"""Refuse a request body over a size limit before anything reads it (413 problem+json).

Without it, a 200 MB body to the unauthenticated ``/api/v1/evaluate/config`` took the server to
1 GB and never answered: FastAPI reads and parses the whole body before any field is checked.
Every body Lens's API takes is a handful of fields, so the default, 1 MiB, is far above any
real request; an operator can raise it with ``LENS_API_MAX_BODY_BYTES``. A declared
``Content-Length`` over the limit is refused at once, a streamed body as soon as it passes it.
"""

from __future__ import annotations


from starlette.types import ASGIApp, Message, Receive, Scope, Send

from llm_d_lens import settings
from llm_d_lens.api.problems import problem
from llm_d_lens.errors import ServerNotConfigured

#: bytes a request body may have unless LENS_API_MAX_BODY_BYTES says otherwise
DEFAULT_MAX_BODY_BYTES = 1024 * 1024
ENV = "LENS_API_MAX_BODY_BYTES"


def max_body_bytes() -> int:
    """The configured limit; a setting that is no positive whole number is the operator's to fix."""
    raw = settings.text(ENV)
    if raw is None:
        return DEFAULT_MAX_BODY_BYTES
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 15 or int(raw) == 0:
        raise ServerNotConfigured(f"{ENV}={raw[:40]!r} is not a positive number of bytes", details={"setting": ENV})
    return int(raw)


#: protocol versions whose requests without Content-Length or Transfer-Encoding carry no body
_NO_BODY_UNLESS_FRAMED = frozenset({"1.0", "1.1"})


def _too_large(limit: int) -> ASGIApp:
    return problem(413, "REQUEST_TOO_LARGE", f"the request body is over {limit} bytes, the server's limit ({ENV})",
                   limit=limit)


class BodyLimit:
    """ASGI middleware: the body is read here, up to ``limit`` bytes, and handed on unchanged."""

    def __init__(self, app: ASGIApp, limit: int | None = None):
        self.app = app
        self.limit = max_body_bytes() if limit is None else limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        framed = False  # whether the request says it has a body (Content-Length or Transfer-Encoding)
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                framed = True
                declared = value.strip()
                if not declared.isdigit():
                    await problem(400, "REQUEST_INVALID", "the Content-Length header is not a number")(scope, receive, send)
                    return
                if len(declared) > 15 or int(declared) > self.limit:
                    await _too_large(self.limit)(scope, receive, send)
                    return
            elif name == b"transfer-encoding":
                framed = True
        if not framed and scope.get("http_version") in _NO_BODY_UNLESS_FRAMED:
            # HTTP/1.x: a request with neither header has no body (RFC 9112, 6.3); nothing to count
            await self.app(scope, receive, send)
            return
        messages: list[Message] = []
        size = 0
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break
            size += len(message.get("body", b""))
            if size > self.limit:
                await _too_large(self.limit)(scope, receive, send)
                return
            if not message.get("more_body", False):
                break
        pending = iter(messages)

        async def replay() -> Message:
            return next(pending, None) or await receive()

        await self.app(scope, replay, send)
