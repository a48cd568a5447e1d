"""Big tables made small: filter, sort and page on the server, so a 5,000-node cluster is one page of rows."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

PAGE_SIZE = 50


@dataclass
class Page:
    rows: list[dict[str, Any]]
    total: int  # rows after filtering
    page: int
    pages: int
    sort: str
    descending: bool
    query: str

    @property
    def first(self) -> int:
        return (self.page - 1) * PAGE_SIZE + 1 if self.rows else 0

    @property
    def last(self) -> int:
        return self.first + len(self.rows) - 1 if self.rows else 0


def paginate(
    rows: Sequence[dict[str, Any]],
    *,
    columns: Mapping[str, Callable[[dict[str, Any]], Any]],
    sort: str | None,
    descending: bool,
    query: str,
    page: int,
    searchable: Callable[[dict[str, Any]], str],
    page_size: int = PAGE_SIZE,
    presorted: bool = False,
) -> Page:
    """Rows whose ``searchable`` text holds every word of ``query``, sorted by a known column, one page of them.

    An unknown sort column falls back to the first; a page past the end shows the last one. With
    ``presorted`` the rows already are in that order (kept sorted, see console/views.py): without a
    query nothing but the page shown is touched.
    """
    words = [w for w in query.lower().split() if w]
    column = sort if sort in columns else next(iter(columns))
    if words:
        kept = [r for r in rows if all(w in searchable(r).lower() for w in words)]
    else:
        kept = rows if presorted else list(rows)
    if not presorted:
        key = columns[column]
        kept.sort(key=lambda r: _sortable(key(r)), reverse=descending)
    pages = max(math.ceil(len(kept) / page_size), 1)
    page = min(max(page, 1), pages)
    return Page(kept[(page - 1) * page_size: page * page_size], len(kept), page, pages, column, descending, query)


def _sortable(value: Any) -> tuple[int, Any]:
    """Numbers before text, missing values last, so a mixed column still sorts."""
    if value is None:
        return (2, 0)
    if isinstance(value, (int, float)):
        return (0, value)
    return (1, str(value).lower())
