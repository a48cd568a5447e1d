"""PromQL building blocks that keep user-supplied values literal.

Every label value Lens puts into a query (a pod, node or namespace a user typed, a node name read
from a cluster) goes through :func:`quote`, :func:`regex_literal` or :func:`replacement_literal`,
so a value like ``x"} or vector(1) or {a="`` selects nothing instead of rewriting the query. Names
(labels, metrics) are checked, never escaped: a name that is not a name is a programming or
profile error.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
METRIC_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
MATCH_OPS = ("=", "!=", "=~", "!~")
# RE2 metacharacters; a backslash before any of them is a literal in RE2 as in Python.
_RE2_SPECIAL = re.compile(r"([\\.+*?()|\[\]{}^$])")
_MATCHER = re.compile(r'^\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*("(?:[^"\\]|\\.)*")\s*$')


def quote(value: str) -> str:
    """``value`` as a PromQL double-quoted string literal (Go escaping; JSON's is a subset of it)."""
    return json.dumps(str(value), ensure_ascii=False)


def regex_literal(value: str) -> str:
    """A regular expression matching exactly ``value`` (to be passed through :func:`quote`)."""
    return _RE2_SPECIAL.sub(r"\\\1", str(value))


def replacement_literal(value: str) -> str:
    """``value`` as a ``label_replace`` replacement: ``$`` would expand a capture group."""
    return quote(str(value).replace("$", "$$"))


def label_name(name: str) -> str:
    if not LABEL_NAME.fullmatch(name):
        raise ValueError(f"{name!r} is not a Prometheus label name")
    return name


def metric_name(name: str) -> str:
    if not METRIC_NAME.fullmatch(name):
        raise ValueError(f"{name!r} is not a Prometheus metric name")
    return name


def matcher(name: str, op: str, value: str) -> str:
    """One label matcher with the value quoted, e.g. ``namespace="llm-serving"``."""
    if op not in MATCH_OPS:
        raise ValueError(f"{op!r} is not a PromQL match operator")
    return f"{label_name(name)}{op}{quote(value)}"


def selector(metric: str, matchers: Iterable[str] = ()) -> str:
    """``metric{m1,m2}``; ``matchers`` are already rendered (by :func:`matcher` or a checked profile)."""
    rendered = ", ".join(matchers)
    return f"{metric_name(metric)}{{{rendered}}}" if rendered else metric_name(metric)


def parse_matcher(text: str) -> tuple[str, str, str]:
    """``(label, op, value)`` of a rendered matcher such as ``src!~"sum|avg"``."""
    found = _MATCHER.match(text)
    if not found:
        raise ValueError(f"{text!r} is not a PromQL label matcher")
    name, op, literal = found.groups()
    return name, op, json.loads(literal)


def matches(labels: dict[str, str], name: str, op: str, value: str) -> bool:
    """Whether a series' labels satisfy one matcher, with Prometheus' rules (absent = empty, anchored regex)."""
    actual = labels.get(name, "")
    if op == "=":
        return actual == value
    if op == "!=":
        return actual != value
    hit = re.fullmatch(value, actual) is not None
    return hit if op == "=~" else not hit
