"""Rendered pages kept as bytes, tagged, pre-compressed, and revalidated with ``If-None-Match``.

A page built from an unchanged inventory, registry and configuration is the same page: it is
rendered once, its ETag is its content's hash, its gzip is made once, and every later request is
answered from those bytes (or with an empty 304). The key names everything the page shows, so a
changed input is a new entry, never a stale page; each store is bounded.
"""

from __future__ import annotations

import gzip
import hashlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from llm_d_lens.web.conditional import REVALIDATE, not_modified

#: entries per store (one store per inventory view, plus one for pages without an inventory)
KEEP = 64
#: a page smaller than this is sent as it is (GZipMiddleware's own floor in api/app.py is the same)
GZIP_MINIMUM = 500
HTML = "text/html; charset=utf-8"


@dataclass(frozen=True, slots=True)
class Rendered:
    body: bytes
    gzipped: bytes | None
    etag: str
    status: int


def rendered(text: str, status: int = 200) -> Rendered:
    body = text.encode("utf-8")
    packed = gzip.compress(body, compresslevel=6, mtime=0) if len(body) >= GZIP_MINIMUM else None
    return Rendered(body, packed if packed is not None and len(packed) < len(body) else None,
                    f'"{hashlib.blake2b(body, digest_size=8).hexdigest()}"', status)


_lock = threading.Lock()


def kept(store: dict[Any, Rendered], key: Any, render: Callable[[], Rendered]) -> Rendered:
    """The store's page for ``key``, rendered on first use; the oldest entry goes beyond :data:`KEEP`."""
    found = store.get(key)
    if found is not None:
        return found
    page = render()
    with _lock:
        store[key] = page
        while len(store) > KEEP:
            store.pop(next(iter(store)))
    return page


def respond(request: Request, page: Rendered) -> Response:
    """The page, gzipped when the client takes gzip, or an empty 304 when it already holds it."""
    return answer(page, request.headers.get("if-none-match"), request.headers.get("accept-encoding", ""))


def answer(page: Rendered, if_none_match: str | None, accept_encoding: str) -> Response:
    """:func:`respond` from the two request headers it reads (console/front.py has no Request to hand)."""
    headers = {"ETag": page.etag, "Cache-Control": REVALIDATE, "Vary": "Accept-Encoding"}
    if page.status == 200 and not_modified(if_none_match, page.etag):
        return Response(status_code=304, headers=headers)
    if page.gzipped is not None and "gzip" in accept_encoding:
        headers["Content-Encoding"] = "gzip"
        return Response(page.gzipped, status_code=page.status, media_type=HTML, headers=headers)
    return Response(page.body, status_code=page.status, media_type=HTML, headers=headers)
