"""The labels that name which part and which metric a series of a combined refresh answers.

A telemetry refresh sends one expression per hardware that reads each metric once
(``monitoring/accelerator/refresh.py``) and tags each of its parts' series with
``lens_quantity="<part>"`` (:func:`tagged`), so series of parts sharing a label set stay apart, and
copies each selection's metric name into ``lens_metric`` (:func:`named`), so the parts are joined
by ``or on(lens_metric, lens_quantity)``: plain labels every engine matches on. Matching on
``__name__`` itself is not portable (VictoriaMetrics' ``or on(__name__, ...)`` ignores the name and
drops the right side's series of another name). Both are plain ``lens_`` labels rather than ``__``
ones: Prometheus-compatible servers differ in what they do with reserved names in answers. A
hardware whose exporter labels may already carry one of them (:func:`carries_tag`), or a refresh
asked for one query per part, sends its parts one by one (:func:`query_each`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from llm_d_lens.prometheus.client import PrometheusClient, Sample, gather_all
from llm_d_lens.prometheus.promql import label_name, quote, replacement_literal

#: The label naming which part a series of a combined answer belongs to.
PART_LABEL = "lens_quantity"
#: The label carrying a selection's metric name, which the parts are joined on instead of ``__name__``.
NAME_LABEL = "lens_metric"


def tagged(name: str, promql: str) -> str:
    """``promql`` with every series labelled ``lens_quantity="<name>"`` (the name is a literal)."""
    return f'label_replace({promql}, {quote(PART_LABEL)}, {replacement_literal(name)}, "", "")'


def named(promql: str) -> str:
    """``promql`` with every series' metric name copied into ``lens_metric`` (series without a name get none)."""
    return f'label_replace({promql}, {quote(NAME_LABEL)}, "$1", "__name__", "(.+)")'


def carries_tag(labels: Iterable[str]) -> bool:
    """Whether series grouped by ``labels`` could already carry a label combining adds (it would be overwritten)."""
    return bool({PART_LABEL, NAME_LABEL} & {label_name(n) for n in labels})


async def query_each(client: PrometheusClient, parts: Mapping[str, str], at: float | None = None) -> dict[str, list[Sample]]:
    """Every part's answer at ``at``, one query per part sent side by side, in the parts' order."""
    answers = await gather_all(*(client.query(promql, at) for promql in parts.values()))
    return dict(zip(parts, answers))
