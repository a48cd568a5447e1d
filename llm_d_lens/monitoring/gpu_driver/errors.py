"""Errors a user meets while planning, installing or checking device stacks; each has a stable code."""

from __future__ import annotations

from llm_d_lens.errors import LensError


class AccessModeUnknown(LensError):
    """A mode name the profile does not list in ``access_modes`` (usually a typo)."""

    code = "ACCESS_MODE_UNKNOWN"
    http_status = 422


class DriverNotManaged(LensError):
    """The mode is declared, but Lens installs nothing for it (no driver block, or an unmanaged mode)."""

    code = "DRIVER_NOT_MANAGED"
    http_status = 422


class DriverOptionInvalid(LensError):
    """An option key or value that cannot be passed to the installer as given."""

    code = "DRIVER_OPTION_INVALID"
    http_status = 422


class KubernetesTooOld(LensError):
    """The API server is older than the mode's ``min_kubernetes_version``."""

    code = "KUBERNETES_TOO_OLD"
    http_status = 409


class ReleaseConflict(LensError):
    """Something Lens did not put there already holds the release name; Lens will not replace it."""

    code = "DRIVER_RELEASE_CONFLICT"
    http_status = 409


class PresenceNotDeclared(LensError):
    """The profile names no node labels, so there is nothing to wait for."""

    code = "PRESENCE_NOT_DECLARED"
    http_status = 422


class HardwareNotPresent(LensError):
    """No node carries the hardware's labels and nothing was applied that could add them."""

    code = "HARDWARE_NOT_PRESENT"
    http_status = 409


class PresenceTimeoutInvalid(LensError):
    """A wait bound that bounds nothing (NaN, infinity) or is negative."""

    code = "PRESENCE_TIMEOUT_INVALID"
    http_status = 422


class PresenceTimedOut(LensError):
    """ensure_refs were applied, but no node got the labels within ``timeout_seconds``."""

    code = "PRESENCE_TIMEOUT"
    http_status = 504


class UnsupportedDevices(LensError):
    """Classes claim devices no registered hardware (nor a declared-external name) covers."""

    code = "UNSUPPORTED_DEVICES"
    http_status = 422


class DeviceClaimsRejected(LensError):
    """Claims every hardware supports, combined in a way that could never be scheduled."""

    code = "DEVICE_CLAIMS_REJECTED"
    http_status = 422


class ClaimsInvalid(LensError):
    """A claims file (or request body) that is not the documented shape."""

    code = "CLAIMS_INVALID"
    http_status = 422


class ProviderFailed(LensError):
    """A hardware's provider (plugin code) raised or answered with the wrong type; the plugin's to fix."""

    code = "PROVIDER_FAILED"
    http_status = 502
