"""Refuse profile regular expressions that can backtrack catastrophically.

Profiles (and so plugins) give Lens regular expressions that it runs on cluster data: product
names, resource names, AIC system names. Python's engine backtracks, so a pattern such as
``^(a+)+$`` takes exponential time on a near-miss (20 s on 28 characters in
``lens hardware resolve --aic-system``). Rather than bring in a second engine, a pattern is
parsed with Python's own parser and refused when it has a shape that backtracks exponentially:

* a repeat inside a repeat where either is unbounded (``(a+)+``, ``(a*)*``, ``(\\w+\\s?)*``,
  ``(a{1,9})+``);
* an alternation inside an unbounded repeat whose branches can begin with the same character
  (``(\\w|\\d\\d)*``), since each repetition may then be split several ways;
* a backreference (``(a)\\1``), which no linear-time engine supports either;
* a counted repetition above :data:`MAX_REPEAT_COUNT` (``a{1000000000}``): the inputs are
  Kubernetes names, so such a count can only cost memory and time, never match;
* more than :data:`MAX_PATTERN_LENGTH` characters.

Everything else runs in time polynomial in the input, and the inputs (Kubernetes names, at most
253 characters) are short. The rule is conservative: it may refuse a pattern that would in
fact be fast; the message says which part to rewrite. ``docs/limits.md`` states it for authors.
"""

from __future__ import annotations

from typing import Any

try:  # Python 3.11+
    from re import _constants as sre  # type: ignore[attr-defined]
    from re import _parser as sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - older interpreters
    import sre_constants as sre  # type: ignore[no-redef]
    import sre_parse  # type: ignore[no-redef]

#: characters a profile pattern may have; the longest bundled one has under 120
MAX_PATTERN_LENGTH = 512
#: the largest {m,n} count a pattern may give; a Kubernetes name has at most 253 characters
MAX_REPEAT_COUNT = 1000

_REPEATS = {sre.MAX_REPEAT, sre.MIN_REPEAT}
_UNKNOWN = None  # "could begin with any character"


def backtracking_problem(pattern: str) -> str | None:
    """Why ``pattern`` may backtrack catastrophically, or None; ``re.error`` if it does not compile."""
    if len(pattern) > MAX_PATTERN_LENGTH:
        return f"is longer than {MAX_PATTERN_LENGTH} characters"
    return _scan(sre_parse.parse(pattern), inside_unbounded=False, inside_repeat=False)


def _scan(items: Any, *, inside_unbounded: bool, inside_repeat: bool) -> str | None:
    for op, arg in items:
        if op in _REPEATS:
            low, high, body = arg
            unbounded = high == sre.MAXREPEAT
            if low > MAX_REPEAT_COUNT or (not unbounded and high > MAX_REPEAT_COUNT):
                return (f"repeats {high if not unbounded else low} times, more than {MAX_REPEAT_COUNT}; the names a "
                        "pattern is matched against are at most 253 characters, so use a smaller count or + / *")
            repeats = high > 1
            if repeats and inside_repeat and (unbounded or inside_unbounded):
                return "nests one repetition inside another (such as (a+)+), which can take exponential time; " \
                       "repeat the inner part once, e.g. a+ instead of (a+)+"
            found = _scan(body, inside_unbounded=inside_unbounded or unbounded, inside_repeat=inside_repeat or repeats)
            if found:
                return found
        elif op == sre.SUBPATTERN:
            found = _scan(arg[-1], inside_unbounded=inside_unbounded, inside_repeat=inside_repeat)
            if found:
                return found
        elif op == sre.BRANCH:
            branches = arg[1]
            if inside_unbounded and _overlapping(branches):
                return "repeats an alternation whose branches can start alike (such as (\\w|\\d\\d)*), which can take " \
                       "exponential time; make the branches start with different characters"
            for branch in branches:
                found = _scan(branch, inside_unbounded=inside_unbounded, inside_repeat=inside_repeat)
                if found:
                    return found
        elif op in (sre.GROUPREF, sre.GROUPREF_EXISTS):
            return "uses a backreference, which can take exponential time"
        elif op in (sre.ASSERT, sre.ASSERT_NOT):
            found = _scan(arg[1], inside_unbounded=inside_unbounded, inside_repeat=inside_repeat)
            if found:
                return found
        elif op in (getattr(sre, "ATOMIC_GROUP", None), getattr(sre, "POSSESSIVE_REPEAT", None)):
            continue  # never backtracks into itself
    return None


def _overlapping(branches: list[Any]) -> bool:
    seen: set[str] = set()
    for branch in branches:
        first = _first(list(branch))
        if first is _UNKNOWN or first & seen:
            return True
        seen |= first
    return False


def _first(items: list[Any]) -> set[str] | None:
    """Characters a match of ``items`` can begin with; None when that is unknown or anything."""
    for op, arg in items:
        if op == sre.AT:
            continue
        if op == sre.LITERAL:
            return {chr(arg)}
        if op == sre.IN:
            out: set[str] = set()
            for kind, value in arg:
                if kind == sre.LITERAL:
                    out.add(chr(value))
                elif kind == sre.RANGE and value[1] - value[0] < 256:
                    out.update(chr(c) for c in range(value[0], value[1] + 1))
                else:
                    return _UNKNOWN  # a negation, a category (\d, \w) or a wide range
            return out
        if op == sre.SUBPATTERN:
            return _first(list(arg[-1]))
        if op in _REPEATS and arg[0] > 0:
            return _first(list(arg[2]))
        return _UNKNOWN  # an optional part, any character, a branch: assume the worst
    return set()  # matches the empty string: shares no first character, but cannot begin one either
