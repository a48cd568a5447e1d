"""Which inference engine (vllm, sglang, trtllm) an overlay runs, read from what it deploys.

The model-server directory of a guide is not always the engine's name (``vllm-rdma``,
``vllm-deepseek-v4``), so the engine is read from the workloads: llm-d's ``llm-d.ai/engine-type``
label when set, else the model-server container's command (``vllm serve``, ``python3 -m
sglang.launch_server``, ``trtllm-serve``), else its image. The listing reads the overlay's files
(its own first, then what it builds on); a render reads the rendered pods.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from llm_d_lens.deploy.workloads import PodTemplate, pod_templates

ENGINE_LABEL = "llm-d.ai/engine-type"
#: engine -> what its launch command looks like, and words its images are named with
ENGINES: dict[str, tuple[re.Pattern[str], tuple[str, ...]]] = {
    "vllm": (re.compile(r"(?:^|[\s/\"'])vllm\s+serve\b|vllm\.entrypoints"), ("vllm",)),
    "sglang": (re.compile(r"sglang\.launch_server|(?:^|[\s/\"'])sglang\s+serve\b"), ("sglang",)),
    "trtllm": (re.compile(r"(?:^|[\s/\"'])trtllm-serve\b"), ("tensorrt-llm", "trtllm")),
}
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def engine_of_container(container: dict[str, Any]) -> str | None:
    """The engine a container launches, from its command (and a shell script's first line), else its image."""
    words = [str(t) for t in (container.get("command") or []) + (container.get("args") or [])[:1]]
    line = " ".join(words)
    for engine, (command, _) in ENGINES.items():
        if command.search(line):
            return engine
    image = container.get("image")
    if isinstance(image, str):
        name = image.split("@", 1)[0].rsplit("/", 1)[-1].split(":", 1)[0]
        for engine, (_, image_words) in ENGINES.items():
            if any(word in name for word in image_words):
                return engine
    return None


def engine_of_pods(pods: Iterable[PodTemplate]) -> str | None:
    """The first engine the pods name: the engine label wins over a container's command or image."""
    pods = list(pods)
    for pod in pods:
        label = pod.labels.get(ENGINE_LABEL)
        if label:
            return str(label)
    for pod in pods:
        for container in pod.containers():
            found = engine_of_container(container)
            if found:
                return found
    return None


def engine_of_documents(documents: Iterable[Any]) -> str | None:
    return engine_of_pods(pod for d in documents if isinstance(d, dict) for pod in pod_templates(d))


def yaml_documents(path: Path | str) -> list[Any]:
    """The documents of a YAML file; an unreadable one has none (kustomize reports it when it renders)."""
    try:
        with open(path, encoding="utf-8") as handle:
            return list(yaml.load_all(handle, Loader=_LOADER))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return []


def inline_documents(text: str) -> list[Any]:
    try:
        return list(yaml.load_all(text, Loader=_LOADER))
    except yaml.YAMLError:
        return []


def is_yaml_file(path: str) -> bool:
    return os.path.splitext(path)[1] in (".yaml", ".yml")


MODEL_LABEL = "llm-d.ai/model"
_MODEL_FLAGS = ("--model", "--model-path", "--model_path")


def model_of_container(container: dict[str, Any]) -> str | None:
    """The model a server container loads: ``--model X``/``--model-path X``, else the word after ``serve``."""
    tokens = [str(t) for t in (container.get("command") or []) + (container.get("args") or [])]
    for i, token in enumerate(tokens):
        name, eq, value = token.partition("=")
        if name in _MODEL_FLAGS:
            value = value if eq else (tokens[i + 1] if i + 1 < len(tokens) else "")
            if value and not value.startswith("-"):
                return value
    for i, token in enumerate(tokens[:-1]):
        if token == "serve" and not tokens[i + 1].startswith("-"):
            return tokens[i + 1]
    return None


def model_of_pods(pods: Iterable[PodTemplate]) -> str | None:
    """The model the pods serve: llm-d's ``llm-d.ai/model`` label, else the server's arguments."""
    pods = list(pods)
    for pod in pods:
        if pod.labels.get(MODEL_LABEL):
            return str(pod.labels[MODEL_LABEL])
    for pod in pods:
        for container in pod.containers():
            if engine_of_container(container) and (found := model_of_container(container)):
                return found
    return None
