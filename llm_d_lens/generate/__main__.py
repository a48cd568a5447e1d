"""``python -m llm_d_lens.generate [--check]``: write every generated file, or list the stale ones (exit 1)."""

from __future__ import annotations

import sys

from llm_d_lens.generate import stale, write


def main(argv: list[str]) -> int:
    if argv not in ([], ["--check"]):
        print("usage: python -m llm_d_lens.generate [--check]", file=sys.stderr)
        return 2
    if argv == ["--check"]:
        found = stale()
        for line in found:
            print(line, file=sys.stderr)
        if found:
            print("run: python -m llm_d_lens.generate", file=sys.stderr)
        return 1 if found else 0
    for path in write():
        print(f"wrote {path}")
    return 0


raise SystemExit(main(sys.argv[1:]))
