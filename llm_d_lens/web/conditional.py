"""JSON answers encoded once, tagged, and revalidated with ``If-None-Match`` -> ``304 Not Modified``.

A document that only changes when its source does (a snapshot's inventory, the registered
profiles) is encoded once into bytes and served from them; its ``ETag`` lets a client that has it
ask "still this?" and get an empty 304 instead of megabytes. The bytes are exactly what FastAPI's
default ``JSONResponse`` writes for the same data, so caching changes no answer.

``Cache-Control: no-cache`` says what is true here: a client may keep the answer but must ask
again each time, because the snapshot file may be replaced (or a plugin installed) at any moment.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

#: keep it, but revalidate before every use (the source can change at any moment)
REVALIDATE = "no-cache"


@dataclass(frozen=True, slots=True)
class Encoded:
    body: bytes
    etag: str  # quoted, as the header carries it


def encode(document: Any, version: str | None = None) -> Encoded:
    """The document as ``JSONResponse`` renders it, tagged by its content (and ``version``, when given)."""
    body = json.dumps(document, ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":")).encode("utf-8")
    return tagged(body, version)


def tagged(body: bytes, version: str | None = None) -> Encoded:
    """Bytes already encoded as :func:`encode` writes them, tagged the same way."""
    digest = hashlib.blake2b(body, digest_size=8).hexdigest()
    return Encoded(body, f'"{version}-{digest}"' if version else f'"{digest}"')


def not_modified(if_none_match: str | None, etag: str) -> bool:
    """Whether an ``If-None-Match`` header names this tag (weak comparison, as RFC 9110 asks for it)."""
    if not if_none_match:
        return False
    if if_none_match.strip() == "*":
        return True
    wanted = _opaque(etag)
    return any(_opaque(candidate) == wanted for candidate in if_none_match.split(","))


def respond(request: Request, encoded: Encoded, *, cache_control: str = REVALIDATE) -> Response:
    """200 with the bytes, or an empty 304 when the client already holds them."""
    from starlette.responses import Response

    headers = {"ETag": encoded.etag, "Cache-Control": cache_control}
    if not_modified(request.headers.get("if-none-match"), encoded.etag):
        return Response(status_code=304, headers=headers)
    return Response(encoded.body, media_type="application/json", headers=headers)


def _opaque(tag: str) -> str:
    tag = tag.strip()
    return tag[2:] if tag.startswith("W/") else tag
