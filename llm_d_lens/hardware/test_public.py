"""The plugin surface is held to a list: what ``llm_d_lens.hardware`` exports, and that it is the real thing."""

from __future__ import annotations

import subprocess
import sys

import pytest

import llm_d_lens.hardware as hardware

PUBLIC = ["GuideProvider", "HardwareProfile", "HardwareProvider", "ProfileProvider", "TelemetryProvider"]


def test_the_exported_names_are_exactly_the_promised_ones():
    assert hardware.__all__ == PUBLIC


def test_each_name_is_the_class_the_contract_uses():
    from llm_d_lens.hardware.models import HardwareProfile
    from llm_d_lens.hardware.providers import base
    from llm_d_lens.monitoring.accelerator.registry import DeclarativeProvider

    assert hardware.HardwareProfile is HardwareProfile and hardware.ProfileProvider is base.ProfileProvider
    assert isinstance(DeclarativeProvider(), hardware.TelemetryProvider)  # what the telemetry registry loads
    assert issubclass(hardware.GuideProvider, hardware.HardwareProvider)
    assert set(PUBLIC) <= set(dir(hardware))


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no_such_thing"):
        hardware.no_such_thing  # noqa: B018


def test_importing_a_hardware_module_does_not_import_the_models():
    probe = "import sys, llm_d_lens.hardware.settings; print('llm_d_lens.hardware.models' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "False"
