"""The console's actions: a plan's render → server-side dry-run → apply, and cordon/uncordon a node.

Off unless the server enables them (``LENS_CONSOLE_ACTIONS=on``) and has an API token
(``LENS_API_TOKEN``); a person signs in once with the token and gets a session cookie (``HttpOnly``,
``SameSite=Strict``). Every form carries a one-time token of that session (CSRF and replay in one:
a token is spent by the post that carries it). Nothing is applied without an explicit confirm; an
apply re-renders and refuses when the render's content hash is not the one the person saw. kubectl
runs through the server's :class:`~llm_d_lens.runner.Runner` (tests hand a recording fake). Every
action, refused or done, is one JSON line in the audit log (the server log, and ``LENS_AUDIT_LOG``
when set). A refusal is a coded problem shown in place; it changes nothing.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import re
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from llm_d_lens.errors import LensError

router = APIRouter(include_in_schema=False)
log = logging.getLogger("llm_d_lens.audit")

COOKIE = "lens_session"
#: a session lasts this long (seconds); its one-time tokens with it
SESSION_SECONDS = 8 * 3600
#: one-time tokens a session holds at once (the oldest go first)
TOKENS_PER_SESSION = 64
#: the largest action form read
FORM_LIMIT = 64 * 1024
NODE_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
NAMESPACE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
ENABLE = "start the server with LENS_CONSOLE_ACTIONS=on and LENS_API_TOKEN set, then sign in with the token"


class ActionRefused(LensError):
    """An action the console will not carry out; nothing was changed."""

    http_status = 403

    def __init__(self, code: str, message: str, status: int = 403):
        super().__init__(message)
        self.code = code
        self.http_status = status


@dataclass
class Session:
    id: str
    created: float
    tokens: dict[str, float] = field(default_factory=dict)


_sessions: dict[str, Session] = {}
_lock = threading.Lock()


def enabled() -> tuple[bool, str | None]:
    """(actions are on, why not): both settings are needed; a bad flag value is its coded error."""
    from llm_d_lens import settings

    if not settings.flag("LENS_CONSOLE_ACTIONS"):
        return False, "the console's actions are off (LENS_CONSOLE_ACTIONS)"
    if settings.text("LENS_API_TOKEN") is None:
        return False, "LENS_CONSOLE_ACTIONS is on but no LENS_API_TOKEN is set, so nobody can sign in"
    return True, None


def session_of(request: Request) -> Session | None:
    sid = request.cookies.get(COOKIE, "")
    with _lock:
        found = _sessions.get(sid)
        if found is not None and time.time() - found.created > SESSION_SECONDS:
            _sessions.pop(sid, None)
            return None
        return found


def issue(session: Session | None) -> str:
    """A one-time form token of the session ('' without one: the form is not shown then)."""
    if session is None:
        return ""
    token = secrets.token_urlsafe(24)
    with _lock:
        session.tokens[token] = time.time()
        while len(session.tokens) > TOKENS_PER_SESSION:
            session.tokens.pop(next(iter(session.tokens)))
    return token


def spend(session: Session, token: str) -> bool:
    with _lock:
        return session.tokens.pop(token, None) is not None


def state(request: Request) -> dict[str, Any]:
    """What a page says about actions: on or off (and how to enable them), signed in or not."""
    on, why = enabled()
    session = session_of(request) if on else None
    return {"on": on, "why": why, "enable": ENABLE, "signed_in": session is not None, "session": session}


def audit(request: Request, session: Session | None, action: str, target: dict[str, Any], result: str,
          detail: str = "") -> dict[str, Any]:
    """One JSON line: when, who (the session's first characters and the client's address), what, on what, the result."""
    from llm_d_lens import settings

    line = {"at": round(time.time(), 3), "who": {"session": session.id[:8] if session else None,
                                                 "client": request.client.host if request.client else None},
            "action": action, "target": target, "result": result, "detail": detail[:2000]}
    text = json.dumps(line, sort_keys=True)
    log.info("%s", text)
    path = settings.text("LENS_AUDIT_LOG")
    if path:
        with _lock, open(path, "a", encoding="utf-8") as out:
            out.write(text + "\n")
    return line


async def read_form(request: Request) -> dict[str, str]:
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > FORM_LIMIT:
            raise ActionRefused("FORM_TOO_LARGE", f"an action form is at most {FORM_LIMIT // 1024} KiB", 413)
    kind = request.headers.get("content-type", "")
    if not kind.startswith("application/x-www-form-urlencoded"):
        raise ActionRefused("FORM_INVALID", f"Content-Type {kind or 'none'!r}: an action is an urlencoded form", 415)
    return {k: v[-1] for k, v in parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True).items()}


def guard(request: Request, form: dict[str, str]) -> Session:
    """Actions on, a session, the form's one-time token (spent here), and a cluster this server serves."""
    on, why = enabled()
    if not on:
        raise ActionRefused("ACTIONS_DISABLED", f"{why}; to enable: {ENABLE}")
    session = session_of(request)
    if session is None:
        raise ActionRefused("SIGN_IN_NEEDED", "sign in with the server's API token first (/session)", 401)
    if not spend(session, form.get("csrf", "")):
        raise ActionRefused("CSRF_INVALID", "the form's token is missing, forged or already used (a replayed form): "
                            "nothing was done; open the page again for a fresh form")
    cluster_target(form.get("cluster") or None)
    return session


def cluster_target(cluster: str | None) -> Any:
    """The runner kubectl goes through for the served cluster named (or the default one); a snapshot or the demo
    cannot be changed, and a cluster this server does not serve is refused."""
    from llm_d_lens.cluster import served

    if cluster is not None:
        names = [c.name for c in served.served_clusters().clusters]
        if cluster not in names:
            raise ActionRefused("CLUSTER_NOT_SERVED", f"cluster {cluster[:80]!r} is not one this server serves "
                                f"({', '.join(names) or 'none configured'})", 404)
        source = served.served_clusters().get(cluster).source(served.kubectl_timeout())
    else:
        source = served.cluster_source()
    if not source.live:
        raise ActionRefused("LIVE_CLUSTER_NEEDED", "this server reads the demo or a snapshot, which cannot be changed; "
                            "start it with LENS_KUBE_CONTEXT naming a live cluster", 409)
    return cluster_runner() or source.runner()


def cluster_runner() -> Any:
    """The runner for the cluster (None: the source's own); tests put a recording fake here."""
    from llm_d_lens.cluster import served

    return served.cluster_runner()


def render_runner() -> Any:
    """The runner kustomize goes through (local work, no cluster); tests may replace it."""
    from llm_d_lens.runner import CommandRunner

    return CommandRunner()


# ---- deploy: render -> dry-run -> apply

#: the render's fields as the form sends them: name -> (kind, bound)
RENDER_FIELDS: dict[str, tuple[str, int]] = {
    "guide": ("text", 200), "hardware": ("text", 100), "model": ("text", 256), "mode": ("text", 40),
    "model_server": ("text", 40), "overlay": ("text", 200), "resource_name": ("text", 253), "tensor_parallel": ("int", 64),
    "pipeline_parallel": ("int", 64), "replicas": ("int", 10_000), "max_model_len": ("int", 10_000_000),
    "namespace": ("text", 63), "cluster": ("text", 100),
}


def render_params(values: dict[str, str]) -> dict[str, Any]:
    """The form's render fields, checked: a field out of bounds is a coded refusal naming it."""
    from llm_d_lens.planning.errors import RequestInvalid

    out: dict[str, Any] = {}
    for name, (kind, bound) in RENDER_FIELDS.items():
        raw = (values.get(name) or "").strip()
        if not raw:
            continue
        if kind == "int":
            if not raw.isdigit() or not 0 <= int(raw) <= bound:
                raise RequestInvalid(name, raw[:40], f"is not a whole number from 0 to {bound:,}")
            out[name] = int(raw)
        else:
            if len(raw) > bound:
                raise RequestInvalid(name, raw[:40], f"is longer than {bound} characters")
            out[name] = raw
    if "namespace" in out and not NAMESPACE.fullmatch(out["namespace"]):
        from llm_d_lens.planning.errors import RequestInvalid

        raise RequestInvalid("namespace", out["namespace"], "is not a Kubernetes namespace name")
    return out


@dataclass
class Rendered:
    params: dict[str, Any]
    result: Any
    manifests: str
    digest: str
    objects: list[dict[str, str]]


def render(params: dict[str, Any]) -> Rendered:
    """The render the page shows, and its content hash (sha256 of the manifests kubectl would be given)."""
    from llm_d_lens.deploy.errors import RenderRequestInvalid
    from llm_d_lens.deploy.service import RenderRequest, render as render_overlay, server_source_errors

    fields = {k: v for k, v in params.items() if k not in ("namespace", "cluster")}
    if "guide" not in fields or "hardware" not in fields:
        raise ActionRefused("RENDER_INCOMPLETE", "a render needs a guide and a hardware", 422)
    try:
        request = RenderRequest(**fields)
    except (RenderRequestInvalid, TypeError) as exc:  # a field out of bounds, or one a render does not take
        raise ActionRefused("REQUEST_INVALID", f"the render's fields: {str(exc)[:400]}", 422) from None
    with server_source_errors():
        result = render_overlay(request, runner=render_runner())
    manifests = result.manifests()
    objects = [{"kind": o.get("kind", ""), "name": (o.get("metadata") or {}).get("name", ""),
                "namespace": (o.get("metadata") or {}).get("namespace") or params.get("namespace") or ""}
               for o in result.objects]
    return Rendered(params, result, manifests, hashlib.sha256(manifests.encode()).hexdigest(), objects)


def kubectl_apply(params: dict[str, Any], *, dry_run: bool) -> list[str]:
    argv = ["kubectl", "apply", "-f", "-"]
    if params.get("namespace"):
        argv += ["--namespace", params["namespace"]]
    if dry_run:
        argv.append("--dry-run=server")
    return argv


def run_apply(rendered: Rendered, runner: Any, *, dry_run: bool) -> dict[str, Any]:
    from llm_d_lens.deploy.service import APPLY_TIMEOUT
    from llm_d_lens.runner import format_command

    output = runner.run(kubectl_apply(rendered.params, dry_run=dry_run), input=rendered.manifests, timeout=APPLY_TIMEOUT)
    return {"dry_run": dry_run, "command": format_command(output.argv), "output": output.stdout}


def _render_or_problem(params: dict[str, Any]) -> tuple[Rendered | None, Any]:
    from llm_d_lens.console import data

    if not data.llm_d_root_configured():
        from llm_d_lens.deploy.source import ROOT_ENV

        return None, data.not_configured("SERVER_NOT_CONFIGURED", "this server was started without an llm-d checkout, "
                                         "so it has no overlay to render.", f"start the server with {ROOT_ENV} set to an llm-d checkout")
    try:
        return render(params), None
    except LensError as exc:
        return None, data.failed(exc)


def _page(request: Request, status: int = 200, **context: Any) -> HTMLResponse:
    from llm_d_lens.console.router import frame, render as render_page

    shown = frame()
    actions = state(request)
    return render_page("deploy.html", status_code=status, page="deploy", tabs=shown.tabs, failures=shown.failures,
                       registry=shown.registry, actions=actions, csrf=issue(actions["session"]),
                       here=_here(request), **context)


def _here(request: Request) -> str:
    """The page to come back to after signing in: a GET's path and query (a post's answer goes back to its form)."""
    if request.method != "GET":
        return "/deploy"
    return request.url.path + ("?" + request.url.query if request.url.query else "")


def _headers() -> dict[str, str]:
    return {"Cache-Control": "no-store"}


@router.get("/deploy", response_class=HTMLResponse)
async def deploy_page(request: Request) -> Response:
    """A render of the query's fields (a plan's hand-off link fills them), and the dry-run form."""
    from starlette.concurrency import run_in_threadpool

    from llm_d_lens.console import data

    values = dict(request.query_params)
    try:
        params = render_params(values)
    except LensError as exc:
        response = _page(request, exc.http_status, params=values, rendered=None, problem=data.failed(exc), step="render")
        response.headers.update(_headers())
        return response
    rendered, problem = (None, None)
    if params.get("guide") and params.get("hardware"):
        rendered, problem = await run_in_threadpool(_render_or_problem, params)
    response = _page(request, params=params, rendered=rendered, problem=problem, step="render")
    response.headers.update(_headers())
    return response


async def _deploy_step(request: Request, step: str) -> Response:
    from starlette.concurrency import run_in_threadpool

    from llm_d_lens.console import data

    session = None
    params: dict[str, Any] = {}
    target: dict[str, Any] = {}
    try:
        form = await read_form(request)
        params = render_params(form)
        target = {k: params.get(k) for k in ("guide", "hardware", "model", "namespace", "cluster") if params.get(k)}
        session = guard(request, form)
        if step == "apply" and form.get("confirm") != "yes":
            raise ActionRefused("CONFIRM_NEEDED", "an apply needs its confirm box ticked: nothing was applied", 422)
        runner = cluster_target(params.get("cluster"))
        rendered = await run_in_threadpool(render, params)
        shown = form.get("digest", "")
        if not hmac.compare_digest(shown.encode(), rendered.digest.encode()):
            raise ActionRefused("RENDER_CHANGED", f"the render's content hash is {rendered.digest[:16]}…, not the "
                                f"{shown[:16] or 'missing'}… that was shown: nothing was run; look at the new render", 409)
        outcome = await run_in_threadpool(lambda: run_apply(rendered, runner, dry_run=step == "dry-run"))
    except LensError as exc:
        audit(request, session, f"deploy.{step}", target, f"refused: {exc.code}", exc.message)
        response = _page(request, exc.http_status, params=params, rendered=None, problem=data.failed(exc), step=step)
        response.headers.update(_headers())
        return response
    audit(request, session, f"deploy.{step}", {**target, "digest": rendered.digest, "objects": len(rendered.objects)},
          "dry-run passed" if step == "dry-run" else "applied", outcome["command"])
    response = _page(request, params=params, rendered=rendered, problem=None, step=step, outcome=outcome)
    response.headers.update(_headers())
    return response


@router.post("/deploy/dry-run", response_class=HTMLResponse)
async def deploy_dry_run(request: Request) -> Response:
    """The shown render, rendered again and compared by hash, through ``kubectl apply --dry-run=server``."""
    return await _deploy_step(request, "dry-run")


@router.post("/deploy/apply", response_class=HTMLResponse)
async def deploy_apply(request: Request) -> Response:
    """The dry-run's render applied, once its hash still matches and the confirm box is ticked."""
    return await _deploy_step(request, "apply")


# ---- sign in

@router.get("/session", response_class=HTMLResponse)
async def session_page(request: Request) -> Response:
    response = _session_page(request)
    response.headers.update(_headers())
    return response


def _session_page(request: Request, status: int = 200, problem: Any = None, done: str | None = None) -> HTMLResponse:
    from llm_d_lens.console.router import frame, render as render_page

    shown = frame()
    return render_page("session.html", status_code=status, page="session", tabs=shown.tabs, failures=shown.failures,
                       registry=shown.registry, actions=state(request), problem=problem, done=done,
                       request_next=request.query_params.get("next", "")[:200])


@router.post("/session", response_class=HTMLResponse)
async def sign_in(request: Request) -> Response:
    """The API token, once, for a session cookie (HttpOnly, SameSite=Strict); a wrong token is refused and logged."""
    from llm_d_lens import settings
    from llm_d_lens.console import data

    try:
        form = await read_form(request)
        on, why = enabled()
        if not on:
            raise ActionRefused("ACTIONS_DISABLED", f"{why}; to enable: {ENABLE}")
        if form.get("signout") == "1":
            sid = request.cookies.get(COOKIE, "")
            with _lock:
                _sessions.pop(sid, None)
            response = RedirectResponse("/session", status_code=303)
            response.delete_cookie(COOKIE, path="/")
            return response
        token = settings.text("LENS_API_TOKEN") or ""
        if not hmac.compare_digest(form.get("token", "").strip().encode(), token.encode()):
            raise ActionRefused("UNAUTHORIZED", "wrong API token", 401)
    except LensError as exc:
        audit(request, None, "session.sign-in", {}, f"refused: {exc.code}", exc.message)
        return _session_page(request, exc.http_status, problem=data.failed(exc))
    session = Session(secrets.token_urlsafe(32), time.time())
    with _lock:
        _sessions[session.id] = session
    audit(request, session, "session.sign-in", {}, "signed in")
    target = form.get("next", "")
    response = RedirectResponse(target if target.startswith("/") and not target.startswith("//") else "/session",
                                status_code=303)
    response.set_cookie(COOKIE, session.id, max_age=SESSION_SECONDS, path="/", httponly=True, samesite="strict",
                        secure=request.url.scheme == "https")
    return response


# ---- nodes: cordon / uncordon

@router.get("/nodes/maintenance", response_class=HTMLResponse)
async def maintenance_form(request: Request) -> Response:
    """The cordon/uncordon form (rendered per request: it carries a one-time token)."""
    node = request.query_params.get("node", "")[:253]
    back = request.query_params.get("back", "/")
    return _maintenance_page(request, node=node, back=back if back.startswith("/accelerators/") else "/")


@router.post("/nodes/maintenance", response_class=HTMLResponse)
async def node_maintenance(request: Request) -> Response:
    """``kubectl cordon NODE`` or ``kubectl uncordon NODE``, confirmed, for a node of the served inventory."""
    from starlette.concurrency import run_in_threadpool

    from llm_d_lens.console import data
    from llm_d_lens.runner import format_command

    session = None
    target: dict[str, Any] = {}
    action = "cordon"
    back = "/"
    try:
        form = await read_form(request)
        action = form.get("action", "")
        node = form.get("node", "").strip()
        back = form.get("back", "/") if form.get("back", "/").startswith("/accelerators/") else "/"
        target = {"node": node[:253], "cluster": form.get("cluster") or None}
        if action not in ("cordon", "uncordon"):
            raise ActionRefused("REQUEST_INVALID", f"action {action[:40]!r}: give cordon or uncordon", 422)
        if not NODE_NAME.fullmatch(node):
            raise ActionRefused("REQUEST_INVALID", f"node {node[:60]!r} is not a Kubernetes node name", 422)
        session = guard(request, form)
        if form.get("confirm") != "yes":
            raise ActionRefused("CONFIRM_NEEDED", f"kubectl {action} {node} needs its confirm box ticked: nothing was done", 422)
        runner = cluster_target(form.get("cluster") or None)
        inventory = await data.inventory(form.get("cluster") or None)
        if not inventory.ok:
            raise ActionRefused(inventory.code or "INVENTORY_FAILED", f"the node cannot be checked against the cluster's "
                                f"inventory: {inventory.message}", inventory.status or 503)
        if node not in inventory.data["view"].node_names():
            raise ActionRefused("NODE_UNKNOWN", f"node {node!r} is not in the served cluster's inventory", 404)
        output = await run_in_threadpool(lambda: runner.run(["kubectl", action, node]))
        outcome = {"command": format_command(output.argv), "output": output.stdout}
    except LensError as exc:
        audit(request, session, f"node.{action}", target, f"refused: {exc.code}", exc.message)
        return _maintenance_page(request, exc.http_status, problem=data.failed(exc), back=back)
    audit(request, session, f"node.{action}", target, "done", outcome["command"])
    return _maintenance_page(request, outcome=outcome, back=back)


def _maintenance_page(request: Request, status: int = 200, problem: Any = None, outcome: Any = None,
                      back: str = "/", node: str = "") -> HTMLResponse:
    from llm_d_lens.console.router import frame, render as render_page

    shown = frame()
    actions = state(request)
    response = render_page("maintenance.html", status_code=status, page="accelerators", tabs=shown.tabs,
                           failures=shown.failures, registry=shown.registry, actions=actions, problem=problem,
                           outcome=outcome, back=back, node=node, csrf=issue(actions["session"]))
    response.headers.update(_headers())
    return response


def forget() -> None:
    """Drop every session (tests)."""
    with _lock:
        _sessions.clear()
