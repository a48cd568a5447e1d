"""Several instant queries as one: each part tagged with its name, joined by ``or``, split apart again.

Every request costs a round trip, and Prometheus parses, schedules and encodes each one on its
own, so a caller with a handful of queries for one instant (a telemetry refresh: an inventory and
one per quantity) sends them as one expression::

    (label_replace(<part a>, "lens_quantity", "a", "", "") or on(lens_quantity) label_replace(<part b>, ...))

``or`` keeps every left-hand series and only those right-hand ones that match none on the left.
Two parts often answer with the same label sets (an inventory grouped by the device labels and a
quantity aggregated by them), so a plain ``or`` would drop one part's series; with each part
tagged, and matched on the tag only, no part loses a series to another. Each part keeps its own
order (``label_replace`` and ``or`` keep the order of their operands in an instant query), is
evaluated at the same instant as the others, and a part whose metric is absent simply contributes
no series. :func:`split` takes the tag off again, so each part's samples are exactly what the
part alone answers.

The tag is a plain ``lens_`` label rather than a ``__`` one: Prometheus-compatible servers differ
in what they do with reserved names in answers. Prometheus 2.42 spends more CPU on the tags and set
operations than it saves on requests (30 to 50% more on 1,000 devices' parts; docs/performance.md),
so the gain is in round trips: small refreshes, or a server across a network (a telemetry refresh
now sends a shape that reads each metric once instead, ``monitoring/accelerator/refresh.py``, and
uses this module's tag). A caller whose parts
may already carry the tag (an exporter label of that name) sends them one by one instead
(:func:`carries_tag`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from llm_d_lens.prometheus.client import PrometheusClient, Sample, gather_all
from llm_d_lens.prometheus.errors import PrometheusResponseInvalid
from llm_d_lens.prometheus.promql import label_name, quote, replacement_literal

#: The label naming which part a series of a combined answer belongs to.
PART_LABEL = "lens_quantity"


def tagged(name: str, promql: str) -> str:
    """``promql`` with every series labelled ``lens_quantity="<name>"`` (the name is a literal)."""
    return f'label_replace({promql}, {quote(PART_LABEL)}, {replacement_literal(name)}, "", "")'


def combined(parts: Mapping[str, str]) -> str:
    """One expression answering every part; ``parts`` maps a name to its PromQL.

    The parts are joined as a balanced tree of ``or on(lens_quantity)``: matching on the tag alone
    keeps every right-hand series (its tag is new to the left) while Prometheus hashes one short
    label rather than each series' whole label set, and the tree's depth grows with the logarithm
    of the number of parts, not linearly, so each series is carried through few set operations.
    """
    if not parts or "" in parts:
        raise ValueError("nothing to combine, or a part without a name (an empty label value is no label)")
    return _joined([tagged(name, promql) for name, promql in parts.items()])


def _joined(expressions: Sequence[str]) -> str:
    if len(expressions) == 1:
        return expressions[0]
    middle = len(expressions) // 2
    return f"({_joined(expressions[:middle])} or on({PART_LABEL}) {_joined(expressions[middle:])})"


def carries_tag(labels: Iterable[str]) -> bool:
    """Whether series grouped by ``labels`` could already carry the tag (then combining would overwrite it)."""
    return PART_LABEL in {label_name(n) for n in labels}


def split(samples: Sequence[Sample], names: Iterable[str]) -> dict[str, list[Sample]]:
    """Each part's samples, the tag removed; every name is present, a part that answered nothing empty.

    ``ValueError`` names the first sample that carries no known part's tag (a server that dropped the
    label, or an answer to another query).
    """
    out: dict[str, list[Sample]] = {name: [] for name in names}
    for sample in samples:
        rows = out.get(sample.labels.get(PART_LABEL))  # type: ignore[arg-type]
        if rows is None:
            raise ValueError(f"a series without a known {PART_LABEL} label: {dict(sample.labels)!r}")
        labels = dict(sample.labels)  # a C-level copy and one delete: this runs once per series of the answer
        del labels[PART_LABEL]
        rows.append(Sample(labels, sample.value))
    return out


async def query_parts(client: PrometheusClient, parts: Mapping[str, str], at: float | None = None,
                      *, combine: bool = True) -> dict[str, list[Sample]]:
    """Every part's answer at ``at``: one round trip (``combine``), or one per part.

    The answers are the same either way; one request also means one evaluation instant for all
    parts, where separate ones evaluated without ``at`` may each see a newer scrape.
    """
    if not combine or len(parts) == 1:
        answers = await gather_all(*(client.query(promql, at) for promql in parts.values()))
        return dict(zip(parts, answers))
    promql = combined(parts)
    samples = await client.query(promql, at)
    try:
        return split(samples, parts)
    except ValueError as exc:
        shown = promql if len(promql) <= 300 else promql[:300] + "..."
        raise PrometheusResponseInvalid(f"Prometheus at {client.url} answered {exc} (query: {shown})",
                                        details={"url": client.url, "query": promql}) from None
