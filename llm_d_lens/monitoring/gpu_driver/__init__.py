"""Device stacks for registered hardware: install pinned drivers, report their status, wait for presence.

Everything here reads the hardware profile (``driver`` and ``presence``) through the registry and
runs kubectl and helm only through a :class:`~llm_d_lens.runner.Runner`; no module names a vendor.

* :mod:`.install` - ``helm upgrade --install`` / ``kubectl apply -k`` of a pinned version, idempotent.
* :mod:`.status` - the DaemonSets a mode runs as, their readiness, and hardware nodes they miss.
* :mod:`.presence` - the blocking preflight: ensure NFD rules, then wait (bounded) for a labelled node.
* :mod:`.plan` - which drivers the claims of a cluster's classes need; refusals before anything runs.
"""
