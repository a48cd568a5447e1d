"""``lens plan``: which model fits on which hardware the cluster has, with what parallelism.

``lens plan --model M`` is the question a platform team asks ("what can I run, where, how many
times?"), so the group itself answers it; ``lens plan models`` lists the catalogue and
``lens plan discover`` reads a node tool's output through the profile's parser. ``--context`` is
the context length in tokens here, so the kubeconfig context is ``--kube-context``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from llm_d_lens.terminal import commands
from llm_d_lens.terminal.options import ClusterNameOption, ClustersFileOption, KubeconfigOption, OutputOption
from llm_d_lens.runner import DEFAULT_TIMEOUT
from llm_d_lens.terminal.output import (
    ListFormat,
    OutputFormat,
    emit,
    list_output_option,
)

app = commands.Group(invoke_without_command=True)



@app.callback()
def plan(
    ctx: commands.Context,
    model: str | None = commands.Option(None, "--model", "-m", help="Catalogue name (`lens plan models`), or a config.json or model directory."),
    context: int = commands.Option(8192, "--context", help="Context length in tokens each sequence may reach."),
    concurrency: int = commands.Option(1, "--concurrency", help="Sequences served at once by one replica."),
    dtype: str | None = commands.Option(None, "--dtype", help="Weights dtype: bf16, fp16, fp8, int8, int4, fp4 (default: the model's)."),
    kv_dtype: str | None = commands.Option(None, "--kv-dtype", help="KV cache dtype (default: the activations', bf16 for 8/4-bit weights)."),
    memory_utilization: float = commands.Option(0.9, "--memory-utilization", help="Share of device memory the engine takes."),
    overhead_gib: float = commands.Option(0.0, "--overhead-gib", help="Per-device allowance beyond the engine's own terms, GiB."),
    max_num_batched_tokens: int | None = commands.Option(None, "--max-num-batched-tokens",
                                                      help="The engine's token budget a step (sizes its profiling run; default vLLM's)."),
    max_num_seqs: int | None = commands.Option(None, "--max-num-seqs", help="The engine's sequences a step (default vLLM's)."),
    snapshot: Path | None = commands.Option(None, "--snapshot", help="Plan on a saved cluster snapshot."),
    demo: bool = commands.Option(False, "--demo", help="Plan on the embedded demo cluster."),
    kube_context: str | None = commands.Option(None, "--kube-context", help="kubeconfig context of the live cluster."),
    kubeconfig: str | None = KubeconfigOption,
    cluster: str | None = ClusterNameOption,
    clusters_file: Path | None = ClustersFileOption,
    timeout: float = commands.Option(DEFAULT_TIMEOUT, "--timeout", min=1, help="Seconds each kubectl call may take."),
    isl: int = commands.Option(4000, "--isl", help="AIC and --shapes: input tokens a request has."),
    osl: int = commands.Option(1000, "--osl", help="AIC and --shapes: output tokens a request has."),
    ttft: float | None = commands.Option(None, "--ttft", "--ttft-ms", help="AIC and shapes: time to first token target, ms "
                                                                        "(default 2000; giving it searches shapes)."),
    tpot: float | None = commands.Option(None, "--tpot", "--tpot-ms", help="AIC and shapes: time per output token target, ms "
                                                                        "(default 30; giving it searches shapes)."),
    backend: str = commands.Option("vllm", "--backend", help="AIC: serving engine to predict (vllm, sglang, trtllm)."),
    predict: bool = commands.Option(True, "--predict/--no-predict", help="AIC predictions when the planning extra is installed."),
    shapes: bool = commands.Option(False, "--shapes", help="Search aggregated, P/D and wide-EP shapes per pool, ranked by the "
                                                         "targets then cost (a roofline estimate where AIC has no data); "
                                                         "on when --ttft, --tpot or a price is given."),
    price: list[str] = commands.Option([], "--price", help="Price of a device-hour, KEY=USD; KEY a profile, product or pool "
                                                        "(acme=2.5, 'acme/Acme X1=3.1'); repeatable."),
    prices_file: Path | None = commands.Option(None, "--prices", help="YAML file of device-hour prices (prices: {KEY: USD})."),
    discover: bool = commands.Option(False, "--discover", help="Run the profiles' discovery tools on nodes of unknown memory (live only)."),
    all_options: bool = commands.Option(False, "--all", help="Also print every parallelism option of every pool."),
    output: OutputFormat = OutputOption,
) -> None:
    """What fits where: per hardware pool, the TP/PP options, headroom, max sequences and replicas."""
    if ctx.invoked_subcommand is not None:
        return
    if model is None:
        raise commands.BadParameter("give --model (a catalogue name from `lens plan models`, or a config.json path)",
                                 param_hint="--model")
    from llm_d_lens.cluster.source import cluster_source
    from llm_d_lens.planning.aic import status
    from llm_d_lens.planning.catalogue import resolve
    from llm_d_lens.planning.fit import FitRequest
    from llm_d_lens.planning.predictions import Targets
    from llm_d_lens.planning.render import plan_renderable
    from llm_d_lens.planning.service import plan as make_plan

    spec = resolve(model)
    request = FitRequest(context, concurrency, dtype, kv_dtype, memory_utilization, overhead_gib,
                         max_num_batched_tokens, max_num_seqs)
    shapes = shapes or ttft is not None or tpot is not None or bool(price) or prices_file is not None
    defaults = Targets()
    targets = Targets(isl, osl, defaults.ttft_ms if ttft is None else ttft, defaults.tpot_ms if tpot is None else tpot,
                      backend).checked()
    prices = None
    if shapes:
        from llm_d_lens.planning.cost import prices_from

        prices = prices_from(price, prices_file)  # a bad price is refused before any cluster is read
    source = cluster_source(cluster, clusters_file, timeout, snapshot=snapshot, demo=demo, context=kube_context,
                            kubeconfig=kubeconfig, context_flag="kube_context")
    from llm_d_lens.terminal.lifetime import keep_until_exit
    from llm_d_lens.terminal.progress import progress

    # a live cluster is read with kubectl (seconds), --discover runs tools on nodes, a large snapshot
    # takes a while to fit: say what is being done, at a terminal, for a table only
    with progress(f"planning {model}: {_planning_step(source, discover)}", for_people=output.is_table):
        # the parsed cluster is left for the console script's exit to drop, as lens cluster inspect leaves it
        result = make_plan(spec, request, source, discover=discover, keep=keep_until_exit)
    aic = status()
    if predict and aic.available:
        from llm_d_lens.planning.service import start_predictions
        from llm_d_lens.terminal.output import console

        console(stderr=True).print("AIC: searching each matched pool (8-25 s a system)...", highlight=False, markup=False)
        from llm_d_lens.planning.errors import PredictionsUnavailable

        try:
            result.predictions = start_predictions(result, targets).to_dict(wait=True)
        except PredictionsUnavailable as exc:  # the memory fit stands without AIC
            result.predictions = {**aic.to_dict(), "state": "failed", "code": exc.code, "message": exc.message}
    else:
        result.predictions = aic.to_dict() if predict else {**aic.to_dict(), "message": "predictions not asked (--no-predict)"}
    if shapes:
        from llm_d_lens.planning.service import search_shapes

        search_shapes(result, targets, prices)
    if output.is_table:
        from rich.text import Text

        from llm_d_lens.terminal.output import console

        printer = console(wide=output.value == "wide")
        # the hand-off commands (unwrapped Text) must not be cut at the terminal's edge either: copied, they run
        for part in plan_renderable(result.to_dict(), all_options=all_options).renderables:
            if isinstance(part, Text) and part.no_wrap:
                printer.print(part, crop=False, no_wrap=True, overflow="ignore")
            else:
                printer.print(part)
    else:
        emit(result.to_dict(), output, lambda data: plan_renderable(data, all_options=all_options))


def _planning_step(source: Any, discover: bool) -> str:
    """What planning waits for first, as the progress line says it."""
    if getattr(source, "demo", False):
        return "fitting the model to the demo cluster"
    if getattr(source, "snapshot", None) is not None:
        return f"fitting the model to the nodes of snapshot {source.snapshot}"
    context = getattr(source, "context", None)
    tools = " and running the profiles' discovery tools on its nodes" if discover else ""
    return f"reading nodes, pods and DRA objects with kubectl (context {context or 'current'}){tools}"


@app.command("models")
def models(output: ListFormat = list_output_option()) -> None:
    """The catalogue: shapes and published parameter counts of common open models."""
    from llm_d_lens.planning.catalogue import catalogue_spec, entries
    from llm_d_lens.planning.render import models_renderable

    specs = [{"id": model_id, **catalogue_spec(model_id).to_dict()} for model_id in entries()]
    emit(specs, output, models_renderable, names=lambda specs: [spec["id"] for spec in specs])


@app.command("discover")
def discover_devices(
    hardware: str = commands.Option(..., "--hardware", help="Hardware profile id or alias whose planning.discovery to use."),
    node: str | None = commands.Option(None, "--node", help="Run the discovery command on this node (kubectl exec)."),
    pod: str | None = commands.Option(None, "--pod", help="namespace/name[:container] to run it in (default: the driver's pod)."),
    from_file: Path | None = commands.Option(None, "--from-file", help="Parse a saved output of the command instead ('-' reads stdin)."),
    kube_context: str | None = commands.Option(None, "--kube-context", help="kubeconfig context of the live cluster."),
    kubeconfig: str | None = KubeconfigOption,
    cluster: str | None = ClusterNameOption,
    clusters_file: Path | None = ClustersFileOption,
    timeout: float = commands.Option(DEFAULT_TIMEOUT, "--timeout", min=1, help="Seconds each kubectl call may take."),
    output: OutputFormat = OutputOption,
) -> None:
    """Devices a node's vendor tool lists (product, memory, PCI address), read by the profile's parser."""
    import sys

    from llm_d_lens.cluster.errors import DiscoveryOutputInvalid, DiscoveryUnavailable
    from llm_d_lens.cluster.node_discovery import PodRef, run_on_node
    from llm_d_lens.cluster.node_tools import parse
    from llm_d_lens.hardware.registry import get_profile
    from llm_d_lens.planning.render import devices_renderable
    from llm_d_lens.runner import CommandRunner

    profile = get_profile(hardware)
    if (node is None) == (from_file is None):
        raise commands.BadParameter("give --node (run the command) or --from-file (parse its saved output)", param_hint="--node")
    if from_file is not None:
        if profile.planning.discovery is None:
            raise DiscoveryUnavailable(f"{profile.id}: the profile declares no planning.discovery command",
                                       details={"profile": profile.id})
        try:
            text = sys.stdin.read() if str(from_file) == "-" else from_file.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise DiscoveryOutputInvalid(str(from_file), "file", f"cannot be read: {exc.strerror or exc}") from None
        discovery = profile.planning.discovery
        devices, where = parse(text, discovery.parser, discovery.fields, str(from_file)), str(from_file)
    else:
        from llm_d_lens.cluster.options import live_target

        target = live_target(cluster, clusters_file, kube_context, kubeconfig, why="node discovery")
        runner = CommandRunner(kubeconfig=target.kubeconfig, context=target.context, timeout=timeout)
        devices, where = run_on_node(profile, node or "", runner, PodRef.parse(pod) if pod else None)
    document = {"hardware": profile.id, "source": where, "devices": [d.to_dict() for d in devices]}
    emit(document, output, devices_renderable)
