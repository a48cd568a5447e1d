"""Every kubectl/helm call the whole test suite makes through the recording FakeRunner is granted.

The scenarios of test_least_privilege.py prove the roles are exact for the operations Lens offers;
this is the other net: whatever argv any domain's tests drive the code into (error paths, odd
clusters, synthetic profiles), it must map to RBAC access (llm_d_lens/incluster/access.py) that
``lens-read``, ``lens-installer``, ``lens-driver-charts`` or ``lens-node-discovery`` grants. It runs last (llm_d_lens/conftest.py)
and skips when run without the rest of the suite, since it would have nothing to check.
"""

from __future__ import annotations

import os
import shutil

import pytest

from llm_d_lens.conftest import SUITE_CALLS
from llm_d_lens.errors import LensError
from llm_d_lens.incluster.access import AUTHENTICATED_DEFAULTS, accesses_of
from llm_d_lens.incluster.facts import load_facts
from llm_d_lens.incluster.manifests import manifests_root, render
from llm_d_lens.incluster.rbac import grants_of, role_named
from llm_d_lens.runner import CommandRunner, format_command

ROOT = manifests_root()
#: tests whose calls are not Lens's, and why
EXEMPT = {
    "llm_d_lens/runner/": "the runner's own tests invent commands (delete, wait, helm version) to test "
                                 "quoting, redaction and errors",
    "llm_d_lens/incluster/": "the proof's own tests make ungranted calls on purpose, to show that it fails",
}
#: fewer test modules than this making calls means the suite was not run whole
MIN_MODULES = 5


def exempt(test: str) -> bool:
    return any(test.startswith(prefix) for prefix in EXEMPT)


@pytest.mark.skipif(ROOT is None or shutil.which("kubectl") is None,
                    reason="needs manifests/ (a source checkout) and kubectl to render the roles")
def test_every_kubectl_and_helm_call_the_suite_makes_is_granted() -> None:
    calls = [(test, argv, stdin) for test, argv, stdin in SUITE_CALLS
             if argv and os.path.basename(argv[0]) in ("kubectl", "helm") and not exempt(test)]
    modules = {test.split("::")[0] for test, _, _ in calls}
    if len(modules) < MIN_MODULES:
        pytest.skip(f"only {len(modules)} test module(s) made kubectl/helm calls in this run: run the whole suite")
    assert ROOT is not None
    facts = load_facts(ROOT / "rbac-facts.yaml")
    objects = [*render(ROOT / "overlays" / "installer", CommandRunner()),
               *render(ROOT / "overlays" / "node-discovery", CommandRunner())]
    granted = set(AUTHENTICATED_DEFAULTS)
    for role in ("lens-read", "lens-installer", "lens-driver-charts", "lens-node-discovery"):
        granted |= grants_of(role_named(objects, role))
    problems = set()
    for test, argv, stdin in calls:
        where = f"{test.split(' ')[0]}: `{format_command(argv)}`"
        try:
            mapped = accesses_of(argv, input=stdin, table=facts.table)
        except LensError as exc:
            problems.add(f"{where}: {exc.code}")
            continue
        for access in mapped.accesses:
            if access.grant not in granted:
                problems.add(f"{where}: needs {access.describe()}, which no role grants")
    assert sorted(problems) == []
