"""Serving a plan's model at the plan's sizes: the engine arguments of a rendered overlay, rewritten where it states them.

An llm-d overlay serves its own model at its own tensor-parallel size (``vllm serve Qwen/Qwen3-32B
--tensor-parallel-size=2``). A plan names another model and size, so ``lens deploy render --model M
--tensor-parallel N`` changes the rendered objects (never the overlay) where the overlay writes each
value: a literal in an args list or in an ``sh -c`` script is rewritten in place; a ``$VAR`` the
command reads has its ``env`` entry set; a size the overlay does not state at all is appended to
an engine's plain argument list (a script is never appended to: where it ends is not known).
What cannot be changed without guessing is refused with :class:`EngineArgumentFixed`, naming the
workload, the container and the value as the overlay writes it: shell arithmetic
(``$((LWS_GROUP_SIZE * DP_SIZE_LOCAL))``), a variable set from a Secret or ConfigMap, a script
that does not state the flag.

The sizes are read with :mod:`llm_d_lens.k8s.engine`, the same reader that warns when ``--count``
outgrows an engine's size, so a rewritten engine is read back at the size it was given.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from llm_d_lens.deploy.engines import MODEL_LABEL, engine_of_container
from llm_d_lens.deploy.errors import DeployError
from llm_d_lens.deploy.workloads import PodTemplate
from llm_d_lens.k8s.engine import (
    DATA_LOCAL_FLAGS,
    PIPELINE_FLAGS,
    TENSOR_FLAGS,
    engine_tokens,
    literal_env,
    resolve_size,
    stated_flags,
)

MODEL_FLAGS = ("--model", "--model-path", "--model_path")
MAX_LEN_FLAGS = ("--max-model-len", "--context-length", "--max_seq_len")
SERVED_NAME_FLAGS = ("--served-model-name",)

#: how each engine spells a flag Lens may have to add: (engine, key) -> flag. vLLM and SGLang take
#: ``--flag=value``; TensorRT-LLM's ``trtllm-serve`` takes the same (click options).
SPELLINGS: dict[str, dict[str, str]] = {
    "vllm": {"tp": "--tensor-parallel-size", "pp": "--pipeline-parallel-size", "max_len": "--max-model-len"},
    "sglang": {"tp": "--tp-size", "pp": "--pp-size", "max_len": "--context-length"},
    "trtllm": {"tp": "--tp_size", "pp": "--pp_size", "max_len": "--max_seq_len"},
}
#: the kinds whose ``spec.replicas`` counts model-server pods (or, for a LeaderWorkerSet, groups)
REPLICATED_KINDS = ("Deployment", "StatefulSet", "LeaderWorkerSet")
_LABEL_VALUE = re.compile(r"[^A-Za-z0-9._-]+")
#: what separates two words of one command in a script: blanks, and line ends escaped with a backslash
_GAP = r"(?:[ \t]|\\\n)"


class EngineArgumentFixed(DeployError):
    """The overlay writes an engine value in a way Lens cannot change without guessing."""

    code = "DEPLOY_ENGINE_ARGUMENT_FIXED"
    http_status = 422


class EngineChoice(msgspec.Struct, frozen=True):
    """What a plan asks of the model server; None leaves the overlay's own value."""

    model: str | None = None
    tensor_parallel: int | None = None
    pipeline_parallel: int | None = None
    max_model_len: int | None = None
    replicas: int | None = None

    @property
    def sizes_engine(self) -> bool:
        return self.tensor_parallel is not None or self.pipeline_parallel is not None

    @property
    def empty(self) -> bool:
        return all(v is None for v in (self.model, self.tensor_parallel, self.pipeline_parallel,
                                       self.max_model_len, self.replicas))

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "tensor_parallel": self.tensor_parallel, "pipeline_parallel": self.pipeline_parallel,
                "max_model_len": self.max_model_len, "replicas": self.replicas}


class Applied(msgspec.Struct):
    """What was changed, and the devices a pod's engine now drives (one value per sized container)."""

    notes: list[str] = msgspec.field(default_factory=list)
    sizes: dict[str, int | None] = msgspec.field(default_factory=dict)  # "<workload> container <name>" -> tp x pp x local dp


def label_value(model: str) -> str:
    """``org/Name-7B`` as llm-d's ``llm-d.ai/model`` label writes it: ``Name-7B`` (a label value has no ``/``)."""
    text = _LABEL_VALUE.sub("-", model.rstrip("/").rsplit("/", 1)[-1])[:63]
    return text.strip("-._") or "model"


def apply_choice(pods: Iterable[tuple[PodTemplate, list[dict[str, Any]]]], objects: list[dict[str, Any]],
                 choice: EngineChoice) -> Applied:
    """Rewrite the model-server containers of ``pods`` (pod, its accelerated containers) in place."""
    applied = Applied()
    if choice.empty:
        return applied
    pods = list(pods)
    servers = [(pod, c) for pod, targets in pods for c in targets if engine_of_container(c)]
    if not servers and (choice.model or choice.sizes_engine or choice.max_model_len):
        where = ", ".join(pod.display for pod, _ in pods) or "the overlay"
        raise EngineArgumentFixed(f"{where}: no model-server container whose engine Lens knows (vllm serve, sglang, "
                                  "trtllm-serve), so the model, the tensor/pipeline sizes and the context length asked have nothing to change",
                                  details={"workloads": [pod.display for pod, _ in pods]})
    old_models: set[str] = set()
    for pod, container in servers:
        editor = _Container(pod, container)
        if choice.model is not None:
            old = editor.set_model(choice.model)
            if old is not None:
                old_models.add(old)
            applied.notes.append(f"{editor.where}: serves {choice.model}" + (f" (the overlay's {old})" if old else ""))
        if choice.tensor_parallel is not None:
            applied.notes.append(editor.set_size(TENSOR_FLAGS, "tp", choice.tensor_parallel))
        if choice.pipeline_parallel is not None:
            applied.notes.append(editor.set_size(PIPELINE_FLAGS, "pp", choice.pipeline_parallel))
        if choice.max_model_len is not None:
            applied.notes.append(editor.set_size(MAX_LEN_FLAGS, "max_len", choice.max_model_len))
        if choice.sizes_engine:
            applied.sizes[editor.where] = editor.pod_size()
    if choice.model is not None:
        applied.notes += _relabel(objects, {label_value(m) for m in old_models} | _labels_of(pods), label_value(choice.model))
    if choice.replicas is not None:
        applied.notes += _replicas(pods, choice.replicas)
    return applied


class _Container:
    """One model-server container's command and args, edited where they state a value."""

    def __init__(self, pod: PodTemplate, container: dict[str, Any]):
        self.pod = pod
        self.container = container
        self.engine = engine_of_container(container) or ""
        self.where = f"{pod.display} container {container.get('name', '?')}"

    # -- reading ----------------------------------------------------------------------------

    def _lists(self) -> list[list[Any]]:
        return [v for v in (self.container.get("command"), self.container.get("args")) if isinstance(v, list)]

    def _is_plain_argv(self) -> bool:
        """The engine's own argv, one word an item (not ``sh -c "<script>"``): a flag can be added at its end."""
        words = [str(t) for lst in self._lists() for t in lst]
        return bool(words) and not any(any(ch.isspace() for ch in w) for w in words) and \
            not any(w.rsplit("/", 1)[-1] in ("sh", "bash", "ash", "dash") for w in words[:1])

    def pod_size(self) -> int | None:
        """Devices the engine drives now (tensor x pipeline x local data-parallel); None when a size is not known."""
        stated = stated_flags(self.container)
        env = literal_env(self.container)
        sizes = [resolve_size(value, env) for _, value in stated.values()]
        return None if None in sizes else math.prod(s for s in sizes if s is not None)

    # -- writing ----------------------------------------------------------------------------

    def set_size(self, flags: tuple[str, ...], key: str, wanted: int) -> str:
        """Set a numeric flag to ``wanted`` where the overlay states it, else add it to a plain argv."""
        stated = stated_flags(self.container, ((flags, key),)).get(key)
        if stated is None:
            if wanted == 1 and key in ("tp", "pp"):
                return f"{self.where}: states no {flags[0]}; the engine's default of 1 is the one asked"
            spelled = SPELLINGS.get(self.engine, {}).get(key)
            if spelled is None or not self._is_plain_argv():
                raise EngineArgumentFixed(
                    f"{self.where}: the overlay states no {' / '.join(flags[:2])} and its command is "
                    f"{'a shell script' if spelled else 'an engine Lens has no spelling for'}, so Lens cannot add one; "
                    f"add the flag to the overlay's command, or leave the option out",
                    details={"workload": self.pod.display, "container": self.container.get("name"), "flag": flags[0]})
            args = self.container.setdefault("args", [])
            args.append(f"{spelled}={wanted}")
            return f"{self.where}: added {spelled}={wanted} (the overlay states none)"
        flag, value = stated
        return self._set_value(flag, value, str(wanted), lambda v: resolve_size(v, literal_env(self.container)) == wanted)

    def set_model(self, model: str) -> str | None:
        """Serve ``model``: the ``--model``/``--model-path`` flag, else the word after ``serve``; the old one back."""
        stated = stated_flags(self.container, ((MODEL_FLAGS, "model"),)).get("model")
        served = stated_flags(self.container, ((SERVED_NAME_FLAGS, "name"),)).get("name")
        if stated is not None:
            old = self._value_of(stated[1])
            self._set_value(stated[0], stated[1], model, lambda v: v == model)
        else:
            old = self._set_positional_model(model)
        if served is not None:
            self._set_value(served[0], served[1], model, lambda v: v == model)
        return old

    def _value_of(self, written: str) -> str | None:
        match = re.fullmatch(r"\$(?:\{(\w+)\}|(\w+))", written.strip("'\""))
        if match:
            return literal_env(self.container).get(match.group(1) or match.group(2))
        return written.strip("'\"") or None

    def _set_positional_model(self, model: str) -> str | None:
        tokens = engine_tokens(self.container)
        for i, token in enumerate(tokens[:-1]):
            if (token == "serve" or token.endswith("-serve")) and not tokens[i + 1].startswith("-"):
                written = tokens[i + 1]
                old = self._value_of(written)
                if written.startswith("$"):
                    self._set_env(written, model, "the model")
                else:
                    self._replace(lambda word, prev: prev is not None and (prev == "serve" or prev.endswith("-serve"))
                                  and word == written, token, written, model)
                return old
        raise EngineArgumentFixed(
            f"{self.where}: the engine's command names no model (no {' / '.join(MODEL_FLAGS[:2])} and no word after "
            "`serve`), so Lens cannot say which to serve; name it in the overlay, or do not ask for another model",
            details={"workload": self.pod.display, "container": self.container.get("name")})

    def _set_value(self, flag: str, written: str, wanted: str, already: Any) -> str:
        """Rewrite ``flag``'s value ``written``: in place when literal, through ``env`` when ``$VAR``."""
        text = written.strip()
        if text.startswith("$(("):
            if already(text):
                return f"{self.where}: {flag} {text} already gives {wanted}"
            raise EngineArgumentFixed(
                f"{self.where}: the overlay computes {flag} as {text} (shell arithmetic), so Lens cannot set it to "
                f"{wanted} without guessing which term to change; change the overlay's variables, or leave the option out",
                details={"workload": self.pod.display, "container": self.container.get("name"), "flag": flag,
                         "value": text, "wanted": wanted})
        if text.strip("'\"").startswith("$"):
            name = self._set_env(text, wanted, flag)
            return f"{self.where}: {flag} {text}: env {name}={wanted}"
        self._replace_flag(flag, text, wanted)
        return f"{self.where}: {flag}={wanted} (the overlay's {text})"

    def _set_env(self, written: str, wanted: str, what: str) -> str:
        match = re.fullmatch(r"\$(?:\{(\w+)\}|(\w+))", written.strip().strip("'\""))
        name = (match.group(1) or match.group(2)) if match else written
        env = self.container.get("env")
        entries = [e for e in env if isinstance(e, dict) and e.get("name") == name] if isinstance(env, list) else []
        literal = [e for e in entries if "value" in e and "valueFrom" not in e]
        if not match or not literal or len(literal) != len(entries):
            why = ("sets it from a reference (valueFrom), not a value" if entries else
                   "does not set it in the container's env (it may come from the image or an envFrom)")
            raise EngineArgumentFixed(
                f"{self.where}: {what} is {written}, and the overlay {why}; set {name} in the overlay, or leave the option out",
                details={"workload": self.pod.display, "container": self.container.get("name"), "variable": name})
        for entry in literal:
            entry["value"] = wanted
        return name

    def _replace_flag(self, flag: str, written: str, wanted: str) -> None:
        """Every ``flag=written`` / ``flag written`` in the command and args, words and scripts alike."""
        pattern = re.compile(rf"(?<![\w-]){re.escape(flag)}(={_GAP}*|{_GAP}+){re.escape(written)}(?![^\s;&|])")
        changed = 0
        for lst in self._lists():
            for i, item in enumerate(lst):
                text = str(item)
                if text == f"{flag}={written}":
                    lst[i] = f"{flag}={wanted}"
                    changed += 1
                elif text == flag and i + 1 < len(lst) and str(lst[i + 1]) == written:
                    lst[i + 1] = wanted
                    changed += 1
                elif any(ch.isspace() for ch in text):
                    new, n = pattern.subn(lambda m: f"{flag}{m.group(1)}{wanted}", text)
                    if n:
                        lst[i] = new
                        changed += n
        lists = self._lists()
        if not changed and len(lists) == 2 and lists[0] and lists[1] and str(lists[0][-1]) == flag \
                and str(lists[1][0]) == written:
            lists[1][0] = wanted  # the flag ends the command and its value starts the args
            changed = 1
        if not changed:  # read but not found again: never leave the engine half-changed silently
            raise EngineArgumentFixed(f"{self.where}: {flag} {written} is read from the command but Lens cannot find "
                                      "where it is written", details={"workload": self.pod.display, "flag": flag})

    def _replace(self, matches: Any, before: str, written: str, wanted: str) -> None:
        """Replace the word ``written`` that follows ``before``, as a list item or inside a script."""
        pattern = re.compile(rf"(?<![\w-]){re.escape(before)}({_GAP}+){re.escape(written)}(?![^\s;&|])")
        previous: str | None = None
        for lst in self._lists():
            for i, item in enumerate(lst):
                text = str(item)
                if matches(text, previous):
                    lst[i] = wanted
                    return
                if any(ch.isspace() for ch in text):
                    new, n = pattern.subn(lambda m: f"{before}{m.group(1)}{wanted}", text, count=1)
                    if n:
                        lst[i] = new
                        return
                previous = text
        raise EngineArgumentFixed(f"{self.where}: the model {written} is read from the command but Lens cannot find "
                                  "where it is written", details={"workload": self.pod.display})


def _labels_of(pods: list[tuple[PodTemplate, list[dict[str, Any]]]]) -> set[str]:
    return {str(pod.labels[MODEL_LABEL]) for pod, _ in pods if pod.labels.get(MODEL_LABEL)}


def _relabel(objects: list[dict[str, Any]], old: set[str], new: str) -> list[str]:
    """llm-d's model label, wherever it holds an old model (labels and selectors alike, so they still match)."""
    old = {o for o in old if o != new}
    if not old:
        return []
    changed = 0

    def walk(node: Any) -> None:
        nonlocal changed
        if isinstance(node, dict):
            if node.get(MODEL_LABEL) in old:
                node[MODEL_LABEL] = new
                changed += 1
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for obj in objects:
        walk(obj)
    return [f"label {MODEL_LABEL}: {', '.join(sorted(old))} -> {new} in {changed} place(s) of this render (labels and selectors; a companion manifest selecting the old value needs the same change)"] if changed else []


def _replicas(pods: list[tuple[PodTemplate, list[dict[str, Any]]]], replicas: int) -> list[str]:
    notes: list[str] = []
    seen: set[int] = set()
    for pod, _ in pods:
        workload = pod.workload
        if id(workload) in seen:
            continue
        seen.add(id(workload))
        kind = workload.get("kind")
        if kind not in REPLICATED_KINDS:
            raise EngineArgumentFixed(f"{pod.display}: a {kind} has no replica count, so --replicas cannot be applied",
                                      details={"workload": pod.display, "kind": kind})
        spec = workload.setdefault("spec", {})
        before = spec.get("replicas")
        spec["replicas"] = replicas
        unit = "group(s) of pods" if kind == "LeaderWorkerSet" else "pod(s)"
        notes.append(f"{pod.display}: {replicas} {unit}" + (f" (the overlay's {before})" if before is not None else ""))
    return notes


def stated_sizes(container: Mapping[str, Any]) -> dict[str, int | None]:
    """tp / pp / local dp of a container as numbers (None: stated but not known): for tests and reports."""
    groups = ((TENSOR_FLAGS, "tp"), (PIPELINE_FLAGS, "pp"), (DATA_LOCAL_FLAGS, "dp_local"))
    env = literal_env(container)
    return {key: resolve_size(value, env) for key, (_, value) in stated_flags(container, groups).items()}
