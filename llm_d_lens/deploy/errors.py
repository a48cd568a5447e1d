"""Errors a user meets while finding, rendering and fitting an llm-d overlay.

Each names what was looked at (the source, the guide, the overlay directory or file) so the user
can go and look at it too.
"""

from __future__ import annotations

from typing import Any

from llm_d_lens.errors import LensError


class DeployError(LensError):
    code = "DEPLOY_ERROR"


class SourceNotFound(DeployError):
    """No llm-d checkout was given, or the path given is not a directory."""

    code = "LLM_D_SOURCE_NOT_FOUND"
    http_status = 404


class SourceInvalid(DeployError):
    """The checkout exists but cannot be read as asked (not a git repository, unknown revision)."""

    code = "LLM_D_SOURCE_INVALID"
    http_status = 422


class UnsafeName(DeployError):
    """A guide, model server or overlay name that would leave the llm-d source."""

    code = "DEPLOY_UNSAFE_PATH"

    def __init__(self, what: str, value: str, reason: str):
        super().__init__(f"{what} {value!r} is not allowed: {reason}", details={"field": what, "value": value})


class GuideNotFound(DeployError):
    code = "GUIDE_NOT_FOUND"
    http_status = 404


class OverlayNotFound(DeployError):
    code = "OVERLAY_NOT_FOUND"
    http_status = 404


class OverlayAmbiguous(DeployError):
    code = "OVERLAY_AMBIGUOUS"
    http_status = 409


class OverlayLabelMismatch(DeployError):
    """The overlay's llm-d.ai accelerator labels name another hardware (or none)."""

    code = "OVERLAY_LABEL_MISMATCH"
    http_status = 409


class OverlayBuildingBlock(DeployError):
    """The overlay is one upstream only builds other overlays on; it is not deployed itself."""

    code = "OVERLAY_BUILDING_BLOCK"
    http_status = 409


class OverlayUnsafe(DeployError):
    """The overlay references files outside the llm-d source."""

    code = "OVERLAY_ESCAPES_SOURCE"
    http_status = 422


class HelmValuesLayout(DeployError):
    """The revision predates the kustomize overlays: its per-hardware settings are Helm values files."""

    code = "LLM_D_HELM_VALUES_LAYOUT"
    http_status = 422


class KustomizeNotFound(DeployError):
    code = "KUSTOMIZE_NOT_FOUND"
    http_status = 503  # the server lacks a tool: its operator's to install, not the caller's fault


class RenderFailed(DeployError):
    """kustomize refused the overlay; its message (which names the file) is quoted."""

    code = "OVERLAY_RENDER_FAILED"
    http_status = 422


class DeployRequestInvalid(DeployError):
    """A mode, count or PCI address that this hardware cannot take."""

    code = "DEPLOY_REQUEST_INVALID"
    http_status = 422


class ValidationFailed(DeployError):
    """The fitted render does not have the shape its access mode needs."""

    code = "DEPLOY_VALIDATION_FAILED"
    http_status = 422

    def __init__(self, where: str, issues: list[Any]):
        self.issues = issues
        lines = [f"{where}: {len(issues)} problem{'s' if len(issues) != 1 else ''}"]
        lines += [f"  {issue}" for issue in issues]
        super().__init__("\n".join(lines), details={"issues": [issue.to_dict() for issue in issues]})


class RenderedObjectInvalid(DeployError):
    """A rendered object holds a field of a type Kubernetes would refuse (kustomize does not check)."""

    code = "RENDERED_OBJECT_INVALID"
    http_status = 422


class RenderRequestInvalid(DeployRequestInvalid):
    """A render's option (an API field) is out of its bounds or not of its form; nothing was read or run."""

    def __init__(self, flag: str, value: Any, reason: str):
        super().__init__(f"{flag} {value!r} {reason}", details={"field": flag, "value": value})
