"""The exact argv of every command a driver install runs; built here so plan, dry-run and install agree."""

from __future__ import annotations

import json

from llm_d_lens.monitoring.gpu_driver.target import DriverTarget

#: Flags Lens never passes: each can remove or replace something a user has.
FORBIDDEN_FLAGS = frozenset({"--force", "--replace", "--prune", "--cleanup-on-fail", "--reset-values"})


def chart_ref(target: DriverTarget) -> tuple[str, list[str]]:
    """The chart argument and the flags that locate it: ``oci://`` repos are joined, http repos use --repo."""
    repo = target.mode.repo
    if repo and repo.startswith("oci://"):
        return f"{repo.rstrip('/')}/{target.mode.manifest_ref}", []
    if repo:
        return target.mode.manifest_ref, ["--repo", repo]
    return target.mode.manifest_ref, []


def set_json_args(target: DriverTarget) -> list[str]:
    """One ``--set-json key=<json>`` pair per option: each value is one argv item, whatever it contains."""
    args: list[str] = []
    for key, value in target.options.items():
        args += ["--set-json", f"{key}={json.dumps(value, separators=(',', ':'), ensure_ascii=False)}"]
    return args


def helm_install_argv(target: DriverTarget) -> list[str]:
    chart, locate = chart_ref(target)
    argv = ["helm", "upgrade", "--install", target.release, chart]
    if target.version:
        argv += ["--version", target.version]
    argv += ["--namespace", target.namespace, "--create-namespace", *locate, *set_json_args(target)]
    return argv


def kustomize_apply_argv(target: DriverTarget) -> list[str]:
    return ["kubectl", "apply", "-k", target.mode.manifest_ref]


def install_argv(target: DriverTarget) -> list[str]:
    return helm_install_argv(target) if target.installer == "helm" else kustomize_apply_argv(target)


def helm_list_argv(target: DriverTarget) -> list[str]:
    # Release names are DNS labels: a dot is the only character Go's regexp would read specially.
    return ["helm", "list", "--namespace", target.namespace, "--filter", "^" + target.release.replace(".", "\\.") + "$",
            "--all", "-o", "json"]


def helm_list_all_argv() -> list[str]:
    return ["helm", "list", "--all-namespaces", "--all", "-o", "json"]


def helm_values_argv(target: DriverTarget) -> list[str]:
    return ["helm", "get", "values", target.release, "--namespace", target.namespace, "-o", "json"]


def ensure_ref_argv(ref: str) -> list[str]:
    """NodeFeatureRule manifests: files and URLs of YAML/JSON are applied with -f, anything else with -k."""
    path = ref.split("?", 1)[0].lower()
    flag = "-f" if path.endswith((".yaml", ".yml", ".json")) else "-k"
    return ["kubectl", "apply", flag, ref]
