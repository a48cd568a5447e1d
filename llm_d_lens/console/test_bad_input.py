"""The console's pages never answer 500, whatever the query string or path holds."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from llm_d_lens.api.app import create_app

ODD = ["%ff", "%ed%b2%80", "%00", "a" * 5000, "9" * 5000, "-1", "1e400", "NaN", "..%2F..%2Fetc", "<script>"]
PAGES = ["/", "/accelerators", "/accelerators/nvidia", "/doctor"]
PARAMS = ["q", "sort", "page", "dq", "dsort", "dpage", "minutes", "quantity", "node", "namespace"]


@pytest.fixture(scope="module")
def client():
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LENS_CLUSTER_DEMO", "1")
        patch.setenv("LENS_TELEMETRY_DEMO", "1")
        for name in ("LENS_CLUSTER_SNAPSHOT", "LENS_KUBE_CONTEXT", "LENS_KUBECONFIG"):
            patch.delenv(name, raising=False)
        yield TestClient(create_app(), raise_server_exceptions=False)


#: the values most likely to break a page; every page renders with real data, so each request costs
QUERY_VALUES = ["%ff", "9" * 5000, "-1", "NaN"]


def test_odd_query_values_on_every_page_are_never_a_500(client):
    answers = {}
    for page in PAGES:
        for param in PARAMS if page == "/accelerators/nvidia" else ["q"]:
            for value in QUERY_VALUES:
                response = client.get(f"{page}?{param}={value}")
                answers[(page, param, value[:12])] = response.status_code
                assert response.status_code < 500, (page, param, value[:40], response.text[:300])
    assert any(status == 200 for status in answers.values())  # the pages did render, not only refuse


@pytest.mark.parametrize("key", ODD)
def test_an_odd_hardware_key_in_the_path_is_a_404_page_not_a_500(client, key):
    response = client.get(f"/accelerators/{key}")
    assert response.status_code in (404, 422), response.text[:300]
