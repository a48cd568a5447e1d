"""The Nimbus provider overrides one optional hook; presence, status and install stay Lens's defaults.

The Nimbus device plugin must run under the ``nimbus`` RuntimeClass where a cluster has one, and
only the cluster can say whether it does: that is what a profile cannot declare.
"""

from collections.abc import Mapping
from typing import Any

from llm_d_lens.hardware import ProfileProvider

RUNTIME_CLASSES = ["kubectl", "get", "runtimeclasses.node.k8s.io", "-o", "json"]


class NimbusProvider(ProfileProvider):
    profile_id = "nimbus-npu"

    async def extra_install_options(self, target: Any, view: Any) -> Mapping[str, Any]:
        if target.mode_name != "plugin":
            return {}
        listed = (await view.runner.arun(RUNTIME_CLASSES)).json()
        names = {item.get("metadata", {}).get("name") for item in listed.get("items", [])}
        return {"runtimeClassName": "nimbus"} if "nimbus" in names else {}
