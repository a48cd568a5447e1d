"""The hardware profile contract, as typed models (msgspec Structs: they import and check in microseconds).

These models are the single source of truth: ``schema.json`` is generated from them
(``python -m llm_d_lens.generate``) and a test fails when the committed file drifts. Rules a JSON Schema cannot
express (cross-field checks, regular expressions that must compile, pinned versions) live in
``rules.py`` and are reported with the same shape of error.

Every object forbids unknown keys, so a typo in a vendor's profile is an error, not a silently
ignored field.
"""


from typing import Annotated, Any, Literal, TypeVar

import msgspec
from msgspec import Meta, field

#: The profile format versions this Lens reads. A profile omitting ``schema_version`` is version 1.
SUPPORTED_SCHEMA_VERSIONS: tuple[int, ...] = (1,)

RequestModel = Literal["dra", "extended-resource", "none"]
AllocationJoin = Literal["dra", "extended-resource", "pod-status", "none"]
SourceUnit = Literal["percent", "ratio", "MiB", "MB", "GiB", "bytes", "mW", "W", "uJ", "mJ", "J", "celsius", "count", "code", "B/s",
                     "flag", "MHz", "Hz", "bitmask"]
OutputUnit = Literal["ratio", "bytes", "W", "J", "celsius", "count", "code", "B/s", "flag", "Hz", "bitmask"]
Aggregation = Literal["sum", "avg", "max", "min"]
TileAggregation = Literal["sum", "avg", "max", "min", "first", "none"]
Quantity = Literal[
    "utilization", "memory_used", "memory_total", "power", "energy", "temperature", "tensor_activity",
    # device health
    "memory_temperature", "memory_bandwidth", "ecc_corrected", "ecc_uncorrected", "pcie_replays", "critical_event",
    "pcie_throughput", "link_throughput", "link_errors",
    # health signals default installs collect
    "row_remap_failure", "remapped_rows_correctable", "remapped_rows_uncorrectable", "link_traffic",
    "device_healthy", "links_up",
    # clocks, limits, throttling and traffic counters
    "core_clock", "memory_clock", "power_limit", "throttle_reasons", "power_throttle", "thermal_throttle",
    "link_data", "pcie_traffic", "pending_rows_correctable", "pending_rows_uncorrectable",
]

#: a telemetry scale converts units (mW to W is 1e-3); twelve orders of magnitude either way is
#: beyond any unit pair, and a bound keeps an infinite or 1e400 factor out of every reading
MAX_SCALE = 1e12
#: one device's memory; the largest accelerators carry a few hundred GiB, so 1 PiB is no real limit
MAX_MEMORY_GIB = 1024.0 * 1024.0
ID_PATTERN = r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$"
#: bounds on names (Kubernetes': a label value or DNS label is at most 63 characters, a DNS subdomain 253)
#: and on the text a person reads, so a plugin's 100 MB string is refused at its field
NAME_MAX = 63
SUBDOMAIN_MAX = 253
TEXT_MAX = 256
Name = Annotated[str, Meta(max_length=NAME_MAX)]
LongName = Annotated[str, Meta(max_length=SUBDOMAIN_MAX + NAME_MAX + 1)]


class Contract(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """Base of every contract object: unknown keys are errors, values are immutable.

    ``decode`` is the one way in (strict: no string is read as a number, no number as a bool);
    ``to_data`` the one way out, as JSON-ready builtins; ``replace`` a copy with some fields changed.
    """

    @classmethod
    def decode(cls: "type[C]", data: Any) -> "C":
        """``data`` (builtins, as JSON gives them) checked into this type; :class:`msgspec.ValidationError` otherwise."""
        return msgspec.convert(data, cls, strict=True)

    def to_data(self, *, exclude_none: bool = False) -> dict[str, Any]:
        """Every field as JSON-ready builtins, in declaration order (``exclude_none``: null fields left out)."""
        data: dict[str, Any] = msgspec.to_builtins(self)
        return _without_none(data) if exclude_none else data

    def replace(self: "C", **changes: Any) -> "C":
        """A copy with ``changes`` applied (the object itself is immutable)."""
        return msgspec.structs.replace(self, **changes)


C = TypeVar("C", bound=Contract)


def _without_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_none(v) for v in value]
    return value


LabelMap = dict[str, str]


class UpstreamLabels(Contract, kw_only=True):
    """One ``llm-d.ai/accelerator-variant`` / ``llm-d.ai/accelerator-vendor`` pair an overlay may set."""

    variant: Annotated[
        str, Meta(min_length=1, max_length=NAME_MAX, description="Value of llm-d.ai/accelerator-variant.")
    ]
    vendor: Annotated[str, Meta(min_length=1, max_length=NAME_MAX, description="Value of llm-d.ai/accelerator-vendor.")]


class Toleration(Contract, kw_only=True):
    key: Annotated[str, Meta(min_length=1, max_length=SUBDOMAIN_MAX + NAME_MAX + 1)]
    operator: Literal["Exists", "Equal"] = "Exists"
    value: Annotated[str, Meta(max_length=NAME_MAX)] | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None


class DeploymentMode(Contract, kw_only=True):
    """How a pod asks for this hardware in one access mode."""

    request_model: RequestModel
    device_class: (
        Annotated[str, Meta(max_length=SUBDOMAIN_MAX, description="DRA DeviceClass name (dra modes).")] | None
    ) = None
    claim_request_name: (
        Annotated[
            str, Meta(max_length=NAME_MAX, description="Request name inside the ResourceClaimTemplate (dra modes).")
        ]
        | None
    ) = None
    resource_names: Annotated[
        list[LongName], Meta(description="Extended resource names (extended-resource modes).")
    ] = field(default_factory=list)
    supports_pci_allowlist: (
        Annotated[bool, Meta(description="Overrides deployment.supports_pci_allowlist for this mode.")] | None
    ) = None
    pci_attribute_domain: str | None = None
    pci_attribute: str | None = None
    node_selector: Annotated[LabelMap, Meta(description="Added to deployment.node_selector in this mode.")] = field(
        default_factory=dict
    )
    benchmark_profile: (
        Annotated[str, Meta(description="llm-d-benchmark profile for this mode when it differs from the profile's.")]
        | None
    ) = None
    benchmark_profiles_by_resource: Annotated[
        LabelMap,
        Meta(
            description="llm-d-benchmark profile per extended resource name, for vendors whose benchmark profile follows the resource."
        ),
    ] = field(default_factory=dict)
    partition_device_class: (
        Annotated[str, Meta(max_length=SUBDOMAIN_MAX, description="DRA DeviceClass of this hardware's partitions (dra modes), e.g. MIG devices.")]
        | None
    ) = None
    partition_attribute: (
        Annotated[str, Meta(max_length=NAME_MAX, description="The driver's attribute naming a partition's profile; a partition request selects devices by it (dra modes).")]
        | None
    ) = None
    partition_name_pattern: (
        Annotated[str, Meta(max_length=TEXT_MAX, description="Regular expression with a named group 'profile' reading the partition profile from a partition's extended resource name (e.g. ^nvidia\\.com/mig-(?P<profile>.+)$).")]
        | None
    ) = None


class Deployment(Contract, kw_only=True):
    """Where the upstream overlay lives and how Lens fits its request shape."""

    overlay_root: Annotated[
        str,
        Meta(
            min_length=1,
            description="Path under the llm-d source; may use {guide} (which may span directories, e.g. multimodal-serving/aggregation), {variant} (the upstream_variant), {model_server}, and * as a whole segment for one directory level that becomes part of the overlay name (e.g. a TPU generation). Every Kustomization below the matched directory is an overlay; its sub-path is kept in the overlay name.",
        ),
    ]
    extra_overlay_roots: Annotated[
        list[str],
        Meta(
            description="Further overlay_root templates for guides laid out differently, tried in order after overlay_root; a Kustomization is claimed by the first template that reaches it."
        ),
    ] = field(default_factory=list)
    arch: Annotated[
        str,
        Meta(
            min_length=1,
            max_length=NAME_MAX,
            description="The overlay directory name, as in the guide's template; must equal upstream_variant, which is what Lens reads (a differing arch is a warning).",
        ),
    ]
    device_class: Annotated[str, Meta(max_length=SUBDOMAIN_MAX)] = ""
    claim_request_name: Annotated[str, Meta(max_length=NAME_MAX)] = ""
    resource_name: Annotated[str, Meta(max_length=SUBDOMAIN_MAX + NAME_MAX + 1)] = ""
    node_selector: LabelMap = field(default_factory=dict)
    tolerations: list[Toleration] = field(default_factory=list)
    supports_pci_allowlist: bool = False
    pci_attribute_domain: str = ""
    pci_attribute: str = ""
    runtime_image: (
        Annotated[str, Meta(description="Image used when the overlay's image comes from a managed repository.")] | None
    ) = None
    product_overlays: Annotated[dict[str, str], Meta(
        description="Product name -> the overlay its guides use where several fit the hardware "
        "(the * level of overlay_root, e.g. a TPU generation); a plan's hand-off names it.")] = field(default_factory=dict)
    managed_image_repositories: list[str] = field(default_factory=list)
    runtime_class_matchers: Annotated[
        list[str], Meta(description="Regular expressions matched against a cluster's RuntimeClass names and handlers.")
    ] = field(default_factory=list)
    modes: (
        Annotated[
            dict[str, DeploymentMode],
            Meta(
                description="One entry per access mode. When absent, request_model and the deployment's top-level fields form the single mode."
            ),
        ]
        | None
    ) = None


class DaemonSetMatcher(Contract, kw_only=True):
    """Finds the DaemonSet a driver mode runs as; every given field must match."""

    name: Annotated[str, Meta(description="The DaemonSet's exact name.")] | None = None
    name_contains: Annotated[str, Meta(description="A substring of the DaemonSet's name.")] | None = None
    namespace: Annotated[str, Meta(description="The DaemonSet's namespace; any namespace when absent.")] | None = None
    labels: Annotated[LabelMap, Meta(description="Labels the DaemonSet must carry, each with this value.")] = field(
        default_factory=dict
    )


class DriverRelease(Contract, kw_only=True):
    """One chart (or kustomize ref) Lens installs, pinned: the part a driver mode and its prerequisites share."""

    manifest_ref: Annotated[str, Meta(min_length=1, description="Helm chart name, or the kustomize ref to apply.")]
    chart_version: Annotated[str, Meta(description="A pinned, released version: no 'latest', no ranges.")] | None = None
    repo: (
        Annotated[str, Meta(description="Helm repository URL; an oci:// repository is joined with the chart name.")]
        | None
    ) = None
    namespace: Annotated[str, Meta(description="Namespace the release goes to (created when missing).")] | None = None
    release_name: Annotated[str, Meta(description="Helm release name; defaults to manifest_ref.")] | None = None
    daemonset_matchers: Annotated[
        list[DaemonSetMatcher], Meta(description="How status finds the DaemonSets this release runs as.")
    ] = field(default_factory=list)
    options: Annotated[
        dict[str, Any],
        Meta(
            description="Vendor-specific. The default provider passes them to helm as values: dotted keys, JSON values."
        ),
    ] = field(default_factory=dict)
    min_kubernetes_version: Annotated[str, Meta(description="Install refuses clusters older than this.")] | None = None


class Prerequisite(DriverRelease, kw_only=True):
    """A chart the mode's chart only works on top of (an operator whose CRDs it creates), installed first."""

    preconditions: Annotated[
        list[str],
        Meta(
            description="What this chart itself needs and Lens does NOT install (e.g. cert-manager): shown by plan and install."
        ),
    ] = field(default_factory=list)


class DriverMode(DriverRelease, kw_only=True):
    """What Lens installs for one access mode, and what the installed devices allow a claim to ask."""

    prerequisites: Annotated[
        list[Prerequisite],
        Meta(
            description="Charts installed before this mode's, in order, each exactly like a mode (pinned, idempotent); the mode's own options do not reach them."
        ),
    ] = field(default_factory=list)
    dedicated_nodes: Annotated[
        bool,
        Meta(
            description="The devices sit on nodes that carry no other hardware (a CPU pool): a class claiming them alongside another hardware's devices could never be scheduled, so a plan refuses it."
        ),
    ] = False
    max_devices_per_request: (
        Annotated[
            int,
            Meta(
                ge=1,
                description="Most devices one claim request may ask for; 1 where every allocated device receives the full capacity request, so a multi-device request over-allocates.",
            ),
        ]
        | None
    ) = None


class UnmanagedMode(Contract, kw_only=True):
    """An access mode whose device stack Lens does not install, and why."""

    reason: Annotated[
        str, Meta(min_length=1, description="Shown by plan and install: who provides the stack, or why none is needed.")
    ]
    daemonset_matchers: Annotated[
        list[DaemonSetMatcher], Meta(description="How status finds the stack when something else installed it.")
    ] = field(default_factory=list)


class Driver(Contract, kw_only=True):
    installer: Literal["helm", "kustomize"]
    modes: Annotated[dict[str, DriverMode], Meta(min_length=1, description="Access mode -> what Lens installs for it.")]
    unmanaged_modes: Annotated[
        dict[str, UnmanagedMode],
        Meta(description="Access modes Lens installs nothing for. Every access mode is in modes or here, never both."),
    ] = field(default_factory=dict)


class Presence(Contract, kw_only=True):
    """The blocking preflight: which node labels prove the hardware is there, and how long to wait for them."""

    node_label_selector: Annotated[
        LabelMap,
        Meta(min_length=1, description='Labels a node must carry; the value "*" means the label only has to exist.'),
    ]
    alternatives: Annotated[
        list[LabelMap],
        Meta(
            description="Further label sets, any one of which proves the hardware is there too: Node Feature Discovery's PCI labels (feature.node.kubernetes.io/pci-<class>_<vendor>.present), which need no driver, beside the plugin's or feature discovery's own label in node_label_selector."
        ),
    ] = field(default_factory=list)
    ensure_refs: Annotated[
        list[str],
        Meta(
            description="NFD NodeFeatureRule manifests applied before waiting: a .yaml/.yml/.json file or URL is applied with kubectl apply -f, anything else as a kustomization with -k."
        ),
    ] = field(default_factory=list)
    timeout_seconds: Annotated[
        int, Meta(gt=0, le=3600, description="Longest wait for a labelled node after ensure_refs were applied.")
    ] = 90


class FallbackSource(Contract, kw_only=True):
    """A further place one quantity may come from, with its own metrics, matchers and unit.

    It answers per device (or tile) only where every source before it has no series: another
    exporter generation's names, a metric that replaces one not emitted in some mode (MIG), or a
    degraded reading an older exporter allows (then ``note`` says what it lacks).
    """

    metrics: Annotated[list[str], Meta(min_length=1, description="Exporter metric names.")]
    combine: Annotated[Literal["first", "sum", "divide"], Meta(description="As in the quantity's own source.")] = (
        "first"
    )
    matchers: Annotated[list[str], Meta(description="PromQL label matchers for these metrics.")] = field(
        default_factory=list
    )
    unit: Annotated[
        SourceUnit, Meta(description="Unit these metrics are reported in; converted to the quantity's output_unit.")
    ]
    scale: Annotated[
        float,
        Meta(
            gt=0, le=MAX_SCALE, description="Extra factor applied after the unit conversion (positive, at most 1e12)."
        ),
    ] = 1.0
    aggregation: Annotated[Aggregation, Meta(description="How series of one device (or tile) are collapsed.")] = "max"
    note: (
        Annotated[
            str,
            Meta(
                min_length=1,
                description="What a reading from this source lacks; shown as a warning naming the devices it answered for.",
            ),
        ]
        | None
    ) = None


class MetricSource(Contract, kw_only=True):
    """Where one common quantity comes from in the vendor's exporter, and how to convert it."""

    metrics: Annotated[list[str], Meta(min_length=1, description="Exporter metric names.")]
    combine: Annotated[
        Literal["first", "sum", "divide"],
        Meta(
            description="first: the first listed metric present; sum: add them; divide: the first divided by the second."
        ),
    ] = "first"
    matchers: Annotated[
        list[str], Meta(description='PromQL label matchers, e.g. location="gpu" or src!~"sum|avg".')
    ] = field(default_factory=list)
    unit: Annotated[
        SourceUnit,
        Meta(
            description="Unit the exporter reports; MB is read as MiB (2^20 bytes), as the exporters that say MB compute it."
        ),
    ]
    scale: Annotated[
        float,
        Meta(
            gt=0, le=MAX_SCALE, description="Extra factor applied after the unit conversion (positive, at most 1e12)."
        ),
    ] = 1.0
    output_unit: Annotated[
        OutputUnit,
        Meta(
            description="The quantity's common unit: ratio, bytes, W, J, celsius, count (errors since the counter started), code (the last event's code, 0 for none), B/s, flag, Hz or bitmask (the exporter's reason bits, 0 for none)."
        ),
    ]
    aggregation: Annotated[
        Aggregation,
        Meta(description="How series of one device (or tile) that differ only in other labels are collapsed."),
    ] = "max"
    tile_aggregation: Annotated[
        TileAggregation,
        Meta(
            description="How tiles/partitions fold into one physical device. A device-level series (no tile label) is used when present; otherwise sum/avg/max/min folds the tiles, and first takes tile '0' (else any). none lists each tile as its own device."
        ),
    ] = "none"
    fallbacks: Annotated[
        list[FallbackSource],
        Meta(
            description="Tried in order, per device (or tile), where the sources before have no series; same output_unit and tile_aggregation."
        ),
    ] = field(default_factory=list)


class LabelSchema(Contract, kw_only=True):
    """Exporter label names for each common label; a list gives alternative spellings, first wins."""

    node: str | list[str] | None = None
    device: str | list[str] | None = None
    uuid: str | list[str] | None = None
    pci_bus_id: str | list[str] | None = None
    serial: str | list[str] | None = None
    tile: str | list[str] | None = None
    partition: str | list[str] | None = None
    model: str | list[str] | None = None
    pod: str | list[str] | None = None
    namespace: str | list[str] | None = None
    container: str | list[str] | None = None


class Allocation(Contract, kw_only=True):
    """How a device seen by the exporter is found in the cluster's allocations (telemetry joins)."""

    drivers: Annotated[list[str], Meta(description="DRA driver names whose allocations belong to this hardware.")] = (
        field(default_factory=list)
    )
    pci_attributes: Annotated[
        list[str],
        Meta(description="DRA device attributes carrying the PCI bus id; a bare name means the driver's own domain."),
    ] = field(default_factory=list)
    uuid_attributes: Annotated[
        list[str], Meta(description="DRA device attributes carrying the value of the exporter's uuid label.")
    ] = field(default_factory=list)
    serial_attributes: Annotated[
        list[str], Meta(description="DRA device attributes carrying the value of the exporter's serial label.")
    ] = field(default_factory=list)
    resource_id_pattern: Annotated[str, Meta(description="Regular expression with a named group 'pci'.")] | None = None


class Exporter(Contract, kw_only=True):
    """The vendor's exporter: how Lens finds its pods and their scrape targets, and how it is installed.

    Seed 000 section 6: the vendor's official chart, integrated with the monitoring stack already there
    (Lens installs no Prometheus or Grafana). ``release`` is installed through the drivers' pinned,
    idempotent path; an exporter another component deploys (an operator, the platform) gives
    ``unmanaged_reason`` instead.
    """

    release: Annotated[DriverRelease, Meta(description="The exporter's chart, pinned like a driver mode.")] | None = (
        None
    )
    unmanaged_reason: (
        Annotated[
            str,
            Meta(
                min_length=1,
                description="Who deploys the exporter when Lens does not (exactly one of release or this).",
            ),
        ]
        | None
    ) = None
    pod_selectors: Annotated[
        list[LabelMap],
        Meta(
            min_length=1,
            description="Label sets that identify the exporter's pods; a pod carrying every label of any one set is an exporter pod.",
        ),
    ]
    port: Annotated[int, Meta(ge=1, le=65535, description="The port its /metrics page is served on.")]
    monitor: (
        Annotated[
            Literal["ServiceMonitor", "PodMonitor"],
            Meta(description="The Prometheus Operator object its scrape needs (the chart's option, or the user's)."),
        ]
        | None
    ) = None


class Sentinel(Contract, kw_only=True):
    """Values an exporter writes where it has no reading ("blank", "not supported", "N/A").

    A sample of one of ``metrics`` whose value is at least ``at_least`` or equals one of ``values`` is
    no reading: Lens drops it before any quantity is computed and reports the quantity as null with
    ``reason``. Exporters pick these per field type (DCGM: int64 and double blanks), so one table
    entry lists the metrics of one type.
    """

    metrics: Annotated[
        list[str], Meta(min_length=1, description="Exporter metric names whose samples this applies to.")
    ]
    at_least: (
        Annotated[float, Meta(description="A value at or above this is the sentinel (DCGM's IS_BLANK tests).")] | None
    ) = None
    values: Annotated[list[float], Meta(description="Exact values that are the sentinel.")] = field(
        default_factory=list
    )
    reason: Annotated[
        str, Meta(min_length=1, description="What the sentinel means, with its source; shown beside the null.")
    ]

    def __post_init__(self) -> None:
        if self.at_least is None and not self.values:
            raise ValueError("a sentinel needs at_least or values")


class Telemetry(Contract, kw_only=True):
    provider_id: Annotated[str, Meta(min_length=1)]

    exporter: (
        Annotated[Exporter, Meta(description="The exporter that publishes this hardware's device metrics.")] | None
    ) = None
    device_metrics: Annotated[
        dict[str, str],
        Meta(
            description="Quantity -> PromQL expression. One bare metric name (the guide's template) is also read as that quantity's device_metric_sources entry, utilization in percent, any other in its common unit."
        ),
    ] = field(default_factory=dict)
    device_metric_sources: dict[Quantity, MetricSource] = field(default_factory=dict)
    sentinels: Annotated[
        list[Sentinel],
        Meta(description="The exporter's no-reading values, applied to its samples before any quantity is computed."),
    ] = field(default_factory=list)
    label_schema: LabelSchema = field(default_factory=LabelSchema)
    allocation_join: AllocationJoin = "none"
    allocation: Allocation | None = None
    source_label: (
        Annotated[
            str, Meta(description="Exporter label naming the physical device; reported as the device's device_id.")
        ]
        | None
    ) = None
    scrape_path: (
        Annotated[
            str, Meta(description="Path of the exporter's exposition page, for direct snapshots without Prometheus.")
        ]
        | None
    ) = None
    pod_metrics: Annotated[
        dict[str, str | list[str]],
        Meta(
            description="Serving-engine metric key -> metric name(s), first present wins; gpu_cache_usage (the guide's) is read as kv_cache_usage."
        ),
    ] = field(default_factory=dict)
    modes: Annotated[dict[str, AllocationJoin], Meta(description="Access mode -> allocation join.")] = field(
        default_factory=dict
    )


class DiscoveryCommand(Contract, kw_only=True):
    command: Annotated[list[str], Meta(min_length=1)]
    parser: Literal["json", "csv", "text"] = "json"
    fields: LabelMap = field(default_factory=dict)


class MemoryModel(Contract, kw_only=True):
    memory_gib: Annotated[
        float, Meta(gt=0, le=MAX_MEMORY_GIB, description="Memory of one device in GiB (at most 1 PiB).")
    ]
    visible_gib: (
        Annotated[
            float,
            Meta(
                gt=0,
                le=MAX_MEMORY_GIB,
                description="Total memory the device runtime reports to a serving engine (less than memory_gib: the driver keeps some), where measured; the planner sizes the engine's share from it.",
            ),
        ]
        | None
    ) = None


class EngineMemory(Contract, kw_only=True):
    """Memory a serving engine keeps per device outside torch's allocator, as measured on this hardware."""

    non_torch_gib_single: Annotated[
        float, Meta(ge=0, le=64, description="Non-torch memory of a single-device engine (runtime context), GiB.")
    ]
    non_torch_gib_parallel: Annotated[
        float,
        Meta(ge=0, le=64, description="Non-torch memory per device with TP or PP > 1 (adds collective buffers), GiB."),
    ]
    graph_gib: Annotated[
        float,
        Meta(
            ge=0,
            le=64,
            description="Typical captured-graph memory per device, GiB (shown, taken outside the KV budget).",
        ),
    ] = 0
    source: Annotated[str, Meta(min_length=1, description="Where the figures were measured.")]


class AicSystem(Contract, kw_only=True):
    """One row of the ordered table from an inventory product name to an AIC system name."""

    product_pattern: Annotated[
        str,
        Meta(min_length=1, description="Regular expression searched, ignoring case, in the inventory's product name."),
    ]
    system: Annotated[
        str, Meta(min_length=1, description="The AIC system name as its database lists it, e.g. h200_sxm.")
    ]


#: the dtypes a device's peak dense throughput may be published for (the planner's dtype names)
PeakDtype = Literal["fp32", "bf16", "fp16", "fp8", "int8", "fp4", "int4"]
LinkDirection = Literal["bidirectional", "unidirectional"]
#: bounds far beyond any device: 1e6 TFLOP/s (an exaFLOP a chip), 1e6 GB/s
MAX_TFLOPS = 1e6
MAX_GB_S = 1e6


class CollectiveLatency(Contract, kw_only=True):
    """The fixed time of one small all-reduce inside a node, as the collective library models it.

    A ring all-reduce over N devices takes ``base_us + 2 x (N - 1) x hop_us`` before its bytes
    count: the library's launch and synchronisation, then one link hop a ring step. A decode step's
    all-reduces are small (batch x hidden x 2 B), so at a high layer count this latency, not the
    bandwidth, is their cost.
    """

    base_us: Annotated[
        float, Meta(ge=0, le=10_000, description="Fixed latency of one all-reduce, microseconds (launch, sync).")
    ]
    hop_us: Annotated[
        float, Meta(ge=0, le=10_000, description="Latency of one ring step over the intra-node link, microseconds.")
    ]
    source: Annotated[str, Meta(min_length=1, max_length=1024, description="Where the latencies are published.")]


class DevicePerformance(Contract, kw_only=True):
    """One product's published peak figures: what a roofline estimate divides by.

    Dense figures only (no 2:4 sparsity): a serving engine runs dense kernels. Each figure is the
    vendor's, and ``source`` names where it is published, so a reader can check it.
    """

    peak_tflops: Annotated[
        dict[PeakDtype, Annotated[float, Meta(gt=0, le=MAX_TFLOPS)]],
        Meta(description="Peak dense matrix throughput per dtype, TFLOP/s (TOP/s for integers), no sparsity."),
    ] = field(default_factory=dict)
    memory_bandwidth_gb_s: Annotated[
        float,
        Meta(gt=0, le=MAX_GB_S, description="Peak device-memory (HBM/GDDR) bandwidth, GB/s (10^9 bytes a second)."),
    ]
    intra_node_gb_s: (
        Annotated[
            float,
            Meta(
                gt=0,
                le=MAX_GB_S,
                description="Device-to-device bandwidth inside a node (NVLink, Infinity Fabric, ICI, RoCE), GB/s.",
            ),
        ]
        | None
    ) = None
    intra_node_direction: Annotated[
        LinkDirection,
        Meta(description="Whether intra_node_gb_s counts both directions (the roofline halves it) or one."),
    ] = "bidirectional"
    scale_out_gb_s: (
        Annotated[
            float,
            Meta(gt=0, le=MAX_GB_S, description="Network bandwidth per device between nodes, GB/s, where published."),
        ]
        | None
    ) = None
    scale_out_direction: Annotated[
        LinkDirection, Meta(description="Whether scale_out_gb_s counts both directions.")
    ] = "unidirectional"
    all_reduce_latency: (
        Annotated[
            CollectiveLatency,
            Meta(description="The intra-node all-reduce's fixed and per-hop latency (the roofline's collective latency)."),
        ]
        | None
    ) = None
    source: Annotated[
        str,
        Meta(min_length=1, max_length=1024, description="Where the figures are published (datasheet, vendor page)."),
    ]


class EngineCalibration(Contract, kw_only=True):
    """How far a serving engine gets from the roofline on this hardware, as measured."""

    compute_efficiency: Annotated[
        float,
        Meta(gt=0, le=1, description="Share of peak FLOP/s the engine reaches in prefill (1.0: the roofline's bound)."),
    ]
    bandwidth_efficiency: Annotated[
        float, Meta(gt=0, le=1, description="Share of peak memory bandwidth the engine reaches in decode.")
    ]
    source: Annotated[str, Meta(min_length=1, max_length=1024, description="Where the measurement comes from.")]


class PartitionMemory(Contract, kw_only=True):
    """How much memory one partition of a device (a slice, a compute partition) holds, so it plans as a pool.

    Either the partition's name carries it (``memory_group``), or the name says into how many equal
    parts a device is split (``split_group`` and ``splits``), and one part holds the device's memory
    divided by that.
    """

    pattern: Annotated[
        str,
        Meta(
            min_length=1,
            description="Regular expression matched in full against a partition channel's name (the extended resource, or the DRA driver).",
        ),
    ]
    memory_group: (
        Annotated[
            str,
            Meta(min_length=1, description="Named group of pattern holding one partition's memory, in memory_unit."),
        ]
        | None
    ) = None
    memory_unit: Annotated[
        Literal["GB", "GiB", "MiB"], Meta(description="Unit of the number memory_group captures.")
    ] = "GB"
    split_group: (
        Annotated[
            str,
            Meta(
                min_length=1,
                description="Named group of pattern naming the partition mode; splits maps it to parts a device.",
            ),
        ]
        | None
    ) = None
    splits: Annotated[dict[str, int], Meta(description="Partition mode -> equal parts one device is split into.")] = (
        field(default_factory=dict)
    )
    source: Annotated[str, Meta(min_length=1, description="Where the rule comes from.")]

    def __post_init__(self) -> None:
        if (self.memory_group is None) == (self.split_group is None):
            raise ValueError("give exactly one of memory_group or split_group")
        group = self.memory_group or self.split_group
        if f"(?P<{group}>" not in self.pattern:
            raise ValueError(f"pattern has no group named {group!r}")
        if self.split_group is not None and (not self.splits or any(v < 1 for v in self.splits.values())):
            raise ValueError("split_group needs splits: partition mode -> parts a device (at least 1)")


class Planning(Contract, kw_only=True):
    aic_system_patterns: Annotated[
        list[str], Meta(description="Regular expressions matched against AIC system names.")
    ] = field(default_factory=list)
    aic_systems: Annotated[
        list[AicSystem],
        Meta(description="Ordered: the first row whose product_pattern matches a pool's product names its AIC system."),
    ] = field(default_factory=list)
    discovery: DiscoveryCommand | None = None
    memory_models: Annotated[
        dict[str, MemoryModel], Meta(description="Product name -> device memory, when the cluster publishes none.")
    ] = field(default_factory=dict)
    engine_memory: (
        Annotated[
            EngineMemory, Meta(description="A serving engine's measured non-torch and graph memory on this hardware.")
        ]
        | None
    ) = None
    performance: Annotated[
        dict[str, DevicePerformance],
        Meta(
            description="Product name -> published peak FLOP/s, memory and interconnect bandwidth (roofline estimates)."
        ),
    ] = field(default_factory=dict)
    calibration: Annotated[
        dict[Annotated[str, Meta(max_length=NAME_MAX)], EngineCalibration],
        Meta(description="Serving engine (vllm, sglang, ...) -> measured efficiency against the roofline."),
    ] = field(default_factory=dict)
    partition_memory: Annotated[
        list[PartitionMemory],
        Meta(
            description="Ordered: the first rule whose pattern matches a partition channel gives one partition's memory; a partition no rule matches is a pool of unknown memory."
        ),
    ] = field(default_factory=list)


class MemoryLabel(Contract, kw_only=True):
    label: Annotated[str, Meta(min_length=1)]
    unit: Literal["MiB", "GiB", "bytes", "quantity"]
    per: Literal["device", "node"] = "device"


class PartitionSelector(Contract, kw_only=True):
    """Marks DRA devices that are partitions of a physical device (e.g. MIG), by one attribute."""

    attribute: Annotated[str, Meta(min_length=1)]
    values: Annotated[list[str], Meta(min_length=1)]


class Inventory(Contract, kw_only=True):
    """What the cluster inventory reads for this hardware, beyond the identity fields."""

    accelerator: Annotated[
        bool,
        Meta(
            description="Whether this hardware's devices count as accelerators in the cluster overview's total_gpu_count; false for CPU pools."
        ),
    ] = True
    dra_drivers: Annotated[
        list[str], Meta(description="ResourceSlice spec.driver names that publish this hardware.")
    ] = field(default_factory=list)
    product_labels: Annotated[list[str], Meta(description="Node labels carrying the product name.")] = field(
        default_factory=list
    )
    memory_labels: list[MemoryLabel] = field(default_factory=list)
    count_labels: Annotated[list[str], Meta(description="Node labels carrying the physical device count.")] = field(
        default_factory=list
    )
    partition_resource_patterns: Annotated[
        list[str],
        Meta(description="Regular expressions for extended resources that are partitions, not whole devices."),
    ] = field(default_factory=list)
    non_device_resource_patterns: Annotated[
        list[str],
        Meta(
            description="Regular expressions for extended resources this hardware's plugins advertise that are not devices (monitoring handles, millicores, memory): claimed by this profile, never counted as devices."
        ),
    ] = field(default_factory=list)
    dra_product_attributes: list[str] = field(default_factory=list)
    dra_memory_capacities: list[str] = field(default_factory=list)
    dra_partition: PartitionSelector | None = None
    shared_resource_patterns: Annotated[
        list[str],
        Meta(description="Regular expressions for extended resources that are shares of a physical device (time-slicing, MPS replicas): counted as shares, never as devices."),
    ] = field(default_factory=list)
    replica_labels: Annotated[
        list[str],
        Meta(description="Node labels carrying how many shares each physical device is split into (the device plugin's replicas)."),
    ] = field(default_factory=list)
    sharing_labels: Annotated[
        list[str], Meta(description="Node labels naming the sharing strategy (time-slicing, mps, none).")
    ] = field(default_factory=list)
    fractional_resource_patterns: Annotated[
        list[str],
        Meta(description="Regular expressions for extended resources that are declared quantities of a device (memory MiB, compute percent, as virtual-GPU schedulers publish them): reported as quantities, never as devices."),
    ] = field(default_factory=list)


NicPairing = Literal["per-device", "shared"]


class NetworkInventory(Contract, kw_only=True):
    """How a network device is counted on a node and paired with accelerators in a pod."""

    pairing: Annotated[
        NicPairing,
        Meta(description="per-device: a pod asks for one NIC per accelerator (SR-IOV VFs, host devices, one RDMA interface per GPU); shared: one handle serves every accelerator of a pod (an RDMA shared device)."),
    ] = "per-device"
    device_group_pattern: (
        Annotated[str, Meta(max_length=TEXT_MAX, description="Regular expression over a resource name whose group 1 names the NIC: names with the same group are one NIC, counted once (rdma-0 and rdma-0.IP).")]
        | None
    ) = None
    source: Annotated[str, Meta(min_length=1, max_length=1024, description="Where the resource names and pairing come from.")]


class NetworkProfile(Contract, kw_only=True):
    """A network device (an RDMA NIC, an SR-IOV function, a DRA network driver), through the same door as
    accelerators (``kind: network`` in a payload) but never counted as one."""

    schema_version: Literal[1] = 1
    kind: Annotated[Literal["network"], Meta(description="Marks a network device profile.")]
    id: Annotated[str, Meta(pattern=ID_PATTERN)]
    display_name: Annotated[str, Meta(min_length=1, max_length=TEXT_MAX)]
    vendor: Annotated[str, Meta(min_length=1, max_length=NAME_MAX)]
    resource_names: Annotated[list[LongName], Meta(description="Extended resource names this NIC is advertised under.")] = field(
        default_factory=list)
    resource_patterns: Annotated[list[str], Meta(description="Regular expressions for further resource names (numbered interfaces).")] = field(
        default_factory=list)
    dra_drivers: Annotated[list[str], Meta(description="ResourceSlice spec.driver names publishing these NICs.")] = field(
        default_factory=list)
    device_classes: Annotated[list[Annotated[str, Meta(max_length=SUBDOMAIN_MAX)]], Meta(
        description="DRA DeviceClasses selecting these NICs.")] = field(default_factory=list)
    dra_selector: (
        Annotated[str, Meta(max_length=TEXT_MAX, description="Attribute (qualified) a DRA device must carry true to be a NIC of this profile (dra.net/rdma).")]
        | None
    ) = None
    benchmark_network_resource: (
        Annotated[str, Meta(max_length=SUBDOMAIN_MAX + NAME_MAX + 1, description="llm-d-benchmark's networkResource for this NIC; the first resource name when absent.")]
        | None
    ) = None
    network: NetworkInventory


#: The icons the console draws; a profile naming another gets the generic chip icon.
UiIcon = Literal["Gpu", "Cpu", "Cloud", "Chip", "Server"]


class TelemetryPanel(Contract, kw_only=True):
    """What the console's telemetry panel opens with for this hardware."""

    quantity: Annotated[Quantity, Meta(description="The chart shown first (metric type).")] = "utilization"
    namespace: (
        Annotated[
            str,
            Meta(
                pattern="^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$",
                description="Namespace the serving pods usually run in: the pods table's default filter (all namespaces when absent).",
            ),
        ]
        | None
    ) = None
    range_minutes: Annotated[int, Meta(ge=5, le=7 * 24 * 60, description="The chart's default time range.")] = 60


class UI(Contract, kw_only=True):
    """How the web console presents the hardware: its tab, icon, group and chart titles."""

    icon: Annotated[str, Meta(description="One of Gpu, Cpu, Cloud, Chip, Server; others draw as Chip.")] | None = None
    labels: Annotated[
        LabelMap, Meta(description="vendor: the tab's vendor name; metric_group: the device kind (GPU, TPU, HPU...).")
    ] = field(default_factory=dict)
    order: Annotated[int, Meta(ge=0, le=10000, description="Tab position; ties sort by display name.")] = 100
    chart_titles: Annotated[
        dict[Quantity, str],
        Meta(
            description="Quantity -> chart title for this hardware (the console, Grafana panels); Lens' own title otherwise."
        ),
    ] = field(default_factory=dict)
    telemetry_panel: TelemetryPanel = field(default_factory=TelemetryPanel)


class HardwareProfile(Contract, kw_only=True):
    """One accelerator, declared once, read by every domain."""

    schema_version: Annotated[Literal[1], Meta(description="Profile format version; this Lens reads version 1.")] = 1
    id: Annotated[str, Meta(pattern=ID_PATTERN, description="Canonical id; also the entry-point name.")]
    display_name: Annotated[str, Meta(min_length=1, max_length=TEXT_MAX)]
    vendor: Annotated[str, Meta(min_length=1, max_length=NAME_MAX)]
    accelerator_keys: list[Name] = field(default_factory=list)
    benchmark_profile: (
        Annotated[
            str,
            Meta(
                max_length=NAME_MAX,
                description="llm-d-benchmark accelerator.profile; null when llm-d-benchmark has none. When absent, evaluation_profile gives it (the guide names the two together).",
            ),
        ]
        | None
    ) = None
    evaluation_profile: (
        Annotated[
            str,
            Meta(
                max_length=NAME_MAX,
                description="The same llm-d-benchmark accelerator.profile under the guide's other name; must equal benchmark_profile when both are given.",
            ),
        ]
        | None
    ) = None
    upstream_variant: Annotated[
        str, Meta(min_length=1, max_length=NAME_MAX, description="The upstream overlay directory under modelserver/.")
    ]
    upstream_vendor: Annotated[
        str, Meta(min_length=1, max_length=NAME_MAX, description="The llm-d.ai/accelerator-vendor label.")
    ]
    upstream_labels: Annotated[
        list[UpstreamLabels],
        Meta(
            description="Every variant/vendor label pair this hardware's overlays use; defaults to (upstream_variant, upstream_vendor)."
        ),
    ] = field(default_factory=list)
    request_model: RequestModel
    device_classes: list[Annotated[str, Meta(max_length=SUBDOMAIN_MAX)]] = field(default_factory=list)
    resource_prefixes: list[LongName] = field(default_factory=list)
    node_label_selector: Annotated[
        LabelMap,
        Meta(description='Node labels that mark this hardware; the value "*" means the label only has to exist.'),
    ] = field(default_factory=dict)
    access_modes: Annotated[list[str], Meta(min_length=1)]
    deployment: Deployment
    driver: Driver | None = None
    presence: Presence | None = None
    telemetry: Telemetry | None = None
    inventory: Inventory = field(default_factory=Inventory)
    planning: Planning = field(default_factory=Planning)
    ui: UI | None = None

    @classmethod
    def decode(cls, data: Any) -> "HardwareProfile":
        """A profile payload checked into the model, after the guide's short forms are read as Lens reads them:
        ``evaluation_profile`` alone is the benchmark profile (not BENCHMARK_PROFILE_MISSING), a bare
        ``device_metrics`` name is that quantity's source, ``pod_metrics.gpu_cache_usage`` is kv_cache_usage."""
        return msgspec.convert(guide_forms(data), cls, strict=True)

    # -- derived views: every consumer reads these instead of re-deriving them -----------------

    @property
    def label_pairs(self) -> list[tuple[str, str]]:
        """The (variant, vendor) label pairs this hardware's upstream overlays carry."""
        if self.upstream_labels:
            return [(p.variant, p.vendor) for p in self.upstream_labels]
        return [(self.upstream_variant, self.upstream_vendor)]

    @property
    def overlay_dirs(self) -> list[str]:
        return [self.upstream_variant]

    @property
    def aliases(self) -> list[str]:
        """Every name a user may type for this hardware, canonical id first."""
        names = [self.id, *self.accelerator_keys, self.benchmark_profile, self.evaluation_profile]
        seen: list[str] = []
        for name in names:
            if name and name not in seen:
                seen.append(name)
        return seen

    def effective_modes(self) -> dict[str, DeploymentMode]:
        """The deployment mode of every access mode.

        Where ``deployment.modes`` is absent (the guide's minimal template), the top-level
        ``request_model`` and deployment fields form the single access mode.
        """
        if self.deployment.modes is not None:
            return dict(self.deployment.modes)
        if len(self.access_modes) != 1:
            return {}
        d = self.deployment
        mode = DeploymentMode(
            request_model=self.request_model,
            device_class=d.device_class or None,
            claim_request_name=d.claim_request_name or None,
            resource_names=[d.resource_name] if d.resource_name else [],
        )
        return {self.access_modes[0]: mode}

    def mode(self, name: str | None = None) -> tuple[str, DeploymentMode]:
        """The named access mode, or the first declared one."""
        modes = self.effective_modes()
        if name is None:
            name = self.access_modes[0]
        return name, modes[name]

    def pci_allowlist(self, mode_name: str) -> tuple[bool, str, str]:
        """(supported, attribute domain, attribute) for a mode, falling back to the deployment's."""
        mode = self.effective_modes()[mode_name]
        d = self.deployment
        supported = d.supports_pci_allowlist if mode.supports_pci_allowlist is None else mode.supports_pci_allowlist
        return supported, mode.pci_attribute_domain or d.pci_attribute_domain, mode.pci_attribute or d.pci_attribute


def guide_forms(data: Any) -> Any:
    """``data`` with the guide's short forms rewritten into the fields Lens reads (a copy; ``data`` is kept)."""
    from llm_d_lens.hardware.guide_forms import read_guide_forms

    if not isinstance(data, dict):
        return data
    if data.get("benchmark_profile") is None and isinstance(data.get("evaluation_profile"), str):
        data = {**data, "benchmark_profile": data["evaluation_profile"]}
    if isinstance(data.get("telemetry"), dict):
        data = {**data, "telemetry": read_guide_forms(data["telemetry"])}
    return data
