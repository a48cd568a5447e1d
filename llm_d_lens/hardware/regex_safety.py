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
* a chain of :data:`MAX_CHAIN` or more unbounded repeats that can match the same character, with
  nothing between them that stops one where the next begins (``a*a*a*b``, ``\\w+\\w+\\w+``,
  ``.*.*=.*``, ``a+x?a+x?a+``): not exponential, but each link multiplies the ways to split a
  near-miss, so three links cost n⁴ steps on a search (11 s on 253 characters for four, 46 s
  on 1,000 for three); two (``.*H100.*PCIE``) stay under a second on any name;
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
#: adjacent unbounded repeats over a shared character refused from this many on
MAX_CHAIN = 3
#: the characters a class is probed with when working out whether two can match alike
_PROBES = frozenset(chr(c) for c in range(256)) | frozenset("\u00e9\u0410\u4e2d\u2028\U0001f600")

_REPEATS = {sre.MAX_REPEAT, sre.MIN_REPEAT}
_UNKNOWN = None  # "could begin with any character"


def backtracking_problem(pattern: str) -> str | None:
    """Why ``pattern`` may backtrack catastrophically, or None; ``re.error`` if it does not compile."""
    if len(pattern) > MAX_PATTERN_LENGTH:
        return f"is longer than {MAX_PATTERN_LENGTH} characters"
    parsed = sre_parse.parse(pattern)
    return _scan(parsed, inside_unbounded=False, inside_repeat=False) or _chains(list(parsed), whole=True)


def _chains(items: list[Any], *, whole: bool = False) -> str | None:
    """A chain of :data:`MAX_CHAIN` overlapping unbounded repeats in this sequence or any inside it.

    The chain so far keeps the characters every link can match (``common``); a part every match must
    pass through that cannot match one of them ends it, an optional part or one that can does not.
    At the very end of the ``whole`` pattern, repeats and optional parts are left out: with nothing
    after them to fail, they match at once (``.*H100.*PCIE.*`` is a chain of two).
    """
    common: frozenset[str] | None = None
    links = 0
    inner: list[list[Any]] = []
    parts = list(_flatten(items, inner))
    while whole and parts and parts[-1][3] in ("repeat", "optional"):
        parts.pop()
    for op, arg, chars, kind in parts:
        if kind == "repeat":
            if common is not None and common & chars:
                common, links = common & chars, links + 1
            else:
                common, links = chars, 1
            if links >= MAX_CHAIN:
                return (f"chains {links} unbounded repeats that can match the same character (such as a*a*a*b or "
                        "\\w+\\w+\\w+), which takes polynomial time (n⁴ and worse) on a near-miss; put a character "
                        "between them that they cannot match, or merge them into one")
        elif kind == "required" and common is not None and not common & chars:
            common, links = None, 0
    for sequence in inner:
        found = _chains(sequence)
        if found:
            return found
    return None


def _flatten(items: list[Any], inner: list[list[Any]]) -> Any:
    """The sequence's parts as (op, arg, characters, kind): kind is repeat (unbounded), optional,
    required or none (zero-width); groups are opened in place, bodies to check on their own go to ``inner``."""
    for op, arg in items:
        if op == sre.SUBPATTERN:
            yield from _flatten(list(arg[-1]), inner)
        elif op in _REPEATS:
            low, high, body = arg
            inner.append(list(body))
            kind = "repeat" if high == sre.MAXREPEAT else "optional" if low == 0 else "required"
            yield op, arg, _chars(list(body)), kind
        elif op == sre.BRANCH:
            branches = [list(b) for b in arg[1]]
            inner.extend(branches)
            chars = frozenset().union(*(_chars(b) for b in branches))
            yield op, arg, chars, "optional" if any(_may_be_empty(b) for b in branches) else "required"
        elif op in (sre.ASSERT, sre.ASSERT_NOT):
            inner.append(list(arg[1]))
            yield op, arg, frozenset(), "none"
        elif op in (sre.AT,):
            yield op, arg, frozenset(), "none"
        else:
            yield op, arg, _chars([(op, arg)]), "required"


def _chars(items: list[Any]) -> frozenset[str]:
    """The probe characters any part of ``items`` can match (all of them when that is not worked out)."""
    out: set[str] = set()
    for op, arg in items:
        if op == sre.LITERAL:
            out.add(chr(arg))
        elif op == sre.NOT_LITERAL:
            out |= _PROBES - {chr(arg)}
        elif op == sre.ANY:
            out |= _PROBES - {"\n"}
        elif op == sre.IN:
            out |= _class(arg)
        elif op == sre.SUBPATTERN:
            out |= _chars(list(arg[-1]))
        elif op in _REPEATS:
            out |= _chars(list(arg[2]))
        elif op == sre.BRANCH:
            for branch in arg[1]:
                out |= _chars(list(branch))
        elif op in (sre.AT, sre.ASSERT, sre.ASSERT_NOT):
            continue
        else:
            return _PROBES
    return frozenset(out)


_CATEGORIES = {
    "CATEGORY_DIGIT": str.isdigit, "CATEGORY_NOT_DIGIT": lambda c: not c.isdigit(),
    "CATEGORY_SPACE": str.isspace, "CATEGORY_NOT_SPACE": lambda c: not c.isspace(),
    "CATEGORY_WORD": lambda c: c.isalnum() or c == "_", "CATEGORY_NOT_WORD": lambda c: not (c.isalnum() or c == "_"),
}


def _class(items: Any) -> frozenset[str]:
    """The probe characters a ``[...]`` (or ``\\d``, ``\\w``, ``\\s``) matches."""
    out: set[str] = set()
    negate = False
    for kind, value in items:
        if kind == sre.NEGATE:
            negate = True
        elif kind == sre.LITERAL:
            out.add(chr(value))
        elif kind == sre.RANGE:
            out |= {c for c in _PROBES if value[0] <= ord(c) <= value[1]}
        elif kind == sre.CATEGORY:
            test = _CATEGORIES.get(str(value))
            out |= _PROBES if test is None else {c for c in _PROBES if test(c)}
        else:
            return _PROBES
    return frozenset(_PROBES - out if negate else out)


def _may_be_empty(items: list[Any]) -> bool:
    for op, arg in items:
        if op in (sre.AT, sre.ASSERT, sre.ASSERT_NOT):
            continue
        if op in _REPEATS and arg[0] == 0:
            continue
        if op == sre.SUBPATTERN and _may_be_empty(list(arg[-1])):
            continue
        if op in _REPEATS and _may_be_empty(list(arg[2])):
            continue
        if op == sre.BRANCH and any(_may_be_empty(list(b)) for b in arg[1]):
            continue
        return False
    return True


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
    # two branches that can both match nothing are two ways through every repetition: the parser
    # factors (a|a) into a(|), which shares no first character and is still 2^n on a near-miss
    if sum(1 for branch in branches if _may_be_empty(list(branch))) > 1:
        return True
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
