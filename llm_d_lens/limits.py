"""Upper bounds on the counts an API caller sends.

The CLI's user sees a typo at once; an API caller's ``10**30`` would be rendered into a manifest or
a scenario that no cluster can run. These bounds are far above any real deployment.
"""

from __future__ import annotations

#: accelerators one pod asks for: no node carries more
MAX_ACCELERATORS_PER_POD = 1024
#: pods in one pool of a benchmark scenario
MAX_REPLICAS = 10_000
#: seconds a request may ask the server to wait for something on the cluster
MAX_WAIT_SECONDS = 3600.0
#: characters of a name a caller sends (hardware, mode, guide, profile, resource): Kubernetes' longest
#: name (a DNS subdomain) has 253; a longer one names nothing and would only be echoed back
MAX_NAME_LENGTH = 253
