"""Settled console pages answered before routing: the kept bytes, with no framework work in between.

A settled page (see :func:`llm_d_lens.console.router.settled`) is one whose every input is kept
already or follows from the server's settings; its bytes are kept in its inventory view's store
under a key naming those inputs. The route renders and keeps it the first time; from then on this
middleware finds it by the same key and answers it (ETag, 304, gzip as :mod:`.pages` does) without
FastAPI's routing, dependency solving and the API's body middlewares, which cost a kept page
several times what finding it does. Anything else (another path, a page not kept, an unsettled
one) goes on to the application unchanged.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

#: the pages a browser asks for most, served settled when they are
PREFIXES = ("/accelerators/",)


class SettledPages:
    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "GET":
            path = scope["path"]
            if path == "/" or path.startswith(PREFIXES):
                page = _kept(path, scope.get("query_string", b"").decode("latin-1"))
                if page is not None:
                    from llm_d_lens.console.pages import answer

                    headers = _headers(scope)
                    await answer(page, headers.get(b"if-none-match", b"").decode("latin-1") or None,
                                 headers.get(b"accept-encoding", b"").decode("latin-1"))(scope, receive, send)
                    return
        await self.app(scope, receive, send)


def _kept(path: str, query: str):  # type: ignore[no-untyped-def]
    from llm_d_lens.console.router import settled

    place = settled(path, query)
    return place[0].get(place[1]) if place is not None else None


def _headers(scope: Scope) -> dict[bytes, bytes]:
    return {name: value for name, value in scope.get("headers", ()) if name in (b"if-none-match", b"accept-encoding")}
