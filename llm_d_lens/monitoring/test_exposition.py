"""Exposition pages through prometheus_client's parser, with the names Prometheus would store."""

from __future__ import annotations

import pytest

from llm_d_lens.monitoring.errors import SnapshotInvalid, SnapshotUnreachable
from llm_d_lens.monitoring.exposition import parse_exposition, snapshot_url, with_target_label


def test_a_counter_without_total_keeps_its_name():
    # the parser reports this sample as energy_mj_total; Prometheus stores it as written
    (sample,) = parse_exposition('# TYPE energy_mj counter\nenergy_mj{gpu="0"} 1500\n', "page")
    assert sample.names == {"energy_mj", "energy_mj_total"} and sample.value == 1500


def test_a_counter_with_total_is_found_by_that_name():
    text = '# TYPE energy_joules counter\nenergy_joules_total{gpu="0"} 2.5\n# TYPE energy_joules_created gauge\nenergy_joules_created{gpu="0"} 9\n'
    names = [s.names for s in parse_exposition(text, "page")]
    assert "energy_joules_total" in names[0] and all("energy_joules_created" not in n for n in names[:1])


def test_comments_first_then_samples_still_parses():
    # one exporter writes every # line first and then all samples, sorted
    text = "# HELP b_power x\n# TYPE b_power gauge\n# HELP a_temp y\n# TYPE a_temp gauge\na_temp{t=\"0\"} 61\nb_power{t=\"0\"} 200\n"
    assert sorted((min(s.names), s.value) for s in parse_exposition(text, "page")) == [("a_temp", 61), ("b_power", 200)]


def test_a_page_that_does_not_parse_names_its_source():
    with pytest.raises(SnapshotInvalid, match="^exporter.example:9400/metrics: not Prometheus exposition text"):
        parse_exposition('metric{label="unterminated} 1\n', "exporter.example:9400/metrics")


def test_the_target_becomes_instance_unless_the_exporter_set_it():
    samples = parse_exposition('a{gpu="0"} 1\na{gpu="1",instance="own:1"} 2\n', "page")
    assert [s.labels["instance"] for s in with_target_label(samples, "10.0.0.7:41611")] == ["10.0.0.7:41611", "own:1"]


@pytest.mark.parametrize(
    "url, path, expected",
    [("http://10.0.0.7:41611", "/metrics", "http://10.0.0.7:41611/metrics"),
     ("http://10.0.0.7:41611/", None, "http://10.0.0.7:41611/metrics"),
     ("http://10.0.0.7:9400/custom", "/metrics", "http://10.0.0.7:9400/custom")],
)
def test_the_snapshot_url_takes_the_profiles_path_when_it_has_none(url, path, expected):
    assert snapshot_url(url, path) == expected


def test_a_snapshot_url_must_be_http():
    with pytest.raises(SnapshotUnreachable, match="must be http"):
        snapshot_url("10.0.0.7:9400", "/metrics")


@pytest.mark.parametrize("url", ["http://127.0.0.1:9100; rm -rf /", "http://[::1", "http://h:99999", "http://:9100"])
def test_a_snapshot_url_httpx_cannot_parse_is_refused_naming_it(url):
    """A bad port or bracket is the coded error naming the URL, not an httpx/urllib traceback."""
    with pytest.raises(SnapshotUnreachable) as caught:
        snapshot_url(url, "/metrics")
    assert repr(url) in caught.value.message
