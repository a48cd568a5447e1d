"""The tag that names which part of a refresh a series answers, and parts sent one query each.

A telemetry refresh sends one expression per hardware that reads each metric once
(``monitoring/accelerator/refresh.py``) and tags each of its parts' series with
``lens_quantity="<part>"`` (:func:`tagged`), so series of parts sharing a label set stay apart.
The tag is a plain ``lens_`` label rather than a ``__`` one: Prometheus-compatible servers differ
in what they do with reserved names in answers. A hardware whose exporter labels may already
carry the tag (:func:`carries_tag`), or a refresh asked for one query per part, sends its parts
one by one (:func:`query_each`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from llm_d_lens.prometheus.client import PrometheusClient, Sample, gather_all
from llm_d_lens.prometheus.promql import label_name, quote, replacement_literal

#: The label naming which part a series of a combined answer belongs to.
PART_LABEL = "lens_quantity"


def tagged(name: str, promql: str) -> str:
    """``promql`` with every series labelled ``lens_quantity="<name>"`` (the name is a literal)."""
    return f'label_replace({promql}, {quote(PART_LABEL)}, {replacement_literal(name)}, "", "")'


def carries_tag(labels: Iterable[str]) -> bool:
    """Whether series grouped by ``labels`` could already carry the tag (then combining would overwrite it)."""
    return PART_LABEL in {label_name(n) for n in labels}


async def query_each(client: PrometheusClient, parts: Mapping[str, str], at: float | None = None) -> dict[str, list[Sample]]:
    """Every part's answer at ``at``, one query per part sent side by side, in the parts' order."""
    answers = await gather_all(*(client.query(promql, at) for promql in parts.values()))
    return dict(zip(parts, answers))
