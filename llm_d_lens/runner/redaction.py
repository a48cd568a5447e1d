"""What Lens shows of a command line, a tool's output and its environment: never a secret.

A flag's value (``--token X``), a helm assignment whose key names a secret (``--set db.password=X``)
and every ``kubectl create secret --from-literal`` value are replaced by ``***`` in logs and
messages; stderr quoted in an error is trimmed to its first and last lines.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

REDACTED = "***"
#: Characters of stderr an error message quotes; kubectl's point is in the first or last lines.
_STDERR_LIMIT = 2000

# Flags whose next argument (or ``=value``) is itself a secret.
_SECRET_FLAGS = frozenset(
    {
        "--token",
        "--password",
        "--client-key",
        "--client-secret",
        "--docker-password",
        "--registry-password",
        "--passphrase",
        "--api-key",
        "--auth-token",
        "--bearer-token",
        "--access-token",
    }
)
# Flags whose value is a comma-separated list of key=value assignments (helm's --set family).
_ASSIGNMENT_FLAGS = frozenset({"--set", "--set-string", "--set-json", "--set-literal", "--from-literal"})
# ``kubectl create secret --from-literal`` values are secret whatever their key is called.
_ALWAYS_SECRET_FLAGS = frozenset({"--from-literal"})
_SECRET_KEY = re.compile(r"password|passwd|passphrase|token|secret|credential|key|auth", re.IGNORECASE)
_UNESCAPED_COMMA = re.compile(r"(?<!\\),")
# What a reader can copy without quoting; ``*`` is allowed so ``--token ***`` stays readable.
_PLAIN_WORD = re.compile(r"[\w@%+=:,./*-]+")

# The global flags each cluster tool spells for "which kubeconfig" and "which context".
_CLUSTER_FLAGS: dict[str, tuple[str, str]] = {
    "kubectl": ("--kubeconfig", "--context"),
    "helm": ("--kubeconfig", "--kube-context"),
}




def redact(argv: Sequence[str]) -> list[str]:
    """The argv with secret values replaced by ``***``, item for item, for logs and messages.

    Redaction errs on the side of hiding: a log line that hides a harmless value costs nothing,
    one that shows a token costs a rotation.
    """
    return _redact(argv)[0]


def format_command(argv: Sequence[str]) -> str:
    """The redacted argv as one line a human can read (and mostly paste), quoting only when needed."""
    return " ".join(item if _PLAIN_WORD.fullmatch(item) else shlex.quote(item) for item in redact(argv))


def _redact(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """Redacted argv plus the secret values removed, so stderr can be scrubbed of them too."""
    shown: list[str] = []
    secrets: list[str] = []
    value_of: str | None = None  # the flag whose value the current item is
    for item in argv:
        if value_of is not None:
            shown.append(_redact_flag_value(value_of, item, secrets))
            value_of = None
        elif item.startswith("-") and item != "--":
            flag, eq, value = item.partition("=")
            if eq:
                shown.append(f"{flag}={_redact_flag_value(flag, value, secrets)}")
            else:
                shown.append(item)
                if flag in _SECRET_FLAGS or flag in _ASSIGNMENT_FLAGS:
                    value_of = flag
        else:
            shown.append(_redact_assignments(item, secrets, everything=False))
    return shown, secrets


def _redact_flag_value(flag: str, value: str, secrets: list[str]) -> str:
    if flag in _ASSIGNMENT_FLAGS:
        return _redact_assignments(value, secrets, everything=flag in _ALWAYS_SECRET_FLAGS)
    if flag in _SECRET_FLAGS or _SECRET_KEY.search(flag):
        secrets.append(value)
        return REDACTED
    return value


def _redact_assignments(text: str, secrets: list[str], *, everything: bool) -> str:
    """Hide the values of ``key=value`` items (comma-separated, as helm's --set) with secret keys."""
    if "=" not in text:
        return text
    shown: list[str] = []
    hiding = False
    for part in _UNESCAPED_COMMA.split(text):
        key, eq, value = part.partition("=")
        if eq:
            hiding = everything or bool(_SECRET_KEY.search(key))
            shown.append(f"{key}={REDACTED}" if hiding else part)
            if hiding:
                secrets.append(value)
        elif hiding:
            secrets.append(part)  # a secret value that itself contained a comma
        else:
            shown.append(part)
    return ",".join(shown)


def _scrub(text: str, secrets: Sequence[str]) -> str:
    """Tools echo what they were given ("invalid token abc"): remove those values from their output."""
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    return text


def _trim(text: str, limit: int = _STDERR_LIMIT) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n… [{len(text) - 2 * half} characters trimmed] …\n{text[-half:]}"
