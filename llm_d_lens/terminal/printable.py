"""The one rendering of untrusted text for a terminal: control characters escaped, length bounded.

Plugin failure reasons, a distribution's name and version (its METADATA), a clusters file's path,
display names and labels are written by someone other than the user reading them. Printed raw,
``\\x1b[2J`` clears the screen, ``\\x1b]0;...\\x07`` sets the window title, ``\\x1b]8;;url\\x1b\\\\``
makes a link that reads as something else, a bidi override reverses what follows, and Rich reads
``[link=...]`` in a table cell as markup. So every such text goes through :func:`printable` (for
plain output and Rich ``Text``, which reads no markup) or :func:`cell` (for Rich tables and
titles, which do): each control character (C0, DEL, C1, bidi controls, line and paragraph
separators) becomes a visible escape such as ``\\x1b``, and the text is cut to ``limit`` characters
with a note of how long it was.
"""

from __future__ import annotations

import re

#: characters of one untrusted field shown; a reason longer than this is cut with its length
MAX_PRINTED = 2000

_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff\ud800-\udfff]")
_CONTROLS_BUT_LINES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e"
                                 "\u2066-\u2069\ufeff\ud800-\udfff]")


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(value: object, limit: int = MAX_PRINTED, *, lines: bool = False) -> str:
    """``value`` as text safe to print: cut to ``limit`` characters first, then every control
    character escaped. ``lines`` keeps newlines and tabs (a multi-line message of Lens's own)."""
    text = value if isinstance(value, str) else str(value)
    if len(text) > limit:
        text = f"{text[:limit]}...[{len(text) - limit} more characters]"
    return (_CONTROLS_BUT_LINES if lines else _CONTROLS).sub(_escaped, text)


def cell(value: object, limit: int = MAX_PRINTED) -> str:
    """:func:`printable`, with Rich markup escaped too: for table cells and titles, which Rich parses."""
    from rich.markup import escape

    return escape(printable(value, limit))
