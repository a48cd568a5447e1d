"""Contract rules JSON Schema cannot express, reported exactly like schema violations."""

from __future__ import annotations

import re
from collections.abc import Iterator

from llm_d_lens.hardware import k8s_names
from llm_d_lens.hardware.benchmark_profiles import KnownProfiles, known_profiles
from llm_d_lens.hardware.errors import ProfileIssue
from llm_d_lens.hardware.quantities import PROM_METRIC_NAME, QUANTITY_UNITS
from llm_d_lens.hardware.models import DriverRelease, Exporter, FallbackSource, HardwareProfile, MetricSource
from llm_d_lens.hardware.regex_safety import backtracking_problem
from llm_d_lens.hardware.schema import json_path

# \Z, not $ (which also matches before a trailing newline), and ASCII, so \d is 0-9 and not any script's digits
PINNED_VERSION = re.compile(r"^v?\d+\.\d+\.\d+([-+][0-9A-Za-z.+-]+)?\Z", re.ASCII)
KUBE_VERSION = re.compile(r"^v?\d+\.\d+(\.\d+)?\Z", re.ASCII)
#: A helm value path the default provider can pass with --set-json: names joined by dots, no escapes or indexes.
HELM_VALUE_KEY = re.compile(r"^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*\Z", re.ASCII)
PROM_MATCHER = re.compile(r'^[a-zA-Z_][a-zA-Z0-9_]*\s*(=|!=|=~|!~)\s*"(?:[^"\\]|\\.)*"\Z', re.ASCII)
#: a ref a remote kustomization may pin: a release tag (v1.2.3, 1.2.3-rc.1) or a commit (7 to 40 hex digits);
#: a branch such as develop moves, so what is installed would change under the same profile
PINNED_REF = re.compile(r"(v?\d+\.\d+\.\d+([-+][0-9A-Za-z.+-]+)?|[0-9a-f]{7,40})\Z", re.ASCII)
_SCP_LIKE = re.compile(r"^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:")  # git@github.com:org/repo
#: one directory name: what {variant} is replaced with in a path template
DIRECTORY_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z", re.ASCII)
#: one segment of an overlay root once its placeholders and * are taken out: no backslash, colon or space
OVERLAY_SEGMENT = re.compile(r"[A-Za-z0-9._-]*\Z", re.ASCII)
OVERLAY_PLACEHOLDERS = {"guide", "variant", "model_server"}
FLOATING_REFS = {"latest", "main", "master", "head", "stable", "nightly"}
UNIT_DIMENSION = {
    "percent": "ratio", "ratio": "ratio",
    "MiB": "bytes", "MB": "bytes", "GiB": "bytes", "bytes": "bytes",
    "mW": "W", "W": "W",
    "uJ": "J", "mJ": "J", "J": "J",
    "celsius": "celsius",
    "count": "count", "code": "code", "B/s": "B/s", "flag": "flag",
    "MHz": "Hz", "Hz": "Hz", "bitmask": "bitmask",
}
PROM_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*\Z", re.ASCII)
# What a PromQL expression holds besides metric names: strings, matcher blocks, ranges, label lists.
_PROMQL_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_PROMQL_BRACES = re.compile(r"\{[^{}]*\}|\[[^\[\]]*\]")
_PROMQL_LABEL_LISTS = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)")
_PROMQL_IDENTIFIER = re.compile(r"(?<![\w.:])[a-zA-Z_:][a-zA-Z0-9_:]*(?![\w:])(?!\s*\()")
_PROMQL_KEYWORDS = {"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring",
                    "group_left", "group_right", "inf", "nan", "atan2", "start", "end"}


def check(profile: HardwareProfile) -> list[ProfileIssue]:
    """Every rule violation in a profile that already passed the schema."""
    checks = (_modes, _request_shapes, _ownership, _pci_allowlists, _driver, _names, _duplicates, _benchmark_alias,
              _identity, _kubernetes_names, _regexes, _overlay_root, _telemetry, _aic_systems)
    return [issue for rule in checks for issue in rule(profile)]


def advise(profile: HardwareProfile, known: KnownProfiles | None = None) -> list[ProfileIssue]:
    """Warnings: what is valid but probably wrong, shown by ``validate`` and ``doctor`` without failing them.

    A benchmark profile llm-d-benchmark does not know (as far as this Lens knows: a newer release
    may), and a ``deployment.arch`` that is not the overlay directory Lens actually uses.
    """
    known = known if known is not None else known_profiles()
    found: list[ProfileIssue] = []
    for path, name in _benchmark_names(profile):
        if name and name not in known.names:
            nearest = known.nearest(name)
            hint = f"; nearest: {', '.join(nearest)}" if nearest else f"; known: {', '.join(sorted(known.names))}"
            found.append(ProfileIssue(path, f"is not an llm-d-benchmark accelerator profile Lens knows "
                                      f"({known.describe()}){hint}. A newer llm-d-benchmark may know it: add it "
                                      "with LENS_BENCHMARK_PROFILES, or add the profile to llm-d-benchmark first", name))
    from llm_d_lens.hardware.guide_forms import notes

    found += notes(profile)
    if profile.deployment.arch != profile.upstream_variant:
        found.append(ProfileIssue("$.deployment.arch", f"differs from upstream_variant {profile.upstream_variant!r}; "
                                  "the overlay directory is upstream_variant (the guide's 'wrong arch' error), "
                                  "so set arch to the same name", profile.deployment.arch))
    return found


def registered_issues(profile: HardwareProfile, telemetry_providers: frozenset[str]) -> list[ProfileIssue]:
    """Errors only the installed environment can show: a telemetry provider id nobody registered."""
    t = profile.telemetry
    if t is None or t.provider_id in telemetry_providers:
        return []
    from llm_d_lens.hardware.telemetry_providers import GROUP

    return [ProfileIssue("$.telemetry.provider_id", f"names no registered telemetry provider (registered: "
                         f"{', '.join(sorted(telemetry_providers))}); use declarative, or register one in the "
                         f"{GROUP!r} entry-point group", t.provider_id)]


def _benchmark_names(p: HardwareProfile) -> Iterator[tuple[str, str | None]]:
    yield "$.benchmark_profile", p.benchmark_profile
    if p.evaluation_profile != p.benchmark_profile:
        yield "$.evaluation_profile", p.evaluation_profile
    for name, mode in p.effective_modes().items():
        yield _mode_path(p, name, "benchmark_profile"), mode.benchmark_profile
        for resource, bench in mode.benchmark_profiles_by_resource.items():
            yield json_path(("deployment", "modes", name, "benchmark_profiles_by_resource", resource)), bench


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
            if name not in p.driver.modes and name not in p.driver.unmanaged_modes:
                yield ProfileIssue(
                    f"$.driver.modes.{name}", f"access mode {name!r} has no driver mode (nor an unmanaged_modes entry)", has_value=False
                )
            if name in p.driver.modes and name in p.driver.unmanaged_modes:
                yield ProfileIssue(f"$.driver.unmanaged_modes.{name}", f"access mode {name!r} is both managed and unmanaged", name)
        for group in ("modes", "unmanaged_modes"):
            for name in getattr(p.driver, group):
                if name not in declared:
                    yield ProfileIssue(f"$.driver.{group}.{name}", f"mode {name!r} is not listed in access_modes", name)
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
        yield from _release_issues(base, mode, p.driver.installer)
        own = (mode.namespace, mode.release_name or mode.manifest_ref)
        seen = {own}
        for i, before in enumerate(mode.prerequisites):
            where = f"{base}.prerequisites[{i}]"
            yield from _release_issues(where, before, p.driver.installer)
            key = (before.namespace, before.release_name or before.manifest_ref)
            if key in seen:
                what = "the mode's own release" if key == own else "an earlier prerequisite's release"
                yield ProfileIssue(f"{where}.release_name", f"is {what}: one release cannot be installed twice", key[1])
            seen.add(key)


def _release_issues(base: str, release: DriverRelease, installer: str) -> Iterator[ProfileIssue]:
    """Pinned, locatable and passable: the same checks for a driver mode and for each of its prerequisites."""
    if installer == "helm":
        if not release.chart_version:
            yield ProfileIssue(f"{base}.chart_version", "a helm driver must pin its chart version", release.chart_version)
        if not release.repo:
            yield ProfileIssue(f"{base}.repo", "a helm driver must name its chart repository", release.repo)
    if release.chart_version is not None and not PINNED_VERSION.match(release.chart_version):
        yield ProfileIssue(f"{base}.chart_version", "must be a pinned release version such as 1.2.3 (no latest, no ranges)", release.chart_version)
    if installer == "kustomize" and is_remote_ref(release.manifest_ref):
        refs = re.findall(r"[?&]ref=([^&#]*)", release.manifest_ref)
        if len(refs) != 1 or not PINNED_REF.match(refs[0]) or refs[0].lower() in FLOATING_REFS:
            yield ProfileIssue(f"{base}.manifest_ref", "a remote kustomize ref must pin ?ref= to a release tag "
                               "(such as v1.2.3) or a commit", release.manifest_ref)
    if installer == "helm":
        for key in release.options:
            if not HELM_VALUE_KEY.match(key):
                yield ProfileIssue(f"{base}.options", "a helm option key is a dotted path of names, e.g. gfd.enabled", key)
    if release.min_kubernetes_version is not None and not KUBE_VERSION.match(release.min_kubernetes_version):
        yield ProfileIssue(f"{base}.min_kubernetes_version", "is not a Kubernetes version such as 1.32.0", release.min_kubernetes_version)


def is_remote_ref(ref: str) -> bool:
    """Whether a kustomize ref is fetched from elsewhere: a URL, an scp-like git address, or a path whose
    first segment is a host name (github.com/..., GitHub.com/..., gitlab.example.org/...)."""
    if "://" in ref or _SCP_LIKE.match(ref):
        return True
    first = ref.split("/", 1)[0]
    return "." in first.strip(".") and "/" in ref


def _names(p: HardwareProfile) -> Iterator[ProfileIssue]:
    """Names other profiles and the cluster are matched by: never empty (an empty alias matches nothing, or all)."""
    for field in ("accelerator_keys", "device_classes"):
        for i, name in enumerate(getattr(p, field)):
            if not name.strip():
                yield ProfileIssue(f"$.{field}[{i}]", "is empty; give a name or leave the entry out", name)
    for field in ("benchmark_profile", "evaluation_profile"):
        value = getattr(p, field)
        if value is not None and not value.strip():
            yield ProfileIssue(f"$.{field}", "is empty; give a name or null", value)
    for i, name in enumerate(p.inventory.dra_drivers):
        if not name.strip():
            yield ProfileIssue(f"$.inventory.dra_drivers[{i}]", "is empty; give a name or leave the entry out", name)


def _duplicates(p: HardwareProfile) -> Iterator[ProfileIssue]:
    """A name listed twice is a copy-paste slip; aliases compare as a user types them, ignoring case."""
    lists = {"accelerator_keys": (p.accelerator_keys, str.lower), "device_classes": (p.device_classes, str),
             "resource_prefixes": (p.resource_prefixes, str), "inventory.dra_drivers": (p.inventory.dra_drivers, str)}
    for field, (names, fold) in lists.items():
        seen: set[str] = set()
        for i, name in enumerate(names):
            if fold(name) in seen:
                yield ProfileIssue(f"$.{field}[{i}]", "is listed twice", name)
            seen.add(fold(name))


def _benchmark_alias(p: HardwareProfile) -> Iterator[ProfileIssue]:
    # the guide names them together: both are the benchmark's accelerator.profile, so two values cannot both hold
    if p.evaluation_profile and p.evaluation_profile.strip() and p.benchmark_profile is not None \
            and p.evaluation_profile != p.benchmark_profile:
        yield ProfileIssue("$.evaluation_profile", f"differs from benchmark_profile {p.benchmark_profile!r}; both name "
                           "the llm-d-benchmark accelerator.profile, so give one value (or leave evaluation_profile out)",
                           p.evaluation_profile)


def _ownership(p: HardwareProfile) -> Iterator[ProfileIssue]:
    """What a mode requests is this profile's own identity (the guide: no cross-talk).

    Registration and ``validate`` then refuse an identity another registered profile claims, so a
    mode can neither ask for another vendor's device class or resource nor one nobody resolves to.
    """
    classes = set(p.device_classes)
    for name, mode in p.effective_modes().items():
        if mode.device_class and mode.device_class not in classes:
            yield ProfileIssue(_mode_path(p, name, "device_class"), "is not among this profile's device_classes "
                               f"({', '.join(p.device_classes) or 'none'}); a mode requests only this hardware's "
                               "device classes, listed there so no other profile can claim them", mode.device_class)
        for i, resource in enumerate(mode.resource_names):
            if not any(resource.startswith(prefix) for prefix in p.resource_prefixes):
                path = _mode_path(p, name, "resource_names") + ("" if p.deployment.modes is None else f"[{i}]")
                yield ProfileIssue(path, "is outside this profile's resource_prefixes "
                                   f"({', '.join(p.resource_prefixes) or 'none'}); a mode requests only this "
                                   "hardware's resources", resource)
    d = p.deployment
    if d.modes is not None:  # the top-level fields are the single mode's only without modes (checked above)
        if d.device_class and d.device_class not in classes:
            yield ProfileIssue("$.deployment.device_class", "is not among this profile's device_classes", d.device_class)
        if d.resource_name and not any(d.resource_name.startswith(prefix) for prefix in p.resource_prefixes):
            yield ProfileIssue("$.deployment.resource_name", "is outside this profile's resource_prefixes", d.resource_name)
    drivers = set(p.inventory.dra_drivers)
    allocation = p.telemetry.allocation if p.telemetry else None
    for i, driver in enumerate(allocation.drivers if allocation else []):
        if driver not in drivers:
            yield ProfileIssue(f"$.telemetry.allocation.drivers[{i}]", "is not among this profile's inventory.dra_drivers "
                               f"({', '.join(p.inventory.dra_drivers) or 'none'}); telemetry joins only this "
                               "hardware's allocations", driver)


def _kubernetes_names(p: HardwareProfile) -> Iterator[ProfileIssue]:
    """Names that reach the API server, checked as it checks them."""
    def subdomains(path: str, names: list[str], limit: int = k8s_names.DNS1123_SUBDOMAIN_MAX) -> Iterator[ProfileIssue]:
        for i, name in enumerate(names):
            if name.strip() and (problem := k8s_names.dns_subdomain_problem(name, limit)):
                yield ProfileIssue(f"{path}[{i}]", problem, name)

    yield from subdomains("$.device_classes", p.device_classes)
    yield from subdomains("$.inventory.dra_drivers", p.inventory.dra_drivers, k8s_names.DRIVER_NAME_MAX)
    allocation = p.telemetry.allocation if p.telemetry else None
    if allocation:
        yield from subdomains("$.telemetry.allocation.drivers", allocation.drivers, k8s_names.DRIVER_NAME_MAX)
    for i, prefix in enumerate(p.resource_prefixes):
        if problem := k8s_names.resource_prefix_problem(prefix):
            yield ProfileIssue(f"$.resource_prefixes[{i}]", problem, prefix)
    for name, mode in p.effective_modes().items():
        if mode.device_class and (problem := k8s_names.dns_subdomain_problem(mode.device_class)):
            yield ProfileIssue(_mode_path(p, name, "device_class"), problem, mode.device_class)
        if mode.claim_request_name and (problem := k8s_names.dns_label_problem(mode.claim_request_name)):
            yield ProfileIssue(_mode_path(p, name, "claim_request_name"), problem, mode.claim_request_name)
        for i, resource in enumerate(mode.resource_names):
            if problem := k8s_names.qualified_name_problem(resource, prefix_required=True):
                path = _mode_path(p, name, "resource_names") + ("" if p.deployment.modes is None else f"[{i}]")
                yield ProfileIssue(path, f"is not an extended resource name: {problem}", resource)
        if p.deployment.modes is not None:
            yield from _label_map(("deployment", "modes", name, "node_selector"), mode.node_selector)
    selectors: list[tuple[tuple[str | int, ...], dict[str, str], bool]] = [
        (("node_label_selector",), p.node_label_selector, True), (("deployment", "node_selector"), p.deployment.node_selector, False)]
    if p.presence is not None:
        selectors.append((("presence", "node_label_selector"), p.presence.node_label_selector, True))
        for i, alternative in enumerate(p.presence.alternatives):
            if not alternative:
                yield ProfileIssue(f"$.presence.alternatives[{i}]", "an empty label set would match every node", alternative)
            selectors.append((("presence", "alternatives", i), alternative, True))
    for location, labels, wildcard in selectors:
        yield from _label_map(location, labels, wildcard=wildcard)
    for i, toleration in enumerate(p.deployment.tolerations):
        if problem := k8s_names.qualified_name_problem(toleration.key):
            yield ProfileIssue(f"$.deployment.tolerations[{i}].key", f"is not a taint key: {problem}", toleration.key)
    keys = [("$.inventory.product_labels", p.inventory.product_labels), ("$.inventory.count_labels", p.inventory.count_labels)]
    for base, names in keys:
        for i, key in enumerate(names):
            if problem := k8s_names.qualified_name_problem(key):
                yield ProfileIssue(f"{base}[{i}]", f"is not a label key: {problem}", key)
    for i, memory in enumerate(p.inventory.memory_labels):
        if problem := k8s_names.qualified_name_problem(memory.label):
            yield ProfileIssue(f"$.inventory.memory_labels[{i}].label", f"is not a label key: {problem}", memory.label)


def _label_map(location: tuple[str | int, ...], labels: dict[str, str], *, wildcard: bool = False) -> Iterator[ProfileIssue]:
    for key, value in labels.items():
        if problem := k8s_names.qualified_name_problem(key):
            yield ProfileIssue(json_path(location), f"has a key that is not a label key ({problem})", key)
        elif problem := k8s_names.label_value_problem(value, wildcard=wildcard):
            yield ProfileIssue(json_path((*location, key)), problem, value)


def _identity(p: HardwareProfile) -> Iterator[ProfileIssue]:
    if p.upstream_labels and (p.upstream_variant, p.upstream_vendor) not in p.label_pairs and p.upstream_vendor not in {
        vendor for _, vendor in p.label_pairs
    }:
        yield ProfileIssue("$.upstream_labels", "none of the pairs carries upstream_vendor", [l.to_data() for l in p.upstream_labels])


def _regex_fields(p: HardwareProfile) -> Iterator[tuple[str, str]]:
    for i, pattern in enumerate(p.deployment.runtime_class_matchers):
        yield f"$.deployment.runtime_class_matchers[{i}]", pattern
    for i, pattern in enumerate(p.planning.aic_system_patterns):
        yield f"$.planning.aic_system_patterns[{i}]", pattern
    for i, row in enumerate(p.planning.aic_systems):
        yield f"$.planning.aic_systems[{i}].product_pattern", row.product_pattern
    for i, pattern in enumerate(p.inventory.partition_resource_patterns):
        yield f"$.inventory.partition_resource_patterns[{i}]", pattern
    for i, pattern in enumerate(p.inventory.non_device_resource_patterns):
        yield f"$.inventory.non_device_resource_patterns[{i}]", pattern
    for i, pattern in enumerate(p.inventory.shared_resource_patterns):
        yield f"$.inventory.shared_resource_patterns[{i}]", pattern
    for i, pattern in enumerate(p.inventory.fractional_resource_patterns):
        yield f"$.inventory.fractional_resource_patterns[{i}]", pattern
    for name, mode in sorted(p.effective_modes().items()):
        if mode.partition_name_pattern is not None:
            yield f"$.deployment.modes.{name}.partition_name_pattern", mode.partition_name_pattern
    allocation = p.telemetry.allocation if p.telemetry else None
    if allocation and allocation.resource_id_pattern is not None:
        yield "$.telemetry.allocation.resource_id_pattern", allocation.resource_id_pattern


def _regexes(p: HardwareProfile) -> Iterator[ProfileIssue]:
    for path, pattern in _regex_fields(p):
        try:
            compiled = re.compile(pattern)
            slow = backtracking_problem(pattern)
        except re.error as exc:
            yield ProfileIssue(path, f"is not a valid regular expression ({exc})", pattern)
            continue
        if slow is not None:
            yield ProfileIssue(path, f"is refused: it {slow} (see docs/limits.md)", pattern)
            continue
        if path.endswith("resource_id_pattern") and "pci" not in compiled.groupindex:
            yield ProfileIssue(path, "must contain a named group 'pci', e.g. (?P<pci>[0-9a-f:.]+)", pattern)


def _aic_systems(p: HardwareProfile) -> Iterator[ProfileIssue]:
    # a system this profile maps products to must resolve back to this profile (`lens hardware resolve --aic-system`)
    patterns = []
    for pattern in p.planning.aic_system_patterns:
        try:
            patterns.append(re.compile(pattern))
        except re.error:
            continue  # reported by _regexes
    for i, row in enumerate(p.planning.aic_systems):
        if not any(pattern.search(row.system) for pattern in patterns):
            yield ProfileIssue(f"$.planning.aic_systems[{i}].system", "matches none of planning.aic_system_patterns", row.system)


def _overlay_root(p: HardwareProfile) -> Iterator[ProfileIssue]:
    # {variant} is filled with upstream_variant: one directory, or the template could leave the source
    if not DIRECTORY_NAME.match(p.upstream_variant) or p.upstream_variant in (".", ".."):
        yield ProfileIssue("$.upstream_variant", "must be one directory name under modelserver/ (no /, . or ..)", p.upstream_variant)
    templates = [("$.deployment.overlay_root", p.deployment.overlay_root)]
    templates += [(f"$.deployment.extra_overlay_roots[{i}]", t) for i, t in enumerate(p.deployment.extra_overlay_roots)]
    for path, root in templates:
        for name in re.findall(r"{([^}]*)}", root):
            if name not in OVERLAY_PLACEHOLDERS:
                yield ProfileIssue(path, f"unknown placeholder {{{name}}}; use {{guide}}, {{variant}} or {{model_server}}", root)
        segments = root.split("/")
        if root.startswith("/") or ".." in segments or "" in segments or "." in segments:
            yield ProfileIssue(path, "must be a relative path inside the llm-d source", root)
        elif any(not OVERLAY_SEGMENT.match(re.sub(r"{[^}]*}", "", segment).replace("*", "")) for segment in segments):
            yield ProfileIssue(path, "must be a relative path inside the llm-d source: segments of letters, digits, "
                               "'.', '_' and '-' joined by '/' (no backslash, drive or space), besides the "
                               "placeholders and *", root)
        if any("*" in segment and segment != "*" and not ("{variant}" in segment and segment.count("*") == 1)
               for segment in segments):
            yield ProfileIssue(path, "* must be a whole path segment, or follow {variant} as in {variant}-*", root)


def _telemetry(p: HardwareProfile) -> Iterator[ProfileIssue]:
    t = p.telemetry
    if t is None:
        return
    for quantity, source in t.device_metric_sources.items():
        base = f"$.telemetry.device_metric_sources.{quantity}"
        yield from _source_issues(base, source)
        for i, fallback in enumerate(source.fallbacks):
            yield from _source_issues(f"{base}.fallbacks[{i}]", fallback, source.output_unit)
        if source.output_unit != QUANTITY_UNITS[quantity]:
            yield ProfileIssue(f"{base}.output_unit", f"{quantity} is reported in {QUANTITY_UNITS[quantity]}", source.output_unit)
    yield from _device_metrics(p)
    if t.exporter is not None:
        yield from _exporter(t.exporter)
    yield from _tiles(p)
    yield from _label_names(p)
    joins = set(t.modes.values()) | {t.allocation_join}
    if "pod-status" in joins and not (t.allocation and t.allocation.resource_id_pattern):
        yield ProfileIssue("$.telemetry.allocation.resource_id_pattern", "the pod-status join needs a resource_id_pattern", None)


def _exporter(exporter: Exporter) -> Iterator[ProfileIssue]:
    base = "$.telemetry.exporter"
    if (exporter.release is None) == (exporter.unmanaged_reason is None):
        yield ProfileIssue(f"{base}.release", "give exactly one of release (Lens installs the chart) or unmanaged_reason",
                           exporter.unmanaged_reason, has_value=exporter.unmanaged_reason is not None)
    if exporter.release is not None:
        yield from _release_issues(f"{base}.release", exporter.release, "helm")
    for i, selector in enumerate(exporter.pod_selectors):
        if not selector:
            yield ProfileIssue(f"{base}.pod_selectors[{i}]", "an empty label set would select every pod", selector)


def promql_metric_names(expression: str) -> list[str]:
    """The metric names a PromQL expression selects (functions, keywords and label names left out)."""
    text = _PROMQL_STRINGS.sub(" ", expression)
    previous = None
    while previous != text:  # nested blocks, innermost first
        previous, text = text, _PROMQL_BRACES.sub(" ", text)
    text = _PROMQL_LABEL_LISTS.sub(" ", text)
    names = [m.group(0) for m in _PROMQL_IDENTIFIER.finditer(text)]
    return list(dict.fromkeys(n for n in names if n.lower() not in _PROMQL_KEYWORDS))


def _device_metrics(p: HardwareProfile) -> Iterator[ProfileIssue]:
    """device_metrics are the dashboards' PromQL; they must read the metrics the sources declare."""
    t = p.telemetry
    assert t is not None
    declared = list(dict.fromkeys(m for s in t.device_metric_sources.values() for m in source_metrics(s)))
    if not declared:
        return  # a profile without sources (the guide's minimal template) has nothing to check against
    for quantity, expression in t.device_metrics.items():
        own = t.device_metric_sources.get(quantity)  # type: ignore[call-overload]
        if own is not None and own.metrics == [expression.strip()] and not own.matchers:
            continue  # the guide's short form, read as this very source (guide_forms): nothing can disagree
        if own is not None:
            # one rule per quantity: the refresh and the dashboard PromQL are both generated from the source
            yield ProfileIssue(
                f"$.telemetry.device_metrics.{quantity}",
                f"is generated from device_metric_sources.{quantity} (lens telemetry queries --dashboard prints it); "
                "a second, hand-written rule can disagree with it, so remove this entry",
                expression,
            )
            continue
        wanted = declared
        used = promql_metric_names(expression)
        stray = [name for name in used if name not in wanted]
        if not used or stray:
            what = f"uses {', '.join(stray)}, which" if stray else "uses none of the metrics"
            whose = f"device_metric_sources.{quantity}" if own else "device_metric_sources"
            yield ProfileIssue(
                f"$.telemetry.device_metrics.{quantity}",
                f"{what} {whose} does not declare ({', '.join(wanted)})" if stray
                else f"{what} {whose} declares ({', '.join(wanted)})",
                expression,
            )


def _tiles(p: HardwareProfile) -> Iterator[ProfileIssue]:
    """A device is either folded from its tiles or listed per tile: every source must agree."""
    t = p.telemetry
    assert t is not None
    folded = {q: s.tile_aggregation for q, s in t.device_metric_sources.items() if s.tile_aggregation != "none"}
    if not folded:
        return
    unfolded = [q for q, s in t.device_metric_sources.items() if s.tile_aggregation == "none"]
    if unfolded:
        yield ProfileIssue(
            f"$.telemetry.device_metric_sources.{unfolded[0]}.tile_aggregation",
            f"is none while {', '.join(sorted(folded))} fold tiles; set tile_aggregation on every source or on none",
            "none",
        )
    if t.label_schema.tile is None and t.label_schema.partition is None:
        yield ProfileIssue("$.telemetry.label_schema", "tile_aggregation needs a tile or partition label to fold", None)


def _label_names(p: HardwareProfile) -> Iterator[ProfileIssue]:
    """Label and metric names go into generated PromQL, so each must be a valid name."""
    t = p.telemetry
    assert t is not None
    for field_name, value in t.label_schema.to_data().items():
        names = value if isinstance(value, list) else [value] if value is not None else []
        for i, name in enumerate(names):
            if not PROM_LABEL_NAME.match(name):
                path = f"$.telemetry.label_schema.{field_name}" + (f"[{i}]" if isinstance(value, list) else "")
                yield ProfileIssue(path, "is not a Prometheus label name", name)
    if t.source_label is not None and not PROM_LABEL_NAME.match(t.source_label):
        yield ProfileIssue("$.telemetry.source_label", "is not a Prometheus label name", t.source_label)
    for quantity, source in t.device_metric_sources.items():
        where = [(f"$.telemetry.device_metric_sources.{quantity}", source)]
        where += [(f"$.telemetry.device_metric_sources.{quantity}.fallbacks[{j}]", f) for j, f in enumerate(source.fallbacks)]
        for base, part in where:
            for i, metric in enumerate(part.metrics):
                if not PROM_METRIC_NAME.match(metric):
                    yield ProfileIssue(f"{base}.metrics[{i}]", "is not a Prometheus metric name", metric)
    for key, names in t.pod_metrics.items():
        for i, metric in enumerate(names if isinstance(names, list) else [names]):
            if not PROM_METRIC_NAME.match(metric):
                path = f"$.telemetry.pod_metrics.{key}" + (f"[{i}]" if isinstance(names, list) else "")
                yield ProfileIssue(path, "is not a Prometheus metric name", metric)


def source_metrics(source: MetricSource) -> list[str]:
    """Every metric a quantity's source reads, its fallbacks' included, once each."""
    return list(dict.fromkeys([*source.metrics, *(m for f in source.fallbacks for m in f.metrics)]))


def _source_issues(base: str, source: MetricSource | FallbackSource, output_unit: str | None = None) -> Iterator[ProfileIssue]:
    """A source (or one of its fallbacks, converted to the source's ``output_unit``) that Lens can read."""
    if isinstance(source, MetricSource):
        if UNIT_DIMENSION[source.unit] != source.output_unit:
            yield ProfileIssue(f"{base}.output_unit", f"cannot convert {source.unit} to {source.output_unit}", source.output_unit)
    elif UNIT_DIMENSION[source.unit] != output_unit:
        yield ProfileIssue(f"{base}.unit", f"cannot convert {source.unit} to the quantity's {output_unit}", source.unit)
    if source.combine == "divide" and len(source.metrics) != 2:
        yield ProfileIssue(f"{base}.metrics", "divide needs exactly two metrics", source.metrics)
    for i, matcher in enumerate(source.matchers):
        if not PROM_MATCHER.match(matcher):
            yield ProfileIssue(f"{base}.matchers[{i}]", 'is not a PromQL label matcher such as location="gpu"', matcher)
