"""Plans from profiles: the unit table, exact factors, label spellings and query count.

(That no domain code names a vendor is checked project-wide, in llm_d_lens/test_vendor_neutral.py.)
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from llm_d_lens.hardware.models import HardwareProfile
from llm_d_lens.hardware.registry import get_registry
from llm_d_lens.monitoring.accelerator.plan import QUANTITIES, UNIT_FACTORS, apply_factor, plan_for
from llm_d_lens.monitoring.accelerator.queries import queries
from llm_d_lens.testing.telemetry_pages import by_name, needs_prometheus, refresh, snapshot
from llm_d_lens.testing.prometheus import run_prometheus, to_openmetrics


@pytest.mark.parametrize(
    "unit, factor",
    [("percent", Fraction(1, 100)), ("ratio", 1), ("MiB", 1048576), ("MB", 1048576), ("GiB", 1073741824), ("bytes", 1),
     ("mW", Fraction(1, 1000)), ("W", 1), ("uJ", Fraction(1, 1000000)), ("mJ", Fraction(1, 1000)), ("J", 1), ("celsius", 1),
     ("MHz", 1000000), ("Hz", 1), ("bitmask", 1)],
)
def test_the_unit_table(unit, factor):
    assert UNIT_FACTORS[unit] == factor


def test_common_quantities_have_fixed_names_and_units():
    assert [(q.field, q.unit) for q in QUANTITIES] == [
        ("utilization_ratio", "ratio"), ("memory_used_bytes", "bytes"), ("memory_total_bytes", "bytes"),
        ("power_watts", "W"), ("energy_joules", "J"), ("temperature_celsius", "celsius"), ("tensor_activity_ratio", "ratio"),
        ("memory_temperature_celsius", "celsius"), ("memory_bandwidth_ratio", "ratio"), ("ecc_corrected_errors", "count"),
        ("ecc_uncorrected_errors", "count"), ("pcie_replays_count", "count"), ("critical_event_code", "code"),
        ("pcie_throughput_bytes_per_second", "B/s"), ("link_throughput_bytes_per_second", "B/s"), ("link_errors_count", "count"),
        ("row_remap_failure_flag", "flag"), ("remapped_rows_correctable_count", "count"),
        ("remapped_rows_uncorrectable_count", "count"), ("link_traffic_count", "count"), ("device_healthy_flag", "flag"),
        ("links_up_flag", "flag"), ("core_clock_hertz", "Hz"), ("memory_clock_hertz", "Hz"), ("power_limit_watts", "W"),
        ("throttle_reasons_bitmask", "bitmask"), ("power_throttle_ratio", "ratio"), ("thermal_throttle_ratio", "ratio"),
        ("link_data_bytes", "bytes"), ("pcie_traffic_bytes", "bytes"), ("pending_rows_correctable_count", "count"),
        ("pending_rows_uncorrectable_count", "count"),
    ]


def test_a_scale_multiplies_exactly():
    plan = plan_for(HardwareProfile.decode(get_registry().get("nvidia").to_data()))
    assert plan is not None
    energy = next(q for q in plan.quantities if q.quantity.key == "energy")
    assert energy.factor == Fraction(1, 1000)
    assert apply_factor(48213957123, energy.factor) == 48213957123 / 1000  # divided, not multiplied by 0.001


def test_each_hardware_refresh_is_the_inventory_and_one_query_per_quantity():
    for profile in get_registry().profiles():
        plan = plan_for(profile)
        if plan is None:
            assert profile.id == "cpu"  # the only built-in without device sources
            continue
        # and the sentinel rows, where the profile declares a sentinel table
        sentinels = ["sentinels"] if profile.telemetry.sentinels else []
        assert sorted(queries(plan)) == sorted(["inventory", *profile.telemetry.device_metric_sources, *sentinels])


@needs_prometheus
def test_the_first_spelling_a_series_carries_wins():
    samples = [
        ("DCGM_FI_DEV_GPU_TEMP", {"Hostname": "release-name", "hostname": "main-name", "gpu": "0"}, 40.0),
        ("DCGM_FI_DEV_GPU_TEMP", {"hostname": "main-only", "gpu": "0"}, 41.0),
    ]
    page = "".join(n + "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "} " + str(value) + "\n"
                   for n, labels, value in samples)
    with run_prometheus(to_openmetrics(samples)) as server:
        from_prometheus = by_name(refresh(server.url, ["nvidia"]))
    from_page = by_name(snapshot(page, ["nvidia"]))
    for devices in (from_prometheus, from_page):
        assert {k: v["temperature_celsius"] for k, v in devices.items()} == {"release-name/0": 40.0, "main-only/0": 41.0}
