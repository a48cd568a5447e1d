"""The fields Lens reads from rendered objects have the JSON types Kubernetes gives them.

kustomize renders whatever a patch writes, so a list where ``limits`` belongs or a number where
a label belongs reaches Lens. Checking those fields once, right after rendering, lets fitting and
validation read them plainly, and turns such a render into one error naming the overlay, the
object, the field path and the value, instead of a traceback halfway through fitting.
"""

from __future__ import annotations

import json
from typing import Any

from llm_d_lens.deploy.errors import RenderedObjectInvalid
from llm_d_lens.deploy.workloads import CLAIM_TEMPLATE_KIND, template_paths

_JSON_TYPES = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null", int: "number", float: "number"}
_EXPECTED = {dict: "an object", list: "a list", str: "a string"}


def check_rendered(objects: list[dict[str, Any]], where: str) -> None:
    """Raise :class:`RenderedObjectInvalid` for the first field Lens reads that has the wrong type."""
    for obj in objects:
        _Checker(obj, where).check()


class _Checker:
    def __init__(self, obj: dict[str, Any], where: str):
        self.obj, self.where = obj, where

    def fail(self, path: str, value: Any, expected: type) -> None:
        name = self.obj.get("metadata", {}).get("name") if isinstance(self.obj.get("metadata"), dict) else None
        shown = f"{self.obj.get('kind', '?')}/{name if isinstance(name, str) and name else '?'}"
        try:
            text = json.dumps(value)
        except (TypeError, ValueError):
            text = repr(value)
        kind = _JSON_TYPES.get(type(value), type(value).__name__)
        message = f"rendered {self.where}: {shown}: {path}: {text} is a JSON {kind}, not {_EXPECTED[expected]}"
        raise RenderedObjectInvalid(message, details={"overlay": self.where, "object": shown, "path": path, "value": value})

    def typed(self, path: str, value: Any, expected: type, *, required: bool = False) -> Any:
        """``value`` if it has the type; absent (None) is allowed unless ``required``."""
        if (value is None and not required) or type(value) is expected:
            return value
        self.fail(path, value, expected)

    def strings(self, path: str, value: Any) -> None:
        """A label or selector map: string keys and values."""
        for key, item in (self.typed(path, value, dict) or {}).items():
            self.typed(f'{path}["{key}"]', item, str)

    def entries(self, path: str, value: Any) -> list[tuple[str, dict[str, Any]]]:
        """A list of objects (containers, claims, requests), each with its path."""
        return [(f"{path}[{i}]", self.typed(f"{path}[{i}]", item, dict, required=True))
                for i, item in enumerate(self.typed(path, value, list) or [])]

    def check(self) -> None:
        obj = self.obj
        metadata = self.typed("metadata", obj.get("metadata"), dict) or {}
        self.typed("metadata.name", metadata.get("name"), str)
        self.strings("metadata.labels", metadata.get("labels"))
        for path in template_paths(obj):
            self.pod_template(path)
        if obj.get("kind") == CLAIM_TEMPLATE_KIND:
            self.claim_template()

    def pod_template(self, path: tuple[str, ...]) -> None:
        at, node = "", self.obj
        for key in path:  # every step down to the template is an object
            at = f"{at}.{key}" if at else key
            node = self.typed(at, node.get(key), dict)
            if node is None:
                return
        if path == ("spec",):  # a bare Pod: its spec is the pod spec
            self.pod_spec("spec", node)
            return
        template_metadata = self.typed(f"{at}.metadata", node.get("metadata"), dict) or {}
        self.strings(f"{at}.metadata.labels", template_metadata.get("labels"))
        spec = self.typed(f"{at}.spec", node.get("spec"), dict)
        if spec is not None:
            self.pod_spec(f"{at}.spec", spec)

    def pod_spec(self, at: str, spec: dict[str, Any]) -> None:
        self.strings(f"{at}.nodeSelector", spec.get("nodeSelector"))
        self.entries(f"{at}.tolerations", spec.get("tolerations"))
        self.typed(f"{at}.runtimeClassName", spec.get("runtimeClassName"), str)
        for where, claim in self.entries(f"{at}.resourceClaims", spec.get("resourceClaims")):
            for key in ("name", "resourceClaimTemplateName", "resourceClaimName"):
                self.typed(f"{where}.{key}", claim.get(key), str)
        for group in ("containers", "initContainers"):
            for where, container in self.entries(f"{at}.{group}", spec.get(group)):
                self.container(where, container)

    def container(self, at: str, container: dict[str, Any]) -> None:
        for key, expected in (("name", str), ("image", str), ("command", list), ("args", list)):
            self.typed(f"{at}.{key}", container.get(key), expected)
        resources = self.typed(f"{at}.resources", container.get("resources"), dict) or {}
        for section in ("limits", "requests"):
            for key in self.typed(f"{at}.resources.{section}", resources.get(section), dict) or {}:
                self.typed(f"{at}.resources.{section} key", key, str)
        for where, use in self.entries(f"{at}.resources.claims", resources.get("claims")):
            for key in ("name", "request"):
                self.typed(f"{where}.{key}", use.get(key), str)

    def claim_template(self) -> None:
        spec = self.typed("spec", self.obj.get("spec"), dict) or {}
        inner = self.typed("spec.spec", spec.get("spec"), dict) or {}
        devices = self.typed("spec.spec.devices", inner.get("devices"), dict) or {}
        for where, request in self.entries("spec.spec.devices.requests", devices.get("requests")):
            self.typed(f"{where}.name", request.get("name"), str)
            self.device_request(where, request)
            exactly = self.typed(f"{where}.exactly", request.get("exactly"), dict)
            if exactly is not None:
                self.device_request(f"{where}.exactly", exactly)
            for alternative, body in self.entries(f"{where}.firstAvailable", request.get("firstAvailable")):
                self.device_request(alternative, body)

    def device_request(self, at: str, body: dict[str, Any]) -> None:
        self.typed(f"{at}.deviceClassName", body.get("deviceClassName"), str)
        self.typed(f"{at}.allocationMode", body.get("allocationMode"), str)
        self.entries(f"{at}.selectors", body.get("selectors"))
