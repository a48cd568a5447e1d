"""The provider interface (guide section 5) and the provider every hardware gets by default.

A provider adds behaviour a profile cannot declare. Hardware that ships none gets
:class:`DefaultProvider`, which works from the profile alone, so declarative-only hardware is
never second class. Driver install, status and presence arrive with the drivers domain
(``monitoring/gpu_driver``), which calls these methods.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from llm_d_lens.hardware.models import HardwareProfile


@runtime_checkable
class HardwareProvider(Protocol):
    def profile(self) -> HardwareProfile: ...


class DefaultProvider:
    """Everything derived from the profile; vendor providers subclass it to add what is real."""

    def __init__(self, profile: HardwareProfile):
        self._profile = profile

    def profile(self) -> HardwareProfile:
        return self._profile

    def __repr__(self) -> str:
        return f"DefaultProvider({self._profile.id!r})"

    def describe(self) -> dict[str, Any]:
        return {"id": self._profile.id, "provider": type(self).__name__, "declarative": True}
