"""Starts the server's cluster watches with the app and stops them with it (see :mod:`.watched`).

A router with no routes of its own: FastAPI runs the lifespans of the routers an app includes, so
mounting this one (llm_d_lens/api/app.py ROUTERS) is the whole hook. Watches run only when
``LENS_CLUSTER_WATCH`` is on, which ``lens serve`` sets: an app a test or another program creates
reads its clusters once per request, as before.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import APIRouter

from llm_d_lens.errors import LensError


@asynccontextmanager
async def lifespan(_app: Any) -> AsyncIterator[None]:
    from llm_d_lens.cluster.served import kubectl_timeout, served_clusters
    from llm_d_lens.serving import watched

    started: list[watched.WatchedCluster] = []
    if watched.enabled():
        try:
            clusters, timeout = served_clusters(), kubectl_timeout()
        except LensError:
            pass  # a misconfigured server: every cluster route answers its 503, there is nothing to watch
        else:
            started = watched.start(clusters.clusters, timeout)
    try:
        yield
    finally:
        watched.stop(started)


router = APIRouter(lifespan=lifespan)
