"""A provider written exactly to the guide's section 5 is used by the CLI and the API, with cluster_id.

The plugin is a real throwaway distribution (dist-info + entry points) whose provider implements
only ``profile()``, ``ensure_presence(*, cluster_id)``, ``driver_status(access_mode, *, cluster_id)``
and ``install_driver(access_mode, *, cluster_id)``: no extra method, no ``**kwargs``.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest
from fastapi.testclient import TestClient

from llm_d_lens.api.app import create_app
from llm_d_lens.cli.app import main
from llm_d_lens.hardware.conftest import _forget_registry, fresh_registry, plugins  # noqa: F401
from llm_d_lens.testing.plugins import minimal_profile
from llm_d_lens.monitoring.gpu_driver import api as driver_api
from llm_d_lens.monitoring.gpu_driver.kube import ClusterView
from llm_d_lens.testing.fake_runner import FakeRunner

GUIDE_PROVIDER = """
import json, os

from llm_d_lens.hardware.registry import get_profile
from llm_d_lens.monitoring.gpu_driver.presence import PresenceReport
from llm_d_lens.monitoring.gpu_driver.status import ModeStatus


class _Calls:  # the provider lives in its own worker process: it tells the test what it heard through a file
    def append(self, call):
        with open(os.environ["ACME_CALLS_FILE"], "a") as out:
            out.write(json.dumps(call) + "\\n")


CALLS = _Calls()


class GuideProvider:
    def profile(self):
        return get_profile("acme")

    async def ensure_presence(self, *, cluster_id):
        CALLS.append(("ensure_presence", cluster_id))
        return PresenceReport("acme", {"acme.example.com/npu.present": "true"}, ["node-7"], 1)

    async def driver_status(self, access_mode, *, cluster_id):
        CALLS.append(("driver_status", access_mode, cluster_id))
        return [ModeStatus("acme", access_mode or "plugin", True, "ready", note="checked by the vendor")]

    async def install_driver(self, access_mode, *, cluster_id):
        CALLS.append(("install_driver", access_mode, cluster_id))
        raise RuntimeError("vendor installer is down")
"""


@pytest.fixture
def guide_plugin(plugins, fresh_registry, tmp_path, monkeypatch):  # noqa: F811
    calls = tmp_path / "calls.jsonl"
    monkeypatch.setenv("ACME_CALLS_FILE", str(calls))
    plugins.make("acme-lens", profiles={"acme": [minimal_profile("acme")]}, module_source=GUIDE_PROVIDER,
                 provider_entry_points={"acme": "acme_lens_lens:GuideProvider"})
    fresh_registry()
    yield lambda: [tuple(json.loads(line)) for line in calls.read_text().splitlines()] if calls.exists() else []
    assert "acme_lens_lens" not in sys.modules, "a third-party provider is never imported into Lens's process"


def test_the_cli_uses_a_guide_provider_and_passes_the_context_as_cluster_id(guide_plugin, capsys):
    assert main(["driver", "status", "--hardware", "acme-npu", "--context", "lab-east", "-o", "json"]) == 0
    [row] = json.loads(capsys.readouterr().out)
    assert (row["hardware"], row["state"], row["note"]) == ("acme", "ready", "checked by the vendor")
    assert main(["preflight", "--hardware", "acme", "--context", "lab-west", "-o", "json"]) == 0
    assert guide_plugin() == [("driver_status", None, "lab-east"), ("ensure_presence", "lab-west")]


def test_a_cluster_by_name_reaches_the_provider_as_its_cluster_id(guide_plugin, capsys, tmp_path, monkeypatch):
    from llm_d_lens.monitoring.gpu_driver import cli as driver_cli

    clusters = tmp_path / "clusters.yaml"
    clusters.write_text("clusters:\n  - {name: east, context: lab-east}\n  - {name: lab, demo: true}\n")
    contexts = []
    monkeypatch.setattr(driver_cli, "make_view", lambda context, kubeconfig: contexts.append(context) or ClusterView(FakeRunner()))
    assert main(["driver", "status", "--hardware", "acme", "--clusters", str(clusters), "--cluster", "east", "-o", "json"]) == 0
    assert main(["preflight", "--hardware", "acme", "--clusters", str(clusters), "--cluster", "east", "-o", "json"]) == 0
    assert guide_plugin() == [("driver_status", None, "east"), ("ensure_presence", "east")]
    assert contexts == ["lab-east", "lab-east"]  # kubectl runs on the cluster's context; the provider hears its name
    capsys.readouterr()
    assert main(["driver", "status", "--hardware", "acme", "--clusters", str(clusters), "--cluster", "lab"]) == 1
    assert "LIVE_CLUSTER_NEEDED: cluster 'lab' is the demo" in capsys.readouterr().err


def test_a_failing_provider_is_a_coded_error_naming_it(guide_plugin, capsys):
    code = main(["driver", "install", "--hardware", "acme", "--dry-run", "--context", "lab-east"])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err
    assert err.startswith("error: PROVIDER_FAILED: provider GuideProvider of 'acme' failed in install_driver(): "
                          "RuntimeError: vendor installer is down")
    assert guide_plugin() == [("install_driver", None, "lab-east")]


def test_the_api_uses_a_guide_provider_with_the_server_context(guide_plugin, monkeypatch):
    monkeypatch.setenv("LENS_API_TOKEN", "secret")
    app = create_app()
    app.dependency_overrides[driver_api.view_factory] = lambda: (lambda ctx: ClusterView(FakeRunner(context=ctx or "server-ctx")))
    client = TestClient(app)
    body = client.get("/api/v1/drivers/status", params={"hardware": "acme", "mode": "plugin"}).json()
    assert [m["note"] for m in body["modes"]] == ["checked by the vendor"]
    failed = client.post("/api/v1/drivers/install", json={"hardware": "acme", "dry_run": True},
                         headers={"Authorization": "Bearer secret"})
    assert failed.status_code == 502 and failed.headers["content-type"] == "application/problem+json"
    assert failed.json()["code"] == "PROVIDER_FAILED"
    assert guide_plugin() == [("driver_status", "plugin", "server-ctx"), ("install_driver", None, "server-ctx")]


async def test_a_provider_answering_with_the_wrong_type_is_refused_by_name():
    from llm_d_lens.hardware.registry import get_profile
    from llm_d_lens.monitoring.gpu_driver.errors import ProviderFailed
    from llm_d_lens.monitoring.gpu_driver.provider import DriverOps

    class Sloppy:
        def profile(self) -> Any:
            return get_profile("amd")

        async def driver_status(self, access_mode: str | None, *, cluster_id: str | None) -> Any:
            return {"state": "fine"}

    with pytest.raises(ProviderFailed, match=r"driver_status\(\) returned dict, expected a list of ModeStatus"):
        await DriverOps(get_profile("amd"), Sloppy()).driver_status(view=ClusterView(FakeRunner()))
