"""Every environment variable Lens reads, in one catalogue, and the one way to read a flag or a value.

Each variable is declared once here with what it is for and its default; a domain reads it with
:func:`text` or :func:`flag` (never ``os.environ`` with a name of its own), and shapes it into the
frozen settings of its concern (``hardware/settings.py``'s plugin settings, ``monitoring/settings.py``'s
telemetry settings, the cluster source of ``cluster/source.py``). ``lens version -o json`` lists
them all with the value each has now (a secret's shown only as set). ``settings/test_settings.py``
fails when code names a variable this catalogue does not declare.

A flag is one of ``1 true yes on`` or ``0 false no off`` (any case), or unset/blank for its
default; anything else is a coded error naming the variable and the value, never a silent guess.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from llm_d_lens.errors import LensError, echo

TRUE = frozenset({"1", "true", "yes", "on"})
FALSE = frozenset({"0", "false", "no", "off"})


class Setting:
    """One variable Lens reads: a plain record, since every command imports this catalogue at start-up
    (``lens --help`` needs no model library, and a NamedTuple's class is built by ``exec``)."""

    __slots__ = ("name", "concern", "meaning", "default", "secret")

    def __init__(self, name: str, concern: str, meaning: str, default: str = "", secret: bool = False) -> None:
        self.name = name
        self.concern = concern  # plugins | cluster | telemetry | api | deploy | terminal
        self.meaning = meaning
        self.default = default  # as the user would write it; "" when unset means "none"
        self.secret = secret

    def __repr__(self) -> str:
        return (f"Setting(name={self.name!r}, concern={self.concern!r}, meaning={self.meaning!r}, "
                f"default={self.default!r}, secret={self.secret!r})")


SETTINGS: tuple[Setting, ...] = (
    Setting("LENS_PLUGINS_AUTOLOAD", "plugins", "off: third-party hardware plugins are not loaded (built-ins still are)", "on"),
    Setting("LENS_PLUGINS_ALLOW", "plugins", "comma-separated distributions: only these third-party plugins load"),
    Setting("LENS_PROFILES_BLOCK", "plugins", "comma-separated profile ids never registered, built-in or not"),
    Setting("LENS_PLUGINS_TIMEOUT", "plugins", "seconds one plugin may take to load", "5"),
    Setting("LENS_PROVIDER_TIMEOUT", "plugins", "seconds a third-party provider's hook may compute before it answers "
            "(its worker is ended past it)", "30"),
    Setting("LENS_CACHE_DIR", "plugins", "where plugin load outcomes are cached", "$XDG_CACHE_HOME/llm-d-lens"),
    Setting("LENS_BENCHMARK_PROFILES", "plugins", "llm-d-benchmark profile names known beyond the bundled list"),
    Setting("LENS_CLUSTERS", "cluster", "the clusters file (a server serves exactly these)", "~/.config/lens/clusters.yaml"),
    Setting("LENS_CLUSTER_SNAPSHOT", "cluster", "a server's cluster: a saved snapshot file or folder"),
    Setting("LENS_CLUSTER_DEMO", "cluster", "on: a server's cluster is the embedded demo", "off"),
    Setting("LENS_KUBE_CONTEXT", "cluster", "a server's cluster: this kubeconfig context", "kubectl's current one"),
    Setting("LENS_KUBECONFIG", "cluster", "a server's kubeconfig file", "kubectl's"),
    Setting("LENS_KUBECTL_TIMEOUT", "cluster", "seconds one kubectl call may take", "60"),
    Setting("LENS_WATCH_MAX_EVENT_BYTES", "cluster", "the longest watch event line a server reads (longer is refused)",
            "16777216"),
    Setting("LENS_CLUSTER_WATCH", "cluster", "on: a server keeps live clusters in memory by a watch (lens serve sets it)", "off"),
    Setting("LENS_PROMETHEUS_URL", "telemetry", "the Prometheus telemetry is read from"),
    Setting("LENS_PROMETHEUS_TIMEOUT", "telemetry", "seconds per Prometheus query", "10"),
    Setting("LENS_TELEMETRY_DEMO", "telemetry", "on: the embedded demo history instead of a Prometheus", "off"),
    Setting("LENS_CLUSTER_OBJECTS", "telemetry", "Kubernetes JSON files (or 'kubectl') for the telemetry joins"),
    Setting("LENS_API_TOKEN", "api", "the bearer token that enables the API's mutating calls", secret=True),
    Setting("LENS_CONSOLE_ACTIONS", "api", "on: the console offers its actions (deploy a render, cordon a node) to a "
            "person signed in with LENS_API_TOKEN", "off"),
    Setting("LENS_AUDIT_LOG", "api", "a file every console action is appended to as a JSON line (who, what, result)",
            "the server log only"),
    Setting("LENS_CONSOLE_REFRESH", "api", "seconds between a console page's conditional re-reads (and the telemetry "
            "panels' time step)", "15"),
    Setting("LENS_ALLOWED_HOSTS", "api", "the Host names the server answers to, comma-separated ('*' any, '*.example.com' "
            "a domain); lens serve sets it from --host and --allowed-host", "no check"),
    Setting("LENS_API_MAX_BODY_BYTES", "api", "the largest request body the API reads", "1048576"),
    Setting("LENS_LLM_D_ROOT", "deploy", "the llm-d checkout overlays are read from"),
    Setting("LLM_D_ROOT", "deploy", "the llm-d checkout, when LENS_LLM_D_ROOT is unset (its older name)"),
    Setting("LENS_NO_PROGRESS", "terminal", "on: no progress line on a terminal's stderr", "off"),
)
DECLARED: dict[str, Setting] = {s.name: s for s in SETTINGS}


class SettingInvalid(LensError):
    code = "SETTING_INVALID"
    http_status = 503  # a server's environment is its operator's to fix, never a caller's


def _declared(name: str) -> Setting:
    try:
        return DECLARED[name]
    except KeyError:
        raise ValueError(f"{name} is not a Lens setting: declare it in llm_d_lens/settings") from None


def text(name: str, env: Mapping[str, str] | None = None) -> str | None:
    """The variable's value, surrounding whitespace dropped; None when unset or blank."""
    _declared(name)
    value = (os.environ if env is None else env).get(name, "").strip()
    return value or None


def flag(name: str, env: Mapping[str, str] | None = None, *, default: bool = False) -> bool:
    """The variable as a yes/no: ``1 true yes on`` or ``0 false no off``; ``default`` when unset or blank."""
    raw = text(name, env)
    if raw is None:
        return default
    lowered = raw.lower()
    if lowered in TRUE:
        return True
    if lowered in FALSE:
        return False
    raise SettingInvalid(f"{name}={echo(raw, 60)}: give one of 1, true, yes, on or 0, false, no, off",
                         details={"variable": name, "value": echo(raw, 60)})


def listing(env: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """Every setting with its value now (a secret only as ``set``), its default and what it is for."""
    found = os.environ if env is None else env
    rows = []
    for setting in SETTINGS:
        raw = found.get(setting.name)
        value = None if raw is None else ("set" if setting.secret and raw else raw)
        rows.append({"name": setting.name, "concern": setting.concern, "value": value,
                     "default": setting.default or None, "meaning": setting.meaning})
    return rows
