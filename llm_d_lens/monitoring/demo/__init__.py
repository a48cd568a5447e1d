"""Demo telemetry: a recorded hour of exporter pages for the embedded demo cluster's devices.

``lens serve --demo`` charts this history (shifted so that it ends at the time of the request)
through the same plan and assembly as a real Prometheus; :mod:`.make_telemetry` is how the file
was written, from the profiles and the demo inventory, so every metric and label it carries is
one a profile declares.
"""

from __future__ import annotations

import gzip
import time
from collections.abc import Sequence
from functools import lru_cache
from importlib import resources
from typing import Any

from llm_d_lens.monitoring.accelerator.series import History, parse_history
from llm_d_lens.monitoring.accelerator.service import DeviceReport, Selected

HISTORY_FILE = "telemetry.prom.gz"
SOURCE = "demo telemetry (embedded, replayed to end now)"


@lru_cache(maxsize=1)
def _recorded() -> History:
    data = resources.files(__name__).joinpath(HISTORY_FILE).read_bytes()
    return parse_history(gzip.decompress(data).decode("utf-8"), SOURCE)


def history(now: float | None = None) -> History:
    """The recorded history, moved so its last instant is ``now`` (rounded down to a minute)."""
    recorded = _recorded()
    end = (time.time() if now is None else now) // 60 * 60
    return recorded.shifted(end - recorded.latest)


@lru_cache(maxsize=1)
def _demo_cluster() -> Any:
    from llm_d_lens.monitoring.demo.make_telemetry import demo_cluster

    return demo_cluster()


def demo_devices(selection: Sequence[Selected], *, at: float | None = None, node: str | None = None,
                 cluster: Any = None, mode: str | None = None) -> DeviceReport:
    """Devices as the demo history has them at ``at`` (default: its latest instant), like one exporter page.

    Without other cluster objects the joins read the demo cluster's own, which the history was written
    from: its pods are the holders the history's labels and identities name, so a busy device is attributed
    and an idle one is idle by evidence.
    """
    from llm_d_lens.monitoring.accelerator.service import samples_devices

    if cluster is None:
        cluster = _demo_cluster()
    recorded = history()
    chosen = recorded.instants[-1][1]
    if at is not None:
        earlier = [samples for t, samples in recorded.instants if t <= at]
        chosen = earlier[-1] if earlier else ()
    return samples_devices(chosen, SOURCE, selection, node=node, cluster=cluster, mode=mode)
