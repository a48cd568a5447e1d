"""Response headers that keep the console's untrusted text inert and every request on this origin.

Profiles are written by plugins, so the pages escape everything they show; the Content-Security-
Policy is the second wall: scripts, styles, images and connections only from this server, no inline
script, no framing. Swagger UI and ReDoc need inline styles (and ReDoc a blob: worker) and get
exactly that much more.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

CONSOLE_POLICY = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                  "connect-src 'self'; font-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
DOCS_POLICY = ("default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
               "connect-src 'self'; font-src 'self'; worker-src 'self' blob:; base-uri 'none'; frame-ancestors 'none'")
DOCS_PATHS = ("/docs", "/redoc")


def _headers(policy: str) -> list[tuple[bytes, bytes]]:
    return [(b"content-security-policy", policy.encode()), (b"x-content-type-options", b"nosniff"),
            (b"referrer-policy", b"no-referrer"), (b"x-frame-options", b"DENY")]


#: encoded once: every response of the server carries one of these
_CONSOLE_HEADERS, _DOCS_HEADERS = _headers(CONSOLE_POLICY), _headers(DOCS_POLICY)


class SecurityHeaders:
    """Adds the policy and its companions to every response (API answers included: they are harmless there)."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        extra = _DOCS_HEADERS if scope.get("path", "").startswith(DOCS_PATHS) else _CONSOLE_HEADERS

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", ()), *extra]
            await send(message)

        await self.app(scope, receive, with_headers)
