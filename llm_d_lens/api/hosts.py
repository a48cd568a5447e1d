"""Trusted hosts: a request naming any other ``Host`` is refused before routing (DNS rebinding).

A page on a site the user visits can make its own name resolve to 127.0.0.1 and then read
``http://evil.example:8080/`` from the browser: the same origin for the browser, Lens's console
and API for the socket. Only the ``Host`` header gives it away, so :class:`TrustedHosts` answers
400 ``HOST_NOT_ALLOWED`` (problem+json, the host never echoed unescaped) unless it names one of
the allowed hosts. ``lens serve`` sets them (``--allowed-host``, repeatable; default the bind
address and the loopback names; any host when bound to every address, as in a pod behind a
Service, unless ``--allowed-host`` is given) in ``LENS_ALLOWED_HOSTS`` (comma-separated; ``*`` is
any host, ``*.example.com`` any name under it). Unset, nothing is checked (an app built in a test).
``/healthz`` and ``/readyz`` answer any host: a kubelet probes them by the pod's address.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from starlette.types import ASGIApp, Receive, Scope, Send

from llm_d_lens import settings
from llm_d_lens.api.problems import problem

ENV = "LENS_ALLOWED_HOSTS"
LOOPBACK = ("localhost", "127.0.0.1", "::1")
WILDCARD_BINDS = ("0.0.0.0", "::", "")
#: what a kubelet probes by the pod's IP address, whatever names are trusted
PROBES = frozenset({"/healthz", "/readyz"})


def default_hosts(bind: str, given: Iterable[str] = ()) -> list[str]:
    """What ``lens serve --host BIND [--allowed-host ...]`` trusts."""
    chosen = [h.strip().lower() for h in given if h.strip()]
    if chosen:
        return chosen
    if bind.strip("[]") in WILDCARD_BINDS:
        return ["*"]
    return list(dict.fromkeys([bind.strip("[]").lower(), *LOOPBACK]))


def from_env(env: Mapping[str, str] | None = None) -> list[str] | None:
    raw = settings.text(ENV, env)
    if raw is None or not raw.strip():
        return None
    return [h.strip().lower() for h in raw.split(",") if h.strip()]


def host_name(header: str) -> str:
    """``Host`` without its port, lower-case: ``[::1]:8080`` -> ``::1``, ``Example.com:80`` -> ``example.com``."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1:].split("]", 1)[0]
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def allowed(name: str, hosts: Iterable[str]) -> bool:
    for host in hosts:
        if host == "*" or host == name or (host.startswith("*.") and name.endswith(host[1:]) and len(name) > len(host) - 1):
            return True
    return False


class TrustedHosts:
    """ASGI middleware refusing a request whose ``Host`` is not one of ``hosts`` (None: no check)."""

    def __init__(self, app: ASGIApp, hosts: list[str] | None = None):
        self.app = app
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (self.hosts is None or "*" in self.hosts or scope["type"] not in ("http", "websocket")
                or scope.get("path") in PROBES):
            await self.app(scope, receive, send)
            return
        values = [value for name, value in scope.get("headers", []) if name == b"host"]
        header = values[0].decode("latin-1") if len(values) == 1 else ""
        if header and allowed(host_name(header), self.hosts):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        shown = ascii(header[:100]) if header else ("none" if not values else "several")
        await problem(400, "HOST_NOT_ALLOWED", f"the Host header {shown} is not one this server answers to; start "
                      "lens serve with --allowed-host NAME to add it", allowed=", ".join(self.hosts))(scope, receive, send)
