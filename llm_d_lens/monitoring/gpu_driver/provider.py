"""How the drivers domain drives a hardware's provider: the guide's interface, or the default.

The contract (``hardware/providers/base.py``) is only the guide's section 5: ``profile()``,
``ensure_presence(*, cluster_id)``, ``driver_status(access_mode, *, cluster_id)`` and
``install_driver(access_mode, *, cluster_id)``. A provider may implement any of them, and
whichever it does not is done here from the profile alone (the default behaviour lives in this
domain, not in the contract). A provider method gets ``cluster_id`` (the cluster's name from the
clusters file, else the kubeconfig context in use) and, only if its signature asks for them, the extras Lens has at hand (``view``, ``runner``,
``clock``, ``timeout_seconds``, ``dry_run``, ``options``). One optional hook is read too:
``extra_install_options(target, view)``, values derived from the cluster at install time.

A provider that raises (anything, ``SystemExit`` included) or returns the wrong type fails with
``PROVIDER_FAILED`` naming the hardware and the provider, never a traceback or a 500. A
third-party provider lives in its distribution's worker process (``hardware/provider_host.py``):
its answer arrives as plain data and is rebuilt here as the contract's type with every field
checked, and a worker that dies or hangs is ``PROVIDER_FAILED`` too, with every other hardware
carrying on.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from llm_d_lens.errors import LensError
from llm_d_lens.hardware.isolation import GuardedFailure
from llm_d_lens.hardware.models import HardwareProfile
from llm_d_lens.hardware.plain import PlainRefused, from_plain
from llm_d_lens.hardware.provider_host import HookFailed, RemoteProvider, provider_name
from llm_d_lens.monitoring.gpu_driver.clock import Clock, SystemClock
from llm_d_lens.monitoring.gpu_driver.errors import ProviderFailed
from llm_d_lens.monitoring.gpu_driver.install import InstallResult, install
from llm_d_lens.monitoring.gpu_driver.kube import ClusterView
from llm_d_lens.monitoring.gpu_driver.presence import PresenceReport, ensure_presence
from llm_d_lens.monitoring.gpu_driver.status import ModeStatus, driver_status
from llm_d_lens.monitoring.gpu_driver.target import DriverTarget, resolve_mode_name, resolve_target

GUIDE_METHODS = ("ensure_presence", "driver_status", "install_driver")


def implements(provider: Any, name: str) -> bool:
    """Whether the provider itself defines a guide method (a profile-only base class does not)."""
    return callable(getattr(provider, name, None))


def _accepted(method: Callable[..., Any], offered: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword arguments ``method`` can take: all when it has ``**kwargs``, else those it names."""
    try:
        parameters = inspect.signature(method).parameters.values()
    except (TypeError, ValueError):
        return {}
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return dict(offered)
    names = {p.name for p in parameters if p.kind in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)}
    return {k: v for k, v in offered.items() if k in names}


def cluster_id_of(view: ClusterView) -> str | None:
    """The cluster's name when one was chosen by name, else the kubeconfig context the view's runner targets
    (None: the kubeconfig's current one)."""
    return getattr(view, "cluster_id", None) or getattr(view.runner, "context", None)


class DriverOps:
    """One hardware's driver operations: the provider's where it has them, the default elsewhere."""

    def __init__(self, profile: HardwareProfile, provider: Any):
        self.profile = profile
        self.provider = provider

    def _who(self) -> str:
        return f"provider {provider_name(self.provider)} of {self.profile.id!r}"

    async def _invoke(self, name: str, method: Callable[..., Any], args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        """Call a hook: what it raises, and its worker dying or hanging (a third party's), is PROVIDER_FAILED."""
        try:
            return await method(*args, **kwargs)
        except LensError:
            raise
        except HookFailed as exc:  # it raised, in its worker
            what = f"failed in {name}(): {exc}" if exc.kind == "raised" else f"{name}() {exc}"
            raise ProviderFailed(f"{self._who()} {what}", details={"hardware": self.profile.id, "method": name}) from None
        except GuardedFailure as exc:  # its worker died, hung or broke the protocol: the distribution is unavailable
            raise ProviderFailed(f"{self._who()} {exc}", details={"hardware": self.profile.id, "method": name,
                                                                  "kind": exc.kind}) from None
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - a provider must not take Lens down
            raise ProviderFailed(f"{self._who()} failed in {name}(): {type(exc).__name__}: {exc}",
                                 details={"hardware": self.profile.id, "method": name}) from None

    def _checked(self, name: str, result: Any, expected: Any) -> Any:
        """A third-party hook's plain answer rebuilt as the contract's type, every field checked."""
        try:
            return from_plain(expected, result)
        except PlainRefused as exc:
            raise ProviderFailed(f"{self._who()}: {name}() answered what its contract does not allow: {exc}",
                                 details={"hardware": self.profile.id, "method": name}) from None

    async def _call(self, name: str, args: Sequence[Any], offered: Mapping[str, Any], expect: type,
                    many: bool = False) -> Any:
        method = getattr(self.provider, name)
        result = await self._invoke(name, method, args, _accepted(method, offered))
        if isinstance(self.provider, RemoteProvider):
            if many and not isinstance(result, list):
                result = [result]
            return self._checked(name, result, list[expect] if many else expect)  # type: ignore[valid-type]
        items = result if many and isinstance(result, list) else [result]
        if not all(isinstance(item, expect) for item in items):
            shown = type(result).__name__
            raise ProviderFailed(f"{self._who()}: {name}() returned {shown}, expected "
                                 f"{'a list of ' if many else ''}{expect.__name__}",
                                 details={"hardware": self.profile.id, "method": name})
        return result if many and isinstance(result, list) else (items if many else result)

    async def ensure_presence(self, *, view: ClusterView, clock: Clock | None = None,
                              timeout_seconds: float | None = None) -> PresenceReport:
        clock = clock or SystemClock()
        if implements(self.provider, "ensure_presence"):
            offered = {"cluster_id": cluster_id_of(view), "view": view, "runner": view.runner, "clock": clock,
                       "timeout_seconds": timeout_seconds}
            return await self._call("ensure_presence", (), offered, PresenceReport)
        return await ensure_presence(self.profile, view, clock, timeout_seconds=timeout_seconds)

    async def driver_status(self, access_mode: str | None = None, *, view: ClusterView) -> list[ModeStatus]:
        if implements(self.provider, "driver_status"):
            offered = {"cluster_id": cluster_id_of(view), "view": view, "runner": view.runner}
            return await self._call("driver_status", (access_mode,), offered, ModeStatus, many=True)
        modes = [resolve_mode_name(self.profile, access_mode)] if access_mode else None
        return await driver_status(self.profile, view, modes)

    async def install_driver(self, access_mode: str | None = None, *, view: ClusterView, dry_run: bool = False,
                             options: Mapping[str, Any] | None = None) -> InstallResult:
        if implements(self.provider, "install_driver"):
            offered = {"cluster_id": cluster_id_of(view), "view": view, "runner": view.runner, "dry_run": dry_run,
                       "options": options}
            return await self._call("install_driver", (access_mode,), offered, InstallResult)
        return await self.install_target(resolve_target(self.profile, access_mode, options), view=view, dry_run=dry_run)

    async def install_target(self, target: DriverTarget, *, view: ClusterView, dry_run: bool = False) -> InstallResult:
        """A planned step. A provider with its own ``install_driver`` installs its mode its own way."""
        if implements(self.provider, "install_driver"):
            return await self.install_driver(target.mode_name, view=view, dry_run=dry_run, options=target.options)
        return await install(target, view, dry_run=dry_run, extra_options=self._extra_options())

    def _extra_options(self) -> Callable[[DriverTarget, ClusterView], Any] | None:
        hook = getattr(self.provider, "extra_install_options", None)
        if not callable(hook):
            return None

        async def guarded(target: DriverTarget, view: ClusterView) -> Mapping[str, Any]:
            derived = await self._invoke("extra_install_options", hook, (target, view), {})
            if isinstance(self.provider, RemoteProvider):
                return self._checked("extra_install_options", derived, dict[str, Any])
            if not isinstance(derived, Mapping):
                raise ProviderFailed(f"{self._who()}: extra_install_options() returned {type(derived).__name__}, "
                                     "expected a mapping", details={"hardware": self.profile.id})
            return derived

        return guarded
