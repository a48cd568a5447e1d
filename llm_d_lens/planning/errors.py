"""Errors of the planning domain, each naming the model source, the field path and the value at fault."""

from __future__ import annotations

from typing import Any

from llm_d_lens.errors import LensError
from llm_d_lens.hardware.errors import render_value


def show(value: Any, limit: int = 60) -> str:
    """A value as JSON shows it, shortened: the one rendering hardware errors use too."""
    return render_value(value, limit)


class PlanningError(LensError):
    code = "PLANNING_ERROR"


class ModelUnknown(PlanningError):
    """A model name that is neither in the catalogue nor a file or directory on disk."""

    code = "PLANNING_MODEL_UNKNOWN"
    http_status = 404

    CLI_HINT = ("`lens plan models` lists them all", "for another model pass its config.json or model directory: "
                "--model ./path/to/config.json")
    API_HINT = ("GET /api/v1/planning/models lists them all", "for another model send its config.json object as config")

    def __init__(self, name: str, nearest: list[str], hint: tuple[str, str] = CLI_HINT):
        shown = f"nearest catalogue names: {', '.join(nearest)}; " if nearest else ""
        super().__init__(f"model {name!r} is not in the catalogue ({shown}{hint[0]}); {hint[1]}",
                         details={"model": name, "nearest": nearest})


class ModelConfigNotFound(PlanningError):
    code = "PLANNING_MODEL_CONFIG_NOT_FOUND"
    http_status = 404


class ModelConfigInvalid(PlanningError):
    """A config.json (or catalogue entry) field that no real model could have."""

    code = "PLANNING_MODEL_CONFIG_INVALID"
    http_status = 422

    def __init__(self, source: str, path: str, value: Any, reason: str):
        super().__init__(f"{source}: {path}: {show(value)} {reason}",
                         details={"source": source, "path": path, "value": show(value, 200), "reason": reason})


class ConfigTooLarge(PlanningError):
    """An uploaded config.json (or the form carrying it) over the upload cap: a config is a few KiB."""

    code = "PLANNING_CONFIG_TOO_LARGE"
    http_status = 413

    def __init__(self, source: str, size: int, limit: int):
        super().__init__(f"{source}: {size:,}+ bytes is larger than an uploaded config.json may be ({limit:,} bytes, "
                         f"{limit // 1024} KiB); upload the model's config.json alone, or plan it with lens plan --model PATH",
                         details={"source": source, "size": size, "limit": limit})


class RequestInvalid(PlanningError):
    """A plan request no deployment could serve: context 0, concurrency 10**12, an unknown dtype."""

    code = "PLANNING_REQUEST_INVALID"
    http_status = 422

    def __init__(self, field: str, value: Any, reason: str):
        super().__init__(f"{field}: {show(value)} {reason}", details={"field": field, "value": show(value, 200), "reason": reason})


class PredictionsUnavailable(PlanningError):
    """AIC predictions were asked for but the optional extra is not installed (or failed to load)."""

    code = "PLANNING_AIC_NOT_INSTALLED"
    http_status = 503


class JobNotFound(PlanningError):
    code = "PLANNING_JOB_NOT_FOUND"
    http_status = 404


class PriceInvalid(PlanningError):
    """A device-hour price no one pays (negative, zero, not a number), or a price file that cannot be read."""

    code = "PLANNING_PRICE_INVALID"
    http_status = 422

    def __init__(self, source: str, path: str, value: Any, reason: str):
        super().__init__(f"{source}: {path}: {show(value)} {reason}",
                         details={"source": source, "path": path, "value": show(value, 200), "reason": reason})
