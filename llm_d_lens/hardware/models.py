"""The hardware profile contract, as typed models.

These models are the single source of truth: ``schema.json`` is generated from them
(``python -m llm_d_lens.generate``) and a test fails when the committed file drifts. Rules a JSON Schema cannot
express (cross-field checks, regular expressions that must compile, pinned versions) live in
``rules.py`` and are reported with the same shape of error.

Every object forbids unknown keys, so a typo in a vendor's profile is an error, not a silently
ignored field.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

#: The profile format versions this Lens reads. A profile omitting ``schema_version`` is version 1.
SUPPORTED_SCHEMA_VERSIONS: tuple[int, ...] = (1,)

RequestModel = Literal["dra", "extended-resource", "none"]
AllocationJoin = Literal["dra", "extended-resource", "pod-status", "none"]
SourceUnit = Literal["percent", "ratio", "MiB", "MB", "GiB", "bytes", "mW", "W", "uJ", "mJ", "J", "celsius", "count", "code", "B/s",
                     "flag"]
OutputUnit = Literal["ratio", "bytes", "W", "J", "celsius", "count", "code", "B/s", "flag"]
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
Name = Annotated[str, Field(max_length=NAME_MAX)]
LongName = Annotated[str, Field(max_length=SUBDOMAIN_MAX + NAME_MAX + 1)]


class Contract(BaseModel):
    """Base of every contract object: unknown keys are errors, values are immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


LabelMap = dict[str, str]


class UpstreamLabels(Contract):
    """One ``llm-d.ai/accelerator-variant`` / ``llm-d.ai/accelerator-vendor`` pair an overlay may set."""

    variant: str = Field(min_length=1, max_length=NAME_MAX, description="Value of llm-d.ai/accelerator-variant.")
    vendor: str = Field(min_length=1, max_length=NAME_MAX, description="Value of llm-d.ai/accelerator-vendor.")


class Toleration(Contract):
    key: str = Field(min_length=1, max_length=SUBDOMAIN_MAX + NAME_MAX + 1)
    operator: Literal["Exists", "Equal"] = "Exists"
    value: str | None = Field(default=None, max_length=NAME_MAX)
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None


class DeploymentMode(Contract):
    """How a pod asks for this hardware in one access mode."""

    request_model: RequestModel
    device_class: str | None = Field(default=None, max_length=SUBDOMAIN_MAX, description="DRA DeviceClass name (dra modes).")
    claim_request_name: str | None = Field(default=None, max_length=NAME_MAX, description="Request name inside the ResourceClaimTemplate (dra modes).")
    resource_names: list[LongName] = Field(default_factory=list, description="Extended resource names (extended-resource modes).")
    supports_pci_allowlist: bool | None = Field(default=None, description="Overrides deployment.supports_pci_allowlist for this mode.")
    pci_attribute_domain: str | None = None
    pci_attribute: str | None = None
    node_selector: LabelMap = Field(default_factory=dict, description="Added to deployment.node_selector in this mode.")
    benchmark_profile: str | None = Field(default=None, description="llm-d-benchmark profile for this mode when it differs from the profile's.")
    benchmark_profiles_by_resource: LabelMap = Field(
        default_factory=dict,
        description="llm-d-benchmark profile per extended resource name, for vendors whose benchmark profile follows the resource.",
    )


class Deployment(Contract):
    """Where the upstream overlay lives and how Lens fits its request shape."""

    overlay_root: str = Field(
        min_length=1,
        description=(
            "Path under the llm-d source; may use {guide} (which may span directories, e.g. "
            "multimodal-serving/aggregation), {variant} (the upstream_variant), {model_server}, and * as a whole "
            "segment for one directory level that becomes part of the overlay name (e.g. a TPU generation). Every "
            "Kustomization below the matched directory is an overlay; its sub-path is kept in the overlay name."
        ),
    )
    extra_overlay_roots: list[str] = Field(
        default_factory=list,
        description=(
            "Further overlay_root templates for guides laid out differently, tried in order after overlay_root; "
            "a Kustomization is claimed by the first template that reaches it."
        ),
    )
    arch: str = Field(
        min_length=1, max_length=NAME_MAX,
        description="The overlay directory name, as in the guide's template; must equal upstream_variant, "
        "which is what Lens reads (a differing arch is a warning).",
    )
    device_class: str = Field(default="", max_length=SUBDOMAIN_MAX)
    claim_request_name: str = Field(default="", max_length=NAME_MAX)
    resource_name: str = Field(default="", max_length=SUBDOMAIN_MAX + NAME_MAX + 1)
    node_selector: LabelMap = Field(default_factory=dict)
    tolerations: list[Toleration] = Field(default_factory=list)
    supports_pci_allowlist: bool = False
    pci_attribute_domain: str = ""
    pci_attribute: str = ""
    runtime_image: str | None = Field(default=None, description="Image used when the overlay's image comes from a managed repository.")
    product_overlays: dict[str, str] = Field(
        default_factory=dict, description="Product name -> the overlay its guides use where several fit the hardware "
                                          "(the * level of overlay_root, e.g. a TPU generation); a plan's hand-off names it.")
    managed_image_repositories: list[str] = Field(default_factory=list)
    runtime_class_matchers: list[str] = Field(
        default_factory=list, description="Regular expressions matched against a cluster's RuntimeClass names and handlers."
    )
    modes: dict[str, DeploymentMode] | None = Field(
        default=None,
        description="One entry per access mode. When absent, request_model and the deployment's top-level fields form the single mode.",
    )


class DaemonSetMatcher(Contract):
    """Finds the DaemonSet a driver mode runs as; every given field must match."""

    name: str | None = Field(default=None, description="The DaemonSet's exact name.")
    name_contains: str | None = Field(default=None, description="A substring of the DaemonSet's name.")
    namespace: str | None = Field(default=None, description="The DaemonSet's namespace; any namespace when absent.")
    labels: LabelMap = Field(default_factory=dict, description="Labels the DaemonSet must carry, each with this value.")


class DriverRelease(Contract):
    """One chart (or kustomize ref) Lens installs, pinned: the part a driver mode and its prerequisites share."""

    manifest_ref: str = Field(min_length=1, description="Helm chart name, or the kustomize ref to apply.")
    chart_version: str | None = Field(default=None, description="A pinned, released version: no 'latest', no ranges.")
    repo: str | None = Field(default=None, description="Helm repository URL; an oci:// repository is joined with the chart name.")
    namespace: str | None = Field(default=None, description="Namespace the release goes to (created when missing).")
    release_name: str | None = Field(default=None, description="Helm release name; defaults to manifest_ref.")
    daemonset_matchers: list[DaemonSetMatcher] = Field(default_factory=list, description="How status finds the DaemonSets this release runs as.")
    options: dict[str, Any] = Field(
        default_factory=dict,
        description="Vendor-specific. The default provider passes them to helm as values: dotted keys, JSON values.",
    )
    min_kubernetes_version: str | None = Field(default=None, description="Install refuses clusters older than this.")


class Prerequisite(DriverRelease):
    """A chart the mode's chart only works on top of (an operator whose CRDs it creates), installed first."""

    preconditions: list[str] = Field(
        default_factory=list,
        description="What this chart itself needs and Lens does NOT install (e.g. cert-manager): shown by plan and install.",
    )


class DriverMode(DriverRelease):
    """What Lens installs for one access mode, and what the installed devices allow a claim to ask."""

    prerequisites: list[Prerequisite] = Field(
        default_factory=list,
        description="Charts installed before this mode's, in order, each exactly like a mode (pinned, idempotent); "
        "the mode's own options do not reach them.",
    )
    dedicated_nodes: bool = Field(
        default=False,
        description="The devices sit on nodes that carry no other hardware (a CPU pool): a class claiming them "
        "alongside another hardware's devices could never be scheduled, so a plan refuses it.",
    )
    max_devices_per_request: int | None = Field(
        default=None,
        ge=1,
        description="Most devices one claim request may ask for; 1 where every allocated device receives the full "
        "capacity request, so a multi-device request over-allocates.",
    )


class UnmanagedMode(Contract):
    """An access mode whose device stack Lens does not install, and why."""

    reason: str = Field(min_length=1, description="Shown by plan and install: who provides the stack, or why none is needed.")
    daemonset_matchers: list[DaemonSetMatcher] = Field(
        default_factory=list, description="How status finds the stack when something else installed it."
    )


class Driver(Contract):
    installer: Literal["helm", "kustomize"]
    modes: dict[str, DriverMode] = Field(min_length=1, description="Access mode -> what Lens installs for it.")
    unmanaged_modes: dict[str, UnmanagedMode] = Field(
        default_factory=dict,
        description="Access modes Lens installs nothing for. Every access mode is in modes or here, never both.",
    )


class Presence(Contract):
    """The blocking preflight: which node labels prove the hardware is there, and how long to wait for them."""

    node_label_selector: LabelMap = Field(min_length=1, description='Labels a node must carry; the value "*" means the label only has to exist.')
    alternatives: list[LabelMap] = Field(
        default_factory=list,
        description="Further label sets, any one of which proves the hardware is there too: Node Feature Discovery's "
        "PCI labels (feature.node.kubernetes.io/pci-<class>_<vendor>.present), which need no driver, beside the "
        "plugin's or feature discovery's own label in node_label_selector.",
    )
    ensure_refs: list[str] = Field(
        default_factory=list,
        description="NFD NodeFeatureRule manifests applied before waiting: a .yaml/.yml/.json file or URL is applied "
        "with kubectl apply -f, anything else as a kustomization with -k.",
    )
    timeout_seconds: int = Field(default=90, gt=0, le=3600, description="Longest wait for a labelled node after ensure_refs were applied.")


class FallbackSource(Contract):
    """A further place one quantity may come from, with its own metrics, matchers and unit.

    It answers per device (or tile) only where every source before it has no series: another
    exporter generation's names, a metric that replaces one not emitted in some mode (MIG), or a
    degraded reading an older exporter allows (then ``note`` says what it lacks).
    """

    metrics: list[str] = Field(min_length=1, description="Exporter metric names.")
    combine: Literal["first", "sum", "divide"] = Field(default="first", description="As in the quantity's own source.")
    matchers: list[str] = Field(default_factory=list, description="PromQL label matchers for these metrics.")
    unit: SourceUnit = Field(description="Unit these metrics are reported in; converted to the quantity's output_unit.")
    scale: float = Field(default=1.0, strict=False, gt=0, le=MAX_SCALE, allow_inf_nan=False,
                         description="Extra factor applied after the unit conversion (positive, at most 1e12).")
    aggregation: Aggregation = Field(default="max", description="How series of one device (or tile) are collapsed.")
    note: str | None = Field(
        default=None, min_length=1,
        description="What a reading from this source lacks; shown as a warning naming the devices it answered for.",
    )


class MetricSource(Contract):
    """Where one common quantity comes from in the vendor's exporter, and how to convert it."""

    metrics: list[str] = Field(min_length=1, description="Exporter metric names.")
    combine: Literal["first", "sum", "divide"] = Field(
        default="first",
        description="first: the first listed metric present; sum: add them; divide: the first divided by the second.",
    )
    matchers: list[str] = Field(default_factory=list, description='PromQL label matchers, e.g. location="gpu" or src!~"sum|avg".')
    unit: SourceUnit = Field(description="Unit the exporter reports; MB is read as MiB (2^20 bytes), as the exporters that say MB compute it.")
    scale: float = Field(default=1.0, strict=False, gt=0, le=MAX_SCALE, allow_inf_nan=False,
                         description="Extra factor applied after the unit conversion (positive, at most 1e12).")
    output_unit: OutputUnit = Field(
        description="The quantity's common unit: ratio, bytes, W, J, celsius, count (errors since the counter started), "
        "code (the last event's code, 0 for none) or B/s."
    )
    aggregation: Aggregation = Field(
        default="max", description="How series of one device (or tile) that differ only in other labels are collapsed."
    )
    tile_aggregation: TileAggregation = Field(
        default="none",
        description=(
            "How tiles/partitions fold into one physical device. A device-level series (no tile label) is used when "
            "present; otherwise sum/avg/max/min folds the tiles, and first takes tile '0' (else any). none lists each "
            "tile as its own device."
        ),
    )
    fallbacks: list[FallbackSource] = Field(
        default_factory=list,
        description="Tried in order, per device (or tile), where the sources before have no series; same output_unit and tile_aggregation.",
    )


class LabelSchema(Contract):
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


class Allocation(Contract):
    """How a device seen by the exporter is found in the cluster's allocations (telemetry joins)."""

    drivers: list[str] = Field(default_factory=list, description="DRA driver names whose allocations belong to this hardware.")
    pci_attributes: list[str] = Field(
        default_factory=list,
        description="DRA device attributes carrying the PCI bus id; a bare name means the driver's own domain.",
    )
    uuid_attributes: list[str] = Field(
        default_factory=list, description="DRA device attributes carrying the value of the exporter's uuid label."
    )
    serial_attributes: list[str] = Field(
        default_factory=list, description="DRA device attributes carrying the value of the exporter's serial label."
    )
    resource_id_pattern: str | None = Field(default=None, description="Regular expression with a named group 'pci'.")


class Exporter(Contract):
    """The vendor's exporter: how Lens finds its pods and their scrape targets, and how it is installed.

    Seed 000 section 6: the vendor's official chart, integrated with the monitoring stack already there
    (Lens installs no Prometheus or Grafana). ``release`` is installed through the drivers' pinned,
    idempotent path; an exporter another component deploys (an operator, the platform) gives
    ``unmanaged_reason`` instead.
    """

    release: DriverRelease | None = Field(default=None, description="The exporter's chart, pinned like a driver mode.")
    unmanaged_reason: str | None = Field(
        default=None, min_length=1, description="Who deploys the exporter when Lens does not (exactly one of release or this)."
    )
    pod_selectors: list[LabelMap] = Field(
        min_length=1, description="Label sets that identify the exporter's pods; a pod carrying every label of any one set is an exporter pod."
    )
    port: int = Field(ge=1, le=65535, description="The port its /metrics page is served on.")
    monitor: Literal["ServiceMonitor", "PodMonitor"] | None = Field(
        default=None, description="The Prometheus Operator object its scrape needs (the chart's option, or the user's)."
    )


class Sentinel(Contract):
    """Values an exporter writes where it has no reading ("blank", "not supported", "N/A").

    A sample of one of ``metrics`` whose value is at least ``at_least`` or equals one of ``values`` is
    no reading: Lens drops it before any quantity is computed and reports the quantity as null with
    ``reason``. Exporters pick these per field type (DCGM: int64 and double blanks), so one table
    entry lists the metrics of one type.
    """

    metrics: list[str] = Field(min_length=1, description="Exporter metric names whose samples this applies to.")
    at_least: float | None = Field(default=None, strict=False, allow_inf_nan=False,
                                   description="A value at or above this is the sentinel (DCGM's IS_BLANK tests).")
    values: list[float] = Field(default_factory=list, description="Exact values that are the sentinel.")
    reason: str = Field(min_length=1, description="What the sentinel means, with its source; shown beside the null.")

    @model_validator(mode="after")
    def _matches_something(self) -> Sentinel:
        if self.at_least is None and not self.values:
            raise ValueError("a sentinel needs at_least or values")
        return self


class Telemetry(Contract):
    provider_id: str = Field(min_length=1)

    @model_validator(mode="before")
    @classmethod
    def _guide_forms(cls, data: Any) -> Any:
        """The guide's short forms (a bare ``device_metrics`` name, ``pod_metrics.gpu_cache_usage``) read as Lens reads them."""
        from llm_d_lens.hardware.guide_forms import read_guide_forms

        return read_guide_forms(data)

    exporter: Exporter | None = Field(default=None, description="The exporter that publishes this hardware's device metrics.")
    device_metrics: dict[str, str] = Field(
        default_factory=dict,
        description="Quantity -> PromQL expression. One bare metric name (the guide's template) is also read as "
        "that quantity's device_metric_sources entry, utilization in percent, any other in its common unit.")
    device_metric_sources: dict[Quantity, MetricSource] = Field(default_factory=dict)
    sentinels: list[Sentinel] = Field(
        default_factory=list,
        description="The exporter's no-reading values, applied to its samples before any quantity is computed.",
    )
    label_schema: LabelSchema = Field(default_factory=LabelSchema)
    allocation_join: AllocationJoin = "none"
    allocation: Allocation | None = None
    source_label: str | None = Field(
        default=None, description="Exporter label naming the physical device; reported as the device's device_id."
    )
    scrape_path: str | None = Field(
        default=None, description="Path of the exporter's exposition page, for direct snapshots without Prometheus."
    )
    pod_metrics: dict[str, str | list[str]] = Field(
        default_factory=dict,
        description="Serving-engine metric key -> metric name(s), first present wins; gpu_cache_usage (the guide's) "
        "is read as kv_cache_usage.")
    modes: dict[str, AllocationJoin] = Field(default_factory=dict, description="Access mode -> allocation join.")


class DiscoveryCommand(Contract):
    command: list[str] = Field(min_length=1)
    parser: Literal["json", "csv", "text"] = "json"
    fields: LabelMap = Field(default_factory=dict)


class MemoryModel(Contract):
    memory_gib: float = Field(gt=0, le=MAX_MEMORY_GIB, strict=False, allow_inf_nan=False,
                              description="Memory of one device in GiB (at most 1 PiB).")
    visible_gib: float | None = Field(
        default=None, gt=0, le=MAX_MEMORY_GIB, strict=False, allow_inf_nan=False,
        description="Total memory the device runtime reports to a serving engine (less than memory_gib: the driver "
                    "keeps some), where measured; the planner sizes the engine's share from it.")


class EngineMemory(Contract):
    """Memory a serving engine keeps per device outside torch's allocator, as measured on this hardware."""

    non_torch_gib_single: float = Field(ge=0, le=64, strict=False, allow_inf_nan=False,
                                        description="Non-torch memory of a single-device engine (runtime context), GiB.")
    non_torch_gib_parallel: float = Field(ge=0, le=64, strict=False, allow_inf_nan=False,
                                          description="Non-torch memory per device with TP or PP > 1 (adds collective buffers), GiB.")
    graph_gib: float = Field(default=0, ge=0, le=64, strict=False, allow_inf_nan=False,
                                  description="Typical captured-graph memory per device, GiB (shown, taken outside the KV budget).")
    source: str = Field(min_length=1, description="Where the figures were measured.")


class AicSystem(Contract):
    """One row of the ordered table from an inventory product name to an AIC system name."""

    product_pattern: str = Field(min_length=1, description="Regular expression searched, ignoring case, in the inventory's product name.")
    system: str = Field(min_length=1, description="The AIC system name as its database lists it, e.g. h200_sxm.")


#: the dtypes a device's peak dense throughput may be published for (the planner's dtype names)
PeakDtype = Literal["fp32", "bf16", "fp16", "fp8", "int8", "fp4", "int4"]
LinkDirection = Literal["bidirectional", "unidirectional"]
#: bounds far beyond any device: 1e6 TFLOP/s (an exaFLOP a chip), 1e6 GB/s
MAX_TFLOPS = 1e6
MAX_GB_S = 1e6


class DevicePerformance(Contract):
    """One product's published peak figures: what a roofline estimate divides by.

    Dense figures only (no 2:4 sparsity): a serving engine runs dense kernels. Each figure is the
    vendor's, and ``source`` names where it is published, so a reader can check it.
    """

    peak_tflops: dict[PeakDtype, Annotated[float, Field(gt=0, le=MAX_TFLOPS, strict=False, allow_inf_nan=False)]] = Field(
        default_factory=dict, description="Peak dense matrix throughput per dtype, TFLOP/s (TOP/s for integers), no sparsity.")
    memory_bandwidth_gb_s: float = Field(gt=0, le=MAX_GB_S, strict=False, allow_inf_nan=False,
                                         description="Peak device-memory (HBM/GDDR) bandwidth, GB/s (10^9 bytes a second).")
    intra_node_gb_s: float | None = Field(default=None, gt=0, le=MAX_GB_S, strict=False, allow_inf_nan=False,
                                          description="Device-to-device bandwidth inside a node (NVLink, Infinity Fabric, ICI, RoCE), GB/s.")
    intra_node_direction: LinkDirection = Field(
        default="bidirectional", description="Whether intra_node_gb_s counts both directions (the roofline halves it) or one.")
    scale_out_gb_s: float | None = Field(default=None, gt=0, le=MAX_GB_S, strict=False, allow_inf_nan=False,
                                         description="Network bandwidth per device between nodes, GB/s, where published.")
    scale_out_direction: LinkDirection = Field(default="unidirectional", description="Whether scale_out_gb_s counts both directions.")
    source: str = Field(min_length=1, max_length=1024, description="Where the figures are published (datasheet, vendor page).")


class EngineCalibration(Contract):
    """How far a serving engine gets from the roofline on this hardware, as measured."""

    compute_efficiency: float = Field(gt=0, le=1, strict=False, allow_inf_nan=False,
                                      description="Share of peak FLOP/s the engine reaches in prefill (1.0: the roofline's bound).")
    bandwidth_efficiency: float = Field(gt=0, le=1, strict=False, allow_inf_nan=False,
                                        description="Share of peak memory bandwidth the engine reaches in decode.")
    source: str = Field(min_length=1, max_length=1024, description="Where the measurement comes from.")
class PartitionMemory(Contract):
    """How much memory one partition of a device (a slice, a compute partition) holds, so it plans as a pool.

    Either the partition's name carries it (``memory_group``), or the name says into how many equal
    parts a device is split (``split_group`` and ``splits``), and one part holds the device's memory
    divided by that.
    """

    pattern: str = Field(min_length=1, description="Regular expression matched in full against a partition channel's name "
                                                   "(the extended resource, or the DRA driver).")
    memory_group: str | None = Field(default=None, min_length=1,
                                     description="Named group of pattern holding one partition's memory, in memory_unit.")
    memory_unit: Literal["GB", "GiB", "MiB"] = Field(default="GB", description="Unit of the number memory_group captures.")
    split_group: str | None = Field(default=None, min_length=1,
                                    description="Named group of pattern naming the partition mode; splits maps it to parts a device.")
    splits: dict[str, int] = Field(default_factory=dict, description="Partition mode -> equal parts one device is split into.")
    source: str = Field(min_length=1, description="Where the rule comes from.")

    @model_validator(mode="after")
    def _one_way(self) -> PartitionMemory:
        if (self.memory_group is None) == (self.split_group is None):
            raise ValueError("give exactly one of memory_group or split_group")
        group = self.memory_group or self.split_group
        if f"(?P<{group}>" not in self.pattern:
            raise ValueError(f"pattern has no group named {group!r}")
        if self.split_group is not None and (not self.splits or any(v < 1 for v in self.splits.values())):
            raise ValueError("split_group needs splits: partition mode -> parts a device (at least 1)")
        return self


class Planning(Contract):
    aic_system_patterns: list[str] = Field(default_factory=list, description="Regular expressions matched against AIC system names.")
    aic_systems: list[AicSystem] = Field(
        default_factory=list,
        description="Ordered: the first row whose product_pattern matches a pool's product names its AIC system.",
    )
    discovery: DiscoveryCommand | None = None
    memory_models: dict[str, MemoryModel] = Field(default_factory=dict, description="Product name -> device memory, when the cluster publishes none.")
    engine_memory: EngineMemory | None = Field(default=None, description="A serving engine's measured non-torch and graph memory on this hardware.")
    performance: dict[str, DevicePerformance] = Field(
        default_factory=dict, description="Product name -> published peak FLOP/s, memory and interconnect bandwidth (roofline estimates).")
    calibration: dict[Annotated[str, Field(max_length=NAME_MAX)], EngineCalibration] = Field(
        default_factory=dict, description="Serving engine (vllm, sglang, ...) -> measured efficiency against the roofline.")
    partition_memory: list[PartitionMemory] = Field(
        default_factory=list, description="Ordered: the first rule whose pattern matches a partition channel gives one "
                                          "partition's memory; a partition no rule matches is a pool of unknown memory.")


class MemoryLabel(Contract):
    label: str = Field(min_length=1)
    unit: Literal["MiB", "GiB", "bytes", "quantity"]
    per: Literal["device", "node"] = "device"


class PartitionSelector(Contract):
    """Marks DRA devices that are partitions of a physical device (e.g. MIG), by one attribute."""

    attribute: str = Field(min_length=1)
    values: list[str] = Field(min_length=1)


class Inventory(Contract):
    """What the cluster inventory reads for this hardware, beyond the identity fields."""

    accelerator: bool = Field(
        default=True,
        description="Whether this hardware's devices count as accelerators in the cluster overview's total_gpu_count; false for CPU pools.",
    )
    dra_drivers: list[str] = Field(default_factory=list, description="ResourceSlice spec.driver names that publish this hardware.")
    product_labels: list[str] = Field(default_factory=list, description="Node labels carrying the product name.")
    memory_labels: list[MemoryLabel] = Field(default_factory=list)
    count_labels: list[str] = Field(default_factory=list, description="Node labels carrying the physical device count.")
    partition_resource_patterns: list[str] = Field(
        default_factory=list, description="Regular expressions for extended resources that are partitions, not whole devices."
    )
    non_device_resource_patterns: list[str] = Field(
        default_factory=list,
        description="Regular expressions for extended resources this hardware's plugins advertise that are not devices "
        "(monitoring handles, millicores, memory): claimed by this profile, never counted as devices.",
    )
    dra_product_attributes: list[str] = Field(default_factory=list)
    dra_memory_capacities: list[str] = Field(default_factory=list)
    dra_partition: PartitionSelector | None = None


#: The icons the console draws; a profile naming another gets the generic chip icon.
UiIcon = Literal["Gpu", "Cpu", "Cloud", "Chip", "Server"]


class TelemetryPanel(Contract):
    """What the console's telemetry panel opens with for this hardware."""

    quantity: Quantity = Field(default="utilization", description="The chart shown first (metric type).")
    namespace: str | None = Field(
        default=None, pattern=r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$",
        description="Namespace the serving pods usually run in: the pods table's default filter (all namespaces when absent).",
    )
    range_minutes: int = Field(default=60, ge=5, le=7 * 24 * 60, description="The chart's default time range.")


class UI(Contract):
    """How the web console presents the hardware: its tab, icon, group and chart titles."""

    icon: str | None = Field(default=None, description="One of Gpu, Cpu, Cloud, Chip, Server; others draw as Chip.")
    labels: LabelMap = Field(default_factory=dict, description="vendor: the tab's vendor name; metric_group: the device kind (GPU, TPU, HPU...).")
    order: int = Field(default=100, ge=0, le=10000, description="Tab position; ties sort by display name.")
    chart_titles: dict[Quantity, str] = Field(default_factory=dict, description="Quantity -> chart title for this hardware (the console, Grafana panels); Lens' own title otherwise.")
    telemetry_panel: TelemetryPanel = Field(default_factory=TelemetryPanel)


class HardwareProfile(Contract):
    """One accelerator, declared once, read by every domain."""

    schema_version: Literal[1] = Field(default=1, description="Profile format version; this Lens reads version 1.")
    id: str = Field(pattern=ID_PATTERN, description="Canonical id; also the entry-point name.")
    display_name: str = Field(min_length=1, max_length=TEXT_MAX)
    vendor: str = Field(min_length=1, max_length=NAME_MAX)
    accelerator_keys: list[Name] = Field(default_factory=list)
    benchmark_profile: str | None = Field(
        default=None, max_length=NAME_MAX,
        description="llm-d-benchmark accelerator.profile; null when llm-d-benchmark has none. When absent, "
        "evaluation_profile gives it (the guide names the two together).",
    )
    evaluation_profile: str | None = Field(
        default=None, max_length=NAME_MAX,
        description="The same llm-d-benchmark accelerator.profile under the guide's other name; must equal "
        "benchmark_profile when both are given.",
    )
    upstream_variant: str = Field(min_length=1, max_length=NAME_MAX, description="The upstream overlay directory under modelserver/.")
    upstream_vendor: str = Field(min_length=1, max_length=NAME_MAX, description="The llm-d.ai/accelerator-vendor label.")
    upstream_labels: list[UpstreamLabels] = Field(
        default_factory=list,
        description="Every variant/vendor label pair this hardware's overlays use; defaults to (upstream_variant, upstream_vendor).",
    )
    request_model: RequestModel
    device_classes: list[Annotated[str, Field(max_length=SUBDOMAIN_MAX)]] = Field(default_factory=list)
    resource_prefixes: list[LongName] = Field(default_factory=list)
    node_label_selector: LabelMap = Field(
        default_factory=dict, description='Node labels that mark this hardware; the value "*" means the label only has to exist.'
    )
    access_modes: list[str] = Field(min_length=1)
    deployment: Deployment
    driver: Driver | None = None
    presence: Presence | None = None
    telemetry: Telemetry | None = None
    inventory: Inventory = Field(default_factory=Inventory)
    planning: Planning = Field(default_factory=Planning)
    ui: UI | None = None

    @model_validator(mode="before")
    @classmethod
    def _benchmark_from_evaluation(cls, data: Any) -> Any:
        """The guide's ``evaluation_profile`` alone is the benchmark profile (not BENCHMARK_PROFILE_MISSING)."""
        if isinstance(data, dict) and data.get("benchmark_profile") is None and isinstance(data.get("evaluation_profile"), str):
            data = {**data, "benchmark_profile": data["evaluation_profile"]}
        return data

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
