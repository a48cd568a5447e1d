"""The provider contract (guide section 5), and the profile-only provider every hardware gets.

A provider adds behaviour a profile cannot declare. The whole contract is the guide's four
methods, :class:`GuideProvider`; a provider implements ``profile()`` and any of the others, and
the drivers domain (``monitoring/gpu_driver/provider.py``) does the rest from the profile. So
hardware that ships no provider gets a :class:`ProfileProvider`, which only knows its profile.

This module imports no domain: what a provider *does* with a cluster lives in the drivers domain.
``cluster_id`` is a kubeconfig context (None: the current one).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Protocol, runtime_checkable

from llm_d_lens.hardware.models import HardwareProfile


#: every method of a hardware provider Lens calls: a third-party provider's are called in its worker
#: process (``provider_host.py``), so only these cross
HARDWARE_HOOKS = ("profile", "ensure_presence", "driver_status", "install_driver", "extra_install_options")
#: the one method of a telemetry provider Lens calls
TELEMETRY_HOOKS = ("derive",)


@runtime_checkable
class HardwareProvider(Protocol):
    def profile(self) -> HardwareProfile: ...


@runtime_checkable
class GuideProvider(HardwareProvider, Protocol):
    """The guide's whole interface; every method but ``profile()`` is optional in practice."""

    async def ensure_presence(self, *, cluster_id: str | None) -> Any: ...

    async def driver_status(self, access_mode: str | None, *, cluster_id: str | None) -> Any: ...

    async def install_driver(self, access_mode: str | None, *, cluster_id: str | None) -> Any: ...


@runtime_checkable
class TelemetryProvider(Protocol):
    """A plugin's telemetry provider (entry-point group ``llm_d_lens.telemetry.providers``).

    ``derive`` adds or changes values in each device reading's ``values`` (field name -> value)
    and returns warnings; what it adds shows in each device's ``derived`` mapping.
    """

    def derive(self, profile: HardwareProfile, devices: Sequence[Any]) -> list[str]: ...


class ProfileProvider:
    """Knows its profile and nothing else: the drivers domain's defaults do all the work.

    A vendor provider may subclass it to name its profile (``profile_id``) and add optional hooks,
    such as ``extra_install_options(target, view)``, or guide methods of its own.
    """

    #: A vendor subclass names its profile, so the entry point can instantiate it without arguments.
    profile_id: ClassVar[str | None] = None

    def __init__(self, profile: HardwareProfile | None = None):
        self._profile = profile

    def profile(self) -> HardwareProfile:
        if self._profile is None:
            if self.profile_id is None:
                raise TypeError(f"{type(self).__name__} needs a profile or a profile_id")
            from llm_d_lens.hardware.registry import get_profile

            self._profile = get_profile(self.profile_id)
        return self._profile

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.profile().id!r})"

    def describe(self) -> dict[str, Any]:
        return {"id": self.profile().id, "provider": type(self).__name__, "declarative": type(self) is ProfileProvider}
