"""Contract rules JSON Schema cannot express, reported exactly like schema violations."""

from __future__ import annotations

import re
from collections.abc import Iterator

from llm_d_lens.hardware.errors import ProfileIssue
from llm_d_lens.hardware.models import HardwareProfile, MetricSource

PINNED_VERSION = re.compile(r"^v?\d+\.\d+\.\d+([-+][0-9A-Za-z.+-]+)?$")
KUBE_VERSION = re.compile(r"^v?\d+\.\d+(\.\d+)?$")
PROM_MATCHER = re.compile(r'^[a-zA-Z_][a-zA-Z0-9_]*\s*(=|!=|=~|!~)\s*"(?:[^"\\]|\\.)*"$')
OVERLAY_PLACEHOLDERS = {"guide", "variant", "model_server"}
FLOATING_REFS = {"latest", "main", "master", "head", "stable", "nightly"}
UNIT_DIMENSION = {
    "percent": "ratio", "ratio": "ratio",
    "MiB": "bytes", "MB": "bytes", "GiB": "bytes", "bytes": "bytes",
    "mW": "W", "W": "W",
    "uJ": "J", "mJ": "J", "J": "J",
    "celsius": "celsius",
}


def check(profile: HardwareProfile) -> list[ProfileIssue]:
    """Every rule violation in a profile that already passed the schema."""
    checks = (_modes, _request_shapes, _pci_allowlists, _driver, _identity, _regexes, _overlay_root, _telemetry)
    return [issue for rule in checks for issue in rule(profile)]


def _modes(p: HardwareProfile) -> Iterator[ProfileIssue]:
    declared = set(p.access_modes)
    if len(declared) != len(p.access_modes):
        yield ProfileIssue("$.access_modes", "lists a mode twice", p.access_modes)
    if p.deployment.modes is None:
        if len(p.access_modes) > 1:
            yield ProfileIssue(
                "$.deployment.modes", "required when access_modes names more than one mode", has_value=False
            )
    else:
        for name in p.access_modes:
            if name not in p.deployment.modes:
                yield ProfileIssue(f"$.deployment.modes.{name}", f"access mode {name!r} has no deployment mode", has_value=False)
        for name in p.deployment.modes:
            if name not in declared:
                yield ProfileIssue(f"$.deployment.modes.{name}", f"mode {name!r} is not listed in access_modes", name)
    if p.driver is not None:
        for name in p.access_modes:
            if name not in p.driver.modes:
                yield ProfileIssue(f"$.driver.modes.{name}", f"access mode {name!r} has no driver mode", has_value=False)
        for name in p.driver.modes:
            if name not in declared:
                yield ProfileIssue(f"$.driver.modes.{name}", f"mode {name!r} is not listed in access_modes", name)
    if p.telemetry is not None:
        for name in p.telemetry.modes:
            if name not in declared:
                yield ProfileIssue(f"$.telemetry.modes.{name}", f"mode {name!r} is not listed in access_modes", name)


def _mode_path(p: HardwareProfile, name: str, field: str) -> str:
    if p.deployment.modes is None:
        top = {"resource_names": "resource_name"}.get(field, field)
        return f"$.deployment.{top}"
    return f"$.deployment.modes.{name}.{field}"


def _request_shapes(p: HardwareProfile) -> Iterator[ProfileIssue]:
    for name, mode in p.effective_modes().items():
        if mode.request_model == "dra":
            for field in ("device_class", "claim_request_name"):
                if not getattr(mode, field):
                    yield ProfileIssue(_mode_path(p, name, field), f"a dra mode must name its {field}", getattr(mode, field))
        elif mode.request_model == "extended-resource":
            if not mode.resource_names:
                yield ProfileIssue(
                    _mode_path(p, name, "resource_names"), "an extended-resource mode must name its resource names", mode.resource_names
                )
            if mode.device_class:
                yield ProfileIssue(_mode_path(p, name, "device_class"), "an extended-resource mode takes no device class", mode.device_class)
        for resource in mode.benchmark_profiles_by_resource:
            if resource not in mode.resource_names:
                yield ProfileIssue(
                    _mode_path(p, name, "benchmark_profiles_by_resource"), "names a resource this mode does not request", resource
                )


def _pci_allowlists(p: HardwareProfile) -> Iterator[ProfileIssue]:
    for name in p.effective_modes():
        supported, domain, attribute = p.pci_allowlist(name)
        if not supported:
            continue
        where = "$.deployment" if p.deployment.modes is None or p.deployment.modes[name].supports_pci_allowlist is None else f"$.deployment.modes.{name}"
        if not domain:
            yield ProfileIssue(f"{where}.pci_attribute_domain", "a PCI allowlist must name its attribute domain", domain)
        if not attribute:
            yield ProfileIssue(f"{where}.pci_attribute", "a PCI allowlist must name its attribute", attribute)


def _driver(p: HardwareProfile) -> Iterator[ProfileIssue]:
    if p.driver is None:
        return
    for name, mode in p.driver.modes.items():
        base = f"$.driver.modes.{name}"
        if p.driver.installer == "helm":
            if not mode.chart_version:
                yield ProfileIssue(f"{base}.chart_version", "a helm driver must pin its chart version", mode.chart_version)
            if not mode.repo:
                yield ProfileIssue(f"{base}.repo", "a helm driver must name its chart repository", mode.repo)
        if mode.chart_version is not None and not PINNED_VERSION.match(mode.chart_version):
            yield ProfileIssue(f"{base}.chart_version", "must be a pinned release version such as 1.2.3 (no latest, no ranges)", mode.chart_version)
        if p.driver.installer == "kustomize" and ("://" in mode.manifest_ref or mode.manifest_ref.startswith("github.com/")):
            ref = re.search(r"[?&]ref=([^&]+)", mode.manifest_ref)
            if not ref or ref.group(1).lower() in FLOATING_REFS:
                yield ProfileIssue(f"{base}.manifest_ref", "a remote kustomize ref must pin ?ref= to a release", mode.manifest_ref)
        if mode.min_kubernetes_version is not None and not KUBE_VERSION.match(mode.min_kubernetes_version):
            yield ProfileIssue(f"{base}.min_kubernetes_version", "is not a Kubernetes version such as 1.32.0", mode.min_kubernetes_version)


def _identity(p: HardwareProfile) -> Iterator[ProfileIssue]:
    for i, prefix in enumerate(p.resource_prefixes):
        if "/" not in prefix:
            yield ProfileIssue(f"$.resource_prefixes[{i}]", "a resource prefix has a domain and a slash, e.g. vendor.com/gpu", prefix)
    if p.upstream_labels and (p.upstream_variant, p.upstream_vendor) not in p.label_pairs and p.upstream_vendor not in {
        vendor for _, vendor in p.label_pairs
    }:
        yield ProfileIssue("$.upstream_labels", "none of the pairs carries upstream_vendor", [l.model_dump() for l in p.upstream_labels])


def _regex_fields(p: HardwareProfile) -> Iterator[tuple[str, str]]:
    for i, pattern in enumerate(p.deployment.runtime_class_matchers):
        yield f"$.deployment.runtime_class_matchers[{i}]", pattern
    for i, pattern in enumerate(p.planning.aic_system_patterns):
        yield f"$.planning.aic_system_patterns[{i}]", pattern
    for i, pattern in enumerate(p.inventory.partition_resource_patterns):
        yield f"$.inventory.partition_resource_patterns[{i}]", pattern
    for i, pattern in enumerate(p.inventory.non_device_resource_patterns):
        yield f"$.inventory.non_device_resource_patterns[{i}]", pattern
    allocation = p.telemetry.allocation if p.telemetry else None
    if allocation and allocation.device_name_pattern is not None:
        yield "$.telemetry.allocation.device_name_pattern", allocation.device_name_pattern
    if allocation and allocation.resource_id_pattern is not None:
        yield "$.telemetry.allocation.resource_id_pattern", allocation.resource_id_pattern


def _regexes(p: HardwareProfile) -> Iterator[ProfileIssue]:
    for path, pattern in _regex_fields(p):
        try:
            compiled = re.compile(pattern)
        except re.error as exc:
            yield ProfileIssue(path, f"is not a valid regular expression ({exc})", pattern)
            continue
        if path.endswith("resource_id_pattern") and "pci" not in compiled.groupindex:
            yield ProfileIssue(path, "must contain a named group 'pci', e.g. (?P<pci>[0-9a-f:.]+)", pattern)


def _overlay_root(p: HardwareProfile) -> Iterator[ProfileIssue]:
    root = p.deployment.overlay_root
    for name in re.findall(r"{([^}]*)}", root):
        if name not in OVERLAY_PLACEHOLDERS:
            yield ProfileIssue("$.deployment.overlay_root", f"unknown placeholder {{{name}}}; use {{guide}}, {{variant}} or {{model_server}}", root)
    if root.startswith("/") or ".." in root.split("/"):
        yield ProfileIssue("$.deployment.overlay_root", "must be a relative path inside the llm-d source", root)


def _telemetry(p: HardwareProfile) -> Iterator[ProfileIssue]:
    t = p.telemetry
    if t is None:
        return
    for quantity, source in t.device_metric_sources.items():
        base = f"$.telemetry.device_metric_sources.{quantity}"
        yield from _source_issues(base, source)
    for quantity, expression in t.device_metrics.items():
        declared = [m for s in t.device_metric_sources.values() for m in s.metrics]
        own = t.device_metric_sources.get(quantity)  # type: ignore[call-overload]
        wanted = own.metrics if own else declared
        if wanted and not any(re.search(rf"(?<![\w:]){re.escape(m)}(?![\w:])", expression) for m in wanted):
            yield ProfileIssue(
                f"$.telemetry.device_metrics.{quantity}",
                f"uses none of the metrics device_metric_sources declares ({', '.join(wanted)})",
                expression,
            )
    joins = set(t.modes.values()) | {t.allocation_join}
    if "pod-status" in joins and not (t.allocation and t.allocation.resource_id_pattern):
        yield ProfileIssue("$.telemetry.allocation.resource_id_pattern", "the pod-status join needs a resource_id_pattern", None)


def _source_issues(base: str, source: MetricSource) -> Iterator[ProfileIssue]:
    if UNIT_DIMENSION[source.unit] != source.output_unit:
        yield ProfileIssue(f"{base}.output_unit", f"cannot convert {source.unit} to {source.output_unit}", source.output_unit)
    if source.combine == "divide" and len(source.metrics) != 2:
        yield ProfileIssue(f"{base}.metrics", "divide needs exactly two metrics", source.metrics)
    for i, matcher in enumerate(source.matchers):
        if not PROM_MATCHER.match(matcher):
            yield ProfileIssue(f"{base}.matchers[{i}]", 'is not a PromQL label matcher such as location="gpu"', matcher)
