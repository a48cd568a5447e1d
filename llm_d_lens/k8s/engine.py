"""What a model-server container's command line says about its parallelism, as written and as numbers.

Deploy reads the flags to warn when a changed device count no longer matches them; evaluate reads
them to give a benchmark scenario the parallelism of a manifest it did not write. Upstream writes
the sizes three ways: a literal (``--tensor-parallel-size=2``), a variable the container's ``env``
sets (``--tensor-parallel-size $TP_SIZE``), and shell arithmetic over variables
(``--data-parallel-size $((LWS_GROUP_SIZE * DP_SIZE_LOCAL))``). :func:`resolve_size` turns each into a
number when everything it names is known, else None: a size is never guessed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

#: flags that say how many devices one model-server pod spans (vLLM, SGLang, TensorRT-LLM spellings)
TENSOR_FLAGS = ("--tensor-parallel-size", "-tp", "--tp-size", "--tp_size", "--tp")
PIPELINE_FLAGS = ("--pipeline-parallel-size", "-pp", "--pp-size", "--pp_size", "--pp")
#: vLLM's data-parallel ranks in this pod each drive their own tensor group. SGLang's --dp-size is
#: left out on purpose: its data-parallel attention shares the tensor-parallel devices.
DATA_LOCAL_FLAGS = ("--data-parallel-size-local", "-dpl")
#: vLLM's whole data-parallel size, over every pod of a replica (not a count of this pod's devices)
DATA_FLAGS = ("--data-parallel-size", "-dp")

#: the sizes that multiply into one pod's devices, by key
POD_SIZE_FLAGS = ((TENSOR_FLAGS, "tp"), (PIPELINE_FLAGS, "pp"), (DATA_LOCAL_FLAGS, "dp_local"))


def engine_tokens(container: Mapping[str, Any]) -> list[str]:
    """The container's command and args as words, a shell script (``sh -c "vllm serve ..."``) split too.

    Shell arithmetic (``$((A * B))``) stays one word, spaces and all, so it reads as one value.
    """
    words: list[str] = []
    for token in [str(t) for t in (container.get("command") or []) + (container.get("args") or [])]:
        split = token.replace("\\\n", " ").split() if any(ch.isspace() for ch in token) else [token]
        for word in split:
            if words and words[-1].count("$((") > words[-1].count("))"):
                words[-1] += " " + word  # inside an arithmetic expansion
            else:
                words.append(word)
    return words


def stated_flags(container: Mapping[str, Any], groups: tuple[tuple[tuple[str, ...], str], ...] = POD_SIZE_FLAGS,
                 ) -> dict[str, tuple[str, str]]:
    """key -> (the flag as written, its value as written) for each group of flags the command states."""
    tokens = engine_tokens(container)
    found: dict[str, tuple[str, str]] = {}
    for flags, key in groups:
        for i, token in enumerate(tokens):
            name, eq, value = token.partition("=")
            if name in flags:
                found[key] = (name, value if eq else (tokens[i + 1] if i + 1 < len(tokens) else ""))
    return found


def literal_env(container: Mapping[str, Any]) -> dict[str, str]:
    """The container's ``env`` entries that carry a ``value`` (not a secret or field reference)."""
    env = container.get("env")
    if not isinstance(env, list):
        return {}
    return {str(e["name"]): str(e["value"]) for e in env
            if isinstance(e, Mapping) and isinstance(e.get("name"), str) and isinstance(e.get("value"), (str, int))}


_VARIABLE = re.compile(r"\$(?:\{(\w+)\}|(\w+))")
_ARITHMETIC = re.compile(r"\$\(\((.*)\)\)")
_TERM = re.compile(r"\s*(\d+|[A-Za-z_]\w*|\$\{\w+\}|\$\w+)\s*")


def resolve_size(value: str, env: Mapping[str, str]) -> int | None:
    """A size as a positive number: a literal, ``$VAR``/``${VAR}`` from ``env``, or ``$((...))`` of
    ``+`` and ``*`` over numbers and such variables; None when anything is unknown or not a size."""
    text = value.strip().strip("'\"")
    arithmetic = _ARITHMETIC.fullmatch(text)
    if arithmetic:
        return _evaluate(arithmetic.group(1), env)
    variable = _VARIABLE.fullmatch(text)
    if variable:
        text = env.get(variable.group(1) or variable.group(2), "").strip()
    return int(text) if text.isdigit() and int(text) > 0 else None


def _evaluate(expression: str, env: Mapping[str, str]) -> int | None:
    """A sum of products of terms, as the shell reads it (``*`` binds tighter); None on anything else."""
    total = 0
    for addend in expression.split("+"):
        product = 1
        for factor in addend.split("*"):
            term = _TERM.fullmatch(factor)
            if term is None:
                return None
            name = term.group(1).lstrip("$").strip("{}")
            number = name if name.isdigit() else env.get(name, "").strip()
            if not number.isdigit():
                return None
            product *= int(number)
        total += product
    return total if total > 0 else None
