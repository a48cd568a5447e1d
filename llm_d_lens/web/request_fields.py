"""API errors name the request's fields, not the CLI's flags.

A domain raises one message for both edges, written for the command line (``pass --overlay``).
An API caller has no flags: at the API edge those flag names become the fields it can send (and,
for a server setting, the environment variable the operator sets).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from llm_d_lens.errors import LensError


def reword_text(text: str, fields: Mapping[str, str]) -> str:
    """``text`` saying ``fields[word]`` for each word (``pass --overlay`` becomes ``set overlay``)."""
    for flag, field in fields.items():
        flag_pattern = re.escape(flag) + r"(?![\w-])"  # --count, not --counter
        text = re.sub(r"\bpass " + flag_pattern, f"set {field}", text)
        text = re.sub(flag_pattern, field, text)
    return text


def reword(exc: LensError, fields: Mapping[str, str]) -> LensError:
    """The same error (same type, code and details), its message reworded by :func:`reword_text`."""
    exc.message = reword_text(exc.message, fields)
    exc.args = (exc.message, *exc.args[1:])
    return exc


@contextmanager
def flags_as_fields(fields: Mapping[str, str]) -> Iterator[None]:
    """Re-raise every LensError from the block reworded by :func:`reword`."""
    try:
        yield
    except LensError as exc:
        raise reword(exc, fields)
