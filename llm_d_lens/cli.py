"""The ``lens`` command.

Command groups live beside their domain (``llm_d_lens/<domain>/cli.py``, each exposing a Typer
``app``) and are imported only when invoked, so ``lens hardware ...`` never pays for the web
server, Kubernetes or HTTP clients. Errors are :class:`LensError`s rendered here, once: a
message on stderr and exit code 1, never a traceback.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import typer

from llm_d_lens.errors import LensError

#: command group -> (module with a Typer ``app``, help line)
GROUPS: dict[str, tuple[str, str]] = {
    "hardware": ("llm_d_lens.hardware.cli", "Hardware profiles: list, show, validate, resolve, doctor, new."),
    "evaluate": ("llm_d_lens.evaluate.cli", "llm-d-benchmark scenario settings and telemetry coverage checks."),
    "profiles": ("llm_d_lens.evaluate.profiles_cli", "Workload profiles: list, compose-file, flags, validate."),
    "driver": ("llm_d_lens.monitoring.gpu_driver.cli", "Device plugins and DRA drivers: plan, status, install."),
    "preflight": ("llm_d_lens.monitoring.gpu_driver.preflight_cli", "Wait until hardware is present on some node."),
    "deploy": ("llm_d_lens.deploy.cli", "llm-d overlays: list them, render one fitted to a hardware, apply it."),
    "telemetry": ("llm_d_lens.monitoring.cli", "Accelerator devices and serving pods in common units, from Prometheus."),
    "cluster": ("llm_d_lens.cluster.cli", "Cluster inventory: accelerators, VRAM and allocation per hardware profile."),
    "incluster": ("llm_d_lens.incluster.cli", "Lens in a pod: check its service account holds the permissions Lens uses."),
    "plan": ("llm_d_lens.planning.cli", "Which model fits on which hardware pool, with what parallelism and replicas."),
}


def build_app(only: str | None = None) -> typer.Typer:
    app = typer.Typer(
        name="lens", help="Lens: the hardware layer for llm-d.", no_args_is_help=True,
        pretty_exceptions_enable=False, add_completion=False,
    )

    @app.callback()
    def root() -> None:
        """Lens: the hardware layer for llm-d."""
        # A callback keeps `lens` a group even when only one command is loaded (`lens serve`).
    for name, (module, help_text) in GROUPS.items():
        if only is not None and name != only:
            continue
        group = importlib.import_module(module).app
        app.add_typer(group, name=name, help=help_text)

    if only is None or only == "serve":

        @app.command("serve")
        def serve(
            host: str = typer.Option("127.0.0.1", help="Address to listen on."),
            port: int = typer.Option(8080, help="Port to listen on."),
            demo: bool = typer.Option(False, "--demo", help="Serve the embedded demo cluster and demo telemetry."),
            strict: bool = typer.Option(False, "--strict", help="Refuse to start while any hardware plugin fails."),
        ) -> None:
            """Serve the web console (/) and the Lens API (/api/v1/...) on one port."""
            import os

            import uvicorn

            from llm_d_lens.api.app import create_app
            from llm_d_lens.api.readiness import refuse_if_strict

            refuse_if_strict(strict)  # also loads the plugins before the first request has to

            if demo:
                _demo_environment(os.environ)
            uvicorn.run(create_app(), host=host, port=port, log_level="info")

    return app


def _demo_environment(env: Any) -> None:
    """``--demo``: the embedded cluster and telemetry, unless the operator pointed the server elsewhere."""
    chosen = [name for name in ("LENS_CLUSTER_SNAPSHOT", "LENS_KUBE_CONTEXT", "LENS_KUBECONFIG") if env.get(name)]
    if chosen:
        raise DemoConflict(f"--demo serves the embedded demo cluster, but {', '.join(chosen)} is set; unset it or drop --demo")
    env["LENS_CLUSTER_DEMO"] = "1"
    if not env.get("LENS_PROMETHEUS_URL"):
        env["LENS_TELEMETRY_DEMO"] = "1"


class DemoConflict(LensError):
    code = "CLUSTER_SOURCE_CONFLICT"


def _group_of(argv: list[str]) -> str | None:
    for arg in argv:
        if not arg.startswith("-"):
            return arg if arg in GROUPS or arg == "serve" else None
    return None


def main(argv: list[str] | None = None) -> int:
    # Typer may vendor its own click: take the exception classes from Typer itself.
    click_exception: type[Exception] = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")
    args = sys.argv[1:] if argv is None else argv
    app = build_app(_group_of(args))
    try:
        return _run(app, args, click_exception)
    finally:
        from llm_d_lens.hardware.notice import warn_if_problems

        warn_if_problems()  # one stderr line while a plugin is skipped, whatever the command


def _run(app: typer.Typer, args: list[str], click_exception: type[Exception]) -> int:
    try:
        result = app(args=args, prog_name="lens", standalone_mode=False)
    except LensError as exc:
        _report(exc)
        return 1
    except typer.Exit as exc:
        return exc.exit_code
    except typer.Abort:
        typer.echo("Aborted.", err=True)
        return 1
    except click_exception as exc:  # usage errors: click's own message, exit code 2
        exc.show()  # type: ignore[attr-defined]
        return int(exc.exit_code)  # type: ignore[attr-defined]
    return result if isinstance(result, int) else 0


def _report(exc: LensError) -> None:
    message = exc.message if exc.message.startswith(exc.code) else f"{exc.code}: {exc.message}"
    typer.echo(f"error: {message}", err=True)


if __name__ == "__main__":
    raise SystemExit(main())
