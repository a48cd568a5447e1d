"""The provider interface (guide section 5) and the provider every hardware gets by default.

A provider adds behaviour a profile cannot declare. Hardware that ships none gets
:class:`DefaultProvider`, which works from the profile alone (``driver`` and ``presence``), so
declarative-only hardware still gets presence, status and install. A vendor provider subclasses
it and overrides only what it really changes, usually :meth:`DefaultProvider.extra_install_options`.

``cluster_id`` is a kubeconfig context (None: the current one). Tests and the API pass their own
``runner`` (or a ``view`` shared across calls) and ``clock`` instead. The drivers domain
(``monitoring/gpu_driver``) is imported inside the methods, so ``lens hardware`` never loads it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

from llm_d_lens.hardware.models import HardwareProfile

if TYPE_CHECKING:
    from llm_d_lens.monitoring.gpu_driver.clock import Clock
    from llm_d_lens.monitoring.gpu_driver.install import InstallResult
    from llm_d_lens.monitoring.gpu_driver.kube import ClusterView
    from llm_d_lens.monitoring.gpu_driver.presence import PresenceReport
    from llm_d_lens.monitoring.gpu_driver.status import ModeStatus
    from llm_d_lens.monitoring.gpu_driver.target import DriverTarget
    from llm_d_lens.runner import Runner


@runtime_checkable
class HardwareProvider(Protocol):
    def profile(self) -> HardwareProfile: ...


@runtime_checkable
class DriverProvider(HardwareProvider, Protocol):
    """The guide's driver half of the interface; a provider lacking it gets the default behaviour."""

    async def ensure_presence(self, *, cluster_id: str | None = None, **kwargs: Any) -> Any: ...

    async def driver_status(self, access_mode: str | None = None, *, cluster_id: str | None = None, **kwargs: Any) -> Any: ...

    async def install_driver(self, access_mode: str | None = None, *, cluster_id: str | None = None, **kwargs: Any) -> Any: ...


def cluster_view(cluster_id: str | None, runner: Runner | None, view: ClusterView | None) -> ClusterView:
    from llm_d_lens.monitoring.gpu_driver.kube import ClusterView
    from llm_d_lens.runner import CommandRunner

    if view is not None:
        return view
    return ClusterView(runner if runner is not None else CommandRunner(context=cluster_id))


class DefaultProvider:
    """Everything derived from the profile; vendor providers subclass it to add what is real."""

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
        return {"id": self.profile().id, "provider": type(self).__name__, "declarative": type(self) is DefaultProvider}

    # -- hooks a vendor provider may override -------------------------------------------------

    async def extra_install_options(self, target: DriverTarget, view: ClusterView) -> Mapping[str, Any]:
        """Values derived from the cluster at install time; the profile's and the user's options win."""
        return {}

    # -- the guide's interface ----------------------------------------------------------------

    async def ensure_presence(self, *, cluster_id: str | None = None, runner: Runner | None = None,
                              view: ClusterView | None = None, clock: Clock | None = None,
                              timeout_seconds: float | None = None) -> PresenceReport:
        from llm_d_lens.monitoring.gpu_driver.clock import SystemClock
        from llm_d_lens.monitoring.gpu_driver.presence import ensure_presence

        return await ensure_presence(self.profile(), cluster_view(cluster_id, runner, view), clock or SystemClock(),
                                     timeout_seconds=timeout_seconds)

    async def driver_status(self, access_mode: str | None = None, *, cluster_id: str | None = None,
                            runner: Runner | None = None, view: ClusterView | None = None) -> list[ModeStatus]:
        from llm_d_lens.monitoring.gpu_driver.status import driver_status
        from llm_d_lens.monitoring.gpu_driver.target import resolve_mode_name

        profile = self.profile()
        modes: Sequence[str] | None = [resolve_mode_name(profile, access_mode)] if access_mode else None
        return await driver_status(profile, cluster_view(cluster_id, runner, view), modes)

    async def install_driver(self, access_mode: str | None = None, *, cluster_id: str | None = None,
                             runner: Runner | None = None, view: ClusterView | None = None, dry_run: bool = False,
                             options: Mapping[str, Any] | None = None) -> InstallResult:
        from llm_d_lens.monitoring.gpu_driver.target import resolve_target

        target = resolve_target(self.profile(), access_mode, options)
        return await self.install_target(target, view=cluster_view(cluster_id, runner, view), dry_run=dry_run)

    async def install_target(self, target: DriverTarget, *, view: ClusterView, dry_run: bool = False) -> InstallResult:
        from llm_d_lens.monitoring.gpu_driver.install import install

        return await install(target, view, dry_run=dry_run, extra_options=self.extra_install_options)
