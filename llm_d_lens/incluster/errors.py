"""Coded errors of the in-cluster domain: a command or kind Lens cannot map to an RBAC rule."""

from __future__ import annotations

from llm_d_lens.errors import LensError


class CommandUnmapped(LensError):
    """A kubectl/helm invocation whose API access is not known, so no role can be checked for it.

    Raised on purpose for anything new: a new kind of call must be mapped (and granted) before the
    least-privilege proof passes again.
    """

    code = "INCLUSTER_COMMAND_UNMAPPED"
    http_status = 500


class ResourceUnknown(LensError):
    """A resource type or object kind missing from the table of API resources Lens knows."""

    code = "INCLUSTER_RESOURCE_UNKNOWN"
    http_status = 500


class RoleInvalid(LensError):
    """A rendered ClusterRole that cannot be read as exact grants (a wildcard, a missing field)."""

    code = "INCLUSTER_ROLE_INVALID"
    http_status = 500


class PermissionsMissing(LensError):
    """The service account lacks grants Lens uses: the deployment's RBAC, the operator's to fix."""

    code = "INCLUSTER_PERMISSIONS_MISSING"
    http_status = 503


class PermissionsUnknown(LensError):
    """kubectl could not ask the API server at all (unreachable, no credentials): nothing is known yet."""

    code = "INCLUSTER_PERMISSIONS_UNKNOWN"
    http_status = 502
