"""The ``lens`` command.

Command groups live beside their domain (``llm_d_lens/<domain>/cli.py``, each exposing a
:class:`~llm_d_lens.terminal.commands.Group` ``app``) and are imported only when invoked, so ``lens hardware ...`` never pays for the web
server, Kubernetes or HTTP clients; ``lens --help`` lists them from ``GROUPS`` without importing
any. Every command runs the one way: no earlier output is replayed. Errors are
:class:`LensError`s rendered here, once: a message on stderr and exit code 1, never a traceback.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import TYPE_CHECKING, Any

from llm_d_lens import settings
from llm_d_lens.errors import LensError
from llm_d_lens.terminal.output import OutputFormat

if TYPE_CHECKING:
    from llm_d_lens.terminal.commands import Group

#: command group -> (module with a command ``Group`` named ``app``, help line)
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

#: another name -> the group it runs: the API's spelling (/api/v1/drivers); hidden in help, listed in docs/cli.md
ALIASES: dict[str, str] = {"drivers": "driver"}

#: ``-h`` is ``--help`` on every command (click hands these to subcommands); help wraps at the terminal, up to 200 columns
CONTEXT_SETTINGS: dict[str, Any] = {"help_option_names": ["-h", "--help"], "max_content_width": 200}


def _print_version(value: bool) -> None:
    from llm_d_lens.terminal import commands
    if value:
        from llm_d_lens import __version__

        commands.echo(f"lens {__version__}")
        raise commands.Exit(0)


def build_app(only: str | None = None, *, lazy: bool = False) -> Group:
    """The ``lens`` app with every group (``only``: that one group alone).

    ``lazy`` (``lens --help``): each group is listed by its name and help line without importing
    its module; such a placeholder is never run, since naming a group loads the real one.
    """
    from llm_d_lens.terminal import commands
    from llm_d_lens.terminal.options import OutputOption

    app = commands.Group(
        name="lens", help="Lens: the hardware layer for llm-d.", no_args_is_help=True,
        context_settings=CONTEXT_SETTINGS,
    )

    @app.callback()
    def root(
        version: bool = commands.Option(False, "--version", is_eager=True, callback=_print_version,
                                     help="Print the Lens version and exit (`lens version` names the tools too)."),
    ) -> None:
        """Lens: the hardware layer for llm-d."""
        # A callback keeps `lens` a group even when only one command is loaded (`lens serve`).

    @app.command("version")
    def version(
        output: OutputFormat = OutputOption,
    ) -> None:
        """Lens, Python, kubectl, helm and kustomize versions ('not installed' when a tool is absent)."""
        from llm_d_lens.terminal.output import emit
        from llm_d_lens.runner import CommandRunner
        from llm_d_lens.cli.version import versions, versions_table

        emit(versions(CommandRunner()), output, versions_table)

    for name, (module, help_text) in GROUPS.items():
        if only is not None and name != only:
            continue
        group = commands.Group() if lazy and only is None else importlib.import_module(module).app
        app.add_group(group, name=name, help=help_text)
        for alias in (a for a, target in ALIASES.items() if target == name):
            app.add_group(group, name=alias, help=f"Same as `lens {name}`.", hidden=True)

    if only is None or only == "serve":

        @app.command("serve")
        def serve(
            host: str = commands.Option("127.0.0.1", help="Address to listen on."),
            port: int = commands.Option(8080, min=0, max=65535, help="Port to listen on (0: any free one)."),
            demo: bool = commands.Option(False, "--demo", help="Serve the embedded demo cluster and demo telemetry."),
            strict: bool = commands.Option(False, "--strict", help="Refuse to start while any hardware plugin fails."),
            clusters: str | None = commands.Option(None, "--clusters", help="Clusters file naming the clusters to serve (sets LENS_CLUSTERS)."),
            allowed_host: list[str] = commands.Option([], "--allowed-host", help="A Host name the server answers to; repeatable "
                                                      "(default: the --host address and localhost; any when bound to 0.0.0.0)."),
        ) -> None:
            """Serve the web console (/) and the Lens API (/api/v1/...) on one port.

            Live clusters are kept in memory by a watch; LENS_CLUSTER_WATCH=0 reads them per request instead.
            """
            import os

            import uvicorn

            from llm_d_lens.api.app import create_app
            from llm_d_lens.serving.readiness import refuse_if_strict

            refuse_if_strict(strict)  # also loads the plugins before the first request has to

            from llm_d_lens.api.hosts import ENV, default_hosts

            # the server's settings, worked out whole before any is set: a refusal leaves the environment as it was
            planned = dict(os.environ)
            planned[ENV] = ",".join(default_hosts(host, allowed_host))  # DNS rebinding: other Host names refused
            if clusters:
                planned["LENS_CLUSTERS"] = clusters
            planned.setdefault("LENS_CLUSTER_WATCH", "1")  # live clusters are watched (LENS_CLUSTER_WATCH=0: read per request)
            if demo:
                _demo_environment(planned)
            from llm_d_lens.serving.watched import check_settings

            check_settings(planned)
            _check_address(host, port)
            os.environ.update({name: value for name, value in planned.items() if os.environ.get(name) != value})
            uvicorn.run(create_app(), host=host, port=port, log_level="info")

    return app


def _demo_environment(env: Any) -> None:
    """``--demo``: the embedded cluster and telemetry, unless the operator pointed the server elsewhere."""
    chosen = [name for name in ("LENS_CLUSTER_SNAPSHOT", "LENS_KUBE_CONTEXT", "LENS_KUBECONFIG", "LENS_CLUSTERS") if env.get(name)]
    if chosen:
        raise DemoConflict(f"--demo serves the embedded demo cluster, but {', '.join(chosen)} is set; unset it or drop --demo")
    env["LENS_CLUSTER_DEMO"] = "1"
    if settings.text("LENS_PROMETHEUS_URL", env) is None:
        env["LENS_TELEMETRY_DEMO"] = "1"


class DemoConflict(LensError):
    code = "CLUSTER_SOURCE_CONFLICT"


class AddressUnusable(LensError):
    code = "SERVE_ADDRESS_UNUSABLE"


def _check_address(host: str, port: int) -> None:
    """Resolve ``--host`` and, for a fixed ``--port``, bind it once, so a name that does not resolve or an address
    in use is one coded line before anything starts (uvicorn would log it and exit 3 after the app's start-up)."""
    import socket

    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        if port:
            with socket.socket(family, kind, proto) as probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
                probe.bind(address)
    except (OSError, UnicodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise AddressUnusable(f"--host {host} --port {port}: {reason}", details={"host": host, "port": port}) from None


def _group_of(argv: list[str]) -> str | None:
    """The one group ``argv`` runs, so only its module is imported; "version" loads no group."""
    for arg in argv:
        if arg == "--version":
            return "version"
        if not arg.startswith("-"):
            arg = ALIASES.get(arg, arg)
            return arg if arg in GROUPS or arg in ("serve", "version") else None
    return None


def main(argv: list[str] | None = None) -> int:
    """Run ``lens ARGS`` (``sys.argv`` by default) and return its exit code; errors are rendered here, once."""
    args = sys.argv[1:] if argv is None else argv
    for position, arg in enumerate(args, 1):
        if not arg.isascii() and not _is_text(arg):  # a byte that is no UTF-8 arrives as a lone surrogate
            shown = repr(arg.encode("utf-8", "surrogateescape"))[2:-1]
            print(f"error: ARGUMENT_INVALID: argument {position} ({shown}) is not valid UTF-8 text", file=sys.stderr)
            return 2
    group = _group_of(args)
    completing = any(name.startswith("_") and name.endswith("_COMPLETE") for name in os.environ)
    app = build_app(group, lazy=group is None and not completing)
    try:
        return _run(app, args)
    finally:
        from llm_d_lens.hardware.notice import warn_if_problems

        warn_if_problems()  # one stderr line while a plugin is skipped, whatever the command


def _is_text(arg: str) -> bool:
    try:
        arg.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _run(app: Group, args: list[str]) -> int:
    import click

    from llm_d_lens.terminal import commands

    try:
        command = commands.to_click(app)
        result = command.main(args=args, prog_name="lens", standalone_mode=False)
    except LensError as exc:
        _report(exc)
        return 1
    except commands.Exit as exc:
        return exc.exit_code
    except commands.Abort as exc:
        commands.echo("Aborted.", err=True)
        return 130 if isinstance(exc.__cause__, KeyboardInterrupt) else 1  # 128 + SIGINT, as a shell reports Ctrl-C
    except click.ClickException as exc:  # usage errors: click's own message, exit code 2
        exc.show()
        return int(exc.exit_code)
    return result if isinstance(result, int) else 0


def _report(exc: LensError) -> None:
    from llm_d_lens.terminal import commands
    from llm_d_lens.errors import MAX_MESSAGE
    from llm_d_lens.terminal.printable import printable

    # bounded, and every control character escaped: a message quotes file names and plugin text
    text = printable(exc.message, MAX_MESSAGE, lines=True)
    message = text if text.startswith(exc.code) else f"{exc.code}: {text}"
    commands.echo(f"error: {message}", err=True)

