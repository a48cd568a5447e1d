"""Built-in hardware `nvidia`: its profile is llm_d_lens/hardware/profiles/nvidia.json.

The provider adds one thing a profile cannot say: the device-plugin chart's ``runtimeClassName``
value must name a RuntimeClass that exists on *this* cluster. Where the NVIDIA container runtime
is not containerd's default (k3s, Talos, GPU Operator with the toolkit not set as default) the
plugin only sees GPUs when it runs under that RuntimeClass; where it is the default, setting it is
harmless. The class is found with the profile's ``deployment.runtime_class_matchers``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from llm_d_lens.hardware.providers import bundled_loader
from llm_d_lens.hardware.providers.base import ProfileProvider

load_profiles = bundled_loader("nvidia")

#: The device-plugin chart's value (k8s-device-plugin deployments/helm/nvidia-device-plugin/values.yaml).
RUNTIME_CLASS_VALUE = "runtimeClassName"
PLUGIN_CHART = "nvidia-device-plugin"
RUNTIME_CLASSES_ARGV = ["kubectl", "get", "runtimeclasses.node.k8s.io", "-o", "json"]


class NvidiaProvider(ProfileProvider):
    """Only the optional install hook: presence, status and install are the drivers domain's defaults."""

    profile_id = "nvidia"

    async def extra_install_options(self, target: Any, view: Any) -> Mapping[str, Any]:
        """``target`` is the drivers domain's DriverTarget, ``view`` its ClusterView (the contract names neither)."""
        if target.chart_name != PLUGIN_CHART or RUNTIME_CLASS_VALUE in target.options:
            return {}
        from llm_d_lens.k8s.objects import items, name_of

        classes = items((await view.runner.arun(RUNTIME_CLASSES_ARGV)).json())
        for pattern in self.profile().deployment.runtime_class_matchers:
            matcher = re.compile(pattern)
            for runtime_class in sorted(classes, key=name_of):
                if matcher.search(name_of(runtime_class)) or matcher.search(str(runtime_class.get("handler", ""))):
                    return {RUNTIME_CLASS_VALUE: name_of(runtime_class)}
        return {}
