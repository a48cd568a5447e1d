"""Writing ``-o json``: the bytes ``json.dumps(..., indent=2)`` writes, at the speed of its C encoder.

With ``indent`` set, ``json.dumps`` leaves its C encoder for the pure-Python one, and Lens first
rebuilt the document through ``output.to_jsonable``: on a 5,000-node overview, two walks in
Python of millions of values. :func:`dumps_indented` instead encodes once with the C encoder
(compact; objects with ``to_data``/``model_dump``/``to_dict`` converted as the encoder meets them, no walk
beforehand) and lays the compact text out with ``msgspec.json.format``, which copies every string
and number token as it is and only adds the newlines and two-space indents ``indent=2`` writes.
So the output is today's byte for byte: the same escapes (``ensure_ascii``), the same float
spellings (``1e-05``, ``1e+16``), the same order. What ``indent=2`` writes but is not JSON
(``NaN``, ``Infinity``) makes the layout step refuse, and those documents take the old path.
"""

from __future__ import annotations

import json
from typing import Any


def dumps_indented(data: Any) -> str:
    """``json.dumps(to_jsonable(data), indent=2) + "\\n"``, byte for byte."""
    import msgspec

    try:
        compact = json.dumps(data, separators=(",", ":"), default=_plain)
        return msgspec.json.format(compact, indent=2) + "\n"
    except (msgspec.DecodeError, TypeError, ValueError):
        # NaN/Infinity (not JSON, so no layout), or what the encoder cannot write: the old path
        # writes the former and raises the latter's error exactly as before
        from llm_d_lens.terminal.output import to_jsonable

        return json.dumps(to_jsonable(data), indent=2, sort_keys=False) + "\n"


def _plain(value: Any) -> Any:
    """What ``output.to_jsonable`` makes of an object the encoder cannot write itself."""
    from llm_d_lens.terminal.output import own_data

    own = own_data(value)
    if own is not NotImplemented:
        return own
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")
