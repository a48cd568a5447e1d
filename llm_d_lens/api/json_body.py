"""Refuse a JSON request body that gives one key twice, or that is nested too deeply to read.

Python's ``json`` (and so FastAPI) keeps the last value of a repeated key without a word; in
``{"dry_run": true, "dry_run": false}`` the caller cannot have meant both, and the one kept would
change the cluster. Its parser also recurses, so a body of 100,000 nested arrays raised
RecursionError (a 500). This ASGI middleware reads the body once, answers 422 naming the path,
and otherwise hands the very same bytes on.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from llm_d_lens.api.problems import invalid_request


class _Pairs(list):  # type: ignore[type-arg]
    """A JSON object as its (key, value) pairs, in order, repeats kept."""


def body_error(body: bytes) -> dict[str, str] | None:
    """What makes a JSON body unusable though it parses (a ``{"path", "message"}``); None if nothing."""
    try:
        document = json.loads(body, object_pairs_hook=_Pairs)
    except RecursionError:
        return {"path": "body", "message": "is nested too deeply to read"}
    except ValueError:
        return None  # FastAPI reports what is wrong with it
    path = repeated_key(document)
    return None if path is None else {"path": path, "message": "appears twice; only one value can be meant"}


def repeated_key(document: Any) -> str | None:
    """The dotted path (``body.outer.key``) of the first key an object of ``document`` repeats."""
    stack: list[tuple[str, Any]] = [("body", document)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, _Pairs):
            keys: set[str] = set()
            for key, item in value:
                if key in keys:
                    return f"{path}.{key}"
                keys.add(key)
            stack.extend((f"{path}.{key}", item) for key, item in reversed(value))
        elif isinstance(value, list):
            stack.extend((f"{path}.{index}", item) for index, item in reversed(list(enumerate(value))))
    return None


def _is_json(scope: Scope) -> bool:
    for name, value in scope.get("headers", []):
        if name == b"content-type":
            media_type = value.split(b";")[0].strip().lower()
            return media_type == b"application/json" or media_type.endswith(b"+json")
    return False


class RepeatedKeyGuard:
    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not _is_json(scope):
            await self.app(scope, receive, send)
            return
        messages: list[Message] = []
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request" or not message.get("more_body", False):
                break
        error = body_error(b"".join(m.get("body", b"") for m in messages if m["type"] == "http.request"))
        if error is not None:
            await invalid_request([error])(scope, receive, send)
            return
        pending = iter(messages)

        async def replay() -> Message:
            return next(pending, None) or await receive()

        await self.app(scope, replay, send)
